// graph/prims/lane_math.h over AVX2 + FMA: 8 floats a register. Compiled with
// -mavx2 -mfma; called only after cpuid.
#include <immintrin.h>

#include "device/cpu/vector_math.h"

namespace sx::device::cpu {
namespace {

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
};

}  // namespace

const MathKernels& avx2_math_kernels() {
  static const MathKernels kernels = make_math_kernels<Avx2>();
  return kernels;
}

}  // namespace sx::device::cpu
