// The composites of neural networks: softmax, log_softmax, layer_norm, rms_norm, gelu,
// cross_entropy and attention (primitive.h, composite.h). Each decomposition builds the
// nodes sexpgpu/ops and sexpgpu/nn built for the operation before it was a primitive, in
// the same order, literals included: a graph whose composites are expanded is the graph
// the library traced, so the cpu device's fused programs, and every bit, stay as they were.
// Statements keep that order where C++ leaves the order of a call's arguments open.
#include "graph/composite.h"

#include <cmath>

#include "graph/prims/common.h"
#include "graph/prims/families.h"

namespace sx::graph::prims {
namespace {

using Args = std::span<const NodeId>;
using Values = std::vector<NodeId>;

void require_float(const Builder& b, NodeId x, std::string_view op, std::string_view what) {
  if (!is_float(b.dtype(x))) {
    throw ShapeError(fmt::format("{}: needs floating-point {}, got {}", op, what, dtype_name(b.dtype(x))));
  }
}

void require_inputs(Args args, size_t count, std::string_view op) {
  if (args.size() != count) throw ShapeError(fmt::format("{}: takes {} inputs here, got {}", op, count, args.size()));
}

// The axes of a softmax: all of them when none are given, else normalized and sorted.
NodeId build_over_axes(Builder& b, const Primitive& prim, Args args, const Attrs& attrs) {
  auto rank = static_cast<int64_t>(b.shape(args[0]).size());
  std::vector<int64_t> axes = attrs.has("axes") ? attrs.get_ints("axes") : std::vector<int64_t>{-1};
  if (axes.empty()) {
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  return b.emit(prim, {args.begin(), args.end()}, {{"axes", normalize_axes(axes, rank, prim.name)}});
}

// (/ e (sum e :axis axis :keepdims true)), e = (exp (- x (stop-gradient (reduce-max x ...))))
Values softmax_values(Builder& b, Args args, const Attrs& attrs) {
  NodeId x = args[0];
  require_float(b, x, "softmax", "operands");
  const std::vector<int64_t>& axes = attrs.get_ints("axes");
  NodeId e = b.exp(b.sub(x, b.stop_gradient(b.reduce_max(x, axes, true))));
  return {b.div(e, b.sum(e, axes, true))};
}

// (- x (logsumexp x :axis axis :keepdims true)), the shift by the maximum held constant
Values log_softmax_values(Builder& b, Args args, const Attrs& attrs) {
  NodeId x = args[0];
  require_float(b, x, "log_softmax", "operands");
  const std::vector<int64_t>& axes = attrs.get_ints("axes");
  NodeId m = b.stop_gradient(b.reduce_max(x, axes, true));
  NodeId logsumexp = b.add(m, b.log(b.sum(b.exp(b.sub(x, m)), axes, true)));
  return {b.sub(x, logsumexp)};
}

// (mean x :axis -1 :keepdims true)
NodeId last_axis_mean(Builder& b, NodeId x) {
  NodeId total = b.sum(x, {-1}, true);
  return b.div(total, b.literal(static_cast<double>(b.shape(x).back())));
}

// x * (rsqrt (+ (mean squares) eps)) for the squares of x (rms) or of x centered (layer)
NodeId scaled_to_unit(Builder& b, NodeId x, double eps) {
  NodeId mean_square = last_axis_mean(b, b.mul(x, x));
  NodeId inverse = b.rsqrt(b.add(mean_square, b.literal(eps)));
  return b.mul(x, inverse);
}

void require_normalizable(const Builder& b, NodeId x, std::string_view op) {
  require_float(b, x, op, "operands");
  if (b.shape(x).empty()) throw ShapeError(fmt::format("{}: needs an axis to normalize, got a scalar", op));
}

// inputs: x, then the weight and the bias where attrs `weight` and `bias` are 1
Values layer_norm_values(Builder& b, Args args, const Attrs& attrs) {
  const bool weight = attrs.get_int("weight") != 0, bias = attrs.get_int("bias") != 0;
  require_inputs(args, 1 + weight + bias, "layer_norm");
  NodeId x = args[0];
  require_normalizable(b, x, "layer_norm");
  NodeId mean = last_axis_mean(b, x);
  NodeId y = scaled_to_unit(b, b.sub(x, mean), attrs.get_double("eps"));
  if (weight) y = b.mul(y, args[1]);
  if (bias) y = b.add(y, args[weight ? 2 : 1]);
  return {y};
}

// inputs: x, then the weight where attr `weight` is 1
Values rms_norm_values(Builder& b, Args args, const Attrs& attrs) {
  const bool weight = attrs.get_int("weight") != 0;
  require_inputs(args, 1 + weight, "rms_norm");
  NodeId x = args[0];
  require_normalizable(b, x, "rms_norm");
  NodeId y = scaled_to_unit(b, x, attrs.get_double("eps"));
  if (weight) y = b.mul(y, args[1]);
  return {y};
}

// form "tanh": (* 0.5 x (+ 1 (tanh (* 0.7978845608028654 (+ x (* 0.044715 x x x))))))
// form "erf":  (* 0.5 x (+ 1 (erf (* x 0.7071067811865476))))
Values gelu_values(Builder& b, Args args, const Attrs& attrs) {
  NodeId x = args[0];
  require_float(b, x, "gelu", "operands");
  const std::string& form = attrs.get_string("form");
  NodeId curve;
  if (form == "tanh") {
    NodeId cube = b.mul(b.mul(b.mul(b.literal(0.044715), x), x), x);
    NodeId inner = b.add(x, cube);
    curve = b.tanh(b.mul(b.literal(0.7978845608028654), inner));
  } else if (form == "erf") {
    curve = b.erf(b.mul(x, b.literal(0.7071067811865476)));
  } else {
    throw ShapeError(fmt::format("gelu: the form is \"tanh\" or \"erf\", not \"{}\"", form));
  }
  NodeId one_plus = b.add(b.literal_int(1), curve);
  return {b.mul(b.mul(b.literal(0.5), x), one_plus)};
}

// The mean over every row of -log softmax(logits)[target]; a target that is not a class
// stops the run (a checked one_hot).
Values cross_entropy_values(Builder& b, Args args, const Attrs&) {
  NodeId logits = args[0], targets = args[1];
  require_float(b, logits, "cross_entropy", "logits");
  const Shape shape = b.shape(logits);
  if (shape.empty()) throw ShapeError("cross_entropy: needs logits with a class axis, got a scalar");
  if (b.shape(targets) != Shape(shape.begin(), shape.end() - 1)) {
    throw ShapeError(fmt::format("cross_entropy: targets {} do not fit logits {}: one target per row of classes",
                                 shape_str(b.shape(targets)), shape_str(shape)));
  }
  NodeId one_hots = b.one_hot(targets, shape.back(), b.dtype(logits), true);
  NodeId log_probabilities = b.op("log_softmax", {logits}, {{"axes", std::vector<int64_t>{-1}}});
  NodeId picked = b.sum(b.mul(log_probabilities, one_hots), {-1});
  NodeId total = b.sum(picked, {});
  return {b.neg(b.div(total, b.literal(static_cast<double>(numel(b.shape(picked))))))};
}

// softmax(q k^T / sqrt(d), masked) v over the last two axes; masked places score -1e9.
// inputs: q, k, v, then a bool mask (true: may attend) that broadcasts to the scores;
// attr `causal` 1 masks each query's later keys as well.
Values attention_values(Builder& b, Args args, const Attrs& attrs) {
  if (args.size() != 3 && args.size() != 4) {
    throw ShapeError(fmt::format("attention: takes q, k, v and an optional mask, got {} inputs", args.size()));
  }
  NodeId q = args[0], k = args[1], v = args[2];
  require_float(b, q, "attention", "queries");
  const Shape q_shape = b.shape(q);
  if (q_shape.size() < 2 || b.shape(k).size() != q_shape.size()) {
    throw ShapeError(fmt::format("attention: needs q and k of one rank, 2 or more, got {} and {}", shape_str(q_shape),
                                 shape_str(b.shape(k))));
  }
  std::vector<int64_t> swap_last(q_shape.size());
  for (size_t d = 0; d < swap_last.size(); ++d) swap_last[d] = static_cast<int64_t>(d);
  std::swap(swap_last[swap_last.size() - 1], swap_last[swap_last.size() - 2]);
  NodeId products = b.matmul(q, b.transpose(k, swap_last));
  NodeId scores = b.div(products, b.literal(std::sqrt(static_cast<double>(q_shape.back()))));
  if (attrs.get_int("causal") != 0) {
    const Shape s = b.shape(scores);
    const Shape square{s[s.size() - 2], s[s.size() - 1]};
    NodeId key = b.iota(square, 1, DType::i32);
    NodeId query = b.iota(square, 0, DType::i32);
    NodeId may_attend = b.le(key, query);
    scores = b.where(may_attend, scores, b.literal(-1e9));
  }
  if (args.size() == 4) scores = b.where(args[3], scores, b.literal(-1e9));
  NodeId weights = b.op("softmax", {scores}, {{"axes", std::vector<int64_t>{-1}}});
  return {b.matmul(weights, v)};
}

// Batching: a rule that gives the batch axis to every input and shifts the node's axes.
NodeId batch_over_axes(Builder& b, const Node& node, Args args, std::span<const bool> batched, int64_t batch_size) {
  Attrs attrs = node.attrs;
  attrs.set("axes", shift_axes(node.attrs.get_ints("axes"), 1));
  return b.emit(*node.prim, {to_batched(b, args[0], batched[0], batch_size)}, attrs);
}

// A norm over the last axis is one node over the batch too, unless its weight or bias
// differs by row.
NodeId batch_norm(Builder& b, const Node& node, Args args, std::span<const bool> batched, int64_t batch_size) {
  for (size_t i = 1; i < args.size(); ++i) {
    if (batched[i]) return batch_by_unrolling(b, node, args, batched, batch_size);
  }
  std::vector<NodeId> xs{args.begin(), args.end()};
  xs[0] = to_batched(b, args[0], batched[0], batch_size);
  return b.emit(*node.prim, xs, node.attrs);
}

// Attention over the last two axes is one node over the batch too, unless its mask
// differs by row.
NodeId batch_attention(Builder& b, const Node& node, Args args, std::span<const bool> batched, int64_t batch_size) {
  if (args.size() == 4 && batched[3]) return batch_by_unrolling(b, node, args, batched, batch_size);
  std::vector<NodeId> xs{args.begin(), args.end()};
  for (size_t i = 0; i < 3; ++i) xs[i] = to_batched(b, args[i], batched[i], batch_size);
  return b.emit(*node.prim, xs, node.attrs);
}

const Primitive kComposite[] = {
    {.id = PrimId::softmax,
     .name = "softmax",
     .arity = 1,
     .kind = PrimKind::composite,
     .infer = infer_composite<PrimId::softmax>,
     .build = build_over_axes,
     .batch = batch_over_axes,
     .kernel = run_decomposition,
     .decompose = softmax_values,
     .grad_by_decomposition = true},
    {.id = PrimId::log_softmax,
     .name = "log_softmax",
     .arity = 1,
     .kind = PrimKind::composite,
     .infer = infer_composite<PrimId::log_softmax>,
     .build = build_over_axes,
     .batch = batch_over_axes,
     .kernel = run_decomposition,
     .decompose = log_softmax_values,
     .grad_by_decomposition = true},
    {.id = PrimId::layer_norm,
     .name = "layer_norm",
     .arity = -1,
     .kind = PrimKind::composite,
     .infer = infer_composite<PrimId::layer_norm>,
     .batch = batch_norm,
     .kernel = run_decomposition,
     .decompose = layer_norm_values,
     .grad_by_decomposition = true},
    {.id = PrimId::rms_norm,
     .name = "rms_norm",
     .arity = -1,
     .kind = PrimKind::composite,
     .infer = infer_composite<PrimId::rms_norm>,
     .batch = batch_norm,
     .kernel = run_decomposition,
     .decompose = rms_norm_values,
     .grad_by_decomposition = true},
    {.id = PrimId::gelu,
     .name = "gelu",
     .arity = 1,
     .kind = PrimKind::composite,
     .infer = infer_composite<PrimId::gelu>,
     .batch = batch_elementwise,
     .kernel = run_decomposition,
     .decompose = gelu_values,
     .grad_by_decomposition = true},
    {.id = PrimId::cross_entropy,
     .name = "cross_entropy",
     .arity = 2,
     .kind = PrimKind::composite,
     .infer = infer_composite<PrimId::cross_entropy>,
     .batch = batch_by_unrolling,
     .kernel = run_decomposition,
     .decompose = cross_entropy_values,
     .grad_by_decomposition = true},
    {.id = PrimId::attention,
     .name = "attention",
     .arity = -1,
     .kind = PrimKind::composite,
     .infer = infer_composite<PrimId::attention>,
     .batch = batch_attention,
     .kernel = run_decomposition,
     .decompose = attention_values,
     .grad_by_decomposition = true},
};

}  // namespace

std::span<const Primitive> composite_primitives() { return kComposite; }

}  // namespace sx::graph::prims
