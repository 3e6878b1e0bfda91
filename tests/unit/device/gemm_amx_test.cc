// bf16 products by AMX tiles (gemm_amx.cc), where the host has them. Their sums are
// the hardware's, not gemm.h's rule, so they are checked against the rule within a
// stated bound, and for what the rule is there for: a row's bits are the same alone
// or among others, on 1 or 2 threads, whatever the blocking. NaN and infinities
// come out where the rule puts them. Rounded results are the rounded sums.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstring>

#include "device/cpu/isa.h"
#include "gemm_operands.h"

namespace sx::device::testing {
namespace {

using cpu::Isa;

bool host_runs_amx() {
  std::vector<Isa> host = cpu::host_isas();
  return std::find(host.begin(), host.end(), Isa::amx) != host.end();
}

// C = A @ B by the amx kernels on `threads`, with a row stride wider than n; fails
// the test on a write past a row's end.
std::vector<float> amx_product(const Operand& a, const Operand& b, int64_t m, int64_t n, int64_t k, int threads) {
  const int64_t ldc = n + 3;
  std::vector<float> c(static_cast<size_t>(m * ldc), -7.0f);
  cpu::Gemm(cpu::kernels_for(Isa::amx), m, n, k, threads, true).run(a.ref(), b.ref(), c.data(), ldc);
  std::vector<float> packed(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < ldc; ++j) {
      float v = c[static_cast<size_t>(i * ldc + j)];
      if (j < n) packed[static_cast<size_t>(i * n + j)] = v;
      else EXPECT_EQ(v, -7.0f) << "wrote past row " << i;
    }
  }
  return packed;
}

// Row i of `o` (a [rows, cols] operand in either layout) as a row-major [1, cols] operand.
Operand row_of(const Operand& o, int64_t i, int64_t cols) {
  Operand row;
  row.is_bf16 = true;
  row.rows = cols;
  row.cols = 1;
  for (int64_t j = 0; j < cols; ++j) row.bf16.push_back(o.bf16[static_cast<size_t>(i * o.rows + j * o.cols)]);
  return row;
}

struct AmxCase {
  int64_t m, n, k;
  bool a_transposed, b_transposed;
};

void expect_amx(const AmxCase& c, std::mt19937& rng) {
  SCOPED_TRACE(fmt::format("{}x{}x{} A{} B{}", c.m, c.n, c.k, c.a_transposed ? "^T" : "", c.b_transposed ? "^T" : ""));
  Operand a = random_operand(c.m, c.k, c.a_transposed, true, rng),
          b = random_operand(c.k, c.n, c.b_transposed, true, rng);
  std::vector<float> one = amx_product(a, b, c.m, c.n, c.k, 1), two = amx_product(a, b, c.m, c.n, c.k, 2);
  EXPECT_EQ(std::memcmp(one.data(), two.data(), one.size() * sizeof(float)), 0) << "1 and 2 threads differ";
  // Within the rule's own rounding and the tiles' of it: each is within k roundings
  // of 2^-24 of the sum of |a b| from the exact sum.
  std::vector<float> rule = oracle(a, b, c.m, c.n, c.k);
  for (int64_t i = 0; i < c.m; ++i) {
    for (int64_t j = 0; j < c.n; ++j) {
      double magnitude = 0;
      for (int64_t p = 0; p < c.k; ++p) magnitude += std::fabs(static_cast<double>(a.at(i, p)) * b.at(p, j));
      const size_t e = static_cast<size_t>(i * c.n + j);
      ASSERT_LE(std::fabs(one[e] - rule[e]), 2.0 * static_cast<double>(c.k) * std::ldexp(magnitude, -24))
          << "C[" << i << ", " << j << "]";
    }
  }
  // A few rows alone give their bits in the whole.
  for (int64_t i : {int64_t{0}, c.m / 2, c.m - 1}) {
    std::vector<float> alone = amx_product(row_of(a, i, c.k), b, 1, c.n, c.k, 1);
    EXPECT_EQ(std::memcmp(alone.data(), one.data() + i * c.n, alone.size() * sizeof(float)), 0)
        << "row " << i << " alone differs";
  }
}

TEST(AmxProducts, WithinTheRulesBoundAndEachRowsBitsItsOwn) {
  if (!host_runs_amx()) GTEST_SKIP() << "this processor lacks AMX-BF16 tiles (or Linux did not grant them)";
  std::mt19937 rng(31);
  std::uniform_int_distribution<int64_t> size(1, 300);
  for (int trial = 0; trial < 16; ++trial) {
    expect_amx({size(rng), size(rng), size(rng), rng() % 2 == 0, rng() % 3 == 0}, rng);
  }
  // Past a block of K (512), a panel of columns (512) and a block of rows (32); K of
  // one step and odd K.
  for (AmxCase c : {AmxCase{70, 1030, 1100, false, false}, AmxCase{33, 513, 513, true, true},
                    AmxCase{1, 40, 1, false, false}, AmxCase{5, 3, 33, false, true}}) {
    expect_amx(c, rng);
  }
}

// A weight's gradient over 128 tokens: K short enough that B packed whole is one panel
// of all its columns (past kPanel, 512). Each column's bits, rounded to bf16 as the plan
// takes them, are those of a product of that column's slice of B alone.
TEST(AmxProducts, AShortKsColumnsBitsTheirOwnInOnePanel) {
  if (!host_runs_amx()) GTEST_SKIP() << "this processor lacks AMX-BF16 tiles (or Linux did not grant them)";
  std::mt19937 rng(47);
  constexpr int64_t m = 40, n = 1056, k = 128;
  const Operand a = random_operand(m, k, true, true, rng), b = random_operand(k, n, false, true, rng);
  const auto rounded = [&](const Operand& right, int64_t cols) {
    std::vector<float> c(static_cast<size_t>(m * cols));
    std::vector<graph::Bf16> out(static_cast<size_t>(m * cols));
    cpu::Gemm(cpu::kernels_for(Isa::amx), m, cols, k, 1, true).run(a.ref(), right.ref(), c.data(), cols, out.data());
    return out;
  };
  const std::vector<graph::Bf16> whole = rounded(b, n);
  constexpr int64_t kSlice = 96;
  for (int64_t first : {int64_t{0}, int64_t{480}, n - kSlice}) {
    Operand slice = b;
    slice.offset = first * b.cols;
    const std::vector<graph::Bf16> alone = rounded(slice, kSlice);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < kSlice; ++j) {
        ASSERT_EQ(alone[static_cast<size_t>(i * kSlice + j)].bits, whole[static_cast<size_t>(i * n + first + j)].bits)
            << "row " << i << ", column " << first + j;
      }
    }
  }
}

