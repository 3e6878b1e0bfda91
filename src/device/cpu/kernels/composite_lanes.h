// The elementwise parts of the cpu's composite kernels (composite.cc) in registers, over
// V (graph/prims/lane_math.h's contract), instantiated by each instruction set's vector
// math file (vector_math.h): gelu whole, and a softmax row's shifted exp and its division.
// Each member is the operation that composite.cc's loops compute, on the same values,
// rounded to bf16 where Bf16 (round_to_bf16, as graph::Bf16 rounds), so the bits are the
// same.
#pragma once

#include <cstdint>

#include "device/cpu/fusion/fusion_chains.h"
#include "graph/prims/lane_math.h"

namespace sx::device::cpu {

// gelu's literals in its dtype: the cubic's and the scale (tanh: 0.044715 and
// 0.7978845608028654; erf: unused and 0.7071067811865476), 1 and 0.5.
struct GeluConstants {
  float cubic = 0, scale = 0, one = 1, half = 0.5f;
};

// y[i] = gelu of x[i] for i < n (a multiple of the kernels' width).
using GeluKernel = void (*)(const float* x, float* y, int64_t n, const GeluConstants& k);
// y[i] = exp(x[i] - shift), or x[i] / divisor, for i < n (a multiple of the kernels' width).
using RowKernel = void (*)(const float* x, float* y, int64_t n, float operand);

template <class V, bool Bf16>
typename V::f member(typename V::f v) {
  if constexpr (Bf16) return round_to_bf16<V>(v);
  else return v;
}

// tanh: (* (* 0.5 x) (+ 1 (tanh (* 0.7978845608028654 (+ x (* (* (* 0.044715 x) x) x))))))
// erf:  (* (* 0.5 x) (+ 1 (erf (* x 0.7071067811865476))))
template <class V, bool Tanh, bool Bf16>
void gelu_lanes(const float* x, float* y, int64_t n, const GeluConstants& k) {
  namespace lm = graph::lane_math;
  using F = typename V::f;
  const F cubic = V::splat(k.cubic), scale = V::splat(k.scale), one = V::splat(k.one), half = V::splat(k.half);
  for (int64_t i = 0; i < n; i += V::width) {
    const F v = V::load(x + i);
    F curve;
    if constexpr (Tanh) {
      const F cube = member<V, Bf16>(V::mul(member<V, Bf16>(V::mul(member<V, Bf16>(V::mul(cubic, v)), v)), v));
      curve = member<V, Bf16>(lm::tanh<V>(member<V, Bf16>(V::mul(scale, member<V, Bf16>(V::add(v, cube))))));
    } else {
      curve = member<V, Bf16>(lm::erf<V>(member<V, Bf16>(V::mul(v, scale))));
    }
    const F one_plus = member<V, Bf16>(V::add(one, curve));
    V::store(y + i, member<V, Bf16>(V::mul(member<V, Bf16>(V::mul(half, v)), one_plus)));
  }
}

template <class V, bool Bf16>
void shifted_exp_lanes(const float* x, float* y, int64_t n, float shift) {
  const typename V::f m = V::splat(shift);
  for (int64_t i = 0; i < n; i += V::width) {
    V::store(y + i, member<V, Bf16>(graph::lane_math::exp<V>(member<V, Bf16>(V::sub(V::load(x + i), m)))));
  }
}

template <class V, bool Bf16>
void divided_lanes(const float* x, float* y, int64_t n, float divisor) {
  const typename V::f d = V::splat(divisor);
  for (int64_t i = 0; i < n; i += V::width) V::store(y + i, member<V, Bf16>(V::div(V::load(x + i), d)));
}

// Indexed [form][bf16]: form 0 tanh, 1 erf.
using GeluKernels = std::array<std::array<GeluKernel, 2>, 2>;
// Indexed [bf16].
using RowKernels = std::array<RowKernel, 2>;

struct CompositeLanes {
  GeluKernels gelu{};
  RowKernels shifted_exp{};
  RowKernels divided{};
};

template <class V>
CompositeLanes make_composite_lanes() {
  return {.gelu = {{{&gelu_lanes<V, true, false>, &gelu_lanes<V, true, true>},
                    {&gelu_lanes<V, false, false>, &gelu_lanes<V, false, true>}}},
          .shifted_exp = {&shifted_exp_lanes<V, false>, &shifted_exp_lanes<V, true>},
          .divided = {&divided_lanes<V, false>, &divided_lanes<V, true>}};
}

}  // namespace sx::device::cpu
