// Our f32 exp, log, tanh, erf, logistic, sin and cos, and the normal draw of
// random_normal, written once over lanes: the
// same operations in the same order on every lane (range reduction, then a
// polynomial by fma), so a scalar, an AVX2 and an AVX-512 instance give the same bits.
// The reference kernels (graph/prims/scalar.h) use the scalar instance, ScalarLanes,
// through exp_f32 and the others (lane_math.cc); the cpu device's vector kernels
// (device/cpu/vector_math_*.cc) instantiate these templates over the vector types of
// device/cpu/simd.h. Why our own: glibc's functions are scalar and change between glibc
// versions; these are fixed, and vectorize.
//
// Error bounds over every f32 (tests/unit/graph/lane_math_test.cc measures them
// against double-precision std:: results): see docs/tensors.md.
//
// The rule that keeps the instances apart (as in device/cpu/products/gemm_microkernel.h):
// everything here but ScalarLanes is a template over V, and a file built for a wider
// instruction set instantiates it only with a vector type local to that file, never
// with ScalarLanes.
// A non-template inline function here would be compiled into those files too, and
// the linker could keep their copy for a program running on a narrower processor.
//
// V provides, on lanes of f32 (`f`), int32 (`i`) and comparison masks (`m`):
// splat, splat_i, add, sub, mul, div, fma (one rounding), sqrt, lt, le, gt, eq, is_nan,
// select(mask, then, else), bits/from_bits (reinterpretation), iadd, isub, iand,
// ior, ixor, shl<k>, sar<k>, to_float (of an int), to_int (of an integral float),
// bit_set(i, bit) (a mask), any(mask), and width, load, store, load_i, store_i.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace sx::graph::lane_math {

// The scalar instance: one lane. std::fma rounds once, in hardware or not.
struct ScalarLanes {
  using f = float;
  using i = int32_t;
  using m = bool;
  static constexpr int width = 1;
  static f splat(float x) { return x; }
  static i splat_i(int32_t x) { return x; }
  static f add(f a, f b) { return a + b; }
  static f sub(f a, f b) { return a - b; }
  static f mul(f a, f b) { return a * b; }
  static f div(f a, f b) { return a / b; }
  static f fma(f a, f b, f c) { return std::fma(a, b, c); }
  static f sqrt(f a) { return std::sqrt(a); }
  static m lt(f a, f b) { return a < b; }
  static m le(f a, f b) { return a <= b; }
  static m gt(f a, f b) { return a > b; }
  static m eq(f a, f b) { return a == b; }
  static m is_nan(f a) { return a != a; }
  static f select(m c, f a, f b) { return c ? a : b; }
  static i bits(f a) {
    i r;
    std::memcpy(&r, &a, sizeof r);
    return r;
  }
  static f from_bits(i a) {
    f r;
    std::memcpy(&r, &a, sizeof r);
    return r;
  }
  static i iadd(i a, i b) { return int32_t(uint32_t(a) + uint32_t(b)); }
  static i isub(i a, i b) { return int32_t(uint32_t(a) - uint32_t(b)); }
  static i iand(i a, i b) { return a & b; }
  static i ior(i a, i b) { return a | b; }
  static i ixor(i a, i b) { return a ^ b; }
  template <int k>
  static i shl(i a) {
    return int32_t(uint32_t(a) << k);
  }
  template <int k>
  static i sar(i a) {
    return a >> k;
  }
  static f to_float(i a) { return float(a); }
  static i to_int(f a) { return int32_t(a); }
  static m bit_set(i a, int32_t bit) { return (a & bit) != 0; }
  static bool any(m c) { return c; }
  static f load(const float* p) { return *p; }
  static void store(float* p, f a) { *p = a; }
  static i load_i(const int32_t* p) { return *p; }
  static void store_i(int32_t* p, i a) { *p = a; }
};

