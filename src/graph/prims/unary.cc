// Elementwise unary primitives: neg, abs, sign, exp, log, sqrt, rsqrt, sin,
// cos, tanh, erf, logistic, logical_not and stop_gradient. Each row holds the primitive's
// shape/dtype rule, gradient, batching rule and reference kernel; the kernel's
// formula is in scalar.h, where the devices' kernels find it too.
#include <cmath>
#include <numbers>

#include "graph/prims/common.h"
#include "graph/prims/families.h"

namespace sx::graph::prims {
namespace {

using Grads = std::vector<std::optional<NodeId>>;
using Types = std::span<const ValueType>;

template <bool (*Accepts)(DType)>
ValueType infer_unary(std::string_view op, std::span<const ValueType> args, std::string_view what) {
  require_dtypes(op, args, Accepts, what);
  return args[0];
}

ValueType infer_float(std::span<const ValueType> args, std::string_view op) {
  return infer_unary<is_float>(op, args, "floating-point");
}

ValueType infer_numeric(std::span<const ValueType> args, std::string_view op) {
  return infer_unary<is_numeric>(op, args, "numeric");
}

const Primitive kUnary[] = {
    {.id = PrimId::neg,
     .name = "neg",
     .arity = 1,
     .infer = [](Types args, const Attrs&) { return infer_numeric(args, "neg"); },
     .grad = [](Builder& b, const Node&, NodeId, NodeId ct) -> Grads { return {b.neg(ct)}; },
     .batch = batch_elementwise,
     .sink = sink_elementwise,
     .kernel = unary_kernel<scalar::Neg>},
    {.id = PrimId::abs,
     .name = "abs",
     .arity = 1,
     .infer = [](Types args, const Attrs&) { return infer_numeric(args, "abs"); },
     .grad = [](Builder& b, const Node& n, NodeId, NodeId ct) -> Grads { return {b.mul(ct, b.sign(n.inputs[0]))}; },
     .batch = batch_elementwise,
     .sink = sink_elementwise,
     .kernel = unary_kernel<scalar::Abs>},
    {.id = PrimId::sign,
     .name = "sign",
     .arity = 1,
     .infer = [](Types args, const Attrs&) { return infer_numeric(args, "sign"); },
     .batch = batch_elementwise,
     .sink = sink_elementwise,
     .kernel = unary_kernel<scalar::Sign>},
    {.id = PrimId::exp,
     .name = "exp",
     .arity = 1,
     .cost = ElementCost::costly,
     .infer = [](Types args, const Attrs&) { return infer_float(args, "exp"); },
     .grad = [](Builder& b, const Node&, NodeId self, NodeId ct) -> Grads { return {b.mul(ct, self)}; },
     .batch = batch_elementwise,
     .sink = sink_elementwise,
     .kernel = unary_kernel<scalar::Exp>},
    {.id = PrimId::log,
     .name = "log",
     .arity = 1,
     .cost = ElementCost::costly,
     .infer = [](Types args, const Attrs&) { return infer_float(args, "log"); },
     .grad = [](Builder& b, const Node& n, NodeId, NodeId ct) -> Grads { return {b.div(ct, n.inputs[0])}; },
     .batch = batch_elementwise,
     .sink = sink_elementwise,
     .kernel = unary_kernel<scalar::Log>},
    {.id = PrimId::sqrt,
     .name = "sqrt",
     .arity = 1,
     .cost = ElementCost::costly,
     .infer = [](Types args, const Attrs&) { return infer_float(args, "sqrt"); },
     .grad = [](Builder& b, const Node&, NodeId self, NodeId ct) -> Grads {
       return {b.div(ct, b.mul(b.literal(2.0), self))};
     },
     .batch = batch_elementwise,
     .sink = sink_elementwise,
     .kernel = unary_kernel<scalar::Sqrt>},
    {.id = PrimId::rsqrt,
     .name = "rsqrt",
     .arity = 1,
     .cost = ElementCost::costly,
     .infer = [](Types args, const Attrs&) { return infer_float(args, "rsqrt"); },
     .grad = [](Builder& b, const Node& n, NodeId self, NodeId ct) -> Grads {
       // d/dx x^(-1/2) = -(1/2) x^(-1/2) / x
       return {b.mul(ct, b.div(b.mul(b.literal(-0.5), self), n.inputs[0]))};
     },
     .batch = batch_elementwise,
     .sink = sink_elementwise,
     .kernel = unary_kernel<scalar::Rsqrt>},
    {.id = PrimId::sin,
     .name = "sin",
     .arity = 1,
     .cost = ElementCost::costly,
     .infer = [](Types args, const Attrs&) { return infer_float(args, "sin"); },
     .grad = [](Builder& b, const Node& n, NodeId, NodeId ct) -> Grads { return {b.mul(ct, b.cos(n.inputs[0]))}; },
     .batch = batch_elementwise,
     .sink = sink_elementwise,
     .kernel = unary_kernel<scalar::Sin>},
    {.id = PrimId::cos,
     .name = "cos",
     .arity = 1,
     .cost = ElementCost::costly,
     .infer = [](Types args, const Attrs&) { return infer_float(args, "cos"); },
     .grad = [](Builder& b, const Node& n, NodeId, NodeId ct) -> Grads {
       return {b.neg(b.mul(ct, b.sin(n.inputs[0])))};
     },
     .batch = batch_elementwise,
     .sink = sink_elementwise,
     .kernel = unary_kernel<scalar::Cos>},
    {.id = PrimId::tanh,
     .name = "tanh",
     .arity = 1,
     .cost = ElementCost::costly,
     .infer = [](Types args, const Attrs&) { return infer_float(args, "tanh"); },
     .grad = [](Builder& b, const Node&, NodeId self, NodeId ct) -> Grads {
       return {b.mul(ct, b.sub(b.literal(1.0), b.mul(self, self)))};
     },
     .batch = batch_elementwise,
     .sink = sink_elementwise,
     .kernel = unary_kernel<scalar::Tanh>},
    {.id = PrimId::erf,
     .name = "erf",
     .arity = 1,
     .cost = ElementCost::costly,
     .infer = [](Types args, const Attrs&) { return infer_float(args, "erf"); },
     .grad = [](Builder& b, const Node& n, NodeId, NodeId ct) -> Grads {
       NodeId x = n.inputs[0];
       NodeId density = b.exp(b.neg(b.mul(x, x)));
       return {b.mul(ct, b.mul(b.literal(2.0 / std::sqrt(std::numbers::pi)), density))};
     },
     .batch = batch_elementwise,
     .sink = sink_elementwise,
     .kernel = unary_kernel<scalar::Erf>},
    {.id = PrimId::logistic,
     .name = "logistic",
     .arity = 1,
     .cost = ElementCost::costly,
     .infer = [](Types args, const Attrs&) { return infer_float(args, "logistic"); },
     .grad = [](Builder& b, const Node&, NodeId self, NodeId ct) -> Grads {
       return {b.mul(ct, b.mul(self, b.sub(b.literal(1.0), self)))};
     },
     .batch = batch_elementwise,
     .sink = sink_elementwise,
     .kernel = unary_kernel<scalar::Logistic>},
    {.id = PrimId::logical_not,
     .name = "logical_not",
     .arity = 1,
     .infer = [](Types args, const Attrs&) { return infer_unary<is_bool>("logical_not", args, "bool"); },
     .batch = batch_elementwise,
     .sink = sink_elementwise,
     .kernel = unary_kernel<scalar::LogicalNot>},
    // Its input's value, through which no gradient flows: what a function holds
    // constant when it is differentiated (softmax's shift by the row's maximum, which
    // cancels; a target network's output). Once gradients are taken it is the
    // identity, and simplify removes it (graph/passes.h).
    {.id = PrimId::stop_gradient,
     .name = "stop_gradient",
     .arity = 1,
     .kind = PrimKind::movement,
     .infer = [](Types args, const Attrs&) { return args[0]; },
     .batch = batch_elementwise,
     .sink = sink_elementwise,
     .kernel = bytes_kernel},
};

}  // namespace

std::span<const Primitive> unary_primitives() { return kUnary; }

}  // namespace sx::graph::prims
