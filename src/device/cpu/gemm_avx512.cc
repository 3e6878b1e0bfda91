// The AVX-512F micro-kernel: 12 rows by 32 columns, 24 accumulators of 16
// floats, leaving registers for two B vectors and the broadcast. Compiled
// with -mavx512f; called only after cpuid.
// GCC 12's AVX-512 shuffles start from a self-initialized register and warn
// about it wherever they are inlined (GCC bug 105593, fixed in GCC 13).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

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
  static reg widen(const uint16_t* halves) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(halves));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }

  // 16 x 16 in four rounds of shuffles: pairs of rows interleaved, then 4 x 4
  // blocks within each 128-bit lane, then the lanes across rows 8 apart and 4 apart.
  static void transpose_block(const float* src, int64_t ld, int rows, float* out, int64_t out_stride) {
    reg r[16], t[16];
    for (int i = 0; i < 16; ++i) r[i] = i < rows ? load(src + i * ld) : zero();
    for (int k = 0; k < 8; ++k) {
      t[2 * k] = _mm512_unpacklo_ps(r[2 * k], r[2 * k + 1]);
      t[2 * k + 1] = _mm512_unpackhi_ps(r[2 * k], r[2 * k + 1]);
    }
    // r[4k + j], lane L: column 4L + j of rows 4k to 4k + 3.
    for (int k = 0; k < 4; ++k) {
      r[4 * k] = _mm512_shuffle_ps(t[4 * k], t[4 * k + 2], _MM_SHUFFLE(1, 0, 1, 0));
      r[4 * k + 1] = _mm512_shuffle_ps(t[4 * k], t[4 * k + 2], _MM_SHUFFLE(3, 2, 3, 2));
      r[4 * k + 2] = _mm512_shuffle_ps(t[4 * k + 1], t[4 * k + 3], _MM_SHUFFLE(1, 0, 1, 0));
      r[4 * k + 3] = _mm512_shuffle_ps(t[4 * k + 1], t[4 * k + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int k = 0; k < 2; ++k) {
      for (int j = 0; j < 4; ++j) {
        t[8 * k + j] = _mm512_shuffle_f32x4(r[8 * k + j], r[8 * k + 4 + j], 0x88);      // lanes 0, 2
        t[8 * k + 4 + j] = _mm512_shuffle_f32x4(r[8 * k + j], r[8 * k + 4 + j], 0xDD);  // lanes 1, 3
      }
    }
    const __mmask16 mask = static_cast<__mmask16>((1u << rows) - 1);
    for (int j = 0; j < 4; ++j) {
      _mm512_mask_storeu_ps(out + j * out_stride, mask, _mm512_shuffle_f32x4(t[j], t[8 + j], 0x88));
      _mm512_mask_storeu_ps(out + (8 + j) * out_stride, mask, _mm512_shuffle_f32x4(t[j], t[8 + j], 0xDD));
      _mm512_mask_storeu_ps(out + (4 + j) * out_stride, mask, _mm512_shuffle_f32x4(t[4 + j], t[12 + j], 0x88));
      _mm512_mask_storeu_ps(out + (12 + j) * out_stride, mask, _mm512_shuffle_f32x4(t[4 + j], t[12 + j], 0xDD));
    }
  }
};

}  // namespace

const KernelSet& avx512_kernels() {
  static const KernelSet set = microkernel::make_kernel_set<Avx512, 12, 2>(Isa::avx512);
  return set;
}

}  // namespace sx::device::cpu