// Two registers of V as one vector of twice its lanes: each operation is V's on the low
// half, then on the high half, so every lane computes what it would in V, and a loop over
// Pair<V> runs two independent chains of the same operations interleaved. The functions
// here are long chains of dependent operations (tanh: about 40), which a core overlaps
// with the next element's only as far as its scheduler reaches ahead.
template <class V>
struct Pair {
  struct f {
    typename V::f lo, hi;
  };
  struct i {
    typename V::i lo, hi;
  };
  struct m {
    typename V::m lo, hi;
  };
  static constexpr int width = 2 * V::width;
  static f splat(float x) { return {V::splat(x), V::splat(x)}; }
  static i splat_i(int32_t x) { return {V::splat_i(x), V::splat_i(x)}; }
  static f add(f a, f b) { return {V::add(a.lo, b.lo), V::add(a.hi, b.hi)}; }
  static f sub(f a, f b) { return {V::sub(a.lo, b.lo), V::sub(a.hi, b.hi)}; }
  static f mul(f a, f b) { return {V::mul(a.lo, b.lo), V::mul(a.hi, b.hi)}; }
  static f div(f a, f b) { return {V::div(a.lo, b.lo), V::div(a.hi, b.hi)}; }
  static f fma(f a, f b, f c) { return {V::fma(a.lo, b.lo, c.lo), V::fma(a.hi, b.hi, c.hi)}; }
  static f sqrt(f a) { return {V::sqrt(a.lo), V::sqrt(a.hi)}; }
  static m lt(f a, f b) { return {V::lt(a.lo, b.lo), V::lt(a.hi, b.hi)}; }
  static m le(f a, f b) { return {V::le(a.lo, b.lo), V::le(a.hi, b.hi)}; }
  static m gt(f a, f b) { return {V::gt(a.lo, b.lo), V::gt(a.hi, b.hi)}; }
  static m eq(f a, f b) { return {V::eq(a.lo, b.lo), V::eq(a.hi, b.hi)}; }
  static m is_nan(f a) { return {V::is_nan(a.lo), V::is_nan(a.hi)}; }
  static f select(m c, f a, f b) { return {V::select(c.lo, a.lo, b.lo), V::select(c.hi, a.hi, b.hi)}; }
  static i bits(f a) { return {V::bits(a.lo), V::bits(a.hi)}; }
  static f from_bits(i a) { return {V::from_bits(a.lo), V::from_bits(a.hi)}; }
  static i iadd(i a, i b) { return {V::iadd(a.lo, b.lo), V::iadd(a.hi, b.hi)}; }
  static i isub(i a, i b) { return {V::isub(a.lo, b.lo), V::isub(a.hi, b.hi)}; }
  static i iand(i a, i b) { return {V::iand(a.lo, b.lo), V::iand(a.hi, b.hi)}; }
  static i ior(i a, i b) { return {V::ior(a.lo, b.lo), V::ior(a.hi, b.hi)}; }
  static i ixor(i a, i b) { return {V::ixor(a.lo, b.lo), V::ixor(a.hi, b.hi)}; }
  template <int k>
  static i shl(i a) {
    return {V::template shl<k>(a.lo), V::template shl<k>(a.hi)};
  }
  template <int k>
  static i sar(i a) {
    return {V::template sar<k>(a.lo), V::template sar<k>(a.hi)};
  }
  static f to_float(i a) { return {V::to_float(a.lo), V::to_float(a.hi)}; }
  static i to_int(f a) { return {V::to_int(a.lo), V::to_int(a.hi)}; }
  static m bit_set(i a, int32_t bit) { return {V::bit_set(a.lo, bit), V::bit_set(a.hi, bit)}; }
  static bool any(m c) { return V::any(c.lo) || V::any(c.hi); }
  static f load(const float* p) { return {V::load(p), V::load(p + V::width)}; }
  static void store(float* p, f a) {
    V::store(p, a.lo);
    V::store(p + V::width, a.hi);
  }
  static i load_i(const int32_t* p) { return {V::load_i(p), V::load_i(p + V::width)}; }
  static void store_i(int32_t* p, i a) {
    V::store_i(p, a.lo);
    V::store_i(p + V::width, a.hi);
  }
};

// The scalar instance as functions, for the reference kernels (graph/prims/scalar.h).
// Defined in lane_math.cc in two versions, with FMA instructions and without (where
// std::fma is the C library's fmaf), one chosen by the processor when the program
// loads: the same bits either way, since an fma rounds once wherever it is done.
float exp_f32(float x);
float log_f32(float x);
float tanh_f32(float x);
float erf_f32(float x);
float logistic_f32(float x);
float sin_f32(float x);
float cos_f32(float x);
float normal_f32(int32_t w0, int32_t w1);

// Above this magnitude sin and cos reduce their argument exactly, one lane at a time
// (reduce_pio2_large); below it, by three parts of pi/2 in fma, exact enough there.
inline constexpr float kSinCosLarge = 0x1p17f;

// For finite a > kSinCosLarge: a = q * pi/2 + r, |r| <= pi/4, by the bits of 2/pi
// (Payne and Hanek), in integer arithmetic; r rounded to f32 from double. Defined
// once, in lane_math.cc, built for every processor.
void reduce_pio2_large(float a, float* r, int32_t* q);

