// How the cpu device reduces one contiguous row, shared by the reduce steps
// and the fused steps that end in a reduction (fusion.h), so a row's bits are
// the same either way.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "graph/prims/common.h"

namespace sx::device::cpu {

enum class ReduceKind { sum, max, min, argmax, argmin };

// The running value of one output element.
template <class C>
struct Extremum {
  C best;
  int64_t where = 0;
  bool seen = false;
};

template <class C>
C initial(ReduceKind kind) {
  bool want_max = kind == ReduceKind::max || kind == ReduceKind::argmax;
  if constexpr (std::numeric_limits<C>::has_infinity) {
    return want_max ? -std::numeric_limits<C>::infinity() : std::numeric_limits<C>::infinity();
  } else {
    return want_max ? std::numeric_limits<C>::lowest() : std::numeric_limits<C>::max();
  }
}

// The reference's update: NaN wins over every number, ties keep the first.
template <class C>
void update(Extremum<C>& e, C v, int64_t position, bool want_max) {
  bool better = want_max ? v > e.best : v < e.best;
  if constexpr (std::is_floating_point_v<C>) better = better || (std::isnan(v) && !std::isnan(e.best));
  if (!e.seen || better) {
    e.best = v;
    e.where = position;
    e.seen = true;
  }
}

// A float row sum's running state, which a row read in pieces carries from one
// piece to the next: element r of the row has gone to lane r % 16.
template <class C>
struct LaneSums {
  static constexpr int64_t kLanes = 16;
  C lanes[kLanes] = {};

  // Adds the row's next n elements, n a multiple of kLanes.
  template <class S>
  void add(const S* x, int64_t n) {
    for (int64_t r = 0; r < n; r += kLanes) {
      for (int64_t l = 0; l < kLanes; ++l) lanes[l] += static_cast<C>(x[r + l]);
    }
  }
  // The row's sum: the lanes added in a fixed tree (lane l takes lane l + width, for
  // width 8, 4, 2, 1), then its last n < kLanes elements in order.
  template <class S>
  C finish(const S* tail, int64_t n) {
    for (int64_t width = kLanes / 2; width > 0; width /= 2) {
      for (int64_t l = 0; l < width; ++l) lanes[l] += lanes[l + width];
    }
    C acc = lanes[0];
    for (int64_t r = 0; r < n; ++r) acc += static_cast<C>(tail[r]);
    return acc;
  }
};

// The same for f32 sums, its lanes held as four vectors of four (GCC's vector
// extension, which every x86-64 runs) so that they stay in registers: as an array the
// tree went through memory, a store and a load a step, and took as long as a row of
// 256 elements' adds. The same adds in the same order, so the same bits.
template <>
struct LaneSums<float> {
  static constexpr int64_t kLanes = 16;
  typedef float Floats __attribute__((vector_size(16)));
  Floats lanes[4] = {};

