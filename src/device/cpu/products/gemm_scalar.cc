// The portable micro-kernel: one float a register, fmaf for the fused
// multiply-add (exact in any build, in hardware or not). The fallback on
// processors without AVX2 and the check of the vector kernels' bits.
#include "device/cpu/products/gemm_microkernel.h"
#include "device/cpu/simd.h"

namespace sx::device::cpu {

const KernelSet& scalar_kernels() {
  static const KernelSet set = microkernel::make_kernel_set<simd::Scalar, 4, 4>(Isa::scalar);
  return set;
}

}  // namespace sx::device::cpu