namespace detail {

// c[0] + x * (c[1] + x * (... c[N-1])), by fma.
template <class V, int N>
typename V::f horner(typename V::f x, const float (&c)[N]) {
  typename V::f p = V::splat(c[N - 1]);
  for (int k = N - 2; k >= 0; --k) p = V::fma(p, x, V::splat(c[k]));
  return p;
}

template <class V>
typename V::f abs(typename V::f x) {
  return V::from_bits(V::iand(V::bits(x), V::splat_i(0x7fffffff)));
}

// |magnitude| with the sign of `sign` (magnitude's own sign bit clear).
template <class V>
typename V::f with_sign_of(typename V::f magnitude, typename V::f sign) {
  return V::from_bits(V::ior(V::bits(magnitude), V::iand(V::bits(sign), V::splat_i(int32_t(0x80000000u)))));
}

// e^x for x in [-104, 89], not NaN: x = n ln2 + r, |r| <= ln2 / 2, e^r by a
// polynomial, times 2^n as two powers of two (so that 2^n for n in [-150, 128]
// never leaves the normal range before the last multiply, which rounds once into
// the subnormals or overflows to infinity). Narrow: x in [-87, 87] only, where 2^n
// is a normal float and the polynomial times it is exact, so one multiply gives the
// same bits as two (tanh's and erf's arguments; five operations fewer a lane).
template <class V, bool Narrow = false>
typename V::f exp_reduced(typename V::f x) {
  static constexpr float q[] = {0.5f, 0.166666657f, 0.0416662954f, 0.00833349675f, 0.0013944658f, 0.000197903486f};
  const typename V::f magic = V::splat(12582912.0f);  // 1.5 * 2^23: adding it rounds to an integer
  typename V::f n = V::sub(V::fma(x, V::splat(1.44269502f), magic), magic);
  typename V::f r = V::fma(n, V::splat(-0.693147182f), x);  // exact: x and n ln2_hi share their high bits
  r = V::fma(n, V::splat(1.90465421e-09f), r);
  typename V::f p = V::add(V::fma(horner<V>(r, q), V::mul(r, r), r), V::splat(1.0f));
  typename V::i ni = V::to_int(n);
  if constexpr (Narrow) {
    return V::mul(p, V::from_bits(V::template shl<23>(V::iadd(ni, V::splat_i(127)))));
  } else {
    typename V::i n1 = V::template sar<1>(ni);
    typename V::i n2 = V::isub(ni, n1);
    typename V::f s1 = V::from_bits(V::template shl<23>(V::iadd(n1, V::splat_i(127))));
    typename V::f s2 = V::from_bits(V::template shl<23>(V::iadd(n2, V::splat_i(127))));
    return V::mul(V::mul(p, s1), s2);
  }
}

// sin(r) and cos(r) for |r| <= pi/4 (a little more when n was rounded near a half).
template <class V>
typename V::f sin_poly(typename V::f r, typename V::f r2) {
  static constexpr float s[] = {-0.166666538f, 0.00833207089f, -0.000195030691f};
  return V::fma(V::mul(r, r2), horner<V>(r2, s), r);
}
template <class V>
typename V::f cos_poly(typename V::f r2) {
  static constexpr float c[] = {-0.5f, 0.0416666418f, -0.00138871942f, 2.44191961e-05f};
  return V::fma(r2, horner<V>(r2, c), V::splat(1.0f));
}

// sin (quadrant_offset 0) or cos (1) of x: |x| = q pi/2 + r, then sin or cos of r
// by the quadrant q + offset, with sin's sign from x's (sin is odd, cos even).
template <class V>
typename V::f sin_cos(typename V::f x, int32_t quadrant_offset) {
  using F = typename V::f;
  using I = typename V::i;
  F a = abs<V>(x);
  // Lanes beyond kSinCosLarge, infinite or NaN reduce 0 here; the large ones are redone below.
  F a_small = V::select(V::le(a, V::splat(kSinCosLarge)), a, V::splat(0.0f));
  const F magic = V::splat(12582912.0f);
  F n = V::sub(V::fma(a_small, V::splat(0.636619747f), magic), magic);
  F r = V::fma(n, V::splat(-1.57079637f), a_small);  // exact: |r| < 1 and a multiple of 2^-24
  r = V::fma(n, V::splat(4.37113883e-08f), r);
  r = V::fma(n, V::splat(1.71512451e-15f), r);
  I q = V::to_int(n);
  if (V::any(V::gt(a, V::splat(kSinCosLarge)))) {
    alignas(64) float as[V::width], rs[V::width];
    alignas(64) int32_t qs[V::width];
    V::store(as, a);
    V::store(rs, r);
    V::store_i(qs, q);
    for (int k = 0; k < V::width; ++k) {
      if (as[k] > kSinCosLarge && as[k] <= std::numeric_limits<float>::max()) reduce_pio2_large(as[k], &rs[k], &qs[k]);
    }
    r = V::load(rs);
    q = V::load_i(qs);
  }
  q = V::iadd(q, V::splat_i(quadrant_offset));
  F r2 = V::mul(r, r);
  F v = V::select(V::bit_set(q, 1), cos_poly<V>(r2), sin_poly<V>(r, r2));
  I sign = V::template shl<30>(V::iand(q, V::splat_i(2)));  // quadrants 2 and 3 are negative
  if (quadrant_offset == 0) sign = V::ixor(sign, V::iand(V::bits(x), V::splat_i(int32_t(0x80000000u))));
  v = V::from_bits(V::ixor(V::bits(v), sign));
  v = V::select(V::eq(a, V::splat(std::numeric_limits<float>::infinity())),
                V::splat(std::numeric_limits<float>::quiet_NaN()), v);
  return V::select(V::is_nan(x), x, v);
}

}  // namespace detail

