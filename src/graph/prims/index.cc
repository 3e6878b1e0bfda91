// Indexing primitives: gather (NumPy `take` along an axis), scatter_add
// (its gradient: adds updates at the gathered positions), iota (positions
// along an axis) and one_hot. An index of gather or scatter_add outside its
// axis stops the run (IndexOutOfRange), on every device; one_hot gives such an
// index a row of zeros, or stops the run too when its attribute `checked` is 1.
#include <algorithm>

#include "graph/index_error.h"
#include "graph/prims/common.h"
#include "graph/prims/families.h"

namespace sx::graph::prims {
namespace {

using Grads = std::vector<std::optional<NodeId>>;
using Args = std::span<const Tensor* const>;
using Types = std::span<const ValueType>;

bool is_index_dtype(DType dtype) { return is_integer(dtype); }

int64_t checked_axis(const Attrs& attrs, const Shape& shape, std::string_view op) {
  int64_t axis = attrs.get_int("axis");
  if (axis < 0 || axis >= static_cast<int64_t>(shape.size())) {
    throw ShapeError(fmt::format("{}: axis {} is out of range for {}", op, axis, shape_str(shape)));
  }
  return axis;
}

// x.shape[:axis] + indices.shape + x.shape[axis+1:]
Shape gathered_shape(const Shape& x, const Shape& indices, int64_t axis) {
  Shape out(x.begin(), x.begin() + axis);
  out.insert(out.end(), indices.begin(), indices.end());
  out.insert(out.end(), x.begin() + axis + 1, x.end());
  return out;
}

// Throws IndexOutOfRange for the first index outside [0, length), the indices being
// input `operand` of the node.
void check_tensor_indices(const Tensor& indices, int64_t length, size_t operand) {
  visit_index_dtype(indices.dtype(), [&](auto zero) {
    using Index = decltype(zero);
    check_indices(indices.data<Index>(), indices.numel(), length, operand);
  });
}

// For every position of the gathered shape: the position in x it reads. Every index is
// in its axis (IndexOutOfRange otherwise).
std::vector<int64_t> gathered_sources(const Shape& x, const Tensor& indices, int64_t axis) {
  check_tensor_indices(indices, x[static_cast<size_t>(axis)], 1);
  Shape out = gathered_shape(x, indices.shape(), axis);
  std::vector<int64_t> x_strides = row_major_strides(x), idx_strides = row_major_strides(indices.shape());
  auto a = static_cast<size_t>(axis), rank = indices.shape().size();
  std::vector<int64_t> sources;
  IndexWalk walk(out);
  for (int64_t o = 0; o < numel(out); ++o, walk.next()) {
    const std::vector<int64_t>& index = walk.index();
    int64_t idx_flat = 0, x_flat = 0;
    for (size_t d = 0; d < rank; ++d) idx_flat += index[a + d] * idx_strides[d];
    for (size_t d = 0; d < a; ++d) x_flat += index[d] * x_strides[d];
    for (size_t d = a + 1; d < x.size(); ++d) x_flat += index[d - 1 + rank] * x_strides[d];
    sources.push_back(x_flat + static_cast<int64_t>(indices.value(idx_flat)) * x_strides[a]);
  }
  return sources;
}

// An index reads a row of the axis: an empty axis has none to read.
void check_axis_not_empty(const ValueType& x, const ValueType& indices, int64_t axis, std::string_view op) {
  if (x.shape[static_cast<size_t>(axis)] == 0 && numel(indices.shape) > 0) {
    throw ShapeError(fmt::format("{}: axis {} of {} is empty, so none of the {} indices can be in range", op, axis,
                                 type_str(x), numel(indices.shape)));
  }
}

ValueType infer_gather(Types args, const Attrs& attrs) {
  int64_t axis = checked_axis(attrs, args[0].shape, "gather");
  if (!is_index_dtype(args[1].dtype)) {
    throw ShapeError(fmt::format("gather: indices must be integers, got {}", dtype_name(args[1].dtype)));
  }
  check_axis_not_empty(args[0], args[1], axis, "gather");
  return {gathered_shape(args[0].shape, args[1].shape, axis), args[0].dtype};
}

ValueType infer_scatter_add(Types args, const Attrs& attrs) {
  int64_t axis = checked_axis(attrs, args[0].shape, "scatter_add");
  if (!is_index_dtype(args[1].dtype)) {
    throw ShapeError(fmt::format("scatter_add: indices must be integers, got {}", dtype_name(args[1].dtype)));
  }
  check_axis_not_empty(args[0], args[1], axis, "scatter_add");
  ValueType expected{gathered_shape(args[0].shape, args[1].shape, axis), args[0].dtype};
  if (args[2].shape != expected.shape || args[2].dtype != expected.dtype || !is_numeric(args[0].dtype)) {
    throw ShapeError(fmt::format("scatter_add: updates for {} at indices {} along axis {} must be {}, got {}",
                                 type_str(args[0]), shape_str(args[1].shape), axis, type_str(expected),
                                 type_str(args[2])));
  }
  return args[0];
}

NodeId build_with_axis(Builder& b, const Primitive& prim, std::span<const NodeId> args, const Attrs& attrs) {
  int64_t rank = static_cast<int64_t>(b.shape(args[0]).size());
  int64_t axis = normalize_axis(attrs.get_int("axis"), rank, prim.name);
  return b.emit(prim, std::vector<NodeId>(args.begin(), args.end()), {{"axis", axis}});
}

Tensor gather_kernel(const Node& node, const Tensor& x, const Tensor& indices) {
  std::vector<int64_t> sources = gathered_sources(x.shape(), indices, node.attrs.get_int("axis"));
  Tensor out(node.dtype, node.shape);
  size_t size = dtype_size(node.dtype);
  for (size_t o = 0; o < sources.size(); ++o) {
    std::copy_n(x.bytes().data() + sources[o] * static_cast<int64_t>(size), size, out.bytes().data() + o * size);
  }
  return out;
}

Tensor scatter_add_kernel(const Node& node, const Tensor& x, const Tensor& indices, const Tensor& updates) {
  std::vector<int64_t> targets = gathered_sources(x.shape(), indices, node.attrs.get_int("axis"));
  Tensor out = x;
  visit_dtype(x.dtype(), [&](auto types) {
    using S = typename decltype(types)::storage;
    using C = typename decltype(types)::compute;
    S* o = out.data<S>();
    for (size_t u = 0; u < targets.size(); ++u) {
      S& target = o[targets[u]];
      target = S(wrap_add(static_cast<C>(target), static_cast<C>(updates.data<S>()[u])));
    }
  });
  return out;
}

NodeId batch_gather(Builder& b, const Node& node, std::span<const NodeId> args, std::span<const bool> batched,
                    int64_t batch) {
  int64_t axis = node.attrs.get_int("axis");
  if (batched[0] && batched[1]) return batch_by_unrolling(b, node, args, batched, batch);
  if (batched[0]) return b.gather(args[0], args[1], axis + 1);
  NodeId y = b.gather(args[0], args[1], axis);
  std::vector<int64_t> perm{axis};
  for (int64_t d = 0; d < static_cast<int64_t>(b.shape(y).size()); ++d) {
    if (d != axis) perm.push_back(d);
  }
  return b.transpose(y, perm);
}

NodeId batch_scatter_add(Builder& b, const Node& node, std::span<const NodeId> args, std::span<const bool> batched,
                         int64_t batch) {
  if (batched[1]) return batch_by_unrolling(b, node, args, batched, batch);
  return b.scatter_add(to_batched(b, args[0], batched[0], batch), args[1], to_batched(b, args[2], batched[2], batch),
                       node.attrs.get_int("axis") + 1);
}

// The place's axis is an axis of x before the gathered one, an axis of the
// indices, or an axis of x after it; the other operand is read whole.
std::optional<Sinking> sink_gather(const Node& node, Types args, int64_t axis) {
  int64_t gathered = node.attrs.get_int("axis"), index_rank = static_cast<int64_t>(args[1].shape.size());
  std::vector<std::optional<int64_t>> input_axes(2);
  if (axis < gathered) input_axes[0] = axis;
  else if (axis < gathered + index_rank) input_axes[1] = axis - gathered;
  else input_axes[0] = axis - index_rank + 1;
  return Sinking{.input_axes = std::move(input_axes), .attrs = node.attrs};
}

const Primitive kIndex[] = {
    {.id = PrimId::gather,
     .name = "gather",
     .arity = 2,
     .kind = PrimKind::movement,
     .infer = infer_gather,
     .build = build_with_axis,
     .grad = [](Builder& b, const Node& n, NodeId, NodeId ct) -> Grads {
       NodeId x = n.inputs[0], indices = n.inputs[1];
       NodeId zeros = b.zeros(b.shape(x), b.dtype(x));
       return {b.scatter_add(zeros, indices, ct, n.attrs.get_int("axis")), std::nullopt};
     },
     .batch = batch_gather,
     .sink = sink_gather,
     .kernel = [](const Node& n, Args x) { return gather_kernel(n, *x[0], *x[1]); }},
    {.id = PrimId::scatter_add,
     .name = "scatter_add",
     .arity = 3,
     .kind = PrimKind::reduction,
     .infer = infer_scatter_add,
     .build = build_with_axis,
     .grad = [](Builder& b, const Node& n, NodeId, NodeId ct) -> Grads {
       return {ct, std::nullopt, b.gather(ct, n.inputs[1], n.attrs.get_int("axis"))};
     },
     .batch = batch_scatter_add,
     .kernel = [](const Node& n, Args x) { return scatter_add_kernel(n, *x[0], *x[1], *x[2]); }},
    {.id = PrimId::iota,
     .name = "iota",
     .arity = 0,
     .kind = PrimKind::source,
     .infer =
         [](Types, const Attrs& attrs) {
           const Shape& shape = attrs.get_ints("shape");
           checked_axis(attrs, shape, "iota");
           DType dtype = attrs.get_dtype("dtype");
           if (dtype == DType::boolean) throw ShapeError("iota: needs a numeric dtype, got bool");
           return ValueType{shape, dtype};
         },
     .kernel =
         [](const Node& n, Args) {
           Tensor out(n.dtype, n.shape);
           auto axis = static_cast<size_t>(n.attrs.get_int("axis"));
           IndexWalk walk(n.shape);
           for (int64_t i = 0; i < out.numel(); ++i, walk.next())
             out.set_value(i, static_cast<double>(walk.index()[axis]));
           return out;
         }},
    {.id = PrimId::one_hot,
     .name = "one_hot",
     .arity = 1,
     .kind = PrimKind::movement,
     .infer =
         [](Types args, const Attrs& attrs) {
           if (!is_index_dtype(args[0].dtype)) {
             throw ShapeError(fmt::format("one_hot: indices must be integers, got {}", dtype_name(args[0].dtype)));
           }
           int64_t depth = attrs.get_int("depth");
           if (depth < 0) throw ShapeError(fmt::format("one_hot: depth must not be negative, got {}", depth));
           if (attrs.has("checked") && attrs.get_int("checked") != 1) {
             throw ShapeError(fmt::format("one_hot: checked is 1 when present, got {}", attrs.get_int("checked")));
           }
           Shape out = args[0].shape;
           out.push_back(depth);
           return ValueType{out, attrs.get_dtype("dtype")};
         },
     .batch = [](Builder& b, const Node& n, std::span<const NodeId> args, std::span<const bool>,
                 int64_t) { return b.emit(*n.prim, {args[0]}, n.attrs); },
     .sink = [](const Node& n, Types args, int64_t axis) -> std::optional<Sinking> {
       if (axis >= static_cast<int64_t>(args[0].shape.size())) return std::nullopt;
       return Sinking{.input_axes = {axis}, .attrs = n.attrs};
     },
     .kernel =
         [](const Node& n, Args x) {
           Tensor out(n.dtype, n.shape);
           int64_t depth = n.attrs.get_int("depth");
           if (n.attrs.has("checked")) check_tensor_indices(*x[0], depth, 0);
           for (int64_t i = 0; i < x[0]->numel(); ++i) {
             auto k = static_cast<int64_t>(x[0]->value(i));
             if (k >= 0 && k < depth) out.set_value(i * depth + k, 1.0);
           }
           return out;
         }},
};

}  // namespace

std::span<const Primitive> index_primitives() { return kIndex; }

}  // namespace sx::graph::prims
