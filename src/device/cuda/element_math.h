// One element of an elementwise primitive: its formula (graph/prims/scalar.h) in its
// dtype's compute type, stored as the reference kernels store it (graph/prims/common.h).
// Both kinds of the cuda device's kernels call these, nvcc's (elementwise.cu) and the
// ones NVRTC compiles from generated source (codegen.h, which gives NVRTC this header,
// scalar.h and nvrtc_std.h); the host tests call them too (element.h). A row reduction
// (sum or max over the last axis) is one thread's loop over its row.
#pragma once

#include <cstdint>
#include <limits>
#include <type_traits>

#include "graph/host_device.h"
#include "graph/prims/scalar.h"

namespace sx::device::cuda {

// x's formula F, computed in C and stored as S.
template <class F, class S, class C>
SX_HOST_DEVICE S unary_element(S x) {
  return S(static_cast<C>(F{}(static_cast<C>(x))));
}

// The formula F of a and b, computed in C; stored as S, or as bool (Out) for a comparison.
template <class F, class S, class C, class Out>
SX_HOST_DEVICE Out binary_element(S a, S b) {
  auto r = F{}(static_cast<C>(a), static_cast<C>(b));
  if constexpr (std::is_same_v<Out, bool>) return static_cast<bool>(r);
  else return Out(static_cast<C>(r));
}

// A row's sum, stored as S: its elements added in C one after another from the first,
// as the reference adds them, so that the bits are the reference's and do not depend on
// how many rows run together.
template <class S, class C>
SX_HOST_DEVICE S row_sum(const S* row, int64_t length) {
  C acc = C(0);
  for (int64_t j = 0; j < length; ++j) acc = graph::prims::wrap_add(acc, static_cast<C>(row[j]));
  return S(acc);
}

// A row's largest element, the first of equals; NaN wins over every number. An empty
// row's is the least value of C (-infinity for a float), as the reference's.
template <class S, class C>
SX_HOST_DEVICE S row_max(const S* row, int64_t length) {
  if (length == 0) {
    if constexpr (std::is_floating_point_v<C>) return S(-std::numeric_limits<C>::infinity());
    else return S(std::numeric_limits<C>::lowest());
  }
  C best = static_cast<C>(row[0]);
  for (int64_t j = 1; j < length; ++j) {
    C v = static_cast<C>(row[j]);
    bool better = v > best;
    if constexpr (std::is_floating_point_v<C>) better = better || (std::isnan(v) && !std::isnan(best));
    if (better) best = v;
  }
  return S(best);
}

}  // namespace sx::device::cuda
