// Philox 4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
// 3", SC 2011): a counter-based generator. The random primitives draw
// element i from the block at counter {lo32(i), hi32(i), 0, 0} under the
// key, so a value depends only on the key and its position, on every device.
#pragma once

#include <array>
#include <cstdint>

namespace sx::graph {

using PhiloxCounter = std::array<uint32_t, 4>;
using PhiloxKey = std::array<uint32_t, 2>;

// The constants of the Random123 reference: the round's multipliers and the
// key's increments. The cpu device's vector Philox uses them too.
inline constexpr uint32_t kPhiloxMultiplier0 = 0xD2511F53;
inline constexpr uint32_t kPhiloxMultiplier1 = 0xCD9E8D57;
inline constexpr uint32_t kPhiloxWeyl0 = 0x9E3779B9;
inline constexpr uint32_t kPhiloxWeyl1 = 0xBB67AE85;
inline constexpr int kPhiloxRounds = 10;

PhiloxCounter philox4x32_10(PhiloxCounter counter, PhiloxKey key);

}  // namespace sx::graph
