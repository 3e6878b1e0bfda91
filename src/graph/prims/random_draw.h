// What each random primitive draws for element i from its Philox block: the one
// definition the reference kernels (prims/random.cc) and the cpu device's kernels
// (device/cpu/kernels/random.cc) both call, so the devices agree bit for bit. A value is
// computed in double, then stored as Tensor::set_value stores it (prims::convert to
// the dtype's compute type, then its storage type).
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>

#include "graph/dtype.h"
#include "graph/philox.h"
#include "graph/prims/lane_math.h"

namespace sx::graph::prims {

// The Philox key of an integer key: its two's-complement bits, low word first.
inline PhiloxKey philox_key(int64_t key) {
  auto bits = static_cast<uint64_t>(key);
  return {static_cast<uint32_t>(bits), static_cast<uint32_t>(bits >> 32)};
}

// Element i's block: the one at counter {lo32(i), hi32(i), 0, 0}.
inline PhiloxCounter philox_block(int64_t i, PhiloxKey key) {
  auto position = static_cast<uint64_t>(i);
  return philox4x32_10({static_cast<uint32_t>(position), static_cast<uint32_t>(position >> 32), 0, 0}, key);
}

// A double in [0, 1) from the top 53 bits of two words.
inline double unit_double(uint32_t hi, uint32_t lo) {
  uint64_t bits = (static_cast<uint64_t>(hi) << 32 | lo) >> 11;
  return static_cast<double>(bits) * 0x1p-53;
}

// random_uniform: in [0, 1) with as many random bits as the dtype holds exactly.
inline double uniform_in(DType dtype, const PhiloxCounter& r) {
  switch (dtype) {
    case DType::bf16: return static_cast<double>(r[0] >> 24) * 0x1p-8;
    case DType::f32: return static_cast<double>(r[0] >> 8) * 0x1p-24;
    default: return unit_double(r[0], r[1]);
  }
}

// random_normal: Box-Muller, rounded to the node's dtype when stored. In f32 by
// lane_math's normal for every dtype but f64 (the cpu device vectorizes it); in f64
// from 53-bit uniforms with the C library's functions for f64.
inline double normal_from(DType dtype, const PhiloxCounter& r) {
  if (dtype != DType::f64) return lane_math::normal_f32(static_cast<int32_t>(r[0]), static_cast<int32_t>(r[1]));
  double u1 = 1.0 - unit_double(r[0], r[1]);  // (0, 1]
  double u2 = unit_double(r[2], r[3]);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

// random_bernoulli: true with probability p.
inline bool bernoulli_from(const PhiloxCounter& r, double p) { return unit_double(r[0], r[1]) < p; }

}  // namespace sx::graph::prims
