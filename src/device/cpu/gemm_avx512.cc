// The AVX-512F micro-kernel: 12 rows by 32 columns, 24 accumulators of 16
// floats, leaving registers for two B vectors and the broadcast. Compiled
// with -mavx512f; called only after cpuid.
#include <immintrin.h>

#include "device/cpu/gemm_microkernel.h"

namespace sx::device::cpu {
namespace {

struct Avx512 {
  using reg = __m512;
  static constexpr int width = 16;
  static reg zero() { return _mm512_setzero_ps(); }
  static reg load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, reg r) { _mm512_storeu_ps(p, r); }
  static reg broadcast(float x) { return _mm512_set1_ps(x); }
  static reg fma(reg a, reg b, reg c) { return _mm512_fmadd_ps(a, b, c); }
};

}  // namespace

const KernelSet& avx512_kernels() {
  static const KernelSet set = microkernel::make_kernel_set<Avx512, 12, 2>(Isa::avx512);
  return set;
}

}  // namespace sx::device::cpu
