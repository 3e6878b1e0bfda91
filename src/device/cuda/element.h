// The elementwise primitives the cuda device's kernels compute, each with its formula
// (graph/prims/scalar.h) and the dtypes it takes. The kernels, nvcc's (elementwise.cu)
// and NVRTC's (codegen.h), run element_math.h's functions of these formulas on the GPU;
// tests/unit/device/cuda runs them on the host against the reference kernels, bit for
// bit, so that the arithmetic is tested where no GPU is.
#pragma once

#include <type_traits>

#include "device/cuda/element_math.h"
#include "device/cuda/transcendental.h"
#include "graph/primitive.h"
#include "graph/prims/scalar.h"
#include "graph/tensor.h"

namespace sx::device::cuda {

// The shape of a primitive's element: one operand, two of one dtype, or two giving bool.
struct Unary {};
struct Binary {};
struct Comparison {};

// The dtypes a primitive takes (its shape rule's), by their compute type.
struct NumericDTypes {
  template <class C>
  static constexpr bool takes = !std::is_same_v<C, bool>;
};
struct FloatDTypes {
  template <class C>
  static constexpr bool takes = std::is_floating_point_v<C>;
};
struct BoolDTypes {
  template <class C>
  static constexpr bool takes = std::is_same_v<C, bool>;
};
struct AllDTypes {
  template <class C>
  static constexpr bool takes = true;
};

// Calls fn(Formula{}, Shape{}, DTypes{}) for a primitive the kernels compute and returns
// true; false for one they do not (its formula gives other bits on a GPU: see scalar.h).
template <class Fn>
bool visit_element(graph::PrimId prim, Fn&& fn) {
  namespace scalar = graph::prims::scalar;
  using graph::PrimId;
  switch (prim) {
    case PrimId::neg: fn(scalar::Neg{}, Unary{}, NumericDTypes{}); return true;
    case PrimId::abs: fn(scalar::Abs{}, Unary{}, NumericDTypes{}); return true;
    case PrimId::sign: fn(scalar::Sign{}, Unary{}, NumericDTypes{}); return true;
    case PrimId::sqrt: fn(scalar::Sqrt{}, Unary{}, FloatDTypes{}); return true;
    case PrimId::rsqrt: fn(scalar::Rsqrt{}, Unary{}, FloatDTypes{}); return true;
    case PrimId::logical_not: fn(scalar::LogicalNot{}, Unary{}, BoolDTypes{}); return true;
    case PrimId::add: fn(scalar::Add{}, Binary{}, NumericDTypes{}); return true;
    case PrimId::sub: fn(scalar::Sub{}, Binary{}, NumericDTypes{}); return true;
    case PrimId::mul: fn(scalar::Mul{}, Binary{}, NumericDTypes{}); return true;
    case PrimId::div: fn(scalar::Div{}, Binary{}, NumericDTypes{}); return true;
    case PrimId::max: fn(scalar::Max{}, Binary{}, NumericDTypes{}); return true;
    case PrimId::min: fn(scalar::Min{}, Binary{}, NumericDTypes{}); return true;
    case PrimId::logical_and: fn(scalar::LogicalAnd{}, Binary{}, BoolDTypes{}); return true;
    case PrimId::logical_or: fn(scalar::LogicalOr{}, Binary{}, BoolDTypes{}); return true;
    case PrimId::eq: fn(scalar::Eq{}, Comparison{}, AllDTypes{}); return true;
    case PrimId::ne: fn(scalar::Ne{}, Comparison{}, AllDTypes{}); return true;
    case PrimId::lt: fn(scalar::Lt{}, Comparison{}, AllDTypes{}); return true;
    case PrimId::le: fn(scalar::Le{}, Comparison{}, AllDTypes{}); return true;
    case PrimId::gt: fn(scalar::Gt{}, Comparison{}, AllDTypes{}); return true;
    case PrimId::ge: fn(scalar::Ge{}, Comparison{}, AllDTypes{}); return true;
    default: return false;
  }
}

// visit_element's table and the transcendental functions (transcendental.h), which only
// the generated kernels compute: NVRTC compiles lane_math's templates as device code.
template <class Fn>
bool visit_generated_element(graph::PrimId prim, Fn&& fn) {
  using graph::PrimId;
  if (visit_element(prim, fn)) return true;
  switch (prim) {
    case PrimId::exp: fn(gpu::Exp{}, Unary{}, FloatDTypes{}); return true;
    case PrimId::log: fn(gpu::Log{}, Unary{}, FloatDTypes{}); return true;
    case PrimId::tanh: fn(gpu::Tanh{}, Unary{}, FloatDTypes{}); return true;
    case PrimId::erf: fn(gpu::Erf{}, Unary{}, FloatDTypes{}); return true;
    case PrimId::logistic: fn(gpu::Logistic{}, Unary{}, FloatDTypes{}); return true;
    case PrimId::sin: fn(gpu::Sin{}, Unary{}, FloatDTypes{}); return true;
    case PrimId::cos: fn(gpu::Cos{}, Unary{}, FloatDTypes{}); return true;
    case PrimId::pow: fn(gpu::Pow{}, Binary{}, FloatDTypes{}); return true;
    default: return false;
  }
}

// Whether a generated kernel computes `prim` on operands of `dtype` (bf16 in float).
inline bool has_generated_element(graph::PrimId prim, graph::DType dtype) {
  bool takes = false;
  visit_generated_element(prim, [&](auto, auto, auto dtypes) {
    using DTypes = decltype(dtypes);
    graph::visit_dtype(dtype, [&](auto types) {
      using C = typename decltype(types)::compute;
      takes = DTypes::template takes<C>;
    });
  });
  return takes;
}

}  // namespace sx::device::cuda
