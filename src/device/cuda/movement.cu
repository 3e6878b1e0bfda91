// The movement kernels: a grid-stride loop of movement.h's copy_places, one instance per
// element size, since a movement copies elements without reading their values.
#include <cstring>

#include "device/cuda/launch_shape.h"
#include "device/cuda/movement.h"

namespace sx::device::cuda {
namespace {

template <class E>
__global__ void fill_kernel(E* out, E value, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    out[i] = value;
  }
}

template <class E>
__global__ void copy_kernel(StridedCopy copy, const E* src, E* dst, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    int64_t from = 0, to = 0;
    copy_places(copy, i, &from, &to);
    dst[to] = src[from];
  }
}

template <class E>
cudaError_t launch(const Movement& movement, const void* const* sources, void* out, int64_t n, cudaStream_t stream) {
  if (movement.fills && n > 0) {
    E value;
    std::memcpy(&value, &movement.fill, sizeof value);
    fill_kernel<E><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<E*>(out), value, n);
  }
  for (size_t k = 0; k < movement.copies.size(); ++k) {
    int64_t length = copy_length(movement.copies[k]);
    if (length == 0) continue;
    copy_kernel<E><<<blocks_for(length), kThreads, 0, stream>>>(movement.copies[k], static_cast<const E*>(sources[k]),
                                                                static_cast<E*>(out), length);
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_movement(const Movement& movement, const void* const* sources, void* out, int64_t n,
                            size_t element_bytes, cudaStream_t stream) {
  switch (element_bytes) {
    case 1: return launch<uint8_t>(movement, sources, out, n, stream);
    case 2: return launch<uint16_t>(movement, sources, out, n, stream);
    case 4: return launch<uint32_t>(movement, sources, out, n, stream);
    case 8: return launch<uint64_t>(movement, sources, out, n, stream);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace sx::device::cuda
