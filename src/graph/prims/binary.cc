// Elementwise primitives of two or three operands: arithmetic (add, sub,
// mul, div, pow, max, min), comparisons (eq, ne, lt, le, gt, ge), logic
// (logical_and, logical_or), where, and cast. Their ops promote the operands
// to one dtype and broadcast them to one shape (NumPy rules) before the
// primitive, which takes equal shapes and dtypes, is emitted. The reference
// kernels' formulas are in scalar.h, where the devices' kernels find them too.
#include <cmath>
#include <cstring>
#include <limits>

#include "graph/prims/common.h"
#include "graph/prims/families.h"

namespace sx::graph::prims {
namespace {

using Grads = std::vector<std::optional<NodeId>>;
using Args = std::span<const Tensor* const>;
using Types = std::span<const ValueType>;

NodeId build_elementwise(Builder& b, const Primitive& prim, std::span<const NodeId> args, const Attrs& attrs) {
  std::vector<NodeId> promoted = b.promote_args(args);
  return b.emit(prim, b.broadcast_args(prim.name, promoted), attrs);
}

ValueType infer_arithmetic(Types args, std::string_view op) {
  require_same_types(op, args);
  require_dtypes(op, args, is_numeric, "numeric");
  return args[0];
}

ValueType infer_comparison(Types args, std::string_view op) {
  require_same_types(op, args);
  return {args[0].shape, DType::boolean};
}

ValueType infer_logical(Types args, std::string_view op) {
  require_same_types(op, args);
  require_dtypes(op, args, is_bool, "bool");
  return args[0];
}

Tensor cast_kernel(const Tensor& x, DType to) {
  Tensor out(to, x.shape());
  visit_dtype(x.dtype(), [&](auto in_types) {
    using SI = typename decltype(in_types)::storage;
    using CI = typename decltype(in_types)::compute;
    visit_dtype(to, [&](auto out_types) {
      using SO = typename decltype(out_types)::storage;
      using CO = typename decltype(out_types)::compute;
      const SI* in = x.data<SI>();
      SO* o = out.data<SO>();
      for (int64_t i = 0; i < x.numel(); ++i) o[i] = SO(convert<CO>(static_cast<CI>(in[i])));
    });
  });
  return out;
}

Tensor where_kernel(const Tensor& cond, const Tensor& a, const Tensor& b) {
  Tensor out(a.dtype(), a.shape());
  size_t size = dtype_size(a.dtype());
  for (int64_t i = 0; i < a.numel(); ++i) {
    const Tensor& from = cond.data<bool>()[i] ? a : b;
    std::memcpy(out.bytes().data() + i * size, from.bytes().data() + i * size, size);
  }
  return out;
}

#define SX_COMPARISON(ID, FORMULA)                                                                             \
  {                                                                                                            \
    .id = PrimId::ID, .name = #ID, .arity = 2,                                                                 \
    .infer = [](Types args, const Attrs&) { return infer_comparison(args, #ID); }, .build = build_elementwise, \
    .batch = batch_elementwise, .sink = sink_elementwise, .kernel = binary_kernel<scalar::FORMULA>             \
  }

const Primitive kBinary[] = {
    {.id = PrimId::add,
     .name = "add",
     .arity = 2,
     .infer = [](Types args, const Attrs&) { return infer_arithmetic(args, "add"); },
     .build = build_elementwise,
     .grad = [](Builder&, const Node&, NodeId, NodeId ct) -> Grads {
       return {ct, ct};
     },
     .batch = batch_elementwise,
     .sink = sink_elementwise,
     .kernel = binary_kernel<scalar::Add>},
    {.id = PrimId::sub,
     .name = "sub",
     .arity = 2,
     .infer = [](Types args, const Attrs&) { return infer_arithmetic(args, "sub"); },
     .build = build_elementwise,
     .grad = [](Builder& b, const Node&, NodeId, NodeId ct) -> Grads {
       return {ct, b.neg(ct)};
     },
     .batch = batch_elementwise,
     .sink = sink_elementwise,
     .kernel = binary_kernel<scalar::Sub>},
    {.id = PrimId::mul,
     .name = "mul",
     .arity = 2,
     .infer = [](Types args, const Attrs&) { return infer_arithmetic(args, "mul"); },
     .build = build_elementwise,
     .grad = [](Builder& b, const Node& n, NodeId, NodeId ct) -> Grads {
       return {b.mul(ct, n.inputs[1]), b.mul(ct, n.inputs[0])};
     },
     .batch = batch_elementwise,
     .sink = sink_elementwise,
     .kernel = binary_kernel<scalar::Mul>},
    {.id = PrimId::div,
     .name = "div",
     .arity = 2,
     .infer = [](Types args, const Attrs&) { return infer_arithmetic(args, "div"); },
     .build = build_elementwise,
     .grad = [](Builder& b, const Node& n, NodeId self, NodeId ct) -> Grads {
       NodeId divisor = n.inputs[1];
       return {b.div(ct, divisor), b.neg(b.div(b.mul(ct, self), divisor))};
     },
     .batch = batch_elementwise,
     .sink = sink_elementwise,
     .kernel = binary_kernel<scalar::Div>},
    {.id = PrimId::pow,
     .name = "pow",
     .arity = 2,
     .cost = ElementCost::costly,
     .infer =
         [](Types args, const Attrs&) {
           require_same_types("pow", args);
           require_dtypes("pow", args, is_float, "floating-point");
           return args[0];
         },
     .build = build_elementwise,
     .grad = [](Builder& b, const Node& n, NodeId self, NodeId ct) -> Grads {
       NodeId base = n.inputs[0], exponent = n.inputs[1];
       NodeId d_base = b.mul(exponent, b.pow(base, b.sub(exponent, b.literal(1.0))));
       return {b.mul(ct, d_base), b.mul(ct, b.mul(self, b.log(base)))};
     },
     .batch = batch_elementwise,
     .sink = sink_elementwise,
     .kernel = binary_kernel<scalar::Pow>},
    {.id = PrimId::max,
     .name = "max",
     .arity = 2,
     .infer = [](Types args, const Attrs&) { return infer_arithmetic(args, "max"); },
     .build = build_elementwise,
     .grad = [](Builder& b, const Node& n, NodeId, NodeId ct) -> Grads {
       NodeId a = n.inputs[0], c = n.inputs[1], zero = b.literal(0.0);
       return {b.where(b.ge(a, c), ct, zero), b.where(b.lt(a, c), ct, zero)};
     },
     .batch = batch_elementwise,
     .sink = sink_elementwise,
     .kernel = binary_kernel<scalar::Max>},
    {.id = PrimId::min,
     .name = "min",
     .arity = 2,
     .infer = [](Types args, const Attrs&) { return infer_arithmetic(args, "min"); },
     .build = build_elementwise,
     .grad = [](Builder& b, const Node& n, NodeId, NodeId ct) -> Grads {
       NodeId a = n.inputs[0], c = n.inputs[1], zero = b.literal(0.0);
       return {b.where(b.le(a, c), ct, zero), b.where(b.gt(a, c), ct, zero)};
     },
     .batch = batch_elementwise,
     .sink = sink_elementwise,
     .kernel = binary_kernel<scalar::Min>},
    SX_COMPARISON(eq, Eq),
    SX_COMPARISON(ne, Ne),
    SX_COMPARISON(lt, Lt),
    SX_COMPARISON(le, Le),
    SX_COMPARISON(gt, Gt),
    SX_COMPARISON(ge, Ge),
    {.id = PrimId::logical_and,
     .name = "logical_and",
     .arity = 2,
     .infer = [](Types args, const Attrs&) { return infer_logical(args, "logical_and"); },
     .build = build_elementwise,
     .batch = batch_elementwise,
     .sink = sink_elementwise,
     .kernel = binary_kernel<scalar::LogicalAnd>},
    {.id = PrimId::logical_or,
     .name = "logical_or",
     .arity = 2,
     .infer = [](Types args, const Attrs&) { return infer_logical(args, "logical_or"); },
     .build = build_elementwise,
     .batch = batch_elementwise,
     .sink = sink_elementwise,
     .kernel = binary_kernel<scalar::LogicalOr>},
    {.id = PrimId::where,
     .name = "where",
     .arity = 3,
     .infer =
         [](Types args, const Attrs&) {
           if (args[0].dtype != DType::boolean) {
             throw ShapeError(fmt::format("where: the condition must be bool, got {}", dtype_name(args[0].dtype)));
           }
           std::vector<ValueType> cases{args[1], args[2], {args[0].shape, args[1].dtype}};
           require_same_types("where", cases);
           return args[1];
         },
     .build =
         [](Builder& b, const Primitive& prim, std::span<const NodeId> args, const Attrs& attrs) {
           std::vector<NodeId> cases = b.promote_args(args.subspan(1));
           return b.emit(prim, b.broadcast_args("where", std::vector<NodeId>{args[0], cases[0], cases[1]}), attrs);
         },
     .grad = [](Builder& b, const Node& n, NodeId, NodeId ct) -> Grads {
       NodeId cond = n.inputs[0], zero = b.literal(0.0);
       return {std::nullopt, b.where(cond, ct, zero), b.where(cond, zero, ct)};
     },
     .batch = batch_elementwise,
     .sink = sink_elementwise,
     .kernel = [](const Node&, Args x) { return where_kernel(*x[0], *x[1], *x[2]); }},
    {.id = PrimId::cast,
     .name = "cast",
     .arity = 1,
     .infer =
         [](Types args, const Attrs& attrs) {
           return ValueType{args[0].shape, attrs.get_dtype("dtype")};
         },
     .build = [](Builder& b, const Primitive&, std::span<const NodeId> args,
                 const Attrs& attrs) { return b.cast_to(args[0], attrs.get_dtype("dtype")); },
     .grad = [](Builder& b, const Node& n, NodeId, NodeId ct) -> Grads {
       DType from = b.dtype(n.inputs[0]);
       if (!is_float(from) || !is_float(n.dtype)) return {std::nullopt};
       return {b.cast_to(ct, from)};
     },
     .batch = batch_elementwise,
     .sink = sink_elementwise,
     .kernel = [](const Node& n, Args x) { return cast_kernel(*x[0], n.dtype); }},
};

#undef SX_COMPARISON

}  // namespace

std::span<const Primitive> binary_primitives() { return kBinary; }

}  // namespace sx::graph::prims
