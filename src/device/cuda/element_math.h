// One element of an elementwise primitive: its formula (graph/prims/scalar.h) in its
// dtype's compute type, stored as the reference kernels store it (graph/prims/common.h).
// Both kinds of the cuda device's kernels call these, nvcc's (elementwise.cu) and the
// ones NVRTC compiles from generated source (codegen.h, which gives NVRTC this header,
// scalar.h and nvrtc_std.h); the host tests call them too (element.h).
#pragma once

#include <type_traits>

#include "graph/host_device.h"

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

}  // namespace sx::device::cuda