  template <class S>
  void add(const S* x, int64_t n) {
    for (int64_t r = 0; r < n; r += kLanes) {
#pragma GCC unroll 4
      for (int q = 0; q < 4; ++q) {
        Floats v;
        if constexpr (std::is_same_v<S, float>) {
          std::memcpy(&v, x + r + 4 * q, sizeof(Floats));
        } else {
          for (int l = 0; l < 4; ++l) v[l] = static_cast<float>(x[r + 4 * q + l]);
        }
        lanes[q] += v;
      }
    }
  }
  template <class S>
  float finish(const S* tail, int64_t n) {
    const Floats half = lanes[0] + lanes[2], other = lanes[1] + lanes[3];          // width 8
    const Floats quarter = half + other;                                           // width 4
    const float pair0 = quarter[0] + quarter[2], pair1 = quarter[1] + quarter[3];  // width 2
    float acc = pair0 + pair1;                                                     // width 1
    for (int64_t r = 0; r < n; ++r) acc += static_cast<float>(tail[r]);
    return acc;
  }
};

// The sum of a contiguous row. Floats of 32 elements or more: element r goes to
// lane r % 16, the lanes are added in a fixed tree, then the tail in order
// (LaneSums): one order for every row length, thread count and batch, which the
// compiler vectorizes (a sequential sum waits on each add's latency). It differs
// from the reference's sequential order by rounding only; integers wrap, so any
// order gives the reference's bits, and they keep its loop.
template <class S, class C>
C row_sum(const S* row, int64_t n) {
  if constexpr (std::is_floating_point_v<C>) {
    if (n >= 2 * LaneSums<C>::kLanes) {
      LaneSums<C> sums;
      int64_t full = n - n % LaneSums<C>::kLanes;
      sums.add(row, full);
      return sums.finish(row + full, n - full);
    }
  }
  C acc(0);
  for (int64_t r = 0; r < n; ++r) acc = graph::prims::wrap_add(acc, static_cast<C>(row[r]));
  return acc;
}

// row_extreme's 16 lanes over the first `full` (a multiple of 16, at least 16)
// floats of a row: lane l takes elements l, l + 16, ... in order, each kept where
// it is greater (WantMax) or less than the lane so far, and notes whether any was
// NaN. In vectors of 4 floats (GCC's vector extension, which every x86-64 runs),
// each lane the same selects in the same order as a loop over them: the compiler
// keeps such a loop scalar.
template <bool WantMax>
void extreme_lanes(const float* row, int64_t full, float (&lanes)[16], bool (&unordered)[16]) {
  typedef float Floats __attribute__((vector_size(16)));
  typedef int32_t Flags __attribute__((vector_size(16)));
  Floats best[4];
  Flags nan[4];
  for (int q = 0; q < 4; ++q) {
    std::memcpy(&best[q], row + 4 * q, sizeof(Floats));
    nan[q] = best[q] != best[q];
  }
  for (int64_t r = 16; r < full; r += 16) {
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) {
      Floats v;
      std::memcpy(&v, row + r + 4 * q, sizeof(Floats));
      best[q] = (WantMax ? v > best[q] : v < best[q]) ? v : best[q];
      nan[q] |= v != v;
    }
  }
  for (int l = 0; l < 16; ++l) {
    lanes[l] = best[l / 4][l % 4];
    unordered[l] = nan[l / 4][l % 4] != 0;
  }
}

// The max (WantMax) or min of a contiguous float row, by 16 lanes the compiler
// vectorizes, where it is the reference's: when the row has no NaN and the result is
// not a zero. Then every element equal to it has its bits, whichever the reference's
// order finds first; a NaN's payload or a zero's sign depends on that order, and
// those rows (false) take the reference's loop.
template <bool WantMax, class S, class C>
bool row_extreme(const S* row, int64_t n, C& result) {
  constexpr int64_t kLanes = 16;
  if constexpr (!std::is_floating_point_v<C>) {
    return false;
  } else {
    if (n < kLanes) return false;
    C lanes[kLanes];
    bool unordered[kLanes];
    const int64_t full = n - n % kLanes;
    if constexpr (std::is_same_v<S, float> && std::is_same_v<C, float>) {
      extreme_lanes<WantMax>(row, full, lanes, unordered);
    } else {
      for (int64_t l = 0; l < kLanes; ++l) {
        lanes[l] = static_cast<C>(row[l]);
        unordered[l] = lanes[l] != lanes[l];
      }
      for (int64_t r = kLanes; r < full; r += kLanes) {
        for (int64_t l = 0; l < kLanes; ++l) {
          C v = static_cast<C>(row[r + l]);
          lanes[l] = (WantMax ? v > lanes[l] : v < lanes[l]) ? v : lanes[l];
          unordered[l] = unordered[l] || v != v;
        }
      }
    }
    C best = lanes[0];
    bool nan = false;
    for (int64_t l = 0; l < kLanes; ++l) {
      best = (WantMax ? lanes[l] > best : lanes[l] < best) ? lanes[l] : best;
      nan = nan || unordered[l];
    }
    for (int64_t r = full; r < n; ++r) {
      C v = static_cast<C>(row[r]);
      best = (WantMax ? v > best : v < best) ? v : best;
      nan = nan || v != v;
    }
    if (nan || best == C(0)) return false;
    result = best;
    return true;
  }
}

// The sum, max or min of a contiguous row of n elements (n > 0 for max and min):
// row_sum's order for floats, row_extreme where it holds, else the reference's loop.
template <class S, class C>
C reduce_row(ReduceKind kind, const S* row, int64_t n) {
  if (kind == ReduceKind::sum) return row_sum<S, C>(row, n);
  const bool want_max = kind == ReduceKind::max;
  if (C best; want_max ? row_extreme<true, S, C>(row, n, best) : row_extreme<false, S, C>(row, n, best)) return best;
  Extremum<C> e{initial<C>(kind)};
  for (int64_t r = 0; r < n; ++r) update(e, static_cast<C>(row[r]), r, want_max);
  return e.best;
}

}  // namespace sx::device::cpu
