// The reductions over any axes (sum, reduce_max, reduce_min, argmax, argmin), one GPU
// thread per result element: it walks the reduced elements of its input in row-major
// order, as the reference meets them, so that the bits are the reference's and do not
// depend on how many elements run together. The generated kernels (codegen.h) and the
// host tests call these functions.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "device/cuda/strided.h"
#include "graph/host_device.h"
#include "graph/prims/scalar.h"

namespace sx::device::cuda {

// A reduction's input axes: the kept ones, whose places give a result element, and the
// reduced ones, each with its length and its input stride.
struct ReductionAxes {
  int32_t kept_rank = 0;
  int64_t kept_shape[kMostAxes] = {};
  int64_t kept_stride[kMostAxes] = {};
  int32_t reduced_rank = 0;
  int64_t reduced_shape[kMostAxes] = {};
  int64_t reduced_stride[kMostAxes] = {};
};

// Result element o of a sum: its `count` reduced elements added in C in row-major order.
template <class S, class C>
SX_HOST_DEVICE S reduce_sum(const S* x, const ReductionAxes& axes, int64_t o, int64_t count) {
  const S* base = x + strided_offset(axes.kept_rank, axes.kept_shape, axes.kept_stride, o);
  C acc = C(0);
  for (int64_t j = 0; j < count; ++j) {
    acc = graph::prims::wrap_add(
        acc, static_cast<C>(base[strided_offset(axes.reduced_rank, axes.reduced_shape, axes.reduced_stride, j)]));
  }
  return S(acc);
}

// Result element o of reduce_max (Max, not Index: Out is S), reduce_min, argmax (Max and
// Index: Out is int64_t, the flat place within the reduced axes) or argmin: the first of
// equals (a later one is taken only when greater, or smaller); NaN wins over every
// number. No elements give the least (greatest) value of C, or place 0.
template <class S, class C, class Out, bool Max, bool Index>
SX_HOST_DEVICE Out reduce_extremum(const S* x, const ReductionAxes& axes, int64_t o, int64_t count) {
  const S* base = x + strided_offset(axes.kept_rank, axes.kept_shape, axes.kept_stride, o);
  C best;
  if constexpr (std::is_floating_point_v<C>) {
    best = Max ? -std::numeric_limits<C>::infinity() : std::numeric_limits<C>::infinity();
  } else {
    best = Max ? std::numeric_limits<C>::lowest() : std::numeric_limits<C>::max();
  }
  int64_t where = 0;
  for (int64_t j = 0; j < count; ++j) {
    C v = static_cast<C>(base[strided_offset(axes.reduced_rank, axes.reduced_shape, axes.reduced_stride, j)]);
    bool better = Max ? v > best : v < best;
    if constexpr (std::is_floating_point_v<C>) better = better || (std::isnan(v) && !std::isnan(best));
    if (better) {
      best = v;
      where = j;
    }
  }
  if constexpr (Index) return Out(where);
  else return Out(best);
}

}  // namespace sx::device::cuda
