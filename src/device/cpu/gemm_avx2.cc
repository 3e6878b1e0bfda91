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
  static reg widen(const uint16_t* halves) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(halves));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }

  // 8 x 8: pairs of rows interleaved, 4 x 4 blocks within each 128-bit lane,
  // then the lanes of rows 4 apart.
  static void transpose_block(const float* src, int64_t ld, int rows, float* out, int64_t out_stride) {
    reg r[8], t[8];
    for (int i = 0; i < 8; ++i) r[i] = i < rows ? load(src + i * ld) : zero();
    for (int k = 0; k < 4; ++k) {
      t[2 * k] = _mm256_unpacklo_ps(r[2 * k], r[2 * k + 1]);
      t[2 * k + 1] = _mm256_unpackhi_ps(r[2 * k], r[2 * k + 1]);
    }
    // r[4k + j], lane L: column 4L + j of rows 4k to 4k + 3.
    for (int k = 0; k < 2; ++k) {
      r[4 * k] = _mm256_shuffle_ps(t[4 * k], t[4 * k + 2], _MM_SHUFFLE(1, 0, 1, 0));
      r[4 * k + 1] = _mm256_shuffle_ps(t[4 * k], t[4 * k + 2], _MM_SHUFFLE(3, 2, 3, 2));
      r[4 * k + 2] = _mm256_shuffle_ps(t[4 * k + 1], t[4 * k + 3], _MM_SHUFFLE(1, 0, 1, 0));
      r[4 * k + 3] = _mm256_shuffle_ps(t[4 * k + 1], t[4 * k + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    reg column[8];
    for (int j = 0; j < 4; ++j) {
      column[j] = _mm256_permute2f128_ps(r[j], r[4 + j], 0x20);
      column[4 + j] = _mm256_permute2f128_ps(r[j], r[4 + j], 0x31);
    }
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(rows), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    // A masked store is slow on AMD's cores (a 6-row sliver of A took 13% of a
    // 2048 x 256 x 256 product in them). Where the rows out lie closer than a vector
    // (A's slivers: out_stride 6) and no store reaches past the next row, whole stores
    // in order: each one's columns past `rows` are the next row's first, which the next
    // store writes over; only the last is masked.
    if (rows == width) {
      for (int p = 0; p < 8; ++p) store(out + p * out_stride, column[p]);
    } else if (out_stride >= width / 2 && out_stride < width) {
      for (int p = 0; p < 7; ++p) store(out + p * out_stride, column[p]);
      _mm256_maskstore_ps(out + 7 * out_stride, mask, column[7]);
    } else {
      for (int p = 0; p < 8; ++p) _mm256_maskstore_ps(out + p * out_stride, mask, column[p]);
    }
  }
};

}  // namespace

const KernelSet& avx2_kernels() {
  static const KernelSet set = microkernel::make_kernel_set<Avx2, 6, 2>(Isa::avx2);
  return set;
}

}  // namespace sx::device::cpu
