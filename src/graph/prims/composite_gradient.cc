// composite_gradient: a composite's gradient for one of its inputs, itself a composite
// (composite.h), so that a device runs it by a kernel of its own or by its decomposition.
#include "graph/autodiff.h"
#include "graph/composite.h"
#include "graph/prims/common.h"
#include "graph/prims/families.h"

namespace sx::graph::prims {
namespace {

using Args = std::span<const NodeId>;

// inputs: the differentiated composite's, then the cotangent of its value; the type is
// that of the composite's input `input`, which is a float.
ValueType infer_composite_gradient(std::span<const ValueType> args, const Attrs& attrs) {
  const Primitive& of = gradient_of(attrs);
  if (args.size() < 2) {
    throw ShapeError(
        fmt::format("composite_gradient: takes the inputs of {} and the cotangent of its value, got {} "
                    "inputs",
                    of.name, args.size()));
  }
  const std::span<const ValueType> operands = args.first(args.size() - 1);
  const int64_t input = attrs.get_int("input");
  if (input < 0 || static_cast<size_t>(input) >= operands.size()) {
    throw ShapeError(
        fmt::format("composite_gradient: {} has {} inputs here, not an input {}", of.name, operands.size(), input));
  }
  const ValueType& wrt = operands[static_cast<size_t>(input)];
  if (!is_float(wrt.dtype)) {
    throw ShapeError(fmt::format("composite_gradient: input {} of {} is {}, which has no gradient", input, of.name,
                                 dtype_name(wrt.dtype)));
  }
  const ValueType value = of.infer(operands, differentiated_attrs(attrs));
  if (value.shape != args.back().shape || value.dtype != args.back().dtype) {
    throw ShapeError(fmt::format("composite_gradient: the value of {} is {}{}, its cotangent {}{}", of.name,
                                 dtype_name(value.dtype), shape_str(value.shape), dtype_name(args.back().dtype),
                                 shape_str(args.back().shape)));
  }
  return wrt;
}

std::vector<NodeId> composite_gradient_values(Builder& b, Args args, const Attrs& attrs) {
  std::vector<ValueType> types;
  for (NodeId a : args) types.push_back(b.type(a));
  infer_composite_gradient(types, attrs);
  return {decomposition_gradient(b, gradient_of(attrs), args.first(args.size() - 1), differentiated_attrs(attrs),
                                 args.back(), static_cast<size_t>(attrs.get_int("input")))};
}

const Primitive kCompositeGradient[] = {
    {.id = PrimId::composite_gradient,
     .name = "composite_gradient",
     .arity = -1,
     .kind = PrimKind::composite,
     .infer = infer_composite_gradient,
     .batch = batch_by_unrolling,
     .kernel = run_decomposition,
     .decompose = composite_gradient_values,
     .grad_by_decomposition = true},
};

}  // namespace

std::span<const Primitive> composite_gradient_primitives() { return kCompositeGradient; }

}  // namespace sx::graph::prims
