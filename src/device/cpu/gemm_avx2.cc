// The AVX2 + FMA micro-kernel: 6 rows by 16 columns, 12 accumulators of 8
// floats (Haswell to Zen: two FMA ports of 4 cycles' latency need 8 or more
// independent sums). Compiled with -mavx2 -mfma; called only after cpuid.
#include <immintrin.h>

#include "device/cpu/gemm_microkernel.h"

namespace sx::device::cpu {
namespace {

struct Avx2 {
  using reg = __m256;
  static constexpr int width = 8;
  static reg zero() { return _mm256_setzero_ps(); }
  static reg load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, reg r) { _mm256_storeu_ps(p, r); }
  static reg broadcast(float x) { return _mm256_set1_ps(x); }
  static reg fma(reg a, reg b, reg c) { return _mm256_fmadd_ps(a, b, c); }
};

}  // namespace

const KernelSet& avx2_kernels() {
  static const KernelSet set = microkernel::make_kernel_set<Avx2, 6, 2>(Isa::avx2);
  return set;
}

}  // namespace sx::device::cpu