// Rounded to bf16, or rounded and widened back to f32 in C (a product that only a cast
// to f32 reads), each 2 x 2 block of tiles as soon as it is done: every value is the
// rounding of the sum the tiles store to C unrounded, in blocks past C's edge too, on 1
// and 2 threads.
TEST(AmxProducts, RoundedBlocksAreTheRoundedSums) {
  if (!host_runs_amx()) GTEST_SKIP() << "this processor lacks AMX-BF16 tiles (or Linux did not grant them)";
  std::mt19937 rng(33);
  for (AmxCase c : {AmxCase{70, 1030, 128, true, false}, AmxCase{45, 100, 600, false, false}}) {
    for (int threads : {1, 2}) {
      SCOPED_TRACE(fmt::format("{}x{}x{} on {} threads", c.m, c.n, c.k, threads));
      Operand a = random_operand(c.m, c.k, c.a_transposed, true, rng), b = random_operand(c.k, c.n, false, true, rng);
      a.bf16[5] = graph::Bf16(NAN);
      const std::vector<float> sums = amx_product(a, b, c.m, c.n, c.k, threads);
      std::vector<float> scratch(sums.size()), widened(sums.size());
      std::vector<graph::Bf16> rounded(sums.size());
      cpu::Gemm(cpu::kernels_for(Isa::amx), c.m, c.n, c.k, threads, true)
          .run(a.ref(), b.ref(), scratch.data(), c.n, rounded.data());
      cpu::Gemm(cpu::kernels_for(Isa::amx), c.m, c.n, c.k, threads, true)
          .run(a.ref(), b.ref(), widened.data(), c.n, nullptr, nullptr, true);
      for (size_t e = 0; e < sums.size(); ++e) {
        const graph::Bf16 want(sums[e]);
        ASSERT_EQ(rounded[e].bits, want.bits) << "rounded, at " << e;
        ASSERT_EQ(std::bit_cast<uint32_t>(widened[e]), std::bit_cast<uint32_t>(static_cast<float>(want)))
            << "widened, at " << e;
      }
    }
  }
}

TEST(AmxProducts, NanAndInfinitiesWhereTheRulePutsThem) {
  if (!host_runs_amx()) GTEST_SKIP() << "this processor lacks AMX-BF16 tiles (or Linux did not grant them)";
  std::mt19937 rng(32);
  Operand a = random_operand(20, 70, false, true, rng), b = random_operand(70, 30, false, true, rng);
  a.bf16[3] = graph::Bf16(NAN);
  a.bf16[70 * 5 + 8] = graph::Bf16(INFINITY);
  b.bf16[30 * 9 + 4] = graph::Bf16(-INFINITY);
  b.bf16[30 * 12 + 6] = graph::Bf16(0.0f);
  std::vector<float> got = amx_product(a, b, 20, 30, 70, 1), rule = oracle(a, b, 20, 30, 70);
  int specials = 0;
  for (size_t e = 0; e < rule.size(); ++e) {
    if (std::isfinite(rule[e])) continue;
    ++specials;
    EXPECT_TRUE(std::isnan(rule[e]) ? std::isnan(got[e]) : got[e] == rule[e])
        << e << ": " << got[e] << " vs " << rule[e];
  }
  EXPECT_GT(specials, 30);
}

}  // namespace
}  // namespace sx::device::testing
