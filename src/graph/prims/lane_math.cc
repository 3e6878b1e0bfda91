// The scalar instance of lane_math.h as functions, and the exact argument reduction
// of sin and cos for large arguments, which the vector kernels call for their large
// lanes: built for every processor.
#include "graph/prims/lane_math.h"

namespace sx::graph::lane_math {

// GCC's flatten inlines the template into each version, so that the FMA version's
// std::fma is the instruction (clang refuses flatten on clones; its inliner decides there).
#if defined(__clang__)
#define SX_SCALAR_MATH_VERSIONS __attribute__((target_clones("fma", "default")))
#else
#define SX_SCALAR_MATH_VERSIONS __attribute__((flatten, target_clones("fma", "default")))
#endif
#define SX_SCALAR_MATH(name) \
  SX_SCALAR_MATH_VERSIONS float name##_f32(float x) { return name<ScalarLanes>(x); }
SX_SCALAR_MATH(exp)
SX_SCALAR_MATH(log)
SX_SCALAR_MATH(tanh)
SX_SCALAR_MATH(erf)
SX_SCALAR_MATH(logistic)
SX_SCALAR_MATH(sin)
SX_SCALAR_MATH(cos)
SX_SCALAR_MATH_VERSIONS float normal_f32(int32_t w0, int32_t w1) { return normal<ScalarLanes>(w0, w1); }
#undef SX_SCALAR_MATH
#undef SX_SCALAR_MATH_VERSIONS

__extension__ typedef unsigned __int128 uint128;  // GCC's and clang's; ISO C++ has none

void reduce_pio2_large(float a, float* r, int32_t* q) {
  // The bits of 2/pi after the binary point, enough for every f32 exponent.
  static constexpr uint32_t two_over_pi[] = {0xA2F9836E, 0x4E441529, 0xFC2757D1, 0xF534DDC0,
                                             0xDB629599, 0x3C439041, 0xFE5163AB, 0xDEBBC561};
  uint32_t bits;
  std::memcpy(&bits, &a, sizeof bits);
  // a = m 2^e with m an integer of 24 bits.
  uint64_t m = (bits & 0x7fffff) | 0x800000;
  int e = int((bits >> 23) & 0xff) - 150;
  // a 2/pi = sum of m 2^(e - i) over the bits b_i of 2/pi (i from 1). The terms with
  // i <= e - 2 are multiples of 4, whole turns: skip them and take the next 96 bits.
  int first = e - 1 > 1 ? e - 1 : 1;
  int word = (first - 1) / 32, bit = (first - 1) % 32;
  uint128 window = 0;
  for (int k = 0; k < 4; ++k) window = (window << 32) | two_over_pi[word + k];
  if (bit > 0) window = (window << bit) | (two_over_pi[word + 4] >> (32 - bit));
  uint128 product = m * (window >> 32);  // a 2/pi modulo 4, scaled by 2^shift
  int shift = first + 95 - e;
  int32_t quadrant = int32_t(product >> shift) & 3;
  // The fraction's top 64 bits, taken as signed: a fraction of a half or more is the
  // next quadrant less the rest.
  auto fraction = static_cast<int64_t>(static_cast<uint64_t>((product << (128 - shift)) >> 64));
  if (fraction < 0) quadrant = (quadrant + 1) & 3;
  *r = static_cast<float>(static_cast<double>(fraction) * 0x1.921fb54442d18p-64);  // times pi/2 / 2^64
  *q = quadrant;
}

}  // namespace sx::graph::lane_math
