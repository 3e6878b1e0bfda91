// The portable micro-kernel: one float a register, fmaf for the fused
// multiply-add (exact in any build, in hardware or not). The fallback on
// processors without AVX2 and the check of the vector kernels' bits.
#include <cmath>

#include "device/cpu/gemm_microkernel.h"

namespace sx::device::cpu {
namespace {

struct Scalar {
  using reg = float;
  static constexpr int width = 1;
  static reg zero() { return 0.0f; }
  static reg load(const float* p) { return *p; }
  static void store(float* p, reg r) { *p = r; }
  static reg broadcast(float x) { return x; }
  static reg fma(reg a, reg b, reg c) { return __builtin_fmaf(a, b, c); }
  static reg widen(const uint16_t* half) { return __builtin_bit_cast(float, static_cast<uint32_t>(*half) << 16); }
  static void transpose_block(const float* src, int64_t, int, float* out, int64_t) { *out = *src; }
};

}  // namespace

const KernelSet& scalar_kernels() {
  static const KernelSet set = microkernel::make_kernel_set<Scalar, 4, 4>(Isa::scalar);
  return set;
}

}  // namespace sx::device::cpu
