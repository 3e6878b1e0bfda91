// The cpu device's kernels of the forward composites (device/cpu/kernels/composite.cc)
// give the bits of the composite's decomposition run by the same device on the same
// instruction set, on every instruction set this processor runs, in f32 and bf16, over
// rows of lengths 1 to 768 whose values include large magnitudes, ties, -inf and a NaN
// row; on rows shorter than 32 (where the cpu sums in the reference's order) the
// reference device's bits too. A form of f32 read by a cast to bf16 writes that cast in
// its own step (the composite's output only where something else reads it), with the
// bits of the cast run alone. A form the kernels do not take runs
// as its decomposition, which the schedule shows.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

#include "composite_cases.h"
#include "device/cpu/cpu.h"
#include "device/cpu/isa.h"
#include "device/cpu/kernels.h"
#include "device/cpu/schedule.h"
#include "graph/passes.h"
#include "util.h"

namespace sx::device::testing {
namespace {

using graph::Attrs;
using graph::Builder;
using graph::NodeId;

Graph composite_graph(const Form& form, DType dtype, int64_t rows, int64_t length) {
  Graph graph;
  Builder b(graph);
  b.output("y", b.op(form.op, form_inputs(b, form, dtype, rows, length), form.attrs));
  return graph;
}

bool runs_a_composite_kernel(const CpuDevice& cpu, const Graph& graph) {
  const cpu::Schedule schedule = cpu.schedule(graph);
  for (const cpu::ScheduledStep& step : schedule.steps) {
    if (step.kind == cpu::StepKind::kernel && schedule.graph.node(step.id).prim->composite()) return true;
  }
  return false;
}

// Under emulation (SEXPGPU_TEST_EMULATED) the widest rows alone: each costs minutes there.
std::vector<int64_t> row_lengths() {
  if (std::getenv("SEXPGPU_TEST_EMULATED") != nullptr) return {3, 17, 100};
  return {1, 3, 16, 17, 64, 100, 768};
}

class CompositeKernel : public ::testing::TestWithParam<Form> {};

TEST_P(CompositeKernel, GivesItsDecompositionsBitsOnEveryInstructionSet) {
  const Form& form = GetParam();
  std::mt19937 random(42);
  for (DType dtype : {DType::f32, DType::bf16}) {
    for (int64_t length : row_lengths()) {
      const int64_t rows = 7;
      SCOPED_TRACE(fmt::format("{} rows of {}", graph::dtype_name(dtype), length));
      const Graph graph = composite_graph(form, dtype, rows, length);
      const Graph expanded = graph::expand_composites(graph);
      std::vector<Tensor> inputs{rows_of_values(dtype, rows, length, random)};
      for (int k = 0; k < form.row_operands; ++k) inputs.push_back(row_operand(dtype, length, random));
      const Tensor reference = run_on("reference", graph, inputs)[0];
      for (cpu::Isa isa : cpu::host_isas()) {
        SCOPED_TRACE(cpu::isa_name(isa));
        CpuDevice cpu(DeviceOptions{.cpu_cores = 2, .cpu_isa = std::string(cpu::isa_name(isa))});
        ASSERT_TRUE(runs_a_composite_kernel(cpu, graph));
        ASSERT_FALSE(runs_a_composite_kernel(cpu, expanded));
        const Tensor kernel = cpu.compile(graph)->run_host(inputs)[0];
        const Tensor decomposed = cpu.compile(expanded)->run_host(inputs)[0];
        EXPECT_EQ(compare(kernel, decomposed, true), "");
        if (length < 32) {
          EXPECT_EQ(compare(kernel, reference, true), "");
        }
      }
    }
  }
}

// The form of f32 over x, its output cast to bf16 as output "rounded"; its own output
// "y" too where `keeps_output`.
Graph rounded_composite_graph(const Form& form, int64_t rows, int64_t length, bool keeps_output) {
  Graph graph = composite_graph(form, DType::f32, rows, length);
  Builder b(graph);
  const NodeId y = graph.outputs[0].node;
  if (!keeps_output) graph.outputs.clear();
  b.output("rounded", b.cast(y, DType::bf16));
  return graph;
}

// y cast to bf16 by the reference device: the cast run alone.
Tensor cast_alone(const Tensor& y) {
  Graph graph;
  Builder b(graph);
  b.output("rounded", b.cast(b.input("y", y.shape(), DType::f32), DType::bf16));
  return run_on("reference", graph, {y})[0];
}

TEST_P(CompositeKernel, WritesTheCastToBf16ReadingItInItsStep) {
  const Form& form = GetParam();
  std::mt19937 random(11);
  const int64_t rows = 7;
  for (int64_t length : {3, 17, 768}) {
    std::vector<Tensor> inputs{rows_of_values(DType::f32, rows, length, random)};
    for (int k = 0; k < form.row_operands; ++k) inputs.push_back(row_operand(DType::f32, length, random));
    for (bool keeps_output : {true, false}) {
      SCOPED_TRACE(fmt::format("rows of {}, {}", length, keeps_output ? "y kept" : "y not an output"));
      const Graph graph = rounded_composite_graph(form, rows, length, keeps_output);
      const Graph expanded = graph::expand_composites(graph);
      for (cpu::Isa isa : cpu::host_isas()) {
        SCOPED_TRACE(cpu::isa_name(isa));
        CpuDevice cpu(DeviceOptions{.cpu_cores = 2, .cpu_isa = std::string(cpu::isa_name(isa))});
        const cpu::Schedule schedule = cpu.schedule(graph);
        ASSERT_EQ(schedule.steps.size(), 1u) << cpu::print_schedule(schedule);
        const cpu::ScheduledStep& step = schedule.steps[0];
        EXPECT_EQ(step.kind, cpu::StepKind::kernel);
        ASSERT_TRUE(step.rounded_cast.has_value());
        // The composite's own output written only where it is an output too.
        const std::vector<NodeId> written =
            keeps_output ? std::vector<NodeId>{step.id, *step.rounded_cast} : std::vector<NodeId>{*step.rounded_cast};
        EXPECT_EQ(step.outputs, written);
        const std::vector<Tensor> got = cpu.compile(graph)->run_host(inputs);
        const Tensor y = cpu.compile(composite_graph(form, DType::f32, rows, length))->run_host(inputs)[0];
        EXPECT_EQ(compare(got.back(), cast_alone(y), true), "");
        EXPECT_EQ(compare(got.back(), cpu.compile(expanded)->run_host(inputs).back(), true), "");
        if (keeps_output) {
          EXPECT_EQ(compare(got[0], y, true), "");
        }
        if (length < 32) {
          EXPECT_EQ(compare(got.back(), run_on("reference", graph, inputs).back(), true), "");
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(EveryForm, CompositeKernel, ::testing::ValuesIn(forms()),
                         [](const ::testing::TestParamInfo<Form>& p) { return p.param.label; });

// Many rows over several threads: each row is its own, whichever thread takes it.
TEST(CompositeKernels, GiveTheSameBitsOnOneThreadAndOnSeveral) {
  std::mt19937 random(7);
  const Form softmax = forms()[0];
  const Graph graph = composite_graph(softmax, DType::f32, 512, 256);
  const std::vector<Tensor> inputs{rows_of_values(DType::f32, 512, 256, random)};
  const Tensor one = run_on("cpu", graph, inputs, 1)[0], several = run_on("cpu", graph, inputs, 4)[0];
  EXPECT_TRUE(same_bits(one, several));
  EXPECT_EQ(compare(one, run_on("cpu", graph::expand_composites(graph), inputs, 1)[0], true), "");
}

// The cast alone, each thread's rows computed in its own scratch row, on several threads.
TEST(CompositeKernels, WriteTheCastAloneOnSeveralThreads) {
  std::mt19937 random(5);
  const std::vector<Tensor> inputs{rows_of_values(DType::f32, 512, 256, random)};
  for (const Form& form : {forms()[0], forms()[2], forms()[4]}) {  // softmax, gelu_tanh, rms_norm
    SCOPED_TRACE(form.label);
    const Graph graph = rounded_composite_graph(form, 512, 256, false);
    const Tensor y = run_on("cpu", composite_graph(form, DType::f32, 512, 256), inputs, 1)[0];
    EXPECT_EQ(compare(run_on("cpu", graph, inputs, 4)[0], cast_alone(y), true), "");
  }
}

// A softmax over columns, or of an f64 row, is a form without a kernel: it runs as its
// decomposition, and the schedule says so.
TEST(CompositeKernels, AFormWithoutAKernelRunsAsItsDecomposition) {
  CpuDevice cpu(DeviceOptions{.cpu_cores = 1});
  Graph graph;
  Builder b(graph);
  NodeId x = b.input("x", {4, 8}, DType::f32);
  b.output("rows", b.op("softmax", {x}));
  b.output("columns", b.op("softmax", {x}, {{"axes", std::vector<int64_t>{0}}}));
  b.output("f64", b.op("log_softmax", {b.cast(x, DType::f64)}));
  b.output("lone", b.op("softmax", {b.reshape(x, {1, 32, 1})}, {{"axes", std::vector<int64_t>{1}}}));
  EXPECT_TRUE(cpu.supports(graph::PrimId::softmax));
  const std::string text = cpu::print_composites(graph, cpu);
  EXPECT_NE(text.find("%1 softmax f32[4, 8]: kernel softmax\n"), std::string::npos) << text;
  EXPECT_NE(text.find("%2 softmax f32[4, 8]: fallback: decomposition into "), std::string::npos) << text;
  EXPECT_NE(text.find("log_softmax f64[4, 8]: fallback: decomposition into "), std::string::npos) << text;
  EXPECT_NE(text.find("softmax f32[1, 32, 1]: kernel softmax\n"), std::string::npos) << text;
  std::mt19937 random(3);
  const std::vector<Tensor> inputs{rows_of_values(DType::f32, 4, 8, random)};
  const std::vector<Tensor> got = cpu.compile(graph)->run_host(inputs);
  const std::vector<Tensor> want = cpu.compile(graph::expand_composites(graph))->run_host(inputs);
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k) EXPECT_EQ(compare(got[k], want[k], true), "") << k;
}

}  // namespace
}  // namespace sx::device::testing
