// graph/prims/lane_math.h over AVX-512F: 16 floats a register, masks in k
// registers. Compiled with -mavx512f; called only after cpuid.
// GCC 12.2 warns, inside its own header, that the pass-through operand these intrinsics
// give their builtins (_mm512_undefined_*) is uninitialized (GCC PR 105593).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#include "device/cpu/vector_math.h"

namespace sx::device::cpu {
namespace {

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
};

}  // namespace

const MathKernels& avx512_math_kernels() {
  static const MathKernels kernels = make_math_kernels<Avx512>();
  return kernels;
}

}  // namespace sx::device::cpu
