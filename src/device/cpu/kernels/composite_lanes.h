// The cpu's composite kernels in registers, over V (graph/prims/lane_math.h's contract),
// instantiated by each instruction set's vector math file (vector_math.h): the elementwise
// parts (elementwise_lanes.h), and whole f32 rows of the softmaxes, of cross_entropy and of
// the norms, and of their gradients with respect to x, each the operations that the
// kernels' loops compute (composite.cc, composite_gradient.cc, cross_entropy.cc), on the
// same values, so the bits are the same.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>

#include "device/cpu/kernels/elementwise_lanes.h"
#include "graph/prims/lane_math.h"

namespace sx::device::cpu {

// Whole f32 rows of a softmax, n a multiple of kRowLanes and at least twice that, in one
// call a row: each pass over the row in registers, the row's sums kept in row_reduce.h's
// LaneSums lanes as they are made (element r to lane r % 16, as 16 / V::width vectors) and
// added in its tree, its max by the vectors. The same operations on the same values as the
// passes (elementwise_lanes.h) and row_sum, so the same bits; at rows of 64 the passes'
// calls, not their arithmetic, took most of a row's time. A row holding a NaN is left to
// the caller (false): which NaN the max is is row_reduce.h's order's. A zero max's sign
// may differ from that order's; it does not reach the row's values (x - 0 and x + 0
// differ only at x = -0, and exp of either zero is 1). Everything here is a template over
// V, whose type each instruction set's file has its own copy of, so no function compiled
// for one set is shared with another's callers.
inline constexpr int64_t kRowLanes = 16;

template <class V>
struct RowSumLanes {
  static constexpr int kVectors = static_cast<int>(kRowLanes) / V::width;
  typename V::f lanes[kVectors];