// Each: f32 lanes in, f32 lanes out. NaN in gives that NaN out.

template <class V>
typename V::f exp(typename V::f x) {
  // At -104 and below the result rounds to +0: those lanes compute e^0 and take +0,
  // since a lane whose product underflows costs a microcode assist on Intel's cores
  // (a masked attention score, e^-1e9, is half of a causal softmax). Above 89 the
  // result is infinity; NaN lanes compute e^89.
  typename V::m zero = V::le(x, V::splat(-104.0f));
  typename V::f clamped = V::select(zero, V::splat(0.0f), V::select(V::le(x, V::splat(89.0f)), x, V::splat(89.0f)));
  typename V::f e = V::select(zero, V::splat(0.0f), detail::exp_reduced<V>(clamped));
  return V::select(V::is_nan(x), x, e);
}

// x = 2^e m, m in [sqrt(1/2), sqrt(2)): log x = e ln2 + log1p(m - 1), the latter
// f - f^2/2 + f^3 P(f) (m - 1 is exact).
template <class V>
typename V::f log(typename V::f x) {
  using F = typename V::f;
  using I = typename V::i;
  static constexpr float p[] = {0.333333135f,  -0.250000089f, 0.200021192f,  -0.166679963f, 0.142195508f,
                                -0.124055915f, 0.118881747f,  -0.116756409f, 0.0674660131f};
  // Subnormals (and zero, negatives: replaced below) are scaled by 2^23 first.
  typename V::m tiny = V::lt(x, V::splat(std::numeric_limits<float>::min()));
  F scaled = V::select(tiny, V::mul(x, V::splat(0x1p23f)), x);
  const I sqrt_half = V::splat_i(0x3f3504f3);
  I offset = V::isub(V::bits(scaled), sqrt_half);
  F e = V::sub(V::to_float(V::template sar<23>(offset)), V::select(tiny, V::splat(23.0f), V::splat(0.0f)));
  F f = V::sub(V::from_bits(V::iadd(V::iand(offset, V::splat_i(0x007fffff)), sqrt_half)), V::splat(1.0f));
  F z = V::mul(f, f);
  F y = V::mul(V::mul(z, f), detail::horner<V>(f, p));
  y = V::fma(e, V::splat(-2.12194440e-4f), y);  // ln2 = 0.693359375 - 2.12194440e-4
  y = V::fma(z, V::splat(-0.5f), y);
  F r = V::fma(e, V::splat(0.693359375f), V::add(f, y));  // e * 0.693359375 is exact
  constexpr float inf = std::numeric_limits<float>::infinity();
  r = V::select(V::lt(x, V::splat(0.0f)), V::splat(std::numeric_limits<float>::quiet_NaN()), r);
  r = V::select(V::eq(x, V::splat(0.0f)), V::splat(-inf), r);
  r = V::select(V::eq(x, V::splat(inf)), V::splat(inf), r);
  return V::select(V::is_nan(x), x, r);
}

