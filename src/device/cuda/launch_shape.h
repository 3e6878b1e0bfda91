// The launch shape of nvcc's grid-stride kernels: 256 threads a block, as many blocks
// as cover n elements, at most 65535.
#pragma once

#include <cstdint>

namespace sx::device::cuda {

inline constexpr int kThreads = 256;
inline constexpr int64_t kMostBlocks = 65535;

inline unsigned blocks_for(int64_t n) {
  int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > kMostBlocks ? kMostBlocks : blocks));
}

}  // namespace sx::device::cuda
