// The bf16 storage type, alone, so that the kernels NVRTC compiles (device/cuda) take it
// as the host's code does: it needs only <bit>, <cstdint> and host_device.h.
#pragma once

#include <bit>
#include <cstdint>

#include "graph/host_device.h"

namespace sx::graph {

// bfloat16 stored as its 16 bits; converting from f32 rounds to nearest even. The cuda
// device's kernels convert with the same two functions.
struct Bf16 {
  uint16_t bits = 0;
  Bf16() = default;
  // Inline, and NaN told apart by its bits, so loops of conversions vectorize.
  SX_HOST_DEVICE explicit Bf16(float value) {
    uint32_t f = std::bit_cast<uint32_t>(value);
    if ((f & 0x7fffffffu) > 0x7f800000u) {
      bits = static_cast<uint16_t>((f >> 16) | 0x40);  // a NaN: kept a quiet NaN
      return;
    }
    uint32_t rounding = 0x7fff + ((f >> 16) & 1);
    bits = static_cast<uint16_t>((f + rounding) >> 16);
  }
  SX_HOST_DEVICE explicit operator float() const { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }
};

}  // namespace sx::graph
