// The builder's shared machinery: appending nodes, constants, promotion and
// broadcasting of arguments, and the named ops that need more than a name.
#include "graph/builder.h"

#include <fmt/format.h>

#include "graph/errors.h"
#include "graph/memory.h"

namespace sx::graph {

const Node& Builder::node(NodeId id) const {
  if (id >= graph_.nodes.size()) {
    throw GraphError(fmt::format("builder: node {} does not exist (the graph has {} nodes)", id, graph_.nodes.size()));
  }
  return graph_.nodes[id];
}

NodeId Builder::append(Node node) {
  // Every tensor is a node first: refusing the node refuses the tensor before any
  // device allocates it.
  auto bytes = static_cast<double>(checked_bytes(node.shape, node.dtype));
  check_memory(bytes,
               [&] { return fmt::format("a {} {} tensor", shape_str(node.shape, " "), dtype_name(node.dtype)); });
  node.origin = origin_;
  graph_.nodes.push_back(std::move(node));
  return static_cast<NodeId>(graph_.nodes.size() - 1);
}

NodeId Builder::input(std::string name, Shape shape, DType dtype) {
  if (graph_.find_input(name)) {
    throw GraphError(fmt::format("input: the graph already has an input named '{}'", name));
  }
  Node n;
  n.prim = &primitive(PrimId::input);
  n.shape = std::move(shape);
  n.dtype = dtype;
  NodeId id = append(std::move(n));
  graph_.inputs.push_back({std::move(name), id});
  return id;
}

void Builder::output(std::string name, NodeId id) {
  node(id);
  if (graph_.find_output(name)) {
    throw GraphError(fmt::format("output: the graph already has an output named '{}'", name));
  }
  graph_.outputs.push_back({std::move(name), id});
}

NodeId Builder::constant(Tensor value, bool weak) {
  Node n;
  n.prim = &primitive(PrimId::constant);
  n.shape = value.shape();
  n.dtype = value.dtype();
  n.weak = weak;
  n.value = std::make_shared<const Tensor>(std::move(value));
  return append(std::move(n));
}

NodeId Builder::scalar(double value, DType dtype) { return constant(Tensor::scalar(dtype, value)); }

NodeId Builder::literal(double value) { return constant(Tensor::scalar(DType::f64, value), true); }

NodeId Builder::literal_int(int64_t value) {
  Tensor t(DType::i64, {});
  t.data<int64_t>()[0] = value;
  return constant(std::move(t), true);
}

NodeId Builder::full(Shape shape, DType dtype, double value) {
  NodeId s = scalar(value, dtype);
  return shape.empty() ? s : broadcast_to(s, shape);
}

namespace {

// Errors from shared helpers (a missing attribute, say) do not know which op
// they are in: give them its name, so that every message begins with it.
[[noreturn]] void rethrow_with_op_name(const ShapeError& error, std::string_view op) {
  std::string_view what = error.what();
  if (what.starts_with(op) && what.substr(op.size()).starts_with(":")) throw error;
  throw ShapeError(fmt::format("{}: {}", op, what));
}

}  // namespace

NodeId Builder::op(std::string_view name, std::vector<NodeId> args, const Attrs& attrs) {
  const Primitive& prim = primitive(name);
  for (NodeId a : args) node(a);
  try {
    if (prim.build) return prim.build(*this, prim, args, attrs);
    return emit(prim, std::move(args), attrs);
  } catch (const ShapeError& e) {
    rethrow_with_op_name(e, prim.name);
  }
}

NodeId Builder::emit(const Primitive& prim, std::vector<NodeId> args, const Attrs& attrs) {
  if (!prim.infer) {
    throw GraphError(fmt::format("{}: is made with its own builder method, not emitted", prim.name));
  }
  if (prim.arity >= 0 ? args.size() != static_cast<size_t>(prim.arity) : args.empty()) {
    throw ShapeError(fmt::format("{}: takes {} arguments, got {}", prim.name,
                                 prim.arity >= 0 ? std::to_string(prim.arity) : "one or more", args.size()));
  }
  std::vector<ValueType> types;
  bool all_weak = true;
  for (NodeId a : args) {
    types.push_back(type(a));
    all_weak = all_weak && node(a).weak;
  }
  ValueType out;
  try {
    out = prim.infer(types, attrs);
  } catch (const ShapeError& e) {
    rethrow_with_op_name(e, prim.name);
  }
  Node n;
  n.prim = &prim;
  n.inputs = std::move(args);
  n.attrs = attrs;
  n.shape = std::move(out.shape);
  n.dtype = out.dtype;
  // A literal's weakness passes to what is computed from literals in their dtype, not to
  // a value of a dtype of its own: a random tensor drawn from a literal key, a comparison.
  n.weak = all_weak && !n.inputs.empty() && n.dtype == types.front().dtype;
  return append(std::move(n));
}

std::vector<NodeId> Builder::promote_args(std::span<const NodeId> args) {
  TypedDType common{dtype(args[0]), node(args[0]).weak};
  for (NodeId a : args.subspan(1)) common = promote(common, TypedDType{dtype(a), node(a).weak});
  std::vector<NodeId> out;
  for (NodeId a : args) out.push_back(cast_to(a, common.dtype));
  return out;
}

std::vector<NodeId> Builder::broadcast_args(std::string_view op_name, std::span<const NodeId> args) {
  Shape common = shape(args[0]);
  for (NodeId a : args.subspan(1)) {
    auto joined = broadcast_shapes(common, shape(a));
    if (!joined) {
      throw ShapeError(fmt::format("{}: cannot broadcast {} with {}", op_name, shape_str(common), shape_str(shape(a))));
    }
    common = *joined;
  }
  std::vector<NodeId> out;
  for (NodeId a : args) out.push_back(broadcast_to(a, common));
  return out;
}

NodeId Builder::cast_to(NodeId x, DType to) {
  if (dtype(x) == to) return x;
  NodeId y = emit(primitive(PrimId::cast), {x}, {{"dtype", to}});
  graph_.nodes[y].weak = node(x).weak;
  return y;
}

NodeId Builder::broadcast_to(NodeId x, Shape to) {
  if (shape(x) == to) return x;
  return emit(primitive(PrimId::broadcast), {x}, {{"shape", std::move(to)}});
}

namespace {

Attrs reduce_attrs(std::vector<int64_t> axes, bool keepdims) {
  return {{"axes", std::move(axes)}, {"keepdims", int64_t{keepdims}}};
}

}  // namespace

NodeId Builder::sum(NodeId x, std::vector<int64_t> axes, bool keepdims) {
  return op("sum", {x}, reduce_attrs(std::move(axes), keepdims));
}
NodeId Builder::reduce_max(NodeId x, std::vector<int64_t> axes, bool keepdims) {
  return op("reduce_max", {x}, reduce_attrs(std::move(axes), keepdims));
}
NodeId Builder::reduce_min(NodeId x, std::vector<int64_t> axes, bool keepdims) {
  return op("reduce_min", {x}, reduce_attrs(std::move(axes), keepdims));
}
NodeId Builder::argmax(NodeId x, std::vector<int64_t> axes, bool keepdims) {
  return op("argmax", {x}, reduce_attrs(std::move(axes), keepdims));
}
NodeId Builder::argmin(NodeId x, std::vector<int64_t> axes, bool keepdims) {
  return op("argmin", {x}, reduce_attrs(std::move(axes), keepdims));
}

NodeId Builder::transpose(NodeId x, std::vector<int64_t> perm) {
  return op("transpose", {x}, {{"perm", std::move(perm)}});
}

NodeId Builder::slice(NodeId x, std::vector<int64_t> start, std::vector<int64_t> stop, std::vector<int64_t> step) {
  return op("slice", {x}, {{"start", std::move(start)}, {"stop", std::move(stop)}, {"step", std::move(step)}});
}

NodeId Builder::concat(std::vector<NodeId> xs, int64_t axis) { return op("concat", std::move(xs), {{"axis", axis}}); }

NodeId Builder::pad(NodeId x, std::vector<int64_t> low, std::vector<int64_t> high, std::vector<int64_t> interior,
                    double value) {
  return op("pad", {x},
            {{"low", std::move(low)}, {"high", std::move(high)}, {"interior", std::move(interior)}, {"value", value}});
}

NodeId Builder::gather(NodeId x, NodeId indices, int64_t axis) { return op("gather", {x, indices}, {{"axis", axis}}); }

NodeId Builder::scatter_add(NodeId x, NodeId indices, NodeId updates, int64_t axis) {
  return op("scatter_add", {x, indices, updates}, {{"axis", axis}});
}

NodeId Builder::iota(Shape shape, int64_t axis, DType dtype) {
  return op("iota", {}, {{"shape", std::move(shape)}, {"axis", axis}, {"dtype", dtype}});
}

NodeId Builder::one_hot(NodeId indices, int64_t depth, DType dtype, bool checked) {
  Attrs attrs{{"depth", depth}, {"dtype", dtype}};
  if (checked) attrs.set("checked", int64_t{1});
  return op("one_hot", {indices}, std::move(attrs));
}

NodeId Builder::random_normal(NodeId key, Shape shape, DType dtype) {
  return op("random_normal", {key}, {{"shape", std::move(shape)}, {"dtype", dtype}});
}

NodeId Builder::random_uniform(NodeId key, Shape shape, DType dtype) {
  return op("random_uniform", {key}, {{"shape", std::move(shape)}, {"dtype", dtype}});
}

NodeId Builder::random_bernoulli(NodeId key, double p, Shape shape) {
  return op("random_bernoulli", {key}, {{"shape", std::move(shape)}, {"p", p}});
}

}  // namespace sx::graph
