// Every instruction set's tile kernels round f32 to bf16 as graph::Bf16 does (to
// nearest, ties to even, a NaN kept a quiet NaN of its sign and high payload bits,
// subnormals rounded as any other value), whether they write the halves
// (narrow_bf16, and narrow_bf16_rows over strided rows) or the rounded f32
// (round_to_bf16 in place, round_bf16_rows over strided rows, in place or not): on
// every special value, ties both ways, and random bits, over lengths that leave every
// count of values after the vectors.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <random>
#include <vector>

#include "device/cpu/fusion/fusion_tiles.h"
#include "device/cpu/isa.h"
#include "graph/tensor.h"

namespace sx::device {
namespace {

std::vector<float> values_to_round() {
  std::vector<uint32_t> bits{0x00000000u, 0x80000000u, 0x00000001u, 0x807fffffu, 0x00008000u, 0x00018000u, 0x7f7fffffu,
                             0xff7fffffu, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00001u, 0x7f800001u, 0xff812345u,
                             0x3f808000u, 0x3f818000u, 0x3f807fffu, 0xbf80c000u, 0x7f7f8000u, 0x4b7fffffu};
  std::mt19937 rng(25);
  while (bits.size() < 4099) bits.push_back(static_cast<uint32_t>(rng()));
  std::vector<float> values;
  for (uint32_t b : bits) values.push_back(std::bit_cast<float>(b));
  return values;
}

TEST(Bf16Rounding, EveryInstructionSetRoundsAsTheScalarConversion) {
  const std::vector<float> x = values_to_round();
  for (cpu::Isa isa : cpu::host_isas()) {
    SCOPED_TRACE(cpu::isa_name(isa));
    const cpu::TileKernels& kernels = cpu::tile_kernels_for(isa);
    for (int64_t n : {1, 15, 16, 17, 31, 32, 33, 47, 4099}) {
      std::vector<graph::Bf16> halves(static_cast<size_t>(n));
      kernels.narrow_bf16(x.data(), halves.data(), n);
      std::vector<float> rounded(x.begin(), x.begin() + n);
      kernels.round_to_bf16(rounded.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        const graph::Bf16 want(x[static_cast<size_t>(i)]);
        ASSERT_EQ(halves[static_cast<size_t>(i)].bits, want.bits) << "narrow_bf16 of " << n << ", at " << i;
        ASSERT_EQ(std::bit_cast<uint32_t>(rounded[static_cast<size_t>(i)]),
                  std::bit_cast<uint32_t>(static_cast<float>(want)))
            << "round_to_bf16 of " << n << ", at " << i;
      }
    }
    // Three rows of 33 from rows 40 apart into rows 35 apart; what lies between stays.
    std::vector<graph::Bf16> out(3 * 35);
    for (graph::Bf16& h : out) h.bits = 0xabcd;
    kernels.narrow_bf16_rows(x.data(), 40, out.data(), 35, 3, 33);
    for (int64_t r = 0; r < 3; ++r) {
      for (int64_t j = 0; j < 35; ++j) {
        const uint16_t want = j < 33 ? graph::Bf16(x[static_cast<size_t>(r * 40 + j)]).bits : 0xabcd;
        ASSERT_EQ(out[static_cast<size_t>(r * 35 + j)].bits, want) << "narrow_bf16_rows, row " << r << " at " << j;
      }
    }
    // The same rows widened back to f32; then in place, where the rows lie.
    std::vector<float> widened(3 * 35, 1.5f), in_place(x.begin(), x.begin() + 3 * 40);
    kernels.round_bf16_rows(x.data(), 40, widened.data(), 35, 3, 33);
    kernels.round_bf16_rows(in_place.data(), 40, in_place.data(), 40, 3, 33);
    for (int64_t r = 0; r < 3; ++r) {
      for (int64_t j = 0; j < 35; ++j) {
        const float value = x[static_cast<size_t>(r * 40 + j)];
        const uint32_t want = std::bit_cast<uint32_t>(j < 33 ? static_cast<float>(graph::Bf16(value)) : 1.5f);
        ASSERT_EQ(std::bit_cast<uint32_t>(widened[static_cast<size_t>(r * 35 + j)]), want)
            << "round_bf16_rows, row " << r << " at " << j;
        const uint32_t want_in_place = std::bit_cast<uint32_t>(j < 33 ? static_cast<float>(graph::Bf16(value)) : value);
        ASSERT_EQ(std::bit_cast<uint32_t>(in_place[static_cast<size_t>(r * 40 + j)]), want_in_place)
            << "round_bf16_rows in place, row " << r << " at " << j;
      }
    }
  }
}

}  // namespace
}  // namespace sx::device
