// The elementwise parts of the cpu's composite kernels (composite.cc) in registers, over
// V (graph/prims/lane_math.h's contract), instantiated by each instruction set's vector
// math file through composite_lanes.h: gelu whole, and a softmax row's shifted exp and its
// division; gelu's gradient whole and the passes of a softmax's (composite_gradient.cc,
// which runs gelu's on single floats too).
// Each member is the operation that composite.cc's loops compute, on the same values,
// rounded to bf16 where Bf16 (round_to_bf16, as graph::Bf16 rounds), so the bits are the
// same.
#pragma once

#include <cstdint>

#include "device/cpu/kernels/bf16_lanes.h"
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

// body.template operator()<L>(i) for i from 0 to n (a multiple of V::width) in steps of
// L::width: L is lane_math's Pair<V>, two registers, while two fit, then V. A function of
// lane_math is a long chain of dependent operations, and the pair runs two such chains
// interleaved (tanh over [8, 128, 1024] on avx2 took 1.46 ms a vector at a time, 0.69 a
// pair). Everything the body calls is inlined (flatten): a pair passed to a function
// goes through memory.
template <class V, class Body>
__attribute__((flatten)) void each_vector(int64_t n, Body&& body) {
  using P = graph::lane_math::Pair<V>;
  int64_t i = 0;
  for (; i + P::width <= n; i += P::width) body.template operator()<P>(i);
  for (; i < n; i += V::width) body.template operator()<V>(i);
}

template <class V, bool Bf16>
typename V::f member(typename V::f v) {
  if constexpr (Bf16) return round_to_bf16<V>(v);
  else return v;
}

// tanh: (* (* 0.5 x) (+ 1 (tanh (* 0.7978845608028654 (+ x (* (* (* 0.044715 x) x) x))))))
// erf:  (* (* 0.5 x) (+ 1 (erf (* x 0.7071067811865476))))
template <class V, bool Tanh, bool Bf16>
void gelu_lanes(const float* x, float* y, int64_t n, const GeluConstants& k) {
  each_vector<V>(n, [&]<class L>(int64_t i) {
    namespace lm = graph::lane_math;
    using F = typename L::f;
    const F cubic = L::splat(k.cubic), scale = L::splat(k.scale), one = L::splat(k.one), half = L::splat(k.half);
    const F v = L::load(x + i);
    F curve;
    if constexpr (Tanh) {
      const F cube = member<L, Bf16>(L::mul(member<L, Bf16>(L::mul(member<L, Bf16>(L::mul(cubic, v)), v)), v));
      curve = member<L, Bf16>(lm::tanh<L>(member<L, Bf16>(L::mul(scale, member<L, Bf16>(L::add(v, cube))))));
    } else {
      curve = member<L, Bf16>(lm::erf<L>(member<L, Bf16>(L::mul(v, scale))));
    }
    const F one_plus = member<L, Bf16>(L::add(one, curve));
    L::store(y + i, member<L, Bf16>(L::mul(member<L, Bf16>(L::mul(half, v)), one_plus)));
  });
}

template <class V, bool Bf16>
void shifted_exp_lanes(const float* x, float* y, int64_t n, float shift) {
  each_vector<V>(n, [&]<class L>(int64_t i) {
    const typename L::f m = L::splat(shift);
    L::store(y + i, member<L, Bf16>(graph::lane_math::exp<L>(member<L, Bf16>(L::sub(L::load(x + i), m)))));
  });
}

template <class V, bool Bf16>
void divided_lanes(const float* x, float* y, int64_t n, float divisor) {
  const typename V::f d = V::splat(divisor);
  for (int64_t i = 0; i < n; i += V::width) V::store(y + i, member<V, Bf16>(V::div(V::load(x + i), d)));
}

// gelu's gradient's literals: gelu's, and erf's derivative's 2 / sqrt(pi) in gelu's
// dtype (the erf form's).
struct GeluGradientConstants {
  GeluConstants gelu;
  float two_over_root_pi = 0;
};

// dx[i] = the gradient of gelu at x[i] times the cotangent g[i], for i < n (a multiple of
// the kernels' width).
using GeluGradientKernel = void (*)(const float* x, const float* g, float* dx, int64_t n,
                                    const GeluGradientConstants& k);

// -v, its sign flipped (a NaN's too, as neg flips it).
template <class V>
typename V::f negated(typename V::f v) {
  return V::from_bits(V::ixor(V::bits(v), V::splat_i(static_cast<int32_t>(0x80000000u))));
}

// The functions of lane_math.h on V's lanes, which gelu_gradient takes as F.
template <class V>
struct LaneFunctions {
  static typename V::f tanh(typename V::f x) { return graph::lane_math::tanh<V>(x); }
  static typename V::f erf(typename V::f x) { return graph::lane_math::erf<V>(x); }
  static typename V::f exp(typename V::f x) { return graph::lane_math::exp<V>(x); }
};

