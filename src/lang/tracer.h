// Tracing: tensor expressions add nodes to one graph per interpreter. A tensor value is a
// node of that graph; its origin maps it back to the form that built it.
#pragma once

#include <functional>
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include "graph/builder.h"
#include "lang/value.h"

namespace sx::lang {

class TensorValue;

// Old node id -> new id after Tracer::compact; kDropped for a node it removed.
using NodeRemap = std::vector<graph::NodeId>;
constexpr graph::NodeId kDropped = std::numeric_limits<graph::NodeId>::max();

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
  // A variable of a function being differentiated (grad's copy of a tensor argument): a
  // value no initializer may read, whatever it was made from (E-PARAM-003).
  void mark_argument(graph::NodeId node) { arguments_.insert(node); }
  bool is_argument(graph::NodeId node) const { return arguments_.count(node) > 0; }

  // Removes the nodes that nothing can reach any more: every input is kept, and every
  // node a live tensor value stands for, with what they are computed from; the rest
  // (the steps of a REPL entry whose values are gone) is dropped, so a long session's
  // trace does not grow with its history. Node ids change: live tensor values are
  // renumbered here, and whoever else holds ids (a model's parameter inputs) renumbers
  // them in its `on_compact` listener. Only between evaluations: C++ code in the middle
  // of one may hold ids. Returns how many nodes were dropped.
  size_t compact();
  void on_compact(std::function<void(const NodeRemap&)> listener) { listeners_.push_back(std::move(listener)); }

 private:
  friend class TensorValue;

  graph::Graph graph_;
  graph::Builder builder_;
  std::vector<Span> origins_{Span{}};
  std::set<graph::NodeId> arguments_;
  std::unordered_set<TensorValue*> live_;  // every tensor value of this trace
  std::vector<std::function<void(const NodeRemap&)>> listeners_;
};

class TensorValue final : public Opaque {
 public:
  TensorValue(std::shared_ptr<Tracer> tracer, graph::NodeId node) : tracer(std::move(tracer)), node(node) {
    this->tracer->live_.insert(this);
  }
  TensorValue(const TensorValue&) = delete;
  TensorValue& operator=(const TensorValue&) = delete;
  ~TensorValue() override { tracer->live_.erase(this); }
  const graph::Node& info() const { return tracer->graph().node(node); }
  std::string type_label() const override { return "a tensor"; }
  // A constant prints its elements, readable as `(tensor ...)`; any other node its type.
  std::string print() const override;

  std::shared_ptr<Tracer> tracer;
  graph::NodeId node;
  // A model's parameter as `(parameters model)` gives it: `grad` differentiates it where
  // it is, through every use (the model's own included), where any other tensor argument
  // is copied at the call.
  bool parameter = false;
};

Value make_tensor(const std::shared_ptr<Tracer>& tracer, graph::NodeId node);
inline const TensorValue* as_tensor(const Value& v) {
  return v.is(Type::Opaque) ? dynamic_cast<const TensorValue*>(v.as<Opaque>()) : nullptr;
}

// How many elements a printed tensor shows before it is elided: 1000, or 0 for all of
// them (`sexpgpu eval --full`). One setting for the process.
size_t tensor_print_limit();
void set_tensor_print_limit(size_t max_elements);

// Element `i` of a tensor as `print` shows it: the shortest text that reads back.
std::string element_text(const graph::Tensor& tensor, int64_t i);
// Element `i` of a tensor as text.
using ElementText = std::function<std::string(const graph::Tensor& tensor, int64_t i)>;

// `(tensor [[1.0 2.0] [3.0 4.0]] :dtype :f32)`, rows aligned, elided past `max_elements`
// (0: never); each element as `element` writes it (by default the shortest text that
// reads back). An empty tensor is `(zeros [0 2] :dtype :f32)`, which reads back with
// its shape.
std::string format_tensor(const graph::Tensor& tensor, size_t max_elements = tensor_print_limit(),
                          const ElementText& element = {});

}  // namespace sx::lang
