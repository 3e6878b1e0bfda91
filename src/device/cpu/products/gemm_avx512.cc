// The AVX-512F micro-kernel: 12 rows by 32 columns, 24 accumulators of 16
// floats, leaving registers for two B vectors and the broadcast. Compiled
// with -mavx512f; called only after cpuid.
#include "device/cpu/products/gemm_microkernel.h"
#include "device/cpu/simd.h"

namespace sx::device::cpu {

const KernelSet& avx512_kernels() {
  static const KernelSet set = microkernel::make_kernel_set<simd::Avx512, 12, 2>(Isa::avx512);
  return set;
}

}  // namespace sx::device::cpu
