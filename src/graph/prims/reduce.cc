// Reductions over a list of axes, with keepdims: sum, reduce_max,
// reduce_min, argmax and argmin (the flat position within the reduced axes,
// first occurrence on ties, as i64). The op reduces every axis when given
// none; the primitive reduces exactly the axes it names, sorted.
#include <algorithm>
#include <cmath>
#include <limits>

#include "graph/prims/common.h"
#include "graph/prims/families.h"

namespace sx::graph::prims {
namespace {

using Grads = std::vector<std::optional<NodeId>>;
using Args = std::span<const Tensor* const>;
using Types = std::span<const ValueType>;

Shape reduced_shape(const Shape& shape, const std::vector<int64_t>& axes, bool keepdims) {
  Shape out;
  for (size_t d = 0; d < shape.size(); ++d) {
    bool reduced = std::find(axes.begin(), axes.end(), static_cast<int64_t>(d)) != axes.end();
    if (!reduced) out.push_back(shape[d]);
    else if (keepdims) out.push_back(1);
  }
  return out;
}

ValueType infer_reduction(Types args, const Attrs& attrs, std::string_view op, bool to_index) {
  require_dtypes(op, args, is_numeric, "numeric");
  const Shape& shape = args[0].shape;
  std::vector<int64_t> axes = normalize_axes(attrs.get_ints("axes"), static_cast<int64_t>(shape.size()), op);
  Shape out = reduced_shape(shape, axes, attrs.get_int("keepdims") != 0);
  return {out, to_index ? DType::i64 : args[0].dtype};
}

NodeId build_reduction(Builder& b, const Primitive& prim, std::span<const NodeId> args, const Attrs& attrs) {
  auto rank = static_cast<int64_t>(b.shape(args[0]).size());
  std::vector<int64_t> axes = attrs.has("axes") ? attrs.get_ints("axes") : std::vector<int64_t>{};
  if (axes.empty()) {
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  int64_t keepdims = attrs.has("keepdims") ? attrs.get_int("keepdims") != 0 : 0;
  Attrs canonical{{"axes", normalize_axes(axes, rank, prim.name)}, {"keepdims", keepdims}};
  return b.emit(prim, {args[0]}, canonical);
}

NodeId batch_reduction(Builder& b, const Node& node, std::span<const NodeId> args, std::span<const bool>, int64_t) {
  Attrs attrs = node.attrs;
  attrs.set("axes", shift_axes(node.attrs.get_ints("axes"), 1));
  return b.emit(*node.prim, {args[0]}, attrs);
}

// Sinks through a reduction over axes that all come after the one the place
// is taken at (which is then the same axis of the input, keepdims or not):
// each output element adds up the same elements in the same layout for one
// place as for all of them, so a device that picks its order of summation
// from the layout (the cpu's) keeps its bits.
std::optional<Sinking> sink_reduction(const Node& node, Types, int64_t axis) {
  for (int64_t reduced : node.attrs.get_ints("axes")) {
    if (reduced <= axis) return std::nullopt;
  }
  return Sinking{.input_axes = {axis}, .attrs = node.attrs};
}

// Where each input element lands: its output position and its flat position
// within the reduced axes.
struct ReductionMap {
  std::vector<int64_t> out_index;
  std::vector<int64_t> within;
  int64_t out_count = 0;
};

ReductionMap map_reduction(const Shape& shape, const std::vector<int64_t>& axes) {
  // Strides that place an input position in the output (0 along reduced
  // axes) and within the reduced block (0 along kept axes).
  std::vector<int64_t> kept_strides = row_major_strides(reduced_shape(shape, axes, true));
  Shape block;
  for (int64_t a : axes) block.push_back(shape[static_cast<size_t>(a)]);
  std::vector<int64_t> block_strides = row_major_strides(block), to_block(shape.size(), 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    auto a = static_cast<size_t>(axes[i]);
    kept_strides[a] = 0;
    to_block[a] = block_strides[i];
  }
  ReductionMap map;
  map.out_count = numel(reduced_shape(shape, axes, false));
  IndexWalk walk(shape);
  for (int64_t i = 0; i < numel(shape); ++i, walk.next()) {
    map.out_index.push_back(ravel(walk.index(), kept_strides));
    map.within.push_back(ravel(walk.index(), to_block));
  }
  return map;
}

Tensor sum_kernel(const Node& node, const Tensor& x) {
  ReductionMap map = map_reduction(x.shape(), node.attrs.get_ints("axes"));
  Tensor out(node.dtype, node.shape);
  visit_dtype(x.dtype(), [&](auto types) {
    using S = typename decltype(types)::storage;
    using C = typename decltype(types)::compute;
    std::vector<C> acc(static_cast<size_t>(map.out_count), C(0));
    for (int64_t i = 0; i < x.numel(); ++i) {
      auto o = static_cast<size_t>(map.out_index[static_cast<size_t>(i)]);
      acc[o] = wrap_add(static_cast<C>(acc[o]), static_cast<C>(x.data<S>()[i]));
    }
    for (int64_t o = 0; o < map.out_count; ++o) out.data<S>()[o] = S(static_cast<C>(acc[static_cast<size_t>(o)]));
  });
  return out;
}

// reduce_max / reduce_min (`want_index` false) and argmax / argmin (true).
// NaN wins over every number.
Tensor extremum_kernel(const Node& node, const Tensor& x, bool want_max, bool want_index) {
  ReductionMap map = map_reduction(x.shape(), node.attrs.get_ints("axes"));
  Tensor out(node.dtype, node.shape);
  visit_dtype(x.dtype(), [&](auto types) {
    using S = typename decltype(types)::storage;
    using C = typename decltype(types)::compute;
    auto n = static_cast<size_t>(map.out_count);
    std::vector<C> best(n, want_max ? std::numeric_limits<C>::lowest() : std::numeric_limits<C>::max());
    if constexpr (std::numeric_limits<C>::has_infinity) {
      best.assign(n, want_max ? -std::numeric_limits<C>::infinity() : std::numeric_limits<C>::infinity());
    }
    std::vector<int64_t> where(n, 0);
    std::vector<bool> seen(n, false);
    for (int64_t i = 0; i < x.numel(); ++i) {
      auto o = static_cast<size_t>(map.out_index[static_cast<size_t>(i)]);
      C v = static_cast<C>(x.data<S>()[i]);
      bool better = want_max ? v > best[o] : v < best[o];
      if constexpr (std::is_floating_point_v<C>) {
        better = better || (std::isnan(v) && !std::isnan(best[o]));
      }
      if (!seen[o] || better) {
        best[o] = v;
        where[o] = map.within[static_cast<size_t>(i)];
        seen[o] = true;
      }
    }
    for (size_t o = 0; o < n; ++o) {
      if (want_index) out.data<int64_t>()[o] = where[o];
      else out.data<S>()[o] = S(best[o]);
    }
  });
  return out;
}

NodeId keepdims_form(Builder& b, const Node& node, NodeId value) {
  Shape kept = reduced_shape(b.shape(node.inputs[0]), node.attrs.get_ints("axes"), true);
  return b.reshape(value, kept);
}

Grads extremum_grad(Builder& b, const Node& node, NodeId self, NodeId ct) {
  NodeId x = node.inputs[0];
  DType dtype = b.dtype(x);
  NodeId mask = b.cast(b.eq(x, keepdims_form(b, node, self)), dtype);
  NodeId count = b.sum(mask, node.attrs.get_ints("axes"), true);
  return {b.div(b.mul(keepdims_form(b, node, ct), mask), count)};
}

const Primitive kReduce[] = {
    {.id = PrimId::sum,
     .name = "sum",
     .arity = 1,
     .kind = PrimKind::reduction,
     .infer = [](Types args, const Attrs& attrs) { return infer_reduction(args, attrs, "sum", false); },
     .build = build_reduction,
     .grad = [](Builder& b, const Node& n, NodeId, NodeId ct) -> Grads {
       return {b.broadcast(keepdims_form(b, n, ct), b.shape(n.inputs[0]))};
     },
     .batch = batch_reduction,
     .sink = sink_reduction,
     .kernel = [](const Node& n, Args x) { return sum_kernel(n, *x[0]); }},
    {.id = PrimId::reduce_max,
     .name = "reduce_max",
     .arity = 1,
     .kind = PrimKind::reduction,
     .infer = [](Types args, const Attrs& attrs) { return infer_reduction(args, attrs, "reduce_max", false); },
     .build = build_reduction,
     .grad = extremum_grad,
     .batch = batch_reduction,
     .sink = sink_reduction,
     .kernel = [](const Node& n, Args x) { return extremum_kernel(n, *x[0], true, false); }},
    {.id = PrimId::reduce_min,
     .name = "reduce_min",
     .arity = 1,
     .kind = PrimKind::reduction,
     .infer = [](Types args, const Attrs& attrs) { return infer_reduction(args, attrs, "reduce_min", false); },
     .build = build_reduction,
     .grad = extremum_grad,
     .batch = batch_reduction,
     .sink = sink_reduction,
     .kernel = [](const Node& n, Args x) { return extremum_kernel(n, *x[0], false, false); }},
    {.id = PrimId::argmax,
     .name = "argmax",
     .arity = 1,
     .kind = PrimKind::reduction,
     .infer = [](Types args, const Attrs& attrs) { return infer_reduction(args, attrs, "argmax", true); },
     .build = build_reduction,
     .batch = batch_reduction,
     .sink = sink_reduction,
     .kernel = [](const Node& n, Args x) { return extremum_kernel(n, *x[0], true, true); }},
    {.id = PrimId::argmin,
     .name = "argmin",
     .arity = 1,
     .kind = PrimKind::reduction,
     .infer = [](Types args, const Attrs& attrs) { return infer_reduction(args, attrs, "argmin", true); },
     .build = build_reduction,
     .batch = batch_reduction,
     .sink = sink_reduction,
     .kernel = [](const Node& n, Args x) { return extremum_kernel(n, *x[0], false, true); }},
};

}  // namespace

std::span<const Primitive> reduce_primitives() { return kReduce; }

}  // namespace sx::graph::prims
