// The exact reduction of large f32 arguments of sin and cos by pi/2: the reference's,
// on the host (lane_math.cc's reduce_pio2_large) and in the cuda device's kernels
// (device/cuda/transcendental.h), so the two give the same bits. Only those two (and its
// test) include it: a file built for a wider instruction set must not hold a copy the linker could
// keep for a narrower processor (lane_math.h says why).
#pragma once

#include <cstdint>
#include <cstring>

#include "graph/host_device.h"

namespace sx::graph::lane_math {

// The bits of 2/pi after the binary point, enough for every f32 exponent.
inline constexpr uint32_t kTwoOverPiBits[] = {0xA2F9836E, 0x4E441529, 0xFC2757D1, 0xF534DDC0,
                                              0xDB629599, 0x3C439041, 0xFE5163AB, 0xDEBBC561};

// For finite a > kSinCosLarge: a = q pi/2 + r, |r| <= pi/4 (Payne and Hanek). a 2/pi
// modulo 4 is a's 24-bit significand times the 96 bits of 2/pi from its exponent on, a
// product of 120 bits, here in four 32-bit limbs of 64-bit integers, which every GPU has.
SX_HOST_DEVICE inline void reduce_pio2_in_limbs(float a, float* r, int32_t* q) {
  const uint32_t* two_over_pi = kTwoOverPiBits;
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

}  // namespace sx::graph::lane_math
