// A vector of f32 rounded to bf16 in registers, over V (graph/prims/lane_math.h's
// contract): the rounding of the composite kernels' bf16 members (composite_lanes.h).
#pragma once

#include <cstdint>

namespace sx::device::cpu {

// x rounded to bf16 and widened back, as graph::Bf16 rounds: to nearest even, a NaN
// kept quiet.
template <class V>
typename V::f round_to_bf16(typename V::f x) {
  using I = typename V::i;
  const I bits = V::bits(x);
  const I odd = V::iand(V::template sar<16>(bits), V::splat_i(1));
  const I high = V::splat_i(static_cast<int32_t>(0xffff0000u));
  const I rounded = V::iand(V::iadd(bits, V::iadd(V::splat_i(0x7fff), odd)), high);
  const I quiet = V::ior(V::iand(bits, high), V::splat_i(0x400000));
  return V::select(V::is_nan(x), V::from_bits(quiet), V::from_bits(rounded));
}

}  // namespace sx::device::cpu
