// A row's f32 sum on the cpu device, in the order row_reduce.h promises: element r to
// lane r % 16, the lanes added in the tree (lane l takes lane l + w, for w = 8, 4, 2,
// 1), then the last n % 16 elements in order; rows under 32 elements in order. Written
// out here one add at a time, and compared bit for bit with row_sum and with every
// instruction set's tile kernel, which takes two rows at a time.
#include "device/cpu/kernels/row_reduce.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>
#include <vector>

#include "device/cpu/fusion/fusion_tiles.h"
#include "device/cpu/isa.h"

namespace sx::device {
namespace {

float promised_sum(const float* row, int64_t n) {
  float acc = 0.0f;
  if (n < 32) {
    for (int64_t r = 0; r < n; ++r) acc += row[r];
    return acc;
  }
  float lanes[16] = {};
  const int64_t full = n - n % 16;
  for (int64_t r = 0; r < full; ++r) lanes[r % 16] += row[r];
  for (int64_t width = 8; width > 0; width /= 2) {
    for (int64_t l = 0; l < width; ++l) lanes[l] = lanes[l] + lanes[l + width];
  }
  acc = lanes[0];
  for (int64_t r = full; r < n; ++r) acc += row[r];
  return acc;
}

// Values whose sum depends on its order: magnitudes over twelve orders, both signs.
std::vector<float> rows_of(int64_t rows, int64_t length, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-6, 6);
  std::vector<float> values(static_cast<size_t>(rows * length));
  for (float& v : values) v = normal(rng) * std::ldexp(1.0f, 2 * exponent(rng));
  return values;
}

TEST(RowSums, FollowTheLanesTreeAndTailOrderOnEveryInstructionSet) {
  for (int64_t length : {5, 31, 32, 33, 48, 100, 128, 256, 700}) {
    for (int64_t rows : {1, 2, 3, 5}) {
      SCOPED_TRACE(::testing::Message() << rows << " rows of " << length);
      const std::vector<float> x = rows_of(rows, length, static_cast<uint32_t>(length * 10 + rows));
      std::vector<float> promised(static_cast<size_t>(rows));
      for (int64_t r = 0; r < rows; ++r) {
        promised[static_cast<size_t>(r)] = promised_sum(x.data() + r * length, length);
        EXPECT_EQ(std::bit_cast<uint32_t>(cpu::row_sum<float, float>(x.data() + r * length, length)),
                  std::bit_cast<uint32_t>(promised[static_cast<size_t>(r)]));
      }
      for (cpu::Isa isa : cpu::host_isas()) {
        std::vector<float> sums(static_cast<size_t>(rows), -1.0f);
        cpu::tile_kernels_for(isa).row_sums(x.data(), rows, length, sums.data());
        for (int64_t r = 0; r < rows; ++r)
          EXPECT_EQ(std::bit_cast<uint32_t>(sums[static_cast<size_t>(r)]),
                    std::bit_cast<uint32_t>(promised[static_cast<size_t>(r)]))
              << cpu::isa_name(isa) << ", row " << r;
      }
    }
  }
}

}  // namespace
}  // namespace sx::device