// |x| < 0.625: x + x^3 P(x^2); beyond, 1 - 2 / (e^{2|x|} + 1), which is 1 in f32
// from 9.01 on. The sign of x last (tanh is odd: -0 stays -0).
template <class V>
typename V::f tanh(typename V::f x) {
  using F = typename V::f;
  static constexpr float p[] = {-0.333332807f, 0.133314416f, -0.0537397154f, 0.0206390899f, -0.00570499059f};
  F a = detail::abs<V>(x);
  F z = V::mul(a, a);
  F small = V::fma(V::mul(a, z), detail::horner<V>(z, p), a);
  F capped = V::select(V::lt(a, V::splat(9.1f)), a, V::splat(9.1f));
  F e = detail::exp_reduced<V, true>(V::add(capped, capped));
  F large = V::sub(V::splat(1.0f), V::div(V::splat(2.0f), V::add(e, V::splat(1.0f))));
  F r = detail::with_sign_of<V>(V::select(V::lt(a, V::splat(0.625f)), small, large), x);
  return V::select(V::is_nan(x), x, r);
}

// 1 / (1 + e^-x), as e^-|x| / (1 + e^-|x|) for negative x, so that it stays
// accurate (rather than 0) where e^-x overflows.
template <class V>
typename V::f logistic(typename V::f x) {
  using F = typename V::f;
  F a = V::select(V::le(detail::abs<V>(x), V::splat(104.0f)), detail::abs<V>(x), V::splat(104.0f));
  F e = detail::exp_reduced<V>(V::sub(V::splat(0.0f), a));
  F numerator = V::select(V::lt(x, V::splat(0.0f)), e, V::splat(1.0f));
  // The quotient corrected once for the roundings of 1 + e and of the division: the
  // denominator is d + d_error exactly (1 >= e), and numerator - q d is exact in fma.
  F d = V::add(V::splat(1.0f), e);
  F d_error = V::add(V::sub(V::splat(1.0f), d), e);
  F inverse = V::div(V::splat(1.0f), d);
  F q = V::mul(numerator, inverse);
  F minus_q = V::sub(V::splat(0.0f), q);
  F remainder = V::fma(minus_q, d_error, V::fma(minus_q, d, numerator));
  return V::select(V::is_nan(x), x, V::fma(remainder, inverse, q));
}

// |x| < 0.921875: x + x P(x^2); beyond, 1 - e^{Q(|x|)}, Q a polynomial for
// log(erfc), which is 1 in f32 from 3.92 on. The sign of x last (erf is odd).
template <class V>
typename V::f erf(typename V::f x) {
  using F = typename V::f;
  static constexpr float p[] = {0.128379166f,   -0.376126349f,    0.112836957f,   -0.0268594008f,
                                0.00520103658f, -0.000814274536f, 8.37024782e-05f};
  static constexpr float q[] = {0.000175185938f, -1.12951732f,    -0.633342028f,   -0.108285457f,
                                0.0251228977f,   -0.00417238148f, 0.000434734742f, -2.11185888e-05f};
  F a = detail::abs<V>(x);
  F small = V::fma(a, detail::horner<V>(V::mul(a, a), p), a);
  F capped = V::select(V::lt(a, V::splat(3.9375f)), a, V::splat(3.9375f));
  F large = V::sub(V::splat(1.0f), detail::exp_reduced<V, true>(detail::horner<V>(capped, q)));
  F r = detail::with_sign_of<V>(V::select(V::lt(a, V::splat(0.921875f)), small, large), x);
  return V::select(V::is_nan(x), x, r);
}

template <class V>
typename V::f sin(typename V::f x) {
  return detail::sin_cos<V>(x, 0);
}

template <class V>
typename V::f cos(typename V::f x) {
  return detail::sin_cos<V>(x, 1);
}

// A standard normal from two words of a Philox block, by Box-Muller in f32:
// u1 = (w0's top 24 bits + 1) / 2^24 in (0, 1] and u2 = w1's top 24 bits / 2^24
// in [0, 1), both exact, then sqrt(-2 log u1) cos(2 pi u2). Its magnitude is at
// most sqrt(48 ln 2) = 5.77 (a draw beyond that has probability 8e-9).
template <class V>
typename V::f normal(typename V::i w0, typename V::i w1) {
  using F = typename V::f;
  const typename V::i top = V::splat_i(0xffffff);
  F u1 = V::mul(V::to_float(V::iadd(V::iand(V::template sar<8>(w0), top), V::splat_i(1))), V::splat(0x1p-24f));
  F u2 = V::mul(V::to_float(V::iand(V::template sar<8>(w1), top)), V::splat(0x1p-24f));
  F l = log<V>(u1);
  F radius = V::sqrt(V::sub(V::splat(0.0f), V::add(l, l)));  // +0, not -0, where u1 is 1
  return V::mul(radius, cos<V>(V::mul(u2, V::splat(6.28318548f))));
}

}  // namespace sx::graph::lane_math
