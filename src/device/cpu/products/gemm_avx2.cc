// The AVX2 + FMA micro-kernel: 6 rows by 16 columns, 12 accumulators of 8
// floats (Haswell to Zen: two FMA ports of 4 cycles' latency need 8 or more
// independent sums). Compiled with -mavx2 -mfma; called only after cpuid.
#include "device/cpu/products/gemm_microkernel.h"
#include "device/cpu/simd.h"

namespace sx::device::cpu {

const KernelSet& avx2_kernels() {
  static const KernelSet set = microkernel::make_kernel_set<simd::Avx2, 6, 2>(Isa::avx2);
  return set;
}

}  // namespace sx::device::cpu