  RowSumLanes() {
    for (auto& l : lanes) l = V::zero();
  }
  // Adds the vector of elements [i, i + V::width) of the row.
  void add(int64_t i, typename V::f v) {
    const auto q = static_cast<int>((i / V::width) % kVectors);
    lanes[q] = V::add(lanes[q], v);
  }
  // LaneSums' tree: lane l takes lane l + width, for width 8, 4, 2, 1; in vectors of four
  // (GCC's vector extension), as LaneSums<float> adds them, which the compiler keeps in
  // registers: as single floats the tree went through memory, and took a quarter of a
  // norm's row of 64.
  float finish() const {
    typedef float Floats __attribute__((vector_size(16)));
    alignas(64) float t[kRowLanes];
    for (int q = 0; q < kVectors; ++q) V::store(t + q * V::width, lanes[q]);
    Floats f[4];
    std::memcpy(f, t, sizeof(f));
    const Floats quarter = (f[0] + f[2]) + (f[1] + f[3]);  // widths 8 and 4
    return (quarter[0] + quarter[2]) + (quarter[1] + quarter[3]);
  }
};

// The max of a row without a NaN into m; false where the row holds one.
template <class V>
bool row_max_lanes(const float* x, int64_t n, float& m) {
  typename V::f best = V::load(x);
  bool nan = V::any(V::is_nan(best));
  for (int64_t i = V::width; i < n; i += V::width) {
    const typename V::f v = V::load(x + i);
    best = V::select(V::gt(v, best), v, best);
    nan = nan || V::any(V::is_nan(v));
  }
  float floats[V::width];
  V::store(floats, best);
  m = floats[0];
  for (float f : floats) m = f > m ? f : m;
  return !nan;
}

// e = exp(x - max x) into e, the row's sum of e into total; false (nothing written) where
// the row holds a NaN.
template <class V>
bool shifted_exp_sum_lanes(const float* x, float* e, int64_t n, float& total) {
  float max = 0;
  if (!row_max_lanes<V>(x, n, max)) return false;
  const typename V::f m = V::splat(max);
  RowSumLanes<V> sums;
  for (int64_t i = 0; i < n; i += V::width) {
    const typename V::f v = graph::lane_math::exp<V>(V::sub(V::load(x + i), m));
    V::store(e + i, v);
    sums.add(i, v);
  }
  total = sums.finish();
  return true;
}

template <class V>
bool softmax_row_lanes(const float* x, float* y, int64_t n) {
  float total = 0;
  if (!shifted_exp_sum_lanes<V>(x, y, n, total)) return false;
  divided_lanes<V, false>(y, y, n, total);
  return true;
}

// softmax's gradient: the terms -((g (e / total)) / total) summed as they are made, then
// (g / total + that sum) e.
template <class V>
bool softmax_gradient_row_lanes(const float* x, const float* g, float* dx, int64_t n) {
  float total = 0;
  if (!shifted_exp_sum_lanes<V>(x, dx, n, total)) return false;
  const typename V::f s = V::splat(total);
  RowSumLanes<V> terms;
  for (int64_t i = 0; i < n; i += V::width) {
    const typename V::f y = V::div(V::load(dx + i), s);
    terms.add(i, negated<V>(V::div(V::mul(V::load(g + i), y), s)));
  }
  softmax_gradient_lanes<V, false>(dx, g, dx, n, total, terms.finish());
  return true;
}

// log_softmax's gradient: g + (sum(-g) / total) e.
template <class V>
bool log_softmax_gradient_row_lanes(const float* x, const float* g, float* dx, int64_t n) {
  float total = 0;
  if (!shifted_exp_sum_lanes<V>(x, dx, n, total)) return false;
  RowSumLanes<V> minus_g;
  for (int64_t i = 0; i < n; i += V::width) minus_g.add(i, negated<V>(V::load(g + i)));
  log_softmax_gradient_lanes<V, false>(dx, g, dx, n, total, minus_g.finish() / total);
  return true;
}

// What log_softmax takes of a row before its elements: its max, its min and the sum of
// exp(x - max).
struct LogSoftmaxStatistics {
  float max = 0, min = 0, total = 0;
};

// The statistics of a whole f32 row, the sum in LaneSums' order; false where the row holds
// a NaN. (A zero max's or min's sign may differ from row_reduce.h's order's, as above.)
template <class V>
bool log_softmax_statistics_lanes(const float* x, int64_t n, LogSoftmaxStatistics& stats) {
  using F = typename V::f;
  if (!row_max_lanes<V>(x, n, stats.max)) return false;
  const F m = V::splat(stats.max);
  F least = V::load(x);
  RowSumLanes<V> sums;
  for (int64_t i = 0; i < n; i += V::width) {
    const F v = V::load(x + i);
    least = V::select(V::lt(v, least), v, least);
    sums.add(i, graph::lane_math::exp<V>(V::sub(v, m)));
  }
  float floats[V::width];
  V::store(floats, least);
  stats.min = floats[0];
  for (float f : floats) stats.min = f < stats.min ? f : stats.min;
  stats.total = sums.finish();
  return true;
}

// What cross_entropy's gradient gives a row with a finite cotangent c of its picked value:
// c at the target, elsewhere c * 0, and the row's sum of -g, -c (+0 where c is 0).
struct PickedCotangent {
  float picked = 0, elsewhere = 0, minus_sum = 0;
};

// cross_entropy's gradient of a whole f32 row: e = exp(x - max x), s = sum e, then
// elsewhere + (minus_sum / s) e, and picked + (minus_sum / s) e at the target; false
// (nothing written) where x holds a NaN.
template <class V>
bool cross_entropy_gradient_row_lanes(const float* x, float* dx, int64_t n, int64_t target, const PickedCotangent& c) {
  float total = 0;
  if (!shifted_exp_sum_lanes<V>(x, dx, n, total)) return false;
  const float through_total = c.minus_sum / total;
  const float e_target = dx[target];
  const typename V::f elsewhere = V::splat(c.elsewhere), t = V::splat(through_total);
  for (int64_t i = 0; i < n; i += V::width) V::store(dx + i, V::add(elsewhere, V::mul(t, V::load(dx + i))));
  dx[target] = c.picked + through_total * e_target;
  return true;
}

using LogSoftmaxStatisticsKernel = bool (*)(const float* x, int64_t n, LogSoftmaxStatistics& stats);
using CrossEntropyGradientRowKernel = bool (*)(const float* x, float* dx, int64_t n, int64_t target,
                                               const PickedCotangent& c);

// A norm's literals in its dtype: its row's length, eps, and its gradient's -0.5 (the
// rsqrt's gradient's).
struct NormConstants {
  float length = 1, eps = 0, minus_half = -0.5f;
};

// What a norm computes of a row before its elements (composite_rows.h's NormStatistics):
// the mean (layer_norm's; rms_norm's 0), mean(d d) + eps and its rsqrt.
struct NormRowStatistics {
  float mean = 0, shifted_square = 0, inverse = 0;
};

// d of x's lanes: x - mean (layer_norm) or x (rms_norm).
template <class V, bool Centered>
typename V::f centered_lanes(typename V::f x, typename V::f mean) {
  if constexpr (Centered) return V::sub(x, mean);
  else return x;
}

// A whole row's statistics, its sums in LaneSums' order; the rsqrt as scalar.h's Rsqrt
// computes it, 1 / sqrt(v), each correctly rounded.
template <class V, bool Centered>
NormRowStatistics norm_row_statistics_lanes(const float* x, int64_t n, const NormConstants& k) {
  using F = typename V::f;
  NormRowStatistics stats;
  if constexpr (Centered) {
    RowSumLanes<V> sum;
    for (int64_t i = 0; i < n; i += V::width) sum.add(i, V::load(x + i));
    stats.mean = sum.finish() / k.length;
  }
  const F mean = V::splat(stats.mean);
  RowSumLanes<V> squares;
  for (int64_t i = 0; i < n; i += V::width) {
    const F d = centered_lanes<V, Centered>(V::load(x + i), mean);
    squares.add(i, V::mul(d, d));
  }
  stats.shifted_square = squares.finish() / k.length + k.eps;
  float inverse[V::width];
  V::store(inverse, V::div(V::splat(1.0f), V::sqrt(V::splat(stats.shifted_square))));
  stats.inverse = inverse[0];
  return stats;
}

// y = (d inv) w + b of a whole f32 row (w, b null where the norm has none).
template <class V, bool Centered>
void norm_row_lanes(const float* x, const float* w, const float* b, float* y, int64_t n, const NormConstants& k) {
  using F = typename V::f;
  const NormRowStatistics stats = norm_row_statistics_lanes<V, Centered>(x, n, k);
  const F mean = V::splat(stats.mean), inverse = V::splat(stats.inverse);
  for (int64_t i = 0; i < n; i += V::width) {
    F v = V::mul(centered_lanes<V, Centered>(V::load(x + i), mean), inverse);
    if (w != nullptr) v = V::mul(v, V::load(w + i));
    if (b != nullptr) v = V::add(v, V::load(b + i));
    V::store(y + i, v);
  }
}

// The gradient of a whole f32 row with respect to x (composite_gradient.cc's
// norm_gradient_row): with a = g w (g without a weight), d's cotangent (a inv + c d) + c d,
// c = sum(a d) ((-0.5 inv) / v) / length; x's that plus sum(-that) / length (layer_norm).
template <class V, bool Centered>
void norm_gradient_row_lanes(const float* x, const float* w, const float* g, float* dx, int64_t n,
                             const NormConstants& k) {
  using F = typename V::f;
  const NormRowStatistics stats = norm_row_statistics_lanes<V, Centered>(x, n, k);
  const F mean = V::splat(stats.mean), inverse = V::splat(stats.inverse);
  const auto cotangent = [&](int64_t i) {
    return w == nullptr ? V::load(g + i) : V::mul(V::load(g + i), V::load(w + i));
  };
  RowSumLanes<V> by_inverse;
  for (int64_t i = 0; i < n; i += V::width) {
    by_inverse.add(i, V::mul(cotangent(i), centered_lanes<V, Centered>(V::load(x + i), mean)));
  }
  const float slope = (k.minus_half * stats.inverse) / stats.shifted_square;
  const F through_squares = V::splat((by_inverse.finish() * slope) / k.length);
  RowSumLanes<V> minus_total;
  for (int64_t i = 0; i < n; i += V::width) {
    const F by_d = V::mul(through_squares, centered_lanes<V, Centered>(V::load(x + i), mean));
    const F value = V::add(V::add(V::mul(cotangent(i), inverse), by_d), by_d);
    V::store(dx + i, value);
    if constexpr (Centered) minus_total.add(i, negated<V>(value));
  }
  if constexpr (Centered) {
    const F through_mean = V::splat(minus_total.finish() / k.length);
    for (int64_t i = 0; i < n; i += V::width) V::store(dx + i, V::add(V::load(dx + i), through_mean));
  }
}

// A whole f32 row's statistics; a row of a norm; its gradient with respect to x given g.
using NormStatisticsKernel = NormRowStatistics (*)(const float* x, int64_t n, const NormConstants& k);
using NormRowKernel = void (*)(const float* x, const float* w, const float* b, float* y, int64_t n,
                               const NormConstants& k);
using NormGradientRowKernel = void (*)(const float* x, const float* w, const float* g, float* dx, int64_t n,
                                       const NormConstants& k);

// A whole f32 row: y = softmax of x; or dx = the gradient of (log_)softmax at x given g;
// false (the row left to the caller) where x holds a NaN.
using SoftmaxRowKernel = bool (*)(const float* x, float* y, int64_t n);
using SoftmaxGradientRowKernel = bool (*)(const float* x, const float* g, float* dx, int64_t n);

// Whether a row of n floats takes the whole-row kernels.
inline bool whole_row_lanes(int64_t n) { return n % kRowLanes == 0 && n >= 2 * kRowLanes; }

// Indexed [form][bf16]: form 0 tanh, 1 erf.
using GeluKernels = std::array<std::array<GeluKernel, 2>, 2>;
// Indexed [bf16].
using RowKernels = std::array<RowKernel, 2>;

// Indexed [form][bf16], as GeluKernels.
using GeluGradientKernels = std::array<std::array<GeluGradientKernel, 2>, 2>;

// Indexed [bf16].
using RowGradientKernels = std::array<RowGradientKernel, 2>;

struct CompositeLanes {
  GeluKernels gelu{};
  GeluGradientKernels gelu_gradient{};
  RowGradientKernels softmax_terms{}, softmax_gradient{}, log_softmax_gradient{};
  RowKernels shifted_exp{};
  RowKernels divided{};
  SoftmaxRowKernel softmax_row = nullptr;  // f32 rows that whole_row_lanes takes
  SoftmaxGradientRowKernel softmax_gradient_row = nullptr, log_softmax_gradient_row = nullptr;
  // Indexed [centered]: rms_norm's, layer_norm's; f32 rows that whole_row_lanes takes.
  std::array<NormStatisticsKernel, 2> norm_statistics{};
  std::array<NormRowKernel, 2> norm_row{};
  std::array<NormGradientRowKernel, 2> norm_gradient_row{};
  // f32 rows that whole_row_lanes takes.
  LogSoftmaxStatisticsKernel log_softmax_statistics = nullptr;
  CrossEntropyGradientRowKernel cross_entropy_gradient_row = nullptr;
};

template <class V>
CompositeLanes make_composite_lanes() {
  return {.gelu = {{{&gelu_lanes<V, true, false>, &gelu_lanes<V, true, true>},
                    {&gelu_lanes<V, false, false>, &gelu_lanes<V, false, true>}}},
          .gelu_gradient = {{{&gelu_gradient_lanes<V, true, false>, &gelu_gradient_lanes<V, true, true>},
                             {&gelu_gradient_lanes<V, false, false>, &gelu_gradient_lanes<V, false, true>}}},
          .softmax_terms = {&softmax_terms_lanes<V, false>, &softmax_terms_lanes<V, true>},
          .softmax_gradient = {&softmax_gradient_lanes<V, false>, &softmax_gradient_lanes<V, true>},
          .log_softmax_gradient = {&log_softmax_gradient_lanes<V, false>, &log_softmax_gradient_lanes<V, true>},
          .shifted_exp = {&shifted_exp_lanes<V, false>, &shifted_exp_lanes<V, true>},
          .divided = {&divided_lanes<V, false>, &divided_lanes<V, true>},
          .softmax_row = &softmax_row_lanes<V>,
          .softmax_gradient_row = &softmax_gradient_row_lanes<V>,
          .log_softmax_gradient_row = &log_softmax_gradient_row_lanes<V>,
          .norm_statistics = {&norm_row_statistics_lanes<V, false>, &norm_row_statistics_lanes<V, true>},
          .norm_row = {&norm_row_lanes<V, false>, &norm_row_lanes<V, true>},
          .norm_gradient_row = {&norm_gradient_row_lanes<V, false>, &norm_gradient_row_lanes<V, true>},
          .log_softmax_statistics = &log_softmax_statistics_lanes<V>,
          .cross_entropy_gradient_row = &cross_entropy_gradient_row_lanes<V>};
}

}  // namespace sx::device::cpu
