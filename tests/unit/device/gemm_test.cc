// The cpu GEMM's rules (gemm.h), checked bit for bit: for every instruction
// set this host runs, each element of an f32 C equals fmaf over k = 0..K-1 in
// order, from zero, and of a bf16 product's C fmaf over k = 1, 0, 3, 2, ...
// with subnormal inputs and results flushed to zero, whatever the shape, the
// strides, the blocking and the threads. Equal to that one oracle, the kernels
// (VDPBF16PS among them, where the host has it) are equal to each other.
// amx's bf16 products sum as the tiles do, not by this rule: gemm_amx_test.cc
// checks them.
// Then the same through the cpu device (batched, broadcast, transposed
// operands, bf16) against the reference device within a stated bound, and
// the instruction set's choice by name.
#include "device/cpu/products/gemm.h"

#include <pmmintrin.h>

#include <bit>
#include <cstdlib>

#include "device/cpu/isa.h"
#include "gemm_operands.h"
#include "util.h"

namespace sx::device::testing {
namespace {

using cpu::Isa;
using graph::Builder;
using graph::NodeId;

// The first element where got and want differ in bits, or "".
std::string first_difference(const std::vector<float>& got, const std::vector<float>& want, int64_t n) {
  for (size_t e = 0; e < want.size(); ++e) {
    if (std::memcmp(&got[e], &want[e], sizeof(float)) != 0) {
      return fmt::format("C[{}, {}] is {} , the rule gives {}", e / static_cast<size_t>(n), e % static_cast<size_t>(n),
                         got[e], want[e]);
    }
  }
  return "";
}

struct GemmCase {
  int64_t m, n, k;
  bool a_transposed, b_transposed, bf16;
  int threads;
};

void expect_rule(Isa isa, const GemmCase& c, std::mt19937& rng) {
  if (c.bf16 && isa == Isa::amx) return;  // the tiles' own sums: gemm_amx_test.cc
  SCOPED_TRACE(fmt::format("{}: {}x{}x{} A{} B{} {} threads {}", cpu::isa_name(isa), c.m, c.n, c.k,
                           c.a_transposed ? "^T" : "", c.b_transposed ? "^T" : "", c.bf16 ? "bf16" : "f32", c.threads));
  Operand a = random_operand(c.m, c.k, c.a_transposed, c.bf16, rng);
  Operand b = random_operand(c.k, c.n, c.b_transposed, c.bf16, rng);
  // C with a row stride wider than n, to catch writes past a row's end.
  int64_t ldc = c.n + 3;
  std::vector<float> got(static_cast<size_t>(c.m * ldc), -7.0f);
  cpu::Gemm gemm(cpu::kernels_for(isa), c.m, c.n, c.k, c.threads, c.bf16);
  gemm.run(a.ref(), b.ref(), got.data(), ldc);
  std::vector<float> packed(static_cast<size_t>(c.m * c.n));
  for (int64_t i = 0; i < c.m; ++i) {
    for (int64_t j = 0; j < ldc; ++j) {
      float v = got[static_cast<size_t>(i * ldc + j)];
      if (j < c.n) packed[static_cast<size_t>(i * c.n + j)] = v;
      else ASSERT_EQ(v, -7.0f) << "wrote past row " << i;
    }
  }
  EXPECT_EQ(first_difference(packed, oracle(a, b, c.m, c.n, c.k), c.n), "");
}

TEST(GemmRule, EveryKernelGivesTheRulesBitsOnRandomShapes) {
  for (Isa isa : cpu::host_isas()) {
    std::mt19937 rng(11);
    std::uniform_int_distribution<int64_t> size(1, 300);
    for (int trial = 0; trial < 24; ++trial) {
      GemmCase c{size(rng), size(rng), size(rng), rng() % 2 == 0, rng() % 3 == 0, rng() % 4 == 0, 1 + trial % 2};
      expect_rule(isa, c, rng);
    }
  }
}

TEST(GemmRule, EveryKernelGivesTheRulesBitsAcrossBlocks) {
  // K past one kc block (at most 768 steps), rows past one mc block (and in three), columns past one nc
  // panel (2048), M = 1 and tiny shapes, K = 0, and B read in place by a few
  // rows (up to 12, or 16 of bf16 in pairs) with columns past the
  // last whole vector. An f32 B is packed by the first block of rows' tiles and read
  // packed by the other blocks: 600 rows in three blocks, over three blocks of K, with
  // a last sliver of B too narrow for a packing tile; of bf16 too (in pairs where the
  // host has them), with an odd K, whose last block holds a word of one step; and a
  // transposed bf16 A of more rows than its packing deals out at once. 64 rows of a
  // B several slivers wide: the whole tiles after the packing one fetch the slivers to
  // come as they compute (f32, and bf16 widened or in pairs). 62 and 50 rows, whose
  // last sliver is under half a tile: its rows shared with the sliver before (12 rows
  // and 2 as 7 and 7 on avx512, 6 and 2 as 4 and 4 on avx2). B's rows 4 KiB apart (1024
  // floats) over K past 256 steps: where L2 holds a few hundred rows of such a column
  // of B (Intel's 2 MiB L2 of 16 ways: 256), A resident takes K in shorter blocks. f32 A
  // over a few slivers of B is read where it lies, not packed, its rows or (a transpose)
  // its steps: 100 rows over two blocks of K, and 600 rows in blocks, with a last sliver
  // narrower than a tile. bf16 of up to a tile of rows, B's rows along memory (in pairs
  // where the host has them, each word made as it is read, up to 16 rows in tiles of
  // equal height, or two tiles over short rows of C): one row, an odd K past a block of
  // words, K of 1 and 3, columns past the last whole vector. One row streamed over a B
  // wider than a streaming block (4096 columns), so that its rows' blocks are not one
  // run and go four steps at a time, K not a multiple of four (f32; bf16's one row goes
  // in place, widened by a tile four vectors wide); one and three rows over a transposed
  // B (FewRowsOverATransposedBGiveTheRulesBits has more). A few rows in place in tiles of
  // equal height (8 as 4 and 4 on avx2), f32, and bf16 widened by the tiles as they read
  // it, with an odd K past two blocks of steps. A transposed bf16 B over K in three blocks, packed from
  // columns of words of two steps.
  std::vector<GemmCase> cases{{1, 4200, 7, false, false, false, 1},    {1, 4200, 7, false, true, false, 1},
                              {1, 4200, 9, false, false, true, 1},     {3, 70, 10, false, true, false, 2},
                              {1, 300, 301, false, false, true, 1},    {1, 40, 200, false, false, true, 2},
                              {3, 32, 3, false, false, true, 1},       {2, 40, 1, false, false, true, 1},
                              {11, 100, 129, false, false, true, 2},   {12, 70, 301, false, false, true, 1},
                              {20, 100, 129, false, false, true, 1},   {13, 40, 300, false, false, true, 1},
                              {24, 64, 70, false, false, true, 2},     {64, 130, 300, false, false, false, 1},
                              {64, 130, 301, true, false, true, 1},    {62, 100, 300, false, false, false, 1},
                              {62, 100, 301, true, false, true, 1},    {50, 1024, 300, false, false, false, 1},
                              {50, 1024, 301, false, false, true, 1},  {100, 64, 900, false, false, false, 1},
                              {100, 64, 900, true, false, false, 1},   {1, 1, 1, false, false, false, 1},
                              {1, 2100, 700, false, false, false, 2},  {300, 40, 1000, false, false, false, 2},
                              {7, 2049, 513, true, false, true, 2},    {64, 33, 257, false, true, false, 1},
                              {5, 4, 0, false, false, false, 2},       {13, 17, 300, false, false, true, 1},
                              {7, 2049, 513, false, false, false, 2},  {40, 37, 100, true, false, false, 2},
                              {2, 16, 31, false, false, false, 1},     {48, 200, 65, false, false, false, 1},
                              {8, 45, 300, false, false, true, 1},     {5, 33, 301, true, true, true, 2},
                              {11, 70, 64, false, true, true, 1},      {601, 20, 70, true, false, false, 1},
                              {600, 70, 1601, false, false, false, 1}, {600, 70, 1601, false, false, false, 2},
                              {600, 70, 1601, false, false, true, 1},  {300, 64, 2000, false, false, true, 2},
                              {601, 40, 1001, true, false, true, 1},   {8, 100, 31, false, false, false, 1},
                              {9, 3100, 65, false, false, true, 1},    {20, 50, 1600, false, true, true, 1},
                              {3, 40, 1600, false, true, true, 2}};
  for (Isa isa : cpu::host_isas()) {
    std::mt19937 rng(12);
    for (const GemmCase& c : cases) expect_rule(isa, c, rng);
  }
}

TEST(GemmRule, FewRowsOverATransposedBGiveTheRulesBits) {
  // A few rows over B read through a transpose, its steps along memory (x @ W^T): tiles
  // of four vectors of columns (two for three rows or more) transpose B's blocks of a
  // line of steps as they read them (KernelSet::transposed: on avx512 up to 16 rows of
  // f32 or bf16 widened, past 12 from two slivers of packed A; on avx2 eight; on the pair
  // tiles 12, B's words its own where K is even; more rows, or an odd K on the pair tiles,
  // pack B). K of one step, shorter than a block, whole
  // blocks and blocks with steps past them (bf16: an odd K's last step alone, after its pairs); columns past the last
  // whole tile, in fewer than a vector; rows a multiple of 4 KiB apart (K = 3072); A transposed; two threads, which
  // split the columns; and 17 rows, packed.
  const std::vector<GemmCase> cases{
      {1, 70, 1, false, true, false, 1},    {2, 100, 33, false, true, false, 2},   {4, 65, 100, false, true, false, 1},
      {2, 50, 3072, false, true, false, 1}, {3, 50, 3072, false, true, true, 1},   {1, 130, 65, false, true, true, 1},
      {2, 17, 95, false, true, true, 2},    {4, 200, 64, true, true, true, 1},     {1, 5, 31, false, true, true, 1},
      {8, 90, 97, false, true, true, 2},    {6, 33, 40, true, true, true, 1},      {3, 300, 20, true, true, false, 2},
      {5, 40, 50, false, true, false, 1},   {8, 70, 3072, false, true, false, 1},  {7, 65, 33, true, true, false, 2},
      {12, 65, 64, false, true, true, 1},   {10, 40, 33, false, true, true, 2},    {13, 40, 65, false, true, false, 1},
      {16, 33, 130, true, true, true, 2},   {14, 50, 3072, false, true, false, 1}, {15, 17, 9, false, true, true, 1},
      {17, 40, 50, false, true, false, 1},  {17, 33, 64, false, true, true, 1}};
  for (Isa isa : cpu::host_isas()) {
    std::mt19937 rng(13);
    for (const GemmCase& c : cases) expect_rule(isa, c, rng);
  }
}

TEST(GemmRule, Bf16OperandsGiveTheRulesBitsAsViewsOfWiderMatrices) {
  // bf16 lines that start at odd elements, strides of odd and even lengths, and an
  // odd K whose last pair holds one step: the layouts where pair packing reads
  // words of two steps and where it cannot.
  for (Isa isa : cpu::host_isas()) {
    if (isa == Isa::amx) continue;  // the tiles' own sums: gemm_amx_test.cc
    std::mt19937 rng(13);
    for (int64_t k : {64, 65, 300, 301}) {
      for (int layout = 0; layout < 16; ++layout) {
        const bool a_transposed = layout & 1, b_transposed = layout & 2;
        const int64_t pad = layout & 4 ? 1 : 2, offset = layout & 8 ? 1 : 0;
        const int64_t m = 29, n = 45;
        SCOPED_TRACE(fmt::format("{}: {}x{}x{} A{} B{} pad {} offset {}", cpu::isa_name(isa), m, n, k,
                                 a_transposed ? "^T" : "", b_transposed ? "^T" : "", pad, offset));
        Operand a = random_operand(m, k, a_transposed, true, rng, pad, offset);
        Operand b = random_operand(k, n, b_transposed, true, rng, pad, offset);
        std::vector<float> got(static_cast<size_t>(m * n));
        cpu::Gemm(cpu::kernels_for(isa), m, n, k, 1, true).run(a.ref(), b.ref(), got.data(), n);
        EXPECT_EQ(first_difference(got, oracle(a, b, m, n, k), n), "");
      }
    }
  }
}

TEST(GemmRule, SpecialValuesFollowTheRule) {
  // NaN, infinities and signed zeros go through the same fma chain.
  Operand a, b;
  a.rows = 4;
  b.rows = 3;
  a.f32 = {NAN, 1.0f, 0.0f, -0.0f, INFINITY, -INFINITY, 2.0f, 1e-45f, -0.0f, -0.0f, 3e38f, 3e38f};
  b.f32 = {1.0f, -0.0f, 2.0f, 0.0f, 0.0f, -1.0f, INFINITY, 1.0f, 0.5f, -0.0f, 3.0f, 1e-45f};
  for (Isa isa : cpu::host_isas()) {
    SCOPED_TRACE(cpu::isa_name(isa));
    std::vector<float> got(9);
    cpu::Gemm(cpu::kernels_for(isa), 3, 3, 4, 1, false).run(a.ref(), b.ref(), got.data(), 3);
    std::vector<float> want = oracle(a, b, 3, 3, 4);
    for (size_t e = 0; e < 9; ++e) {
      EXPECT_TRUE(std::memcmp(&got[e], &want[e], 4) == 0 || (std::isnan(got[e]) && std::isnan(want[e])))
          << e << ": " << got[e] << " vs " << want[e];
    }
  }
}

TEST(GemmRule, Bf16SubnormalsAndSpecialValuesFollowTheRule) {
  // Operands whose products and partial sums fall below f32's normal range (2^-126),
  // subnormal bf16 inputs, zeros of both signs, infinities and NaN, on shapes that
  // take the tile path, the streaming path, odd K and more than one block of K.
  std::mt19937 rng(13);
  auto value = [&](int scale) {
    uint32_t r = rng();
    if (r % 997 == 0) return (r & 2) ? INFINITY : NAN;
    if (r % 13 == 0) return (r & 2) ? 0.0f : -0.0f;
    if (r % 11 == 0) return std::bit_cast<float>((r & 0x8000'0000u) | (r % 0x7f) << 16);  // a subnormal bf16
    int exponent = scale + static_cast<int>(rng() % 9) - 4;
    return std::ldexp(1.0f + static_cast<float>(rng() % 128) / 128.0f, exponent) * ((r & 4) ? -1.0f : 1.0f);
  };
  auto operand = [&](int64_t rows, int64_t cols, int scale) {
    Operand o;
    o.is_bf16 = true;
    o.rows = cols;
    o.cols = 1;
    for (int64_t e = 0; e < rows * cols; ++e) o.bf16.emplace_back(value(scale));
    return o;
  };
  struct Shape3 {
    int64_t m, n, k;
  };
  for (Shape3 s : {Shape3{13, 37, 31}, Shape3{1, 40, 9}, Shape3{24, 32, 2}, Shape3{12, 33, 1601}, Shape3{3, 5, 1}}) {
    Operand a = operand(s.m, s.k, -62), b = operand(s.k, s.n, -62);
    std::vector<float> want = oracle(a, b, s.m, s.n, s.k);
    for (Isa isa : cpu::host_isas()) {
      if (isa == Isa::amx) continue;  // the tiles' own sums: gemm_amx_test.cc
      SCOPED_TRACE(fmt::format("{}: {}x{}x{}", cpu::isa_name(isa), s.m, s.n, s.k));
      std::vector<float> got(want.size());
      cpu::Gemm(cpu::kernels_for(isa), s.m, s.n, s.k, 1, true).run(a.ref(), b.ref(), got.data(), s.n);
      int shown = 0;
      for (size_t e = 0; e < want.size() && shown < 5; ++e) {
        if (std::memcmp(&got[e], &want[e], 4) == 0 || (std::isnan(got[e]) && std::isnan(want[e]))) continue;
        ++shown;
        ADD_FAILURE() << "C[" << e / static_cast<size_t>(s.n) << ", " << e % static_cast<size_t>(s.n) << "] is "
                      << std::hexfloat << got[e] << ", the rule gives " << want[e];
      }
    }
  }
}

TEST(GemmRule, Bf16OddKsLastStepKeepsASumOfNegativeZero) {
  // A sum flushed to -0 before an odd K's last step, whose product is -0 too: the rule
  // gives -0, and so does a word whose missing half is A's +0 times B's -0; a +0 there
  // would give +0. Few rows (B read in place, one row alone) and a whole tile (packed),
  // columns of a whole vector and past it.
  const float tiny = std::ldexp(1.0f, -70);
  for (int64_t m : {1, 5, 13}) {
    for (int64_t n : {16, 17}) {
      Operand a, b;
      a.is_bf16 = b.is_bf16 = true;
      a.rows = 3, a.cols = 1, b.rows = n, b.cols = 1;
      for (int64_t i = 0; i < m; ++i)
        a.bf16.insert(a.bf16.end(), {graph::Bf16(tiny), graph::Bf16(tiny), graph::Bf16(-0.0f)});
      for (float v : {-tiny, -tiny, 1.0f}) b.bf16.insert(b.bf16.end(), static_cast<size_t>(n), graph::Bf16(v));
      const std::vector<float> want = oracle(a, b, m, n, 3);
      ASSERT_TRUE(std::signbit(want[0]) && want[0] == 0.0f) << "the rule's sum is " << want[0];
      for (Isa isa : cpu::host_isas()) {
        if (isa == Isa::amx) continue;  // the tiles' own sums: gemm_amx_test.cc
        SCOPED_TRACE(fmt::format("{}: {}x{}x3", cpu::isa_name(isa), m, n));
        std::vector<float> got(want.size(), 7.0f);
        cpu::Gemm(cpu::kernels_for(isa), m, n, 3, 1, true).run(a.ref(), b.ref(), got.data(), n);
        EXPECT_EQ(first_difference(got, want, n), "");
      }
    }
  }
}

// With `rounded`, C also goes there rounded to bf16 tile by tile (or, for one block of
// K, only there): the bits of rounding the f32 C afterwards, on every path (the tiles
// with one block of K and with several, columns past the last whole tile, rows read
// in place, one streamed row, K = 0, two threads), and nothing past a row's end.
TEST(GemmRule, Bf16ProductsRoundedInTheTilesAreTheirF32SumsRounded) {
  struct Shape3 {
    int64_t m, n, k;
    int threads;
  };
  std::mt19937 rng(17);
  for (Shape3 s : {Shape3{30, 64, 64, 1}, Shape3{29, 45, 1601, 1}, Shape3{7, 45, 40, 1}, Shape3{20, 70, 90, 1},
                   Shape3{1, 33, 50, 1}, Shape3{5, 9, 0, 1}, Shape3{100, 300, 300, 2}}) {
    Operand a = random_operand(s.m, s.k, false, true, rng), b = random_operand(s.k, s.n, rng() % 2 == 0, true, rng);
    const int64_t ldc = s.n + 3;
    for (Isa isa : cpu::host_isas()) {
      SCOPED_TRACE(fmt::format("{}: {}x{}x{} threads {}", cpu::isa_name(isa), s.m, s.n, s.k, s.threads));
      std::vector<float> sums(static_cast<size_t>(s.m * ldc));
      cpu::Gemm(cpu::kernels_for(isa), s.m, s.n, s.k, s.threads, true).run(a.ref(), b.ref(), sums.data(), ldc);
      std::vector<float> scratch(sums.size());
      std::vector<graph::Bf16> got(sums.size(), graph::Bf16(-7.0f));
      cpu::Gemm(cpu::kernels_for(isa), s.m, s.n, s.k, s.threads, true)
          .run(a.ref(), b.ref(), scratch.data(), ldc, got.data());
      int shown = 0;
      for (int64_t i = 0; i < s.m && shown < 5; ++i) {
        for (int64_t j = 0; j < ldc && shown < 5; ++j) {
          const size_t e = static_cast<size_t>(i * ldc + j);
          const uint16_t want = j < s.n ? graph::Bf16(sums[e]).bits : graph::Bf16(-7.0f).bits;
          if (got[e].bits == want) continue;
          ++shown;
          ADD_FAILURE() << "C[" << i << ", " << j << "] is 0x" << std::hex << got[e].bits << ", want 0x" << want;
        }
      }
    }
  }
}

TEST(GemmRule, TheCallersSubnormalModeIsLeftAsItWas) {
  std::mt19937 rng(5);
  Operand a = random_operand(20, 30, false, true, rng), b = random_operand(30, 40, false, true, rng);
  unsigned before = _mm_getcsr();
  for (Isa isa : cpu::host_isas()) {
    std::vector<float> got(20 * 40);
    cpu::Gemm(cpu::kernels_for(isa), 20, 40, 30, 1, true).run(a.ref(), b.ref(), got.data(), 40);
    EXPECT_EQ(_mm_getcsr(), before) << cpu::isa_name(isa);
  }
}

// Packed operands on cache lines: a tile's vector loads of them never straddle two lines.
TEST(GemmScratch, PackingBuffersStartCacheLines) {
  for (Isa isa : cpu::host_isas()) {
    for (bool bf16 : {false, true}) {
      SCOPED_TRACE(fmt::format("{} {}", cpu::isa_name(isa), bf16 ? "bf16" : "f32"));
      cpu::GemmScratch scratch;
      cpu::Gemm gemm(cpu::kernels_for(isa), 300, 700, 900, 2, bf16, &scratch);
      ASSERT_FALSE(scratch.slots.empty());
      for (const cpu::GemmWorkspace& ws : scratch.slots) {
        for (const void* data : {static_cast<const void*>(ws.a_pack.data()), static_cast<const void*>(ws.b_pack.data()),
                                 static_cast<const void*>(ws.tile.data()), static_cast<const void*>(ws.amx.a.data()),
                                 static_cast<const void*>(ws.amx.b.data())}) {
          if (data != nullptr) EXPECT_EQ(reinterpret_cast<uintptr_t>(data) % 64, 0u);
        }
      }
    }
  }
}

TEST(Isa, TheKernelsThisHostSkips) {
  std::vector<Isa> host = cpu::host_isas();
  std::string skipped;
  for (Isa isa : {Isa::avx2, Isa::avx512, Isa::avx512bf16, Isa::amx}) {
    if (std::find(host.begin(), host.end(), isa) == host.end()) skipped += fmt::format(" {}", cpu::isa_name(isa));
  }
  if (!skipped.empty()) GTEST_SKIP() << "this processor lacks, so no test here runs, the kernels:" << skipped;
}

TEST(Isa, ChosenByNameAndRefusedByName) {
  EXPECT_EQ(cpu::choose_isa("scalar"), Isa::scalar);
  try {
    cpu::choose_isa("avx9000");
    FAIL() << "no error";
  } catch (const DeviceError& e) {
    EXPECT_STREQ(e.what(),
                 "cpu: 'avx9000' (from the device options) is not an instruction set of the cpu device: use scalar, "
                 "avx2, avx512, avx512bf16 or amx");
  }
  std::vector<Isa> host = cpu::host_isas();
  for (Isa isa : {Isa::avx2, Isa::avx512, Isa::avx512bf16, Isa::amx}) {
    std::string name(cpu::isa_name(isa));
    if (std::find(host.begin(), host.end(), isa) != host.end()) continue;
    EXPECT_THROW(make_device("cpu", DeviceOptions{.cpu_cores = 1, .cpu_isa = name}), DeviceError) << name;
  }
  setenv("SEXPGPU_CPU_ISA", "scalar", 1);
  EXPECT_EQ(cpu::choose_isa(""), Isa::scalar);
  setenv("SEXPGPU_CPU_ISA", "sse9", 1);
  EXPECT_THROW(cpu::choose_isa(""), DeviceError);
  unsetenv("SEXPGPU_CPU_ISA");
  Isa widest = host.back() == Isa::avx512bf16 && !cpu::pair_products_outrun_fma() ? Isa::avx512 : host.back();
  EXPECT_EQ(cpu::choose_isa(""), widest);
}

// y = x @ w through a device, x [batch..., m, k] with w broadcast over the
// batch or batched, either operand possibly made by a transpose node.
struct Product {
  Shape x_shape, w_shape;
  bool x_transposed, w_transposed;
};

Graph product_graph(const Product& p, DType dtype) {
  Graph graph;
  Builder b(graph);
  auto operand = [&](const char* name, Shape shape, bool transposed) {
    if (!transposed) return b.input(name, shape, dtype);
    size_t r = shape.size();
    std::swap(shape[r - 1], shape[r - 2]);
    std::vector<int64_t> perm;
    for (size_t d = 0; d < r; ++d) perm.push_back(static_cast<int64_t>(d));
    std::swap(perm[r - 1], perm[r - 2]);
    return b.transpose(b.input(name, shape, dtype), perm);
  };
  b.output("y", b.matmul(operand("x", p.x_shape, p.x_transposed), operand("w", p.w_shape, p.w_transposed)));
  return graph;
}

TEST(GemmDevice, EveryInstructionSetGivesTheSameBits) {
  std::vector<Product> products{{{64, 300}, {300, 70}, false, false},
                                {{3, 17, 40}, {40, 9}, false, true},
                                {{2, 3, 5, 33}, {2, 3, 33, 20}, true, false},
                                {{1, 512}, {512, 1000}, false, false}};
  for (DType dtype : {DType::f32, DType::bf16}) {
    for (const Product& p : products) {
      Graph graph = product_graph(p, dtype);
      std::mt19937 rng(3);
      std::vector<Tensor> inputs;
      for (const auto& in : graph.inputs) inputs.push_back(random_tensor(dtype, graph.node(in.node).shape, rng));
      auto run = [&](const char* isa, int cores) {
        return make_device("cpu", DeviceOptions{.cpu_cores = cores, .cpu_isa = isa})
            ->compile(graph)
            ->run_host(inputs)[0];
      };
      Tensor scalar = run("scalar", 1);
      for (Isa isa : cpu::host_isas()) {
        if (dtype == DType::bf16 && isa == Isa::amx) continue;  // the tiles' own sums: gemm_amx_test.cc
        for (int cores : {1, 2}) {
          EXPECT_TRUE(same_bits(run(std::string(cpu::isa_name(isa)).c_str(), cores), scalar))
              << cpu::isa_name(isa) << " on " << cores << " threads, " << graph::dtype_name(dtype) << " "
              << graph::shape_str(p.x_shape) << " @ " << graph::shape_str(p.w_shape);
        }
      }
    }
  }
}

// |cpu - reference| per element, bounded by both products' rounding error:
// each sum of k terms is within k * 2^-24 * sum|x w| of the exact one (one
// rounding a step), and bf16 adds at most one bf16 ulp of the result.
TEST(GemmDevice, RandomShapesAgreeWithTheReference) {
  std::mt19937 rng(21);
  std::uniform_int_distribution<int64_t> size(1, 300), batch(1, 3);
  for (int trial = 0; trial < 20; ++trial) {
    DType dtype = trial % 3 == 2 ? DType::bf16 : DType::f32;
    int64_t m = size(rng), k = size(rng), n = size(rng), b0 = batch(rng);
    bool shared = trial % 2 == 0;
    Product p{{b0, m, k}, shared ? Shape{k, n} : Shape{b0, k, n}, rng() % 2 == 0, rng() % 2 == 0};
    SCOPED_TRACE(
        fmt::format("{} {} @ {}", graph::dtype_name(dtype), graph::shape_str(p.x_shape), graph::shape_str(p.w_shape)));
    Graph graph = product_graph(p, dtype);
    std::vector<Tensor> inputs;
    for (const auto& in : graph.inputs) inputs.push_back(random_tensor(dtype, graph.node(in.node).shape, rng));
    Tensor got = run_on("cpu", graph, inputs)[0], want = run_on("reference", graph, inputs)[0];
    // sum|x w| per element, from the same graph on |x| and |w| in f64.
    Graph abs_graph = product_graph(p, DType::f64);
    std::vector<Tensor> abs_inputs;
    for (const Tensor& t : inputs) {
      std::vector<double> v;
      for (int64_t i = 0; i < t.numel(); ++i) v.push_back(std::fabs(t.value(i)));
      abs_inputs.push_back(Tensor::from_doubles(DType::f64, t.shape(), v));
    }
    Tensor magnitude = run_on("reference", abs_graph, abs_inputs)[0];
    ASSERT_EQ(got.shape(), want.shape());
    for (int64_t i = 0; i < got.numel(); ++i) {
      double e = want.value(i), bound = 2.0 * static_cast<double>(k) * std::ldexp(1.0, -24) * magnitude.value(i);
      if (dtype == DType::bf16) bound += bf16_ulp(e);
      ASSERT_LE(std::fabs(got.value(i) - e), bound) << "element " << i;
    }
  }
}

}  // namespace
}  // namespace sx::device::testing
