// The composites' gradients with respect to x that the cuda device runs by kernels of
// their own (codegen.h), given the cotangent g of the composite's value: softmax and
// log_softmax over a row, layer_norm and rms_norm of a row (with or without weight and
// bias), and gelu of an element, and the gradients of the norms' weight and bias (a
// column's sum over the rows), stored as S (float or graph::Bf16) and computed in C.
// Each computes what reverse-mode autodiff (graph/autodiff.cc) builds walking back through
// the composite's decomposition (graph/prims/composite.cc) with cotangent g: every node's
// formula in its order, operands in their order, each value rounded to S as its node
// stores it, each literal as its cast rounds it, the row's sums added in C from the first
// element on as the reference adds (element_math.h), and exp, tanh and erf
// transcendental.h's: the reference's bits. The softmaxes recompute a row's exp and sum
// from x, the norms a row's statistics, as the forward kernels (composite_math.h) compute
// them; dx holds a row's e while it is computed.
#pragma once

#include <cstdint>

#include "device/cuda/composite_math.h"

namespace sx::device::cuda {

// The sum, stored as S, of term(j) for j < length, each already rounded to S, added in C
// from the first on (row_sum's order).
template <class S, class C, class Term>
SX_HOST_DEVICE C summed(int64_t length, Term term) {
  C acc = C(0);
  for (int64_t j = 0; j < length; ++j) acc = graph::prims::wrap_add(acc, term(j));
  return stored<S>(acc);
}

// softmax: y = e / s, e = exp(x - max x), s = sum e; the gradient
// (g / s + sum(-((g y) / s))) e.
template <class S, class C>
SX_HOST_DEVICE void softmax_gradient_row(const S* x, const S* g, S* dx, int64_t length) {
  using graph::prims::scalar::Div;
  shifted_exps<S, C>(x, dx, length);
  const C total = static_cast<C>(row_sum<S, C>(dx, length));
  const C through_total = summed<S, C>(length, [&](int64_t j) {
    const C y = stored<S>(C(Div{}(static_cast<C>(dx[j]), total)));
    return C(-stored<S>(C(Div{}(stored<S>(C(static_cast<C>(g[j]) * y)), total))));
  });
  for (int64_t j = 0; j < length; ++j) {
    const C through_e = stored<S>(C(stored<S>(C(Div{}(static_cast<C>(g[j]), total))) + through_total));
    dx[j] = S(C(through_e * static_cast<C>(dx[j])));
  }
}

// log_softmax: y = x - (m + log s), the shift m = max x held constant; the gradient
// g + (sum(-g) / s) e. g is a row of S, or anything whose g[j] is one.
template <class S, class C, class Cotangent>
SX_HOST_DEVICE void log_softmax_gradient_row(const S* x, Cotangent g, S* dx, int64_t length) {
  shifted_exps<S, C>(x, dx, length);
  const C total = static_cast<C>(row_sum<S, C>(dx, length));
  const C minus_g = summed<S, C>(length, [&](int64_t j) { return C(-static_cast<C>(g[j])); });
  const C through_total = stored<S>(C(graph::prims::scalar::Div{}(minus_g, total)));
  for (int64_t j = 0; j < length; ++j) {
    dx[j] = S(C(static_cast<C>(g[j]) + stored<S>(C(through_total * static_cast<C>(dx[j])))));
  }
}

// A norm's statistics of a row: d = x - mean x (layer_norm's, Centered) or x (rms_norm's),
// v = mean(d d) + eps, inv = rsqrt(v), each stored as S.
template <class C>
struct NormStatistics {
  C mean;     // 0 for rms_norm
  C shifted;  // v
  C inverse;  // inv
};

// d of an element x of the row.
template <class S, class C, bool Centered>
SX_HOST_DEVICE C centered(S x, const NormStatistics<C>& stats) {
  return Centered ? stored<S>(C(static_cast<C>(x) - stats.mean)) : static_cast<C>(x);
}

// The statistics of a row x, its sums added in C from its first element on.
template <class S, class C, bool Centered>
SX_HOST_DEVICE NormStatistics<C> norm_statistics(const S* x, int64_t length, double eps) {
  NormStatistics<C> stats{};
  stats.mean = Centered ? row_mean<S, C>(row_sum<S, C>(x, length), length) : C(0);
  const C squares = summed<S, C>(length, [&](int64_t j) {
    const C d = centered<S, C, Centered>(x[j], stats);
    return stored<S>(C(d * d));
  });
  stats.shifted = stored<S>(C(row_mean<S, C>(S(squares), length) + literal<S, C>(eps)));
  stats.inverse = stored<S>(C(graph::prims::scalar::Rsqrt{}(stats.shifted)));
  return stats;
}

// layer_norm (Centered) or rms_norm: y = (d inv) w + b (norm_statistics). With a = g w
// (g without a weight), d's cotangent is (a inv + c d) + c d, c = sum(a d) ((-0.5 inv) /
// v) / length (through inv and d d); x's is that, plus sum(-that) / length through the
// mean (layer). The weight is null when absent; the bias adds nothing to x's gradient.
template <class S, class C, bool Centered>
SX_HOST_DEVICE void norm_gradient_row(const S* x, const S* weight, const S* g, S* dx, int64_t length, double eps) {
  using graph::prims::scalar::Div;
  const NormStatistics<C> stats = norm_statistics<S, C, Centered>(x, length, eps);
  const auto d = [&](int64_t j) { return centered<S, C, Centered>(x[j], stats); };
  const C shifted = stats.shifted, inverse = stats.inverse;
  const auto a = [&](int64_t j) {
    return weight ? stored<S>(C(static_cast<C>(g[j]) * static_cast<C>(weight[j]))) : static_cast<C>(g[j]);
  };
  const C through_inverse = summed<S, C>(length, [&](int64_t j) { return stored<S>(C(a(j) * d(j))); });
  const C slope = stored<S>(C(Div{}(stored<S>(C(literal<S, C>(-0.5) * inverse)), shifted)));
  const C through_squares = stored<S>(C(Div{}(stored<S>(C(through_inverse * slope)), literal<S, C>(double(length)))));
  const auto through_d = [&](int64_t j) {
    const C by_d = stored<S>(C(through_squares * d(j)));
    return stored<S>(C(stored<S>(C(stored<S>(C(a(j) * inverse)) + by_d)) + by_d));
  };
  if (!Centered) {
    for (int64_t j = 0; j < length; ++j) dx[j] = S(through_d(j));
    return;
  }
  const C minus_total = summed<S, C>(length, [&](int64_t j) {
    const C value = through_d(j);
    dx[j] = S(value);
    return C(-value);
  });
  const C through_mean = stored<S>(C(Div{}(minus_total, literal<S, C>(double(length)))));
  for (int64_t j = 0; j < length; ++j) dx[j] = S(C(static_cast<C>(dx[j]) + through_mean));
}

// The gradient of a norm's weight (Weighted: through y = (d inv) w + b, the sum over the
// rows of g (d inv)) or bias (the sum over the rows of g) at `column` of x's rows of
// `length`, each row's statistics in `stats` (the weight's alone), given the cotangent g
// of x's shape: each term stored as S, added in C from 0 in the rows' order, as the
// reference sums over the rows. Summed false: a single row whose shape the parameter
// has, so there is no sum, only the term.
template <class S, class C, bool Centered, bool Weighted>
SX_HOST_DEVICE S norm_parameter_gradient_column(const S* x, const S* g, const NormStatistics<C>* stats, int64_t rows,
                                                int64_t length, int64_t column, bool summed) {
  const auto term = [&](int64_t row) {
    const int64_t at = row * length + column;
    if constexpr (!Weighted) {
      return static_cast<C>(g[at]);
    } else {
      const C normalized = stored<S>(C(centered<S, C, Centered>(x[at], stats[row]) * stats[row].inverse));
      return stored<S>(C(static_cast<C>(g[at]) * normalized));
    }
  };
  if (!summed) return S(term(0));
  C acc = C(0);
  for (int64_t row = 0; row < rows; ++row) acc = graph::prims::wrap_add(acc, term(row));
  return S(acc);
}

// gelu's gradient at x times g, the contributions to x added in the order the walk
// reaches them.
// tanh: h = tanh(s u), u = x + ((c x) x) x; the contributions g (1 + h) 0.5, then
//       a = g (0.5 x) (1 - h h) s through u, then through ((c x) x) x: a (c x x), a x (c x),
//       a x x c
template <class S, class C>
SX_HOST_DEVICE S gelu_tanh_gradient_element(S stored_x, S stored_g) {
  const C x = static_cast<C>(stored_x), g = static_cast<C>(stored_g);
  const C cubic = literal<S, C>(0.044715), scale = literal<S, C>(0.7978845608028654);
  const C one = literal<S, C>(1), half = literal<S, C>(0.5);
  const C half_x = stored<S>(C(half * x));
  const C c_x = stored<S>(C(cubic * x)), c_x_x = stored<S>(C(c_x * x));
  const C inner = stored<S>(C(x + stored<S>(C(c_x_x * x))));
  const C curve = stored<S>(C(gpu::Tanh{}(stored<S>(C(scale * inner)))));
  const C through_half = stored<S>(C(stored<S>(C(g * stored<S>(C(one + curve)))) * half));
  const C slope = stored<S>(C(one - stored<S>(C(curve * curve))));
  const C through_inner = stored<S>(C(stored<S>(C(stored<S>(C(g * half_x)) * slope)) * scale));
  const C by_x = stored<S>(C(through_inner * x));
  const C by_x_x = stored<S>(C(by_x * x));
  C total = stored<S>(C(through_half + through_inner));
  total = stored<S>(C(total + stored<S>(C(through_inner * c_x_x))));
  total = stored<S>(C(total + stored<S>(C(by_x * c_x))));
  return S(C(total + stored<S>(C(by_x_x * cubic))));
}

// erf: e = erf(x r); the contributions g (1 + e) 0.5, then
// g (0.5 x) (2/sqrt(pi) exp(-(x r)^2)) r; two_over_root_pi the erf gradient rule's literal
// as its rule computes it, in f64.
template <class S, class C>
SX_HOST_DEVICE S gelu_erf_gradient_element(S stored_x, S stored_g, double two_over_root_pi) {
  const C x = static_cast<C>(stored_x), g = static_cast<C>(stored_g);
  const C scale = literal<S, C>(0.7071067811865476), one = literal<S, C>(1), half = literal<S, C>(0.5);
  const C half_x = stored<S>(C(half * x));
  const C scaled = stored<S>(C(x * scale));
  const C curve = stored<S>(C(gpu::Erf{}(scaled)));
  const C through_half = stored<S>(C(stored<S>(C(g * stored<S>(C(one + curve)))) * half));
  const C density = stored<S>(C(gpu::Exp{}(C(-stored<S>(C(scaled * scaled))))));
  const C slope = stored<S>(C(literal<S, C>(two_over_root_pi) * density));
  const C through_scaled = stored<S>(C(stored<S>(C(stored<S>(C(g * half_x)) * slope)) * scale));
  return S(C(through_half + through_scaled));
}

}  // namespace sx::device::cuda