// The gradient with respect to x of gelu at v, given the cotangent g of its value, as
// reverse-mode autodiff walks back through gelu's decomposition: each member a node's,
// rounded to bf16 where Bf16, the contributions to x added in the order the walk reaches
// them. F gives tanh, erf and exp on V's lanes.
// tanh: h = tanh(s u), u = x + ((c x) x) x; the contributions g (1 + h) 0.5, then
//       a = g (0.5 x) (1 - h h) s through u, then through ((c x) x) x: a (c x x), a x (c x),
//       a x x c
// erf:  e = erf(x r); the contributions g (1 + e) 0.5, then g (0.5 x) (2/sqrt(pi) exp(-(x r)^2)) r
template <class V, class F, bool Tanh, bool Bf16>
typename V::f gelu_gradient(typename V::f v, typename V::f g, const GeluGradientConstants& k) {
  using Lanes = typename V::f;
  const auto r = [](Lanes value) { return member<V, Bf16>(value); };
  const Lanes scale = V::splat(k.gelu.scale), one = V::splat(k.gelu.one), half = V::splat(k.gelu.half);
  const Lanes half_x = r(V::mul(half, v));
  if constexpr (Tanh) {
    const Lanes cubic = V::splat(k.gelu.cubic);
    const Lanes c_x = r(V::mul(cubic, v)), c_x_x = r(V::mul(c_x, v));
    const Lanes inner = r(V::add(v, r(V::mul(c_x_x, v))));
    const Lanes curve = r(F::tanh(r(V::mul(scale, inner))));
    const Lanes through_half = r(V::mul(r(V::mul(g, r(V::add(one, curve)))), half));
    const Lanes slope = r(V::sub(one, r(V::mul(curve, curve))));
    const Lanes through_inner = r(V::mul(r(V::mul(r(V::mul(g, half_x)), slope)), scale));
    const Lanes by_x = r(V::mul(through_inner, v));
    const Lanes by_x_x = r(V::mul(by_x, v));
    Lanes sum = r(V::add(through_half, through_inner));
    sum = r(V::add(sum, r(V::mul(through_inner, c_x_x))));
    sum = r(V::add(sum, r(V::mul(by_x, c_x))));
    return r(V::add(sum, r(V::mul(by_x_x, cubic))));
  } else {
    const Lanes scaled = r(V::mul(v, scale));
    const Lanes curve = r(F::erf(scaled));
    const Lanes through_half = r(V::mul(r(V::mul(g, r(V::add(one, curve)))), half));
    const Lanes density = r(F::exp(negated<V>(r(V::mul(scaled, scaled)))));
    const Lanes slope = r(V::mul(V::splat(k.two_over_root_pi), density));
    const Lanes through_scaled = r(V::mul(r(V::mul(r(V::mul(g, half_x)), slope)), scale));
    return r(V::add(through_half, through_scaled));
  }
}

template <class V, bool Tanh, bool Bf16>
void gelu_gradient_lanes(const float* x, const float* g, float* dx, int64_t n, const GeluGradientConstants& k) {
  each_vector<V>(n, [&]<class L>(int64_t i) {
    L::store(dx + i, gelu_gradient<L, LaneFunctions<L>, Tanh, Bf16>(L::load(x + i), L::load(g + i), k));
  });
}

// The passes of a softmax's gradient over a row's e = exp(x - max x) and cotangent g, for
// i < n (a multiple of the kernels' width), total the row's sum of e: the terms of the
// sum through it, out = -((g (e / total)) / total); then out = (g / total + shift) e,
// shift that sum. Of a log_softmax's: out = g + shift e, shift = sum(-g) / total.
using RowGradientKernel = void (*)(const float* e, const float* g, float* out, int64_t n, float total, float shift);

template <class V, bool Bf16>
void softmax_terms_lanes(const float* e, const float* g, float* out, int64_t n, float total, float) {
  const typename V::f s = V::splat(total);
  for (int64_t i = 0; i < n; i += V::width) {
    const typename V::f y = member<V, Bf16>(V::div(V::load(e + i), s));
    V::store(out + i, negated<V>(member<V, Bf16>(V::div(member<V, Bf16>(V::mul(V::load(g + i), y)), s))));
  }
}

template <class V, bool Bf16>
void softmax_gradient_lanes(const float* e, const float* g, float* out, int64_t n, float total, float shift) {
  const typename V::f s = V::splat(total), t = V::splat(shift);
  for (int64_t i = 0; i < n; i += V::width) {
    const typename V::f through_e = member<V, Bf16>(V::add(member<V, Bf16>(V::div(V::load(g + i), s)), t));
    V::store(out + i, member<V, Bf16>(V::mul(through_e, V::load(e + i))));
  }
}

template <class V, bool Bf16>
void log_softmax_gradient_lanes(const float* e, const float* g, float* out, int64_t n, float, float shift) {
  const typename V::f t = V::splat(shift);
  for (int64_t i = 0; i < n; i += V::width) {
    V::store(out + i, member<V, Bf16>(V::add(V::load(g + i), member<V, Bf16>(V::mul(t, V::load(e + i))))));
  }
}

}  // namespace sx::device::cpu
