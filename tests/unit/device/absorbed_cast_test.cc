// A bf16 product on AMX whose right operand is an f32 weight cast to bf16 (the bf16
// policy's form) reads the weight and rounds it as it packs it: the plan has no cast
// step, and every output has the bits of the same product after a cast step (on the
// other kernels, the cast runs in both). The cast runs where
// the weight is not a graph input (neg(neg(w)), the same values): that graph is the one
// it is checked against, on every instruction set the host runs, on 1 and 2 threads.
// The weights hold every kind of f32 the rounding treats apart: ties to even (up and
// down), subnormals, NaN and infinities, and values past bf16's largest.
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>

#include "device/cpu/isa.h"
#include "util.h"

namespace sx::device::testing {
namespace {

using graph::Builder;
using graph::NodeId;

// How the product reads the weight, as the bf16 policy leaves it.
enum class WeightForm {
  shared,            // x[batch, m, k] @ broadcast(cast(w[k, n]))
  transposed,        // x[batch, m, k] @ broadcast(transpose(cast(w[n, k]))): a gradient's
  plain,             // x[m, k] @ cast(w[k, n])
  plain_transposed,  // x[m, k] @ transpose(cast(w[n, k]))
  batched,           // x[batch, m, k] @ cast(w[batch, k, n])
};

struct CastCase {
  const char* name;
  WeightForm form;
  int64_t batch, m, k, n;
  bool epilogue;  // the product's result cast to f32 and biased, as an epilogue
};

const CastCase kWeightCasts[] = {
    {"shared, one row", WeightForm::shared, 1, 1, 70, 40, false},
    {"shared, a few rows in place", WeightForm::shared, 2, 5, 33, 100, true},
    {"shared, packed, K odd", WeightForm::shared, 2, 40, 301, 90, true},
    {"transposed, packed", WeightForm::transposed, 1, 70, 130, 50, true},
    {"transposed, a few rows", WeightForm::transposed, 1, 3, 64, 33, false},
    {"plain, past a panel", WeightForm::plain, 1, 40, 96, 530, false},
    {"plain transposed, K odd", WeightForm::plain_transposed, 1, 35, 67, 47, true},
    {"a batch of weights", WeightForm::batched, 3, 20, 50, 30, false},
};

Shape cast_weight_shape(const CastCase& c) {
  switch (c.form) {
    case WeightForm::shared:
    case WeightForm::plain: return {c.k, c.n};
    case WeightForm::transposed:
    case WeightForm::plain_transposed: return {c.n, c.k};
    case WeightForm::batched: return {c.batch, c.k, c.n};
  }
  return {};
}

bool has_batch_axis(const CastCase& c) { return c.form != WeightForm::plain && c.form != WeightForm::plain_transposed; }

// The product of `c` on x (bf16) and the f32 weight w cast to bf16; with `cast_runs`,
// the cast's input is neg(neg(w)), not the input itself, so the plan keeps its step.
Graph cast_weight_product(const CastCase& c, bool cast_runs) {
  Graph graph;
  Builder b(graph);
  const Shape x_shape = has_batch_axis(c) ? Shape{c.batch, c.m, c.k} : Shape{c.m, c.k};
  const Shape out_shape = has_batch_axis(c) ? Shape{c.batch, c.m, c.n} : Shape{c.m, c.n};
  NodeId x = b.input("x", x_shape, DType::bf16);
  NodeId w = b.input("w", cast_weight_shape(c), DType::f32);
  NodeId cast = b.cast(cast_runs ? b.neg(b.neg(w)) : w, DType::bf16);
  NodeId right = cast;
  switch (c.form) {
    case WeightForm::shared: right = b.broadcast(cast, {c.batch, c.k, c.n}); break;
    case WeightForm::transposed: right = b.broadcast(b.transpose(cast, {1, 0}), {c.batch, c.k, c.n}); break;
    case WeightForm::plain_transposed: right = b.transpose(cast, {1, 0}); break;
    case WeightForm::plain:
    case WeightForm::batched: break;
  }
  NodeId product = b.matmul(x, right);
  if (c.epilogue) {
    NodeId bias = b.broadcast(b.input("bias", {c.n}, DType::f32), out_shape);
    b.output("out", b.add(b.cast(product, DType::f32), bias));
  } else {
    b.output("out", product);
  }
  return graph;
}

// An f32 weight of random values, with every kind of value the rounding treats apart.
Tensor weight_to_round(const Shape& shape, std::mt19937& rng) {
  std::vector<float> values(static_cast<size_t>(graph::numel(shape)));
  std::uniform_real_distribution<float> uniform(-2.0f, 2.0f);
  for (float& v : values) v = uniform(rng);
  const auto bits = [](uint32_t b) { return std::bit_cast<float>(b); };
  const float special[] = {
      bits(0x3f808000),  // a tie whose even neighbour is below
      bits(0x3f818000),  // a tie whose even neighbour is above
      bits(0xbf818001),  // just past a tie
      bits(0x00012345),  // a subnormal
      bits(0x807fffff),  // the largest negative subnormal: rounds to the smallest normal
      bits(0x7f7fffff),  // past bf16's largest: rounds to infinity
      bits(0x7fa00001),  // a signalling NaN: comes out quiet
      -INFINITY,
  };
  std::uniform_int_distribution<size_t> at(0, values.size() - 1);
  for (size_t s = 0; s < std::size(special) && values.size() > 16; ++s) values[at(rng)] = special[s];
  return Tensor(DType::f32, shape,
                std::span(reinterpret_cast<const uint8_t*>(values.data()), values.size() * sizeof(float)));
}

// The outputs of `graph` on the cpu device, and whether its profile shows a cast step.
std::vector<Tensor> run_noting_casts(const Graph& graph, const std::vector<Tensor>& inputs, cpu::Isa isa, int cores,
                                     bool& casts) {
  setenv("SEXPGPU_CPU_PROFILE", "1", 1);
  ::testing::internal::CaptureStderr();
  std::vector<Tensor> outputs;
  {
    auto device = make_device("cpu", {.cpu_cores = cores, .cpu_isa = std::string(cpu::isa_name(isa))});
    outputs = device->compile(graph)->run_host(inputs);
  }
  const std::string profile = ::testing::internal::GetCapturedStderr();
  unsetenv("SEXPGPU_CPU_PROFILE");
  casts = profile.find("cast of f32") != std::string::npos || profile.find("(neg neg cast)") != std::string::npos;
  return outputs;
}

TEST(GemmDevice, AWeightsCastIsAbsorbedByItsProductWithTheSameBits) {
  for (const CastCase& c : kWeightCasts) {
    SCOPED_TRACE(c.name);
    std::mt19937 rng(47);
    const Shape x_shape = has_batch_axis(c) ? Shape{c.batch, c.m, c.k} : Shape{c.m, c.k};
    std::vector<Tensor> inputs{random_tensor(DType::bf16, x_shape, rng), weight_to_round(cast_weight_shape(c), rng)};
    if (c.epilogue) inputs.push_back(random_tensor(DType::f32, {c.n}, rng));
    const Graph absorbed = cast_weight_product(c, false), apart = cast_weight_product(c, true);
    for (cpu::Isa isa : cpu::host_isas()) {
      for (int cores : {1, 2}) {
        SCOPED_TRACE(fmt::format("{}, {} threads", cpu::isa_name(isa), cores));
        bool absorbed_casts = false, apart_casts = false;
        std::vector<Tensor> got = run_noting_casts(absorbed, inputs, isa, cores, absorbed_casts);
        std::vector<Tensor> want = run_noting_casts(apart, inputs, isa, cores, apart_casts);
        EXPECT_EQ(absorbed_casts, isa != cpu::Isa::amx) << "the weight's cast runs where only amx absorbs it";
        EXPECT_TRUE(apart_casts) << "the graph to compare with has no cast step";
        ASSERT_EQ(got.size(), want.size());
        for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(same_bits(got[i], want[i]));
      }
    }
  }
}

}  // namespace
}  // namespace sx::device::testing
