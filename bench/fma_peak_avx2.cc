// The AVX2 + FMA peak loop; built with -mavx2 -mfma.
#include <immintrin.h>

#include "fma_peak.h"

namespace {
struct Avx2 {
  using reg = __m256;
  static reg broadcast(float x) { return _mm256_set1_ps(x); }
  static reg fma(reg a, reg b, reg c) { return _mm256_fmadd_ps(a, b, c); }
  static float first(reg r) { return _mm256_cvtss_f32(r); }
};
}  // namespace

float fma_peak_avx2(int64_t iterations) { return fma_chains<Avx2>(iterations); }
