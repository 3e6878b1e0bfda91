// The AVX-512F peak loop; built with -mavx512f.
#include <immintrin.h>

#include "fma_peak.h"

namespace {
struct Avx512 {
  using reg = __m512;
  static reg broadcast(float x) { return _mm512_set1_ps(x); }
  static reg fma(reg a, reg b, reg c) { return _mm512_fmadd_ps(a, b, c); }
  static float first(reg r) { return _mm512_cvtss_f32(r); }
};
}  // namespace

float fma_peak_avx512(int64_t iterations) { return fma_chains<Avx512>(iterations); }
