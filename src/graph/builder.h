// The builder: how the front end, autodiff and the passes add nodes to a
// graph. An op (`op`, or a named method below) checks and canonicalizes its
// arguments (promotion, NumPy broadcasting, defaults) with the primitive's
// build rule, then emits the primitive, whose shape rule validates it. Every
// error is a ShapeError whose message begins with the op's name.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "graph/graph.h"
#include "graph/primitive.h"

namespace sx::graph {

class Builder {
 public:
  explicit Builder(Graph& graph) : graph_(graph) {}

  Graph& graph() { return graph_; }
  const Node& node(NodeId id) const;
  const Shape& shape(NodeId id) const { return node(id).shape; }
  DType dtype(NodeId id) const { return node(id).dtype; }
  ValueType type(NodeId id) const { return {shape(id), dtype(id)}; }

  // Nodes emitted from now on carry this origin (a source span of the front end).
  void set_origin(uint32_t origin) { origin_ = origin; }
  uint32_t origin() const { return origin_; }

  // Graph interface. Names are unique among inputs and among outputs.
  NodeId input(std::string name, Shape shape, DType dtype);
  void output(std::string name, NodeId node);

  // Constants. A literal is a weak scalar (see promote in dtype.h): a float
  // literal is held as f64 and an integer literal as i64, and either takes
  // the dtype of the tensor it meets.
  NodeId constant(Tensor value, bool weak = false);
  NodeId scalar(double value, DType dtype);
  NodeId literal(double value);
  NodeId literal_int(int64_t value);
  NodeId full(Shape shape, DType dtype, double value);
  NodeId zeros(Shape shape, DType dtype) { return full(std::move(shape), dtype, 0.0); }

  // Any op by its primitive's name: the entry the front end maps names to.
  NodeId op(std::string_view name, std::vector<NodeId> args, const Attrs& attrs = {});
  // The primitive as it is, after its shape rule accepts the arguments.
  NodeId emit(const Primitive& prim, std::vector<NodeId> args, const Attrs& attrs = {});

  // Shared by the ops' build rules.
  std::vector<NodeId> promote_args(std::span<const NodeId> args);
  std::vector<NodeId> broadcast_args(std::string_view op, std::span<const NodeId> args);
  NodeId cast_to(NodeId x, DType dtype);
  NodeId broadcast_to(NodeId x, Shape shape);

  // Elementwise.
  NodeId neg(NodeId x) { return op("neg", {x}); }
  NodeId stop_gradient(NodeId x) { return op("stop_gradient", {x}); }
  NodeId abs(NodeId x) { return op("abs", {x}); }
  NodeId sign(NodeId x) { return op("sign", {x}); }
  NodeId exp(NodeId x) { return op("exp", {x}); }
  NodeId log(NodeId x) { return op("log", {x}); }
  NodeId sqrt(NodeId x) { return op("sqrt", {x}); }
  NodeId rsqrt(NodeId x) { return op("rsqrt", {x}); }
  NodeId sin(NodeId x) { return op("sin", {x}); }
  NodeId cos(NodeId x) { return op("cos", {x}); }
  NodeId tanh(NodeId x) { return op("tanh", {x}); }
  NodeId erf(NodeId x) { return op("erf", {x}); }
  NodeId logistic(NodeId x) { return op("logistic", {x}); }
  NodeId logical_not(NodeId x) { return op("logical_not", {x}); }
  NodeId add(NodeId a, NodeId b) { return op("add", {a, b}); }
  NodeId sub(NodeId a, NodeId b) { return op("sub", {a, b}); }
  NodeId mul(NodeId a, NodeId b) { return op("mul", {a, b}); }
  NodeId div(NodeId a, NodeId b) { return op("div", {a, b}); }
  NodeId pow(NodeId a, NodeId b) { return op("pow", {a, b}); }
  NodeId max(NodeId a, NodeId b) { return op("max", {a, b}); }
  NodeId min(NodeId a, NodeId b) { return op("min", {a, b}); }
  NodeId eq(NodeId a, NodeId b) { return op("eq", {a, b}); }
  NodeId ne(NodeId a, NodeId b) { return op("ne", {a, b}); }
  NodeId lt(NodeId a, NodeId b) { return op("lt", {a, b}); }
  NodeId le(NodeId a, NodeId b) { return op("le", {a, b}); }
  NodeId gt(NodeId a, NodeId b) { return op("gt", {a, b}); }
  NodeId ge(NodeId a, NodeId b) { return op("ge", {a, b}); }
  NodeId logical_and(NodeId a, NodeId b) { return op("logical_and", {a, b}); }
  NodeId logical_or(NodeId a, NodeId b) { return op("logical_or", {a, b}); }
  NodeId where(NodeId cond, NodeId a, NodeId b) { return op("where", {cond, a, b}); }
  NodeId cast(NodeId x, DType dtype) { return op("cast", {x}, {{"dtype", dtype}}); }

  // Reductions over `axes` (negative counts from the end; empty = all axes).
  NodeId sum(NodeId x, std::vector<int64_t> axes, bool keepdims = false);
  NodeId reduce_max(NodeId x, std::vector<int64_t> axes, bool keepdims = false);
  NodeId reduce_min(NodeId x, std::vector<int64_t> axes, bool keepdims = false);
  NodeId argmax(NodeId x, std::vector<int64_t> axes, bool keepdims = false);
  NodeId argmin(NodeId x, std::vector<int64_t> axes, bool keepdims = false);

  // Shapes. reshape takes one -1; slice lists may be shorter than the rank.
  NodeId reshape(NodeId x, Shape shape) { return op("reshape", {x}, {{"shape", shape}}); }
  NodeId transpose(NodeId x, std::vector<int64_t> perm);
  NodeId broadcast(NodeId x, Shape shape) { return op("broadcast", {x}, {{"shape", shape}}); }
  NodeId slice(NodeId x, std::vector<int64_t> start, std::vector<int64_t> stop, std::vector<int64_t> step = {});
  NodeId concat(std::vector<NodeId> xs, int64_t axis);
  NodeId pad(NodeId x, std::vector<int64_t> low, std::vector<int64_t> high, std::vector<int64_t> interior = {},
             double value = 0.0);

  // Indexing.
  NodeId gather(NodeId x, NodeId indices, int64_t axis);
  NodeId scatter_add(NodeId x, NodeId indices, NodeId updates, int64_t axis);
  NodeId iota(Shape shape, int64_t axis, DType dtype = DType::i64);
  // `checked`: an index outside [0, depth) stops the run (graph/index_error.h) instead of
  // giving a row of zeros.
  NodeId one_hot(NodeId indices, int64_t depth, DType dtype = DType::f32, bool checked = false);

  NodeId matmul(NodeId a, NodeId b) { return op("matmul", {a, b}); }

  // Random numbers from a key (an integer scalar), Philox 4x32-10.
  NodeId random_normal(NodeId key, Shape shape, DType dtype = DType::f32);
  NodeId random_uniform(NodeId key, Shape shape, DType dtype = DType::f32);
  NodeId random_bernoulli(NodeId key, double p, Shape shape);

 private:
  NodeId append(Node node);

  Graph& graph_;
  uint32_t origin_ = 0;
};

}  // namespace sx::graph
