// The vector types of the cpu device's kernels, one per instruction set, in one place:
// the GEMM's micro-kernels (gemm_microkernel.h) and the vector math (vector_math.h,
// over graph/prims/lane_math.h's contract) take the same ones. Each is what that
// contract asks (f32 lanes `f`, int32 lanes `i`, masks `m`, and their operations), plus
// what the GEMM asks: zero, widen (bf16 to f32, exact) and transpose_block.
//
// A type is defined only where the including file is compiled for its instruction set
// (the compiler's __AVX512F__, or __AVX2__ with __FMA__), and in an unnamed namespace:
// every file gets types of its own, so the linker can never keep a copy built for a
// wider set for a narrower processor (the rule of lane_math.h). The scalar GEMM's type
// is lane_math's ScalarLanes with the GEMM's three.
#pragma once

// GCC 12.2 warns, inside its own header, that the pass-through operand some AVX-512
// intrinsics give their builtins (_mm512_undefined_*) is uninitialized, wherever they
// are inlined (GCC bug 105593, fixed in GCC 13).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#include <cstdint>

#include "graph/prims/lane_math.h"

namespace sx::device::cpu::simd {
namespace {

// One float a lane; std::fma rounds once, in hardware or not.
struct Scalar : graph::lane_math::ScalarLanes {
  static f zero() { return 0.0f; }
  static f widen(const uint16_t* half) { return __builtin_bit_cast(float, static_cast<uint32_t>(*half) << 16); }
  static void transpose_block(const float* src, int64_t, int, float* out, int64_t) { *out = *src; }
};

#if defined(__AVX2__) && defined(__FMA__)
// AVX2 with FMA: 8 floats a register, masks as all-ones lanes.
struct Avx2 {
  using f = __m256;
  using i = __m256i;
  using m = __m256;
  static constexpr int width = 8;
  static f splat(float x) { return _mm256_set1_ps(x); }
  static i splat_i(int32_t x) { return _mm256_set1_epi32(x); }
  static f add(f a, f b) { return _mm256_add_ps(a, b); }
  static f sub(f a, f b) { return _mm256_sub_ps(a, b); }
  static f mul(f a, f b) { return _mm256_mul_ps(a, b); }
  static f div(f a, f b) { return _mm256_div_ps(a, b); }
  static f fma(f a, f b, f c) { return _mm256_fmadd_ps(a, b, c); }
  static f sqrt(f a) { return _mm256_sqrt_ps(a); }
  static m lt(f a, f b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
  static m le(f a, f b) { return _mm256_cmp_ps(a, b, _CMP_LE_OQ); }
  static m gt(f a, f b) { return _mm256_cmp_ps(a, b, _CMP_GT_OQ); }
  static m eq(f a, f b) { return _mm256_cmp_ps(a, b, _CMP_EQ_OQ); }
  static m is_nan(f a) { return _mm256_cmp_ps(a, a, _CMP_UNORD_Q); }
  static f select(m c, f a, f b) { return _mm256_blendv_ps(b, a, c); }
  static i bits(f a) { return _mm256_castps_si256(a); }
  static f from_bits(i a) { return _mm256_castsi256_ps(a); }
  static i iadd(i a, i b) { return _mm256_add_epi32(a, b); }
  static i isub(i a, i b) { return _mm256_sub_epi32(a, b); }
  static i iand(i a, i b) { return _mm256_and_si256(a, b); }
  static i ior(i a, i b) { return _mm256_or_si256(a, b); }
  static i ixor(i a, i b) { return _mm256_xor_si256(a, b); }
  template <int k>
  static i shl(i a) {
    return _mm256_slli_epi32(a, k);
  }
  template <int k>
  static i sar(i a) {
    return _mm256_srai_epi32(a, k);
  }
  static f to_float(i a) { return _mm256_cvtepi32_ps(a); }
  static i to_int(f a) { return _mm256_cvttps_epi32(a); }
  static m bit_set(i a, int32_t bit) {
    i b = _mm256_set1_epi32(bit);
    return _mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_and_si256(a, b), b));
  }
  static bool any(m c) { return _mm256_movemask_ps(c) != 0; }
  static f zero() { return _mm256_setzero_ps(); }
  static f load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, f a) { _mm256_storeu_ps(p, a); }
  static i load_i(const int32_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  static void store_i(int32_t* p, i a) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), a); }
  // Philox's: {0, 1, ..., 7}, and a * m per lane as 64 bits (even lanes, then odd ones).
  static i lane_index() { return _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7); }
  static void mul_wide(i a, uint32_t m, i& hi, i& lo) {
    i factor = _mm256_set1_epi32(static_cast<int32_t>(m));
    i even = _mm256_mul_epu32(a, factor), odd = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), factor);
    lo = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
    hi = _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
  }

  // The GEMM's: eight bf16 widened to f32 exactly, and a block of a matrix transposed.
  static f widen(const uint16_t* halves) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(halves));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }

  // 8 x 8: pairs of rows interleaved, 4 x 4 blocks within each 128-bit lane,
  // then the lanes of rows 4 apart.
  __attribute__((always_inline)) static void transpose_block(const float* src, int64_t ld, int rows, float* out,
                                                             int64_t out_stride) {
    f r[8], t[8];
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
    f column[8];
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
#endif

#if defined(__AVX512F__)
// AVX-512F: 16 floats a register, masks in k registers.
struct Avx512 {
  using f = __m512;
  using i = __m512i;
  using m = __mmask16;
  static constexpr int width = 16;
  static f splat(float x) { return _mm512_set1_ps(x); }
  static i splat_i(int32_t x) { return _mm512_set1_epi32(x); }
  static f add(f a, f b) { return _mm512_add_ps(a, b); }
  static f sub(f a, f b) { return _mm512_sub_ps(a, b); }
  static f mul(f a, f b) { return _mm512_mul_ps(a, b); }
  static f div(f a, f b) { return _mm512_div_ps(a, b); }
  static f fma(f a, f b, f c) { return _mm512_fmadd_ps(a, b, c); }
  static f sqrt(f a) { return _mm512_sqrt_ps(a); }
  static m lt(f a, f b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
  static m le(f a, f b) { return _mm512_cmp_ps_mask(a, b, _CMP_LE_OQ); }
  static m gt(f a, f b) { return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ); }
  static m eq(f a, f b) { return _mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ); }
  static m is_nan(f a) { return _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q); }
  static f select(m c, f a, f b) { return _mm512_mask_blend_ps(c, b, a); }
  static i bits(f a) { return _mm512_castps_si512(a); }
  static f from_bits(i a) { return _mm512_castsi512_ps(a); }
  static i iadd(i a, i b) { return _mm512_add_epi32(a, b); }
  static i isub(i a, i b) { return _mm512_sub_epi32(a, b); }
  static i iand(i a, i b) { return _mm512_and_si512(a, b); }
  static i ior(i a, i b) { return _mm512_or_si512(a, b); }
  static i ixor(i a, i b) { return _mm512_xor_si512(a, b); }
  template <int k>
  static i shl(i a) {
    return _mm512_slli_epi32(a, k);
  }
  template <int k>
  static i sar(i a) {
    return _mm512_srai_epi32(a, k);
  }
  static f to_float(i a) { return _mm512_cvtepi32_ps(a); }
  static i to_int(f a) { return _mm512_cvttps_epi32(a); }
  static m bit_set(i a, int32_t bit) { return _mm512_test_epi32_mask(a, _mm512_set1_epi32(bit)); }
  static bool any(m c) { return c != 0; }
  static f zero() { return _mm512_setzero_ps(); }
  static f load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, f a) { _mm512_storeu_ps(p, a); }
  static i load_i(const int32_t* p) { return _mm512_loadu_si512(p); }
  static void store_i(int32_t* p, i a) { _mm512_storeu_si512(p, a); }
  // Philox's: {0, 1, ..., 15}, and a * m per lane as 64 bits (even lanes, then odd ones).
  static i lane_index() { return _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0); }
  static void mul_wide(i a, uint32_t m, i& hi, i& lo) {
    i factor = _mm512_set1_epi32(static_cast<int32_t>(m));
    i even = _mm512_mul_epu32(a, factor), odd = _mm512_mul_epu32(_mm512_srli_epi64(a, 32), factor);
    lo = _mm512_mask_blend_epi32(0xAAAA, even, _mm512_slli_epi64(odd, 32));
    hi = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(even, 32), odd);
  }

  // The GEMM's: sixteen bf16 widened to f32 exactly, and a block of a matrix transposed.
  static f widen(const uint16_t* halves) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(halves));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }

  // 16 x 16 in four rounds of shuffles: pairs of rows interleaved, then 4 x 4
  // blocks within each 128-bit lane, then the lanes across rows 8 apart and 4 apart.
  __attribute__((always_inline)) static void transpose_block(const float* src, int64_t ld, int rows, float* out,
                                                             int64_t out_stride) {
    f r[16], t[16];
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
#endif

}  // namespace
}  // namespace sx::device::cpu::simd
