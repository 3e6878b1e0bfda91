// The optimizers' updates of one parameter as composites (primitive.h, composite.h):
// adamw and sgd, whose new parameter and state are several values of one node, and
// `part`, which takes one of them. What each computes, and why in this order, is
// train/optimizer.h's: the decompositions build the nodes build_update built for a
// parameter before they were primitives. Every operand is f32; the scalars are [] f32.
#include "graph/composite.h"
#include "graph/prims/common.h"
#include "graph/prims/families.h"

namespace sx::graph::prims {
namespace {

using Args = std::span<const NodeId>;
using Values = std::vector<NodeId>;

// What an update's operand is: f32 of the parameter's shape, an f32 scalar, or a bool scalar.
enum class Operand { tensor, scalar, flag };

void require_operands(const Builder& b, Args args, const std::vector<Operand>& kinds, std::string_view op) {
  if (args.size() != kinds.size()) {
    throw ShapeError(fmt::format("{}: takes {} operands here, got {}", op, kinds.size(), args.size()));
  }
  for (size_t i = 0; i < args.size(); ++i) {
    const ValueType want{kinds[i] == Operand::tensor ? b.shape(args[0]) : Shape{},
                         kinds[i] == Operand::flag ? DType::boolean : DType::f32};
    if (b.shape(args[i]) != want.shape || b.dtype(args[i]) != want.dtype) {
      throw ShapeError(
          fmt::format("{}: operand {} must be {}, got {}", op, i, type_str(want), type_str(b.type(args[i]))));
    }
  }
}

// inputs: parameter, gradient, m, v, beta1, 1 - beta1, beta2, 1 - beta2,
// sqrt(1 - beta2^t), eps, -lr / (1 - beta1^t), then 1 - lr * weight_decay where attr
// `weight_decay` is 1. Values: the new parameter, m and v.
Values adamw_values(Builder& b, Args args, const Attrs& attrs) {
  const bool decays = attrs.get_int("weight_decay") != 0;
  std::vector<Operand> kinds(4, Operand::tensor);
  kinds.resize(decays ? 12 : 11, Operand::scalar);
  require_operands(b, args, kinds, "adamw");
  NodeId p = args[0], g = args[1], m0 = args[2], v0 = args[3];
  NodeId beta1 = args[4], rest1 = args[5], beta2 = args[6], rest2 = args[7];
  NodeId bias2_sqrt = args[8], eps = args[9], neg_step = args[10];
  if (decays) p = b.mul(p, args[11]);
  NodeId m_kept = b.mul(m0, beta1);
  NodeId m_new = b.mul(rest1, g);
  NodeId m = b.add(m_kept, m_new);
  NodeId v_kept = b.mul(v0, beta2);
  NodeId v_new = b.mul(b.mul(rest2, g), g);
  NodeId v = b.add(v_kept, v_new);
  NodeId denom = b.add(b.div(b.sqrt(v), bias2_sqrt), eps);
  return {b.add(p, b.div(b.mul(neg_step, m), denom)), m, v};
}

// inputs: parameter, gradient, -lr; then weight_decay where attr `weight_decay` is 1; then
// the momentum buffer, the momentum and `first` (bool: the run's first step) where attr
// `momentum` is 1. Values: the new parameter, and the new buffer with momentum.
Values sgd_values(Builder& b, Args args, const Attrs& attrs) {
  const bool decays = attrs.get_int("weight_decay") != 0, momentum = attrs.get_int("momentum") != 0;
  std::vector<Operand> kinds{Operand::tensor, Operand::tensor, Operand::scalar};
  if (decays) kinds.push_back(Operand::scalar);
  if (momentum) kinds.insert(kinds.end(), {Operand::tensor, Operand::scalar, Operand::flag});
  require_operands(b, args, kinds, "sgd");
  NodeId p = args[0], g = args[1], neg_step = args[2];
  if (decays) g = b.add(g, b.mul(args[3], p));
  if (momentum) {
    const size_t at = decays ? 4 : 3;
    NodeId buffer = args[at], factor = args[at + 1], first = args[at + 2];
    g = b.where(first, g, b.add(b.mul(buffer, factor), g));
  }
  NodeId updated = b.add(p, b.mul(neg_step, g));
  if (momentum) return {updated, g};
  return {updated};
}

// Value `index` of a composite of several values: x[index] of the stacked node.
Values part_values(Builder& b, Args args, const Attrs& attrs) {
  const Shape stack = b.shape(args[0]);
  const int64_t index = attrs.get_int("index");
  if (stack.empty() || index < 0 || index >= stack[0]) {
    throw ShapeError(fmt::format("part: index {} is outside the {} values of {}", index, stack.empty() ? 0 : stack[0],
                                 shape_str(stack)));
  }
  NodeId row = b.slice(args[0], {index}, {index + 1});
  return {b.reshape(row, Shape(stack.begin() + 1, stack.end()))};
}

// Each row's part: the values stacked on axis 1 of the batched node.
NodeId batch_part(Builder& b, const Node& node, Args args, std::span<const bool> batched, int64_t batch_size) {
  NodeId x = to_batched(b, args[0], batched[0], batch_size);
  const Shape shape = b.shape(x);
  const int64_t index = node.attrs.get_int("index");
  std::vector<int64_t> start{0, index}, stop{shape[0], index + 1};
  Shape rows = shape;
  rows.erase(rows.begin() + 1);
  return b.reshape(b.slice(x, start, stop), rows);
}

const Primitive kUpdate[] = {
    {.id = PrimId::adamw,
     .name = "adamw",
     .arity = -1,
     .kind = PrimKind::composite,
     .infer = infer_composite<PrimId::adamw>,
     .batch = batch_by_unrolling,
     .kernel = run_decomposition,
     .decompose = adamw_values},
    {.id = PrimId::sgd,
     .name = "sgd",
     .arity = -1,
     .kind = PrimKind::composite,
     .infer = infer_composite<PrimId::sgd>,
     .batch = batch_by_unrolling,
     .kernel = run_decomposition,
     .decompose = sgd_values},
    {.id = PrimId::part,
     .name = "part",
     .arity = 1,
     .kind = PrimKind::composite,
     .infer = infer_composite<PrimId::part>,
     .batch = batch_part,
     .kernel = run_decomposition,
     .decompose = part_values,
     .grad_by_decomposition = true},
};

}  // namespace

std::span<const Primitive> update_primitives() { return kUpdate; }

}  // namespace sx::graph::prims
