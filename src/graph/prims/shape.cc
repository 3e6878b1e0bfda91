// Primitives that move elements without computing on them: reshape,
// transpose, broadcast (NumPy rules), slice (start, stop, step per axis),
// concat and pad (low, high and interior padding with a value). Their
// reference kernels copy element bytes, so they serve every dtype alike.
#include <algorithm>
#include <cstring>

#include "graph/prims/common.h"
#include "graph/prims/families.h"

namespace sx::graph::prims {
namespace {

using Grads = std::vector<std::optional<NodeId>>;
using Args = std::span<const Tensor* const>;
using Types = std::span<const ValueType>;

void copy_element(const Tensor& from, int64_t i, Tensor& to, int64_t o) {
  size_t size = dtype_size(from.dtype());
  std::memcpy(to.bytes().data() + o * static_cast<int64_t>(size), from.bytes().data() + i * static_cast<int64_t>(size),
              size);
}

// out[o] = x[source(multi-index of o)] for every output position, where
// source gives x's flat position.
template <class Source>
Tensor gather_elements(const Tensor& x, const Node& node, Source source) {
  Tensor out(node.dtype, node.shape);
  IndexWalk walk(node.shape);
  for (int64_t o = 0; o < out.numel(); ++o, walk.next()) copy_element(x, source(walk.index()), out, o);
  return out;
}

void require_list_length(std::string_view op, std::string_view name, const std::vector<int64_t>& list, size_t rank) {
  if (list.size() != rank) {
    throw ShapeError(
        fmt::format("{}: '{}' has {} entries {} for rank {}", op, name, list.size(), list_str(list), rank));
  }
}

std::vector<int64_t> inverse_permutation(const std::vector<int64_t>& perm) {
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  return inverse;
}

ValueType infer_reshape(Types args, const Attrs& attrs) {
  const Shape& to = attrs.get_ints("shape");
  for (int64_t d : to) {
    if (d < 0) throw ShapeError(fmt::format("reshape: target shape {} has a negative dimension", shape_str(to)));
  }
  int64_t count = checked_numel(to);
  if (count != numel(args[0].shape)) {
    throw ShapeError(fmt::format("reshape: cannot reshape {} ({} elements) into {} ({} elements)",
                                 shape_str(args[0].shape), numel(args[0].shape), shape_str(to), count));
  }
  return {to, args[0].dtype};
}

NodeId build_reshape(Builder& b, const Primitive& prim, std::span<const NodeId> args, const Attrs& attrs) {
  Shape to = attrs.get_ints("shape");
  int64_t known = 1;
  auto unknown = to.end();
  std::string product = fmt::format("the product of the sizes of {}", shape_str(to));
  for (auto it = to.begin(); it != to.end(); ++it) {
    if (*it != -1) known = checked_mul(known, *it, product);
    else if (unknown == to.end()) unknown = it;
    else throw ShapeError(fmt::format("reshape: target shape {} has more than one -1", shape_str(to)));
  }
  int64_t count = numel(b.shape(args[0]));
  if (unknown != to.end()) {
    if (known == 0 || count % known != 0) {
      throw ShapeError(fmt::format("reshape: cannot reshape {} ({} elements) into {}", shape_str(b.shape(args[0])),
                                   count, shape_str(to)));
    }
    *unknown = count / known;
  }
  if (to == b.shape(args[0])) return args[0];
  return b.emit(prim, {args[0]}, {{"shape", to}});
}

ValueType infer_transpose(Types args, const Attrs& attrs) {
  const auto& perm = attrs.get_ints("perm");
  const Shape& in = args[0].shape;
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  bool is_permutation = sorted.size() == in.size();
  for (size_t i = 0; is_permutation && i < sorted.size(); ++i) is_permutation = sorted[i] == static_cast<int64_t>(i);
  if (!is_permutation) {
    throw ShapeError(
        fmt::format("transpose: {} is not a permutation of the axes of {}", list_str(perm), shape_str(in)));
  }
  Shape out;
  for (int64_t p : perm) out.push_back(in[static_cast<size_t>(p)]);
  return {out, args[0].dtype};
}

Grads broadcast_grad(Builder& b, const Node& node, NodeId, NodeId ct) {
  Shape from = b.shape(node.inputs[0]);
  size_t lead = node.shape.size() - from.size();
  std::vector<int64_t> axes;
  for (size_t d = 0; d < node.shape.size(); ++d) {
    if (d < lead || (from[d - lead] == 1 && node.shape[d] != 1)) axes.push_back(static_cast<int64_t>(d));
  }
  NodeId summed = axes.empty() ? ct : b.emit(primitive(PrimId::sum), {ct}, {{"axes", axes}, {"keepdims", int64_t{1}}});
  return {b.reshape(summed, from)};
}

struct SliceSpec {
  std::vector<int64_t> start, stop, step;
};

SliceSpec slice_spec(const Attrs& attrs) {
  return {attrs.get_ints("start"), attrs.get_ints("stop"), attrs.get_ints("step")};
}

ValueType infer_slice(Types args, const Attrs& attrs) {
  const Shape& in = args[0].shape;
  SliceSpec s = slice_spec(attrs);
  require_list_length("slice", "start", s.start, in.size());
  require_list_length("slice", "stop", s.stop, in.size());
  require_list_length("slice", "step", s.step, in.size());
  Shape out;
  for (size_t d = 0; d < in.size(); ++d) {
    if (s.step[d] < 1 || s.start[d] < 0 || s.start[d] > s.stop[d] || s.stop[d] > in[d]) {
      throw ShapeError(fmt::format(
          "slice: axis {} of {}: start {} stop {} step {} is not a slice of it (0 <= start <= stop <= {}, step >= 1)",
          d, shape_str(in), s.start[d], s.stop[d], s.step[d], in[d]));
    }
    // Rounded up without adding the step, which may be as large as a size can be.
    out.push_back(s.stop[d] == s.start[d] ? 0 : (s.stop[d] - s.start[d] - 1) / s.step[d] + 1);
  }
  return {out, args[0].dtype};
}

// Python-like defaults: missing entries take the whole axis, negative start
// and stop count from the end, and both are clamped to the axis.
NodeId build_slice(Builder& b, const Primitive& prim, std::span<const NodeId> args, const Attrs& attrs) {
  Shape in = b.shape(args[0]);
  std::vector<int64_t> start = attrs.get_ints("start"), stop = attrs.get_ints("stop");
  std::vector<int64_t> step = attrs.has("step") ? attrs.get_ints("step") : std::vector<int64_t>{};
  if (start.size() > in.size() || stop.size() > in.size() || step.size() > in.size()) {
    throw ShapeError(fmt::format("slice: more bounds than the {} axes of {}", in.size(), shape_str(in)));
  }
  for (size_t d = 0; d < in.size(); ++d) {
    auto clamp = [&](int64_t v) { return std::clamp(v < 0 ? v + in[d] : v, int64_t{0}, in[d]); };
    if (start.size() > d) start[d] = clamp(start[d]);
    else start.push_back(0);
    if (stop.size() > d) stop[d] = clamp(stop[d]);
    else stop.push_back(in[d]);
    if (step.size() <= d) step.push_back(1);
    stop[d] = std::max(stop[d], start[d]);
    // A step as long as the range or longer takes its first element alone, as a step of 1
    // does: kept as that, the step times a stride fits wherever a kernel multiplies them.
    if (step[d] > 1 && stop[d] - start[d] <= step[d]) {
      stop[d] = std::min(stop[d], start[d] + 1);
      step[d] = 1;
    }
  }
  return b.emit(prim, {args[0]}, {{"start", start}, {"stop", stop}, {"step", step}});
}

ValueType infer_concat(Types args, const Attrs& attrs) {
  const Shape& first = args[0].shape;
  int64_t axis = attrs.get_int("axis");
  if (axis < 0 || axis >= static_cast<int64_t>(first.size())) {
    throw ShapeError(fmt::format("concat: axis {} is out of range for {}", axis, shape_str(first)));
  }
  Shape out = first;
  out[static_cast<size_t>(axis)] = 0;
  std::string joined = fmt::format("the joined length of axis {}", axis);
  for (const ValueType& a : args) {
    Shape other = a.shape;
    bool fits = other.size() == first.size() && a.dtype == args[0].dtype;
    for (size_t d = 0; fits && d < first.size(); ++d) fits = static_cast<int64_t>(d) == axis || other[d] == first[d];
    if (!fits) {
      throw ShapeError(
          fmt::format("concat: cannot join {} and {} along axis {}", type_str(args[0]), type_str(a), axis));
    }
    out[static_cast<size_t>(axis)] =
        checked_add(out[static_cast<size_t>(axis)], other[static_cast<size_t>(axis)], joined);
  }
  return {out, args[0].dtype};
}

Tensor concat_kernel(const Node& node, Args xs) {
  Tensor out(node.dtype, node.shape);
  auto axis = static_cast<size_t>(node.attrs.get_int("axis"));
  std::vector<int64_t> strides = row_major_strides(node.shape);
  int64_t offset = 0;
  for (const Tensor* x : xs) {
    IndexWalk walk(x->shape());
    for (int64_t i = 0; i < x->numel(); ++i, walk.next()) {
      copy_element(*x, i, out, ravel(walk.index(), strides) + offset * strides[axis]);
    }
    offset += x->shape()[axis];
  }
  return out;
}

ValueType infer_pad(Types args, const Attrs& attrs) {
  const Shape& in = args[0].shape;
  const auto &low = attrs.get_ints("low"), &high = attrs.get_ints("high"), &interior = attrs.get_ints("interior");
  require_list_length("pad", "low", low, in.size());
  require_list_length("pad", "high", high, in.size());
  require_list_length("pad", "interior", interior, in.size());
  attrs.get_double("value");
  Shape out;
  for (size_t d = 0; d < in.size(); ++d) {
    if (low[d] < 0 || high[d] < 0 || interior[d] < 0) {
      throw ShapeError(fmt::format("pad: padding of axis {} must not be negative, got low {} high {} interior {}", d,
                                   low[d], high[d], interior[d]));
    }
    std::string padded = fmt::format("the padded length of axis {}", d);
    int64_t between = checked_mul(std::max<int64_t>(in[d] - 1, 0), interior[d], padded);
    out.push_back(checked_add(checked_add(checked_add(in[d], low[d], padded), high[d], padded), between, padded));
  }
  return {out, args[0].dtype};
}

Tensor pad_kernel(const Node& node, const Tensor& x) {
  Tensor value = Tensor::scalar(node.dtype, node.attrs.get_double("value"));
  Tensor out(node.dtype, node.shape);
  for (int64_t o = 0; o < out.numel(); ++o) copy_element(value, 0, out, o);
  const auto &low = node.attrs.get_ints("low"), &interior = node.attrs.get_ints("interior");
  std::vector<int64_t> strides = row_major_strides(node.shape);
  IndexWalk walk(x.shape());
  for (int64_t i = 0; i < x.numel(); ++i, walk.next()) {
    int64_t o = 0;
    for (size_t d = 0; d < strides.size(); ++d) o += (low[d] + walk.index()[d] * (interior[d] + 1)) * strides[d];
    copy_element(x, i, out, o);
  }
  return out;
}

// The sinking rules: each keeps the place's axis as one axis of its input
// and moves the rest as it did.
using MaybeSinking = std::optional<Sinking>;

std::vector<int64_t> one_at(std::vector<int64_t> values, int64_t axis) {
  values[static_cast<size_t>(axis)] = 1;
  return values;
}

// An axis that a reshape keeps whole, with as many elements before it in the
// input as in the output, is the same positions in both.
MaybeSinking sink_reshape(const Node& node, Types args, int64_t axis) {
  const Shape& in = args[0].shape;
  int64_t before = numel(Shape(node.shape.begin(), node.shape.begin() + axis));
  int64_t in_before = 1;
  for (size_t d = 0; d < in.size(); in_before *= in[d], ++d) {
    if (in_before == before && in[d] == node.shape[static_cast<size_t>(axis)]) {
      return Sinking{.input_axes = {static_cast<int64_t>(d)}, .attrs = {{"shape", one_at(node.shape, axis)}}};
    }
  }
  return std::nullopt;
}

MaybeSinking sink_transpose(const Node& node, Types, int64_t axis) {
  return Sinking{.input_axes = {node.attrs.get_ints("perm")[static_cast<size_t>(axis)]}, .attrs = node.attrs};
}

// An axis the broadcast adds, or stretches from length 1, reads the input
// whole; another is the input's.
MaybeSinking sink_broadcast(const Node& node, Types args, int64_t axis) {
  int64_t lead = static_cast<int64_t>(node.shape.size() - args[0].shape.size());
  std::optional<int64_t> input_axis;
  if (axis >= lead && args[0].shape[static_cast<size_t>(axis - lead)] != 1) input_axis = axis - lead;
  return Sinking{.input_axes = {input_axis}, .attrs = {{"shape", one_at(node.shape, axis)}}};
}

MaybeSinking sink_slice(const Node& node, Types args, int64_t axis) {
  SliceSpec s = slice_spec(node.attrs);
  auto a = static_cast<size_t>(axis);
  if (s.start[a] != 0 || s.stop[a] != args[0].shape[a] || s.step[a] != 1) return std::nullopt;
  return Sinking{.input_axes = {axis}, .attrs = {{"start", s.start}, {"stop", one_at(s.stop, axis)}, {"step", s.step}}};
}

MaybeSinking sink_concat(const Node& node, Types args, int64_t axis) {
  if (node.attrs.get_int("axis") == axis) return std::nullopt;
  return Sinking{.input_axes = std::vector<std::optional<int64_t>>(args.size(), axis), .attrs = node.attrs};
}

MaybeSinking sink_pad(const Node& node, Types, int64_t axis) {
  for (const char* name : {"low", "high", "interior"}) {
    if (node.attrs.get_ints(name)[static_cast<size_t>(axis)] != 0) return std::nullopt;
  }
  return Sinking{.input_axes = {axis}, .attrs = node.attrs};
}

std::vector<int64_t> with_front(int64_t front, std::vector<int64_t> rest) {
  rest.insert(rest.begin(), front);
  return rest;
}

const Primitive kShape[] = {
    {.id = PrimId::reshape,
     .name = "reshape",
     .arity = 1,
     .kind = PrimKind::movement,
     .infer = infer_reshape,
     .build = build_reshape,
     .grad = [](Builder& b, const Node& n, NodeId, NodeId ct) -> Grads {
       return {b.reshape(ct, b.shape(n.inputs[0]))};
     },
     .batch = [](Builder& b, const Node& n, std::span<const NodeId> args, std::span<const bool>,
                 int64_t batch) { return b.reshape(args[0], with_front(batch, n.shape)); },
     .sink = sink_reshape,
     .kernel = bytes_kernel},
    {.id = PrimId::transpose,
     .name = "transpose",
     .arity = 1,
     .kind = PrimKind::movement,
     .infer = infer_transpose,
     .grad = [](Builder& b, const Node& n, NodeId, NodeId ct) -> Grads {
       return {b.transpose(ct, inverse_permutation(n.attrs.get_ints("perm")))};
     },
     .batch = [](Builder& b, const Node& n, std::span<const NodeId> args, std::span<const bool>,
                 int64_t) { return b.transpose(args[0], with_front(0, shift_axes(n.attrs.get_ints("perm"), 1))); },
     .sink = sink_transpose,
     .kernel =
         [](const Node& n, Args x) {
           const auto& perm = n.attrs.get_ints("perm");
           std::vector<int64_t> strides = row_major_strides(x[0]->shape());
           return gather_elements(*x[0], n, [&](const std::vector<int64_t>& out_index) {
             int64_t flat = 0;
             for (size_t i = 0; i < perm.size(); ++i) flat += out_index[i] * strides[static_cast<size_t>(perm[i])];
             return flat;
           });
         }},
    {.id = PrimId::broadcast,
     .name = "broadcast",
     .arity = 1,
     .kind = PrimKind::movement,
     .infer =
         [](Types args, const Attrs& attrs) {
           const Shape& to = attrs.get_ints("shape");
           if (!broadcasts_to(args[0].shape, to)) {
             throw ShapeError(
                 fmt::format("broadcast: cannot broadcast {} to {}", shape_str(args[0].shape), shape_str(to)));
           }
           return ValueType{to, args[0].dtype};
         },
     .grad = broadcast_grad,
     .batch =
         [](Builder& b, const Node& n, std::span<const NodeId> args, std::span<const bool>, int64_t batch) {
           Shape from = b.shape(args[0]);
           Shape aligned{batch};
           aligned.insert(aligned.end(), n.shape.size() + 1 - from.size(), 1);
           aligned.insert(aligned.end(), from.begin() + 1, from.end());
           return b.broadcast_to(b.reshape(args[0], aligned), with_front(batch, n.shape));
         },
     .sink = sink_broadcast,
     .kernel =
         [](const Node& n, Args x) {
           const Shape& from = x[0]->shape();
           size_t lead = n.shape.size() - from.size();
           std::vector<int64_t> strides = row_major_strides(from);
           return gather_elements(*x[0], n, [&](const std::vector<int64_t>& out_index) {
             int64_t flat = 0;
             for (size_t d = 0; d < from.size(); ++d) flat += from[d] == 1 ? 0 : out_index[lead + d] * strides[d];
             return flat;
           });
         }},
    {.id = PrimId::slice,
     .name = "slice",
     .arity = 1,
     .kind = PrimKind::movement,
     .infer = infer_slice,
     .build = build_slice,
     .grad = [](Builder& b, const Node& n, NodeId, NodeId ct) -> Grads {
       Shape in = b.shape(n.inputs[0]);
       if (numel(n.shape) == 0) return {b.zeros(in, n.dtype)};
       SliceSpec s = slice_spec(n.attrs);
       std::vector<int64_t> high, interior;
       for (size_t d = 0; d < in.size(); ++d) {
         high.push_back(in[d] - s.start[d] - (n.shape[d] - 1) * s.step[d] - 1);
         interior.push_back(s.step[d] - 1);
       }
       return {b.pad(ct, s.start, high, interior, 0.0)};
     },
     .batch =
         [](Builder& b, const Node& n, std::span<const NodeId> args, std::span<const bool>, int64_t batch) {
           SliceSpec s = slice_spec(n.attrs);
           return b.emit(*n.prim, {args[0]},
                         {{"start", with_front(0, s.start)},
                          {"stop", with_front(batch, s.stop)},
                          {"step", with_front(1, s.step)}});
         },
     .sink = sink_slice,
     .kernel =
         [](const Node& n, Args x) {
           SliceSpec s = slice_spec(n.attrs);
           std::vector<int64_t> strides = row_major_strides(x[0]->shape());
           return gather_elements(*x[0], n, [&](const std::vector<int64_t>& out_index) {
             int64_t flat = 0;
             for (size_t d = 0; d < out_index.size(); ++d) flat += (s.start[d] + out_index[d] * s.step[d]) * strides[d];
             return flat;
           });
         }},
    {.id = PrimId::concat,
     .name = "concat",
     .arity = -1,
     .kind = PrimKind::movement,
     .infer = infer_concat,
     .build =
         [](Builder& b, const Primitive& prim, std::span<const NodeId> args, const Attrs& attrs) {
           int64_t axis =
               normalize_axis(attrs.get_int("axis"), static_cast<int64_t>(b.shape(args[0]).size()), "concat");
           return b.emit(prim, b.promote_args(args), {{"axis", axis}});
         },
     .grad = [](Builder& b, const Node& n, NodeId, NodeId ct) -> Grads {
       auto axis = static_cast<size_t>(n.attrs.get_int("axis"));
       Grads grads;
       int64_t offset = 0;
       for (NodeId in : n.inputs) {
         std::vector<int64_t> start(n.shape.size(), 0), stop = n.shape;
         start[axis] = offset;
         offset += b.shape(in)[axis];
         stop[axis] = offset;
         grads.push_back(b.slice(ct, start, stop));
       }
       return grads;
     },
     .batch =
         [](Builder& b, const Node& n, std::span<const NodeId> args, std::span<const bool> batched, int64_t batch) {
           std::vector<NodeId> xs;
           for (size_t i = 0; i < args.size(); ++i) xs.push_back(to_batched(b, args[i], batched[i], batch));
           return b.emit(*n.prim, xs, {{"axis", n.attrs.get_int("axis") + 1}});
         },
     .sink = sink_concat,
     .kernel = concat_kernel},
    {.id = PrimId::pad,
     .name = "pad",
     .arity = 1,
     .kind = PrimKind::movement,
     .infer = infer_pad,
     .build =
         [](Builder& b, const Primitive& prim, std::span<const NodeId> args, const Attrs& attrs) {
           Attrs canonical = attrs;
           const Shape& in = b.shape(args[0]);
           std::vector<int64_t> interior = attrs.has("interior") ? attrs.get_ints("interior") : std::vector<int64_t>{};
           if (interior.empty()) interior.assign(in.size(), 0);
           // An axis of one element or none has nothing between its elements to pad: kept as
           // 0, the interior plus 1 fits wherever a kernel or the gradient steps by it.
           for (size_t d = 0; d < std::min(in.size(), interior.size()); ++d) {
             if (in[d] <= 1 && interior[d] > 0) interior[d] = 0;
           }
           canonical.set("interior", interior);
           if (!attrs.has("value")) canonical.set("value", 0.0);
           canonical.set("value", canonical.get_double("value"));
           return b.emit(prim, {args[0]}, canonical);
         },
     .grad = [](Builder& b, const Node& n, NodeId, NodeId ct) -> Grads {
       Shape in = b.shape(n.inputs[0]);
       if (numel(in) == 0) return {b.zeros(in, n.dtype)};
       const auto &low = n.attrs.get_ints("low"), &interior = n.attrs.get_ints("interior");
       std::vector<int64_t> stop, step;
       for (size_t d = 0; d < in.size(); ++d) {
         stop.push_back(low[d] + (in[d] - 1) * (interior[d] + 1) + 1);
         step.push_back(interior[d] + 1);
       }
       return {b.slice(ct, low, stop, step)};
     },
     .batch =
         [](Builder& b, const Node& n, std::span<const NodeId> args, std::span<const bool>, int64_t) {
           Attrs attrs = n.attrs;
           for (const char* name : {"low", "high", "interior"}) attrs.set(name, with_front(0, n.attrs.get_ints(name)));
           return b.emit(*n.prim, {args[0]}, attrs);
         },
     .sink = sink_pad,
     .kernel = [](const Node& n, Args x) { return pad_kernel(n, *x[0]); }},
};

}  // namespace

std::span<const Primitive> shape_primitives() { return kShape; }

}  // namespace sx::graph::prims
