// The VDPBF16PS peak loop (two multiply-adds a lane an instruction); built with
// -mavx512f -mavx512bf16.
#include <immintrin.h>

#include "fma_peak.h"

namespace {
struct Avx512Pairs {
  using reg = __m512;
  static reg broadcast(float x) { return _mm512_set1_ps(x); }
  static reg fma(reg acc, reg a, reg b) {
    return _mm512_dpbf16_ps(acc, reinterpret_cast<__m512bh>(a), reinterpret_cast<__m512bh>(b));
  }
  static float first(reg r) { return _mm512_cvtss_f32(r); }
};
}  // namespace

float dpbf16_peak_avx512bf16(int64_t iterations) { return fma_chains<Avx512Pairs>(iterations); }
