// Philox 4x32-10, with the constants of the Random123 reference.
#include "graph/philox.h"

namespace sx::graph {
namespace {

constexpr uint32_t kMultiplier0 = 0xD2511F53;
constexpr uint32_t kMultiplier1 = 0xCD9E8D57;
constexpr uint32_t kWeyl0 = 0x9E3779B9;
constexpr uint32_t kWeyl1 = 0xBB67AE85;

void mul_hi_lo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
  uint64_t product = static_cast<uint64_t>(a) * b;
  hi = static_cast<uint32_t>(product >> 32);
  lo = static_cast<uint32_t>(product);
}

}  // namespace

PhiloxCounter philox4x32_10(PhiloxCounter c, PhiloxKey k) {
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, lo0, hi1, lo1;
    mul_hi_lo(kMultiplier0, c[0], hi0, lo0);
    mul_hi_lo(kMultiplier1, c[2], hi1, lo1);
    c = {hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0};
    k[0] += kWeyl0;
    k[1] += kWeyl1;
  }
  return c;
}

}  // namespace sx::graph
