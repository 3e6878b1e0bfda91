// Philox 4x32-10, one block at a time.
#include "graph/philox.h"

namespace sx::graph {
namespace {

void mul_hi_lo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
  uint64_t product = static_cast<uint64_t>(a) * b;
  hi = static_cast<uint32_t>(product >> 32);
  lo = static_cast<uint32_t>(product);
}

}  // namespace

PhiloxCounter philox4x32_10(PhiloxCounter c, PhiloxKey k) {
  for (int round = 0; round < kPhiloxRounds; ++round) {
    uint32_t hi0, lo0, hi1, lo1;
    mul_hi_lo(kPhiloxMultiplier0, c[0], hi0, lo0);
    mul_hi_lo(kPhiloxMultiplier1, c[2], hi1, lo1);
    c = {hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0};
    k[0] += kPhiloxWeyl0;
    k[1] += kPhiloxWeyl1;
  }
  return c;
}

}  // namespace sx::graph
