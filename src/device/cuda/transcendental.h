// The transcendental formulas of the generated kernels (codegen.h), which NVRTC compiles
// with every function a device function (-default-device) and -fmad=false.
//
// f32 exp, log, tanh, erf, logistic, sin and cos are lane_math's templates over its
// scalar instance, the reference's own functions (exp_f32, ...): IEEE additions,
// multiplications, divisions, square roots and fma, each rounded once on the GPU as on
// the host, so that a kernel gives the reference's bits. sin's and cos's exact reduction
// of large arguments, host code in lane_math.cc (it multiplies in 128 bits), is
// reduce_pio2_large below in the kernels.
//
// f64 exp, log, tanh, erf, logistic, sin and cos, and pow of f32 and f64, are CUDA's
// libdevice functions, where the reference calls the C library's: libdevice's are within
// 1 ulp (exp, log, sin, cos, tanh, erf of f64) and 2 ulp (f64 pow; 4 ulp f32 pow) of the
// exact value, the C library's within 1 ulp, so their last bits may differ from the
// reference's (docs/devices.md lists them).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "graph/host_device.h"
#include "graph/prims/lane_math.h"

namespace sx::device::cuda::gpu {

// lane_math's reduce_pio2_large in 64-bit integers, which every GPU has: for finite
// a > kSinCosLarge, a = q pi/2 + r with the same q and r, bit for bit. a 2/pi modulo 4
// is a's 24-bit significand times the 96 bits of 2/pi from its exponent on, a product
// of 120 bits, here four 32-bit limbs.
SX_HOST_DEVICE inline void reduce_pio2_large(float a, float* r, int32_t* q) {
  // The bits of 2/pi after the binary point, enough for every f32 exponent.
  constexpr uint32_t two_over_pi[] = {0xA2F9836E, 0x4E441529, 0xFC2757D1, 0xF534DDC0,
                                      0xDB629599, 0x3C439041, 0xFE5163AB, 0xDEBBC561};
  uint32_t bits;
  std::memcpy(&bits, &a, sizeof bits);
  uint64_t m = (bits & 0x7fffff) | 0x800000;
  int e = int((bits >> 23) & 0xff) - 150;
  // The bits of 2/pi from `first` on (the earlier ones give whole turns).
  int first = e - 1 > 1 ? e - 1 : 1;
  int word = (first - 1) / 32, bit = (first - 1) % 32;
  uint64_t limb[4];  // the product, least significant first
  uint64_t carry = 0;
  for (int k = 2; k >= 0; --k) {
    uint32_t w =
        bit == 0 ? two_over_pi[word + k] : (two_over_pi[word + k] << bit) | (two_over_pi[word + k + 1] >> (32 - bit));
    uint64_t t = m * w + carry;
    limb[2 - k] = t & 0xffffffff;
    carry = t >> 32;
  }
  limb[3] = carry;
  uint64_t low = limb[1] << 32 | limb[0], high = limb[3] << 32 | limb[2];
  // The product is a 2/pi scaled by 2^shift, shift in [94, 102]: the quadrant is bits
  // shift and shift + 1, the fraction the 64 bits below them.
  int shift = first + 95 - e, below = shift - 64;
  int32_t quadrant = int32_t(high >> below) & 3;
  auto fraction = static_cast<int64_t>((low >> below) | (high << (64 - below)));
  if (fraction < 0) quadrant = (quadrant + 1) & 3;
  *r = static_cast<float>(static_cast<double>(fraction) * 0x1.921fb54442d18p-64);  // times pi/2 / 2^64
  *q = quadrant;
}

#define SX_LANE_FORMULA(Name, lane_function, f64_expression)                      \
  struct Name {                                                                   \
    template <class C>                                                            \
    auto operator()(C v) const {                                                  \
      if constexpr (std::is_same_v<C, float>) {                                   \
        return graph::lane_math::lane_function<graph::lane_math::ScalarLanes>(v); \
      } else {                                                                    \
        return f64_expression;                                                    \
      }                                                                           \
    }                                                                             \
  };
SX_LANE_FORMULA(Exp, exp, std::exp(v))
SX_LANE_FORMULA(Log, log, std::log(v))
SX_LANE_FORMULA(Tanh, tanh, std::tanh(v))
SX_LANE_FORMULA(Erf, erf, std::erf(v))
SX_LANE_FORMULA(Logistic, logistic, C(1) / (C(1) + std::exp(-v)))
SX_LANE_FORMULA(Sin, sin, std::sin(v))
SX_LANE_FORMULA(Cos, cos, std::cos(v))
#undef SX_LANE_FORMULA

struct Pow {
  template <class C>
  auto operator()(C a, C b) const {
    return std::pow(a, b);
  }
};

}  // namespace sx::device::cuda::gpu

#if defined(__CUDACC_RTC__)
// lane_math's sin and cos call reduce_pio2_large, defined on the host in lane_math.cc:
// in the kernels NVRTC compiles, it is the one above.
void sx::graph::lane_math::reduce_pio2_large(float a, float* r, int32_t* q) {
  sx::device::cuda::gpu::reduce_pio2_large(a, r, q);
}
#endif
