// The cpu device's random kernels give the reference device's bits: every random
// primitive and dtype, sizes around a vector's width and a block's, keys of every sign
// and past 2^32, on 1 and 2 threads, under every instruction set this processor runs;
// and each instruction set's vector Philox gives graph::philox4x32_10's blocks.
// scripts/test runs these again as other processors (processor_chosen_tests).
#include <algorithm>
#include <cstdio>
#include <limits>

#include "device/cpu/isa.h"
#include "device/cpu/kernels/vector_math.h"
#include "graph/prims/random_draw.h"
#include "util.h"

namespace sx::device::testing {
namespace {

using cpu::Isa;

struct RandomCase {
  const char* op;
  DType dtype;
  double p;  // random_bernoulli's probability
};

constexpr RandomCase kRandomCases[] = {
    {"random_normal", DType::f32, 0},          {"random_normal", DType::bf16, 0},
    {"random_normal", DType::f64, 0},          {"random_uniform", DType::f32, 0},
    {"random_uniform", DType::bf16, 0},        {"random_uniform", DType::f64, 0},
    {"random_bernoulli", DType::boolean, 0.3}, {"random_bernoulli", DType::boolean, 0},
    {"random_bernoulli", DType::boolean, 1},
};

struct RandomKey {
  DType dtype;
  int64_t value;
};

constexpr RandomKey kRandomKeys[] = {
    {DType::i64, 0},
    {DType::i64, 7},
    {DType::i64, -1},
    {DType::i64, -123456789012},
    {DType::i64, (int64_t{1} << 32) + 12345},
    {DType::i64, std::numeric_limits<int64_t>::max()},
    {DType::i32, -5},
    {DType::u16, 65535},
};

Graph random_graph(const RandomCase& c, DType key_dtype, int64_t n) {
  Graph g;
  graph::Builder b(g);
  graph::NodeId key = b.input("key", {}, key_dtype);
  std::string_view op = c.op;
  graph::NodeId y = op == "random_normal"    ? b.random_normal(key, {n}, c.dtype)
                    : op == "random_uniform" ? b.random_uniform(key, {n}, c.dtype)
                                             : b.random_bernoulli(key, c.p, {n});
  b.output("y", y);
  return g;
}

TEST(Random, CpuGivesTheReferenceBitsOnEveryInstructionSetAndThreadCount) {
  for (const RandomCase& c : kRandomCases) {
    for (int64_t n : {0, 1, 7, 8, 9, 1000, 100003}) {
      for (const RandomKey& key : kRandomKeys) {
        Graph g = random_graph(c, key.dtype, n);
        std::vector<Tensor> inputs{Tensor::scalar(key.dtype, static_cast<double>(key.value))};
        if (key.dtype == DType::i64) inputs[0].data<int64_t>()[0] = key.value;  // exact past 2^53
        Tensor expected = run_on("reference", g, inputs)[0];
        for (Isa isa : cpu::host_isas()) {
          for (int cores : {1, 2}) {
            auto device =
                make_device("cpu", DeviceOptions{.cpu_cores = cores, .cpu_isa = std::string(cpu::isa_name(isa))});
            Tensor actual = device->compile(g)->run_host(inputs)[0];
            EXPECT_EQ(compare(actual, expected, true), "")
                << c.op << " " << graph::dtype_name(c.dtype) << " p " << c.p << " [" << n << "], key "
                << graph::dtype_name(key.dtype) << " " << key.value << ", " << cpu::isa_name(isa) << ", " << cores
                << " cores";
          }
        }
      }
    }
  }
}

TEST(Random, EveryInstructionSetGivesPhiloxBlocks) {
  constexpr int64_t kCount = 64;
  const graph::PhiloxKey key{0x9e3779b9, 0xdeadbeef};
  // Counters from zero, and up to and from a multiple of 2^32 (the high word changes).
  for (uint64_t first : {uint64_t{0}, (uint64_t{1} << 32) - kCount, uint64_t{5} << 32, ~uint64_t{0} - kCount + 1}) {
    for (Isa isa : cpu::host_isas()) {
      const cpu::MathKernels* kernels = cpu::math_kernels_for(isa);
      if (kernels == nullptr) continue;
      std::vector<uint32_t> words(4 * kCount);
      uint32_t* const rows[4] = {&words[0], &words[kCount], &words[2 * kCount], &words[3 * kCount]};
      kernels->philox(first, kCount, key, rows);
      for (int64_t j = 0; j < kCount; ++j) {
        graph::PhiloxCounter want = graph::prims::philox_block(static_cast<int64_t>(first + j), key);
        graph::PhiloxCounter got{rows[0][j], rows[1][j], rows[2][j], rows[3][j]};
        ASSERT_EQ(got, want) << cpu::isa_name(isa) << ", counter " << first + j;
      }
    }
  }
  const std::vector<Isa> host = cpu::host_isas();
  if (std::find(host.begin(), host.end(), Isa::avx512) == host.end()) {
    std::printf("skipped (this processor lacks it): avx512\n");
  }
}

}  // namespace
}  // namespace sx::device::testing
