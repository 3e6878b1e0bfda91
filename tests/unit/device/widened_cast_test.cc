// A bf16 product that only a cast to f32 reads (a weight's gradient, summed in f32)
// writes the cast's output itself, each sum rounded to bf16 and widened in one pass
// (EpilogueLayout's widened): its schedule is that one step, and the arena holds no
// bf16 result. The output has the bits it has where the product is an output too, so
// that its bf16 result is written and a step of its own casts it, on every instruction
// set the host runs, on 1 and 2 threads. The shapes take each of the GEMM's paths (as
// epilogue_test's do) and a weight's gradient, A read through a transpose. The operands
// are small integers, so that many sums are ties of the rounding, both ways; x holds an
// infinity and a NaN.
#include <cmath>
#include <random>

#include "device/cpu/cpu.h"
#include "device/cpu/isa.h"
#include "device/cpu/schedule.h"
#include "util.h"

namespace sx::device::testing {
namespace {

using graph::Builder;
using graph::NodeId;

enum class OperandForm {
  shared,     // x[batch, m, k] @ broadcast(w[k, n])
  per_entry,  // x[batch, m, k] @ w[batch, k, n]
  gradient,   // transpose(x[k, m]) @ w[k, n]
};

struct WidenedCase {
  const char* name;
  int64_t batch, m, k, n;
  OperandForm form;
};

const WidenedCase kWidenedCases[] = {
    {"three rows streamed", 1, 3, 40, 128, OperandForm::shared},
    {"a few slivers in place", 2, 15, 300, 200, OperandForm::shared},
    {"one resident block, K in two, columns in three", 1, 100, 260, 600, OperandForm::shared},
    {"many blocks of rows, K in two", 3, 100, 260, 100, OperandForm::shared},
    {"more columns than a panel", 1, 280, 8, 2100, OperandForm::shared},
    {"whole rows wider than a MiB panel of amx's", 1, 40, 1100, 520, OperandForm::shared},
    {"a batch of products", 6, 50, 16, 64, OperandForm::per_entry},
    {"a weight's gradient", 1, 96, 128, 200, OperandForm::gradient},
};

Shape widened_x_shape(const WidenedCase& c) {
  return c.form == OperandForm::gradient ? Shape{c.k, c.m} : Shape{c.batch, c.m, c.k};
}

Shape widened_w_shape(const WidenedCase& c) {
  return c.form == OperandForm::per_entry ? Shape{c.batch, c.k, c.n} : Shape{c.k, c.n};
}

// The product of `c` cast to f32; with `product_too`, the product is an output as well.
Graph widened_product(const WidenedCase& c, bool product_too) {
  Graph graph;
  Builder b(graph);
  NodeId x = b.input("x", widened_x_shape(c), DType::bf16);
  NodeId w = b.input("w", widened_w_shape(c), DType::bf16);
  NodeId p = 0;
  switch (c.form) {
    case OperandForm::shared: p = b.matmul(x, b.broadcast(w, {c.batch, c.k, c.n})); break;
    case OperandForm::per_entry: p = b.matmul(x, w); break;
    case OperandForm::gradient: p = b.matmul(b.transpose(x, {1, 0}), w); break;
  }
  b.output("sums", b.cast(p, DType::f32));
  if (product_too) b.output("product", p);
  return graph;
}

// Integers in [-most, most]: x's and w's products' sums are exact, and an eighth of
// those past 1024 are ties of bf16's rounding.
Tensor small_integers_of(const Shape& shape, int most, std::mt19937& rng) {
  std::uniform_int_distribution<int> value(-most, most);
  std::vector<double> values(static_cast<size_t>(graph::numel(shape)));
  for (double& v : values) v = value(rng);
  return Tensor::from_doubles(DType::bf16, shape, values);
}

TEST(EpilogueWidened, ABf16ProductsLoneCastToF32IsWrittenInOnePass) {
  for (const WidenedCase& c : kWidenedCases) {
    SCOPED_TRACE(c.name);
    std::mt19937 rng(47);
    Tensor x = small_integers_of(widened_x_shape(c), 4, rng);
    x.set_value(0, INFINITY);
    x.set_value(x.numel() / 2, NAN);
    const std::vector<Tensor> inputs{x, small_integers_of(widened_w_shape(c), 64, rng)};
    const Graph one_pass = widened_product(c, false), apart = widened_product(c, true);
    const size_t sums_bytes = static_cast<size_t>(c.batch * c.m * c.n) * sizeof(float);
    for (cpu::Isa isa : cpu::host_isas()) {
      for (int cores : {1, 2}) {
        SCOPED_TRACE(fmt::format("{}, {} threads", cpu::isa_name(isa), cores));
        const DeviceOptions options{.cpu_cores = cores, .cpu_isa = std::string(cpu::isa_name(isa))};
        const cpu::Schedule schedule = CpuDevice(options).schedule(one_pass);
        const cpu::ScheduledStep& last = schedule.steps.back();
        EXPECT_EQ(last.kind, cpu::StepKind::product) << cpu::print_schedule(schedule);
        EXPECT_TRUE(last.widened) << cpu::print_schedule(schedule);
        EXPECT_EQ(last.outputs, std::vector<NodeId>{schedule.graph.outputs[0].node});
        EXPECT_EQ(schedule.in_arena.size, (sums_bytes + 63) / 64 * 64) << "the arena holds the f32 sums alone";
        EXPECT_EQ(schedule.in_place.size, 0u);
        for (const cpu::ScheduledStep& step : CpuDevice(options).schedule(apart).steps) EXPECT_FALSE(step.widened);
        auto device = make_device("cpu", options);
        const std::vector<Tensor> got = device->compile(one_pass)->run_host(inputs);
        const std::vector<Tensor> want = device->compile(apart)->run_host(inputs);
        EXPECT_TRUE(same_bits(got[0], want[0]));
      }
    }
  }
}

}  // namespace
}  // namespace sx::device::testing
