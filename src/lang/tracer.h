// Tracing: tensor expressions add nodes to one graph per interpreter. A tensor value is a
// node of that graph; its origin maps it back to the form that built it.
#pragma once

#include <memory>
#include <vector>

#include "graph/builder.h"
#include "lang/value.h"

namespace sx::lang {

class Tracer {
 public:
  Tracer() : builder_(graph_) {}
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  graph::Graph& graph() { return graph_; }
  graph::Builder& builder() { return builder_; }
  // Nodes emitted from now on come from `span`.
  void at(Span span);
  // The span a node's origin stands for (unknown for origin 0).
  Span span_of(uint32_t origin) const { return origin < origins_.size() ? origins_[origin] : Span{}; }

 private:
  graph::Graph graph_;
  graph::Builder builder_;
  std::vector<Span> origins_{Span{}};
};

class TensorValue final : public Opaque {
 public:
  TensorValue(std::shared_ptr<Tracer> tracer, graph::NodeId node) : tracer(std::move(tracer)), node(node) {}
  const graph::Node& info() const { return tracer->graph().node(node); }
  std::string type_label() const override { return "a tensor"; }
  // A constant prints its elements, readable as `(tensor ...)`; any other node its type.
  std::string print() const override;

  std::shared_ptr<Tracer> tracer;
  graph::NodeId node;
};

Value make_tensor(const std::shared_ptr<Tracer>& tracer, graph::NodeId node);
inline const TensorValue* as_tensor(const Value& v) {
  return v.is(Type::Opaque) ? dynamic_cast<const TensorValue*>(v.as<Opaque>()) : nullptr;
}

// `(tensor [[1.0 2.0] [3.0 4.0]] :dtype :f32)`, rows aligned, elided past `max_elements`.
std::string format_tensor(const graph::Tensor& tensor, size_t max_elements = 1000);

}  // namespace sx::lang
