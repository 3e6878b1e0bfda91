// The random primitives of the generated kernels: element i drawn from the Philox
// 4x32-10 block at counter {lo32(i), hi32(i), 0, 0} under the key, as the reference
// and the cpu device draw it (graph/prims/random_draw.h), one GPU thread per element.
// The host tests check philox_words against graph::philox4x32_10 and each draw against
// the reference's.
//
// random_uniform (bf16, f32, f64), random_bernoulli and random_normal of bf16 and f32
// (lane_math's normal, IEEE operations and fma alone) give the reference's bits; f64 random_normal
// is computed by CUDA's libdevice sqrt, log and cos where the reference calls the C
// library's, and may differ in the last bits (docs/devices.md).
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "graph/bf16.h"
#include "graph/host_device.h"
#include "graph/philox.h"
#include "graph/prims/lane_math.h"
#include "graph/prims/scalar.h"

namespace sx::device::cuda {

struct PhiloxWords {
  uint32_t w[4];
};

// Element i's Philox block under `key` (its two's-complement bits, low word first).
SX_HOST_DEVICE inline PhiloxWords philox_words(int64_t i, int64_t key) {
  auto position = static_cast<uint64_t>(i);
  auto key_bits = static_cast<uint64_t>(key);
  uint32_t c0 = static_cast<uint32_t>(position), c1 = static_cast<uint32_t>(position >> 32), c2 = 0, c3 = 0;
  uint32_t k0 = static_cast<uint32_t>(key_bits), k1 = static_cast<uint32_t>(key_bits >> 32);
  for (int round = 0; round < graph::kPhiloxRounds; ++round) {
    uint64_t p0 = static_cast<uint64_t>(graph::kPhiloxMultiplier0) * c0;
    uint64_t p1 = static_cast<uint64_t>(graph::kPhiloxMultiplier1) * c2;
    uint32_t next0 = static_cast<uint32_t>(p1 >> 32) ^ c1 ^ k0;
    uint32_t next2 = static_cast<uint32_t>(p0 >> 32) ^ c3 ^ k1;
    c1 = static_cast<uint32_t>(p1);
    c3 = static_cast<uint32_t>(p0);
    c0 = next0;
    c2 = next2;
    k0 += graph::kPhiloxWeyl0;
    k1 += graph::kPhiloxWeyl1;
  }
  return {{c0, c1, c2, c3}};
}

// A double in [0, 1) from the top 53 bits of two words.
SX_HOST_DEVICE inline double unit_double(uint32_t hi, uint32_t lo) {
  uint64_t bits = (static_cast<uint64_t>(hi) << 32 | lo) >> 11;
  return static_cast<double>(bits) * 0x1p-53;
}

// The draws of element i, stored as the reference stores a double (convert to T, or to
// float for bf16, then rounded to bf16).
template <class T>
SX_HOST_DEVICE T random_uniform_element(int64_t key, int64_t i) {
  PhiloxWords r = philox_words(i, key);
  if constexpr (std::is_same_v<T, graph::Bf16>) {
    return T(graph::prims::convert<float>(static_cast<double>(r.w[0] >> 24) * 0x1p-8));
  } else if constexpr (std::is_same_v<T, float>) {
    return graph::prims::convert<T>(static_cast<double>(r.w[0] >> 8) * 0x1p-24);
  } else {
    return graph::prims::convert<T>(unit_double(r.w[0], r.w[1]));
  }
}

SX_HOST_DEVICE inline bool random_bernoulli_element(int64_t key, int64_t i, double p) {
  PhiloxWords r = philox_words(i, key);
  return unit_double(r.w[0], r.w[1]) < p;
}

template <class T>
T random_normal_element(int64_t key, int64_t i) {
  PhiloxWords r = philox_words(i, key);
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, graph::Bf16>) {
    // bf16's is f32's draw rounded, as the reference draws it.
    return T(graph::lane_math::normal<graph::lane_math::ScalarLanes>(static_cast<int32_t>(r.w[0]),
                                                                     static_cast<int32_t>(r.w[1])));
  } else {
    double u1 = 1.0 - unit_double(r.w[0], r.w[1]);  // (0, 1]
    double u2 = unit_double(r.w[2], r.w[3]);
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * 3.141592653589793 * u2);
  }
}

}  // namespace sx::device::cuda
