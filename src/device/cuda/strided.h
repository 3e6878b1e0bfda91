// Places of a row-major walk over axes of given lengths and strides, which the movement
// and reduction kernels share (movement.h, reduction.h).
#pragma once

#include <cstdint>

#include "graph/host_device.h"

namespace sx::device::cuda {

// The most axes a movement or reduction kernel walks; a value with more has no kernel.
inline constexpr int kMostAxes = 8;

// The offset of place i (row-major) of `rank` axes of `shape` and `stride`.
SX_HOST_DEVICE inline int64_t strided_offset(int32_t rank, const int64_t* shape, const int64_t* stride, int64_t i) {
  int64_t offset = 0;
  for (int32_t axis = rank - 1; axis >= 0; --axis) {
    offset += (i % shape[axis]) * stride[axis];
    i /= shape[axis];
  }
  return offset;
}

}  // namespace sx::device::cuda
