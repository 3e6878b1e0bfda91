// A product's epilogue on the cpu device (device/cpu/products/epilogue.h): a fused group that
// alone reads a product's result runs on its blocks as the product finishes them, and
// every output has the bits it has when the two run apart (the same graph with the
// product an output too, which keeps it out of the group), on every instruction set
// the host runs and on 1 and 2 threads, f32 and bf16. The shapes take each of the
// GEMM's paths: a few rows streamed or read in place, one resident block of rows with
// K in two blocks and columns in several panels (the epilogue takes the region at its
// end), many blocks of rows with K in two blocks (it takes each block as it is done),
// more columns than a panel holds, and a batch of products spread over the threads. Two
// biases are rows shorter than a tile, which a part loads once a run (fusion.cc). An f32
// product needs no bytes of its own where the epilogue writes an output over it.
#include <cmath>
#include <cstdlib>

#include "device/cpu/isa.h"
#include "util.h"

namespace sx::device::testing {
namespace {

using graph::Builder;
using graph::NodeId;

struct ProductCase {
  const char* name;
  int64_t batch, m, k, n;
  bool shared_weights;  // x @ w for every entry (one product of all rows), else a product per entry
};

const ProductCase kCases[] = {
    {"three rows streamed, the bias a quarter of a tile", 1, 3, 40, 128, true},
    {"a few slivers in place", 2, 15, 300, 200, true},
    {"one resident block, K in two, columns in three", 1, 100, 260, 600, true},
    {"many blocks of rows, K in two", 3, 100, 260, 100, true},
    {"more columns than a panel", 1, 280, 8, 2100, true},
    {"whole rows wider than a MiB panel of amx's", 1, 40, 1100, 520, true},
    {"a batch of products, the bias an eighth of a tile", 6, 50, 16, 64, false},
};

enum class Epilogue { gelu, subnormal, row_sum, lone_bias };

// The product of `c`, then `epilogue`; with `product_too`, the product is an output
// as well, so it runs apart from its readers.
Graph product_with(const ProductCase& c, DType dtype, Epilogue epilogue, bool product_too) {
  Graph graph;
  Builder b(graph);
  const Shape shape{c.batch, c.m, c.n};
  NodeId x = b.input("x", {c.batch, c.m, c.k}, dtype);
  NodeId p = c.shared_weights ? b.matmul(x, b.broadcast(b.input("w", {c.k, c.n}, dtype), {c.batch, c.k, c.n}))
                              : b.matmul(x, b.input("w", {c.batch, c.k, c.n}, dtype));
  auto constant = [&](double v) {
    return b.broadcast(b.cast(b.constant(Tensor::scalar(DType::f32, v)), dtype), shape);
  };
  // A scalar input: the program loads it once a part and run, as it does the constants.
  NodeId scale = b.broadcast(b.input("scale", {}, dtype), shape);
  NodeId biased = b.add(p, b.broadcast(b.input("bias", {c.n}, dtype), shape));
  NodeId h = b.mul(biased, scale);
  switch (epilogue) {
    case Epilogue::gelu: {
      NodeId inner = b.mul(constant(std::sqrt(2.0 / M_PI)), b.add(h, b.mul(constant(0.044715), b.mul(b.mul(h, h), h))));
      b.output("gelu", b.mul(b.mul(constant(0.5), h), b.add(constant(1.0), b.tanh(inner))));
      break;
    }
    case Epilogue::subnormal:  // a bf16 product flushes subnormals while it multiplies; its epilogue must not
      b.output("tiny", b.mul(b.cast(h, DType::f32), b.broadcast(b.constant(Tensor::scalar(DType::f32, 1e-39)), shape)));
      break;
    case Epilogue::row_sum: b.output("sum", b.sum(b.exp(h), {2})); break;
    case Epilogue::lone_bias: b.output("slice", b.slice(biased, {0, 0, 1}, {c.batch, c.m, c.n})); break;
  }
  if (product_too) b.output("product", p);
  return graph;
}

// The outputs of one plan of `graph` on the cpu device run on each set of inputs in
// turn, and what SEXPGPU_CPU_PROFILE printed of it.
std::vector<std::vector<Tensor>> run_profiled(const Graph& graph, const std::vector<std::vector<Tensor>>& inputs,
                                              cpu::Isa isa, int cores, std::string& profile) {
  setenv("SEXPGPU_CPU_PROFILE", "1", 1);
  ::testing::internal::CaptureStderr();
  std::vector<std::vector<Tensor>> outputs;
  {
    auto device = make_device("cpu", {.cpu_cores = cores, .cpu_isa = std::string(cpu::isa_name(isa))});
    auto plan = device->compile(graph);
    for (const std::vector<Tensor>& run : inputs) outputs.push_back(plan->run_host(run));
  }
  profile = ::testing::internal::GetCapturedStderr();
  unsetenv("SEXPGPU_CPU_PROFILE");
  return outputs;
}

void expect_bits_of_apart(Epilogue epilogue) {
  for (const ProductCase& c : kCases) {
    for (DType dtype : {DType::f32, DType::bf16}) {
      SCOPED_TRACE(fmt::format("{}, {}", c.name, graph::dtype_name(dtype)));
      std::mt19937 rng(7);
      std::vector<std::vector<Tensor>> inputs;  // two runs, the second with another scale
      for (int run = 0; run < 2; ++run) {
        inputs.push_back({random_tensor(dtype, {c.batch, c.m, c.k}, rng),
                          random_tensor(dtype, c.shared_weights ? Shape{c.k, c.n} : Shape{c.batch, c.k, c.n}, rng),
                          Tensor::scalar(dtype, 1.0 + run), random_tensor(dtype, {c.n}, rng)});
      }
      const Graph joined = product_with(c, dtype, epilogue, false);
      const Graph apart = product_with(c, dtype, epilogue, true);
      for (cpu::Isa isa : cpu::host_isas()) {
        for (int cores : {1, 2}) {
          SCOPED_TRACE(fmt::format("{}, {} threads", cpu::isa_name(isa), cores));
          std::string joined_profile, apart_profile;
          std::vector<std::vector<Tensor>> got = run_profiled(joined, inputs, isa, cores, joined_profile);
          std::vector<std::vector<Tensor>> want = run_profiled(apart, inputs, isa, cores, apart_profile);
          EXPECT_NE(joined_profile.find("] with fused"), std::string::npos) << joined_profile;
          EXPECT_EQ(apart_profile.find(" with fused"), std::string::npos) << apart_profile;
          for (size_t run = 0; run < got.size(); ++run) {
            ASSERT_EQ(got[run].size() + 1, want[run].size());
            for (size_t i = 0; i < got[run].size(); ++i) {
              EXPECT_TRUE(same_bits(got[run][i], want[run][i])) << joined.outputs[i].name << ", run " << run;
            }
          }
        }
      }
    }
  }
}

TEST(Epilogue, ABiasAndGeluOnTheProductsBlocksKeepTheirBits) { expect_bits_of_apart(Epilogue::gelu); }

TEST(Epilogue, ItsSubnormalResultsAreNotFlushed) { expect_bits_of_apart(Epilogue::subnormal); }

TEST(Epilogue, ASumOfWholeRowsOnTheProductsBlocksKeepsItsBits) { expect_bits_of_apart(Epilogue::row_sum); }

TEST(Epilogue, ALoneBiasBecomesTheProductsEpilogue) { expect_bits_of_apart(Epilogue::lone_bias); }

TEST(Epilogue, AnF32ProductLiesWhereItsEpilogueWritesOverIt) {
  // The product's result is written where the output lies, and the epilogue writes the
  // output over it, each element after reading it: the arena holds nothing. A bf16
  // product's f32 sums lie in the GEMM's scratch, and its rounded result in the arena.
  for (Epilogue epilogue : {Epilogue::gelu, Epilogue::lone_bias}) {
    for (const ProductCase& c : kCases) {
      SCOPED_TRACE(c.name);
      for (int cores : {1, 2}) {
        auto device = make_device("cpu", {.cpu_cores = cores});
        const size_t result_bytes = static_cast<size_t>(c.batch * c.m * c.n) * sizeof(float);
        const size_t arena = device->compile(product_with(c, DType::f32, epilogue, false))->memory().arena_bytes;
        // The lone bias's sum is read by a slice, so it lies in the arena, with the product.
        EXPECT_EQ(arena, epilogue == Epilogue::gelu ? 0u : (result_bytes + 63) / 64 * 64);
        EXPECT_GE(device->compile(product_with(c, DType::bf16, epilogue, false))->memory().arena_bytes,
                  result_bytes / 2);
      }
    }
  }
}

}  // namespace
}  // namespace sx::device::testing
