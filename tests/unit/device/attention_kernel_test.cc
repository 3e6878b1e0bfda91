// The cpu device's kernel of the attention composite (device/cpu/kernels/attention.cc)
// gives the bits the plan gives for its decomposition, on every instruction set this
// processor runs, in f32 and bf16, plain, causal and masked, with a NaN and infinities
// among the values (an infinity of v times the zero weight of a key the causal form
// hides is a NaN), over sequences of 1 to 130 (odd lengths, and queries split into
// chunks with a shorter last one), head dims of 1 to 96, with and without batch axes; the
// same bits on one thread and on two; q, k and v read where the packed projection holds
// them, as the products of the decomposition read them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <random>

#include "attention_cases.h"
#include "device/cpu/cpu.h"
#include "device/cpu/isa.h"
#include "device/cpu/schedule.h"
#include "graph/passes.h"
#include "util.h"

namespace sx::device::testing {
namespace {

using graph::Builder;
using graph::NodeId;

// How many steps of the schedule are attention's kernel, and how many in all.
std::pair<int, size_t> attention_kernels(const CpuDevice& cpu, const Graph& graph) {
  const cpu::Schedule schedule = cpu.schedule(graph);
  int kernels = 0;
  for (const cpu::ScheduledStep& step : schedule.steps) {
    kernels += step.kind == cpu::StepKind::kernel && schedule.graph.node(step.id).op() == graph::PrimId::attention;
  }
  return {kernels, schedule.steps.size()};
}

// Under emulation (SEXPGPU_TEST_EMULATED) the cases of fewer than 64 queries alone: each
// costs long there.
std::vector<AttentionCase> cases() {
  std::vector<AttentionCase> all = attention_cases();
  if (std::getenv("SEXPGPU_TEST_EMULATED") != nullptr)
    std::erase_if(all, [](const AttentionCase& c) { return c.queries >= 64; });
  return all;
}

TEST(AttentionCompositeKernel, GivesItsDecompositionsBitsOnEveryInstructionSet) {
  std::mt19937 random(42);
  for (const AttentionCase& c : cases()) {
    for (DType dtype : {DType::f32, DType::bf16}) {
      SCOPED_TRACE(describe(c, dtype));
      const Graph graph = attention_graph(c, dtype);
      const Graph expanded = graph::expand_composites(graph);
      const std::vector<Tensor> inputs = attention_inputs(c, dtype, random);
      for (cpu::Isa isa : cpu::host_isas()) {
        SCOPED_TRACE(cpu::isa_name(isa));
        CpuDevice cpu(DeviceOptions{.cpu_cores = 2, .cpu_isa = std::string(cpu::isa_name(isa))});
        EXPECT_EQ(attention_kernels(cpu, graph), std::make_pair(1, size_t{1}));
        ASSERT_EQ(attention_kernels(cpu, expanded).first, 0);
        const Tensor kernel = cpu.compile(graph)->run_host(inputs)[0];
        EXPECT_EQ(compare(kernel, cpu.compile(expanded)->run_host(inputs)[0], true), "");
      }
    }
  }
}

// Enough work for two threads: each takes whole chunks of queries, so the bits stay.
TEST(AttentionCompositeKernel, GivesTheSameBitsOnOneThreadAndOnTwo) {
  std::mt19937 random(7);
  const AttentionCase c{{2, 3}, 130, 130, 48, 48, true, {}};
  for (DType dtype : {DType::f32, DType::bf16}) {
    SCOPED_TRACE(graph::dtype_name(dtype));
    const Graph graph = attention_graph(c, dtype);
    const std::vector<Tensor> inputs = attention_inputs(c, dtype, random);
    const Tensor one = run_on("cpu", graph, inputs, 1)[0];
    EXPECT_EQ(compare(one, run_on("cpu", graph, inputs, 2)[0], true), "");
    EXPECT_EQ(compare(one, run_on("cpu", graph::expand_composites(graph), inputs, 2)[0], true), "");
  }
}

// nn.sx's heads: q, k and v cut from one packed projection [batch seq 3*dim] by a slice,
// a reshape to [batch seq heads head-dim] and a transpose to [batch heads seq head-dim].
// The kernel reads them where the projection holds them: one step, no copies.
TEST(AttentionCompositeKernel, ReadsTheHeadsWhereThePackedProjectionHoldsThem) {
  const int64_t batch = 2, seq = 9, heads = 3, head_dim = 4, dim = heads * head_dim;
  std::mt19937 random(3);
  for (DType dtype : {DType::f32, DType::bf16}) {
    SCOPED_TRACE(graph::dtype_name(dtype));
    Graph graph;
    Builder b(graph);
    const NodeId packed = b.input("packed", {batch, seq, 3 * dim}, dtype);
    std::vector<NodeId> parts;
    for (int64_t i = 0; i < 3; ++i) {
      const NodeId slice = b.slice(packed, {0, 0, i * dim}, {batch, seq, (i + 1) * dim});
      parts.push_back(b.transpose(b.reshape(slice, {batch, seq, heads, head_dim}), {0, 2, 1, 3}));
    }
    b.output("y", b.op("attention", parts, {{"causal", int64_t{1}}}));
    const std::vector<Tensor> inputs{normal_tensor(dtype, {batch, seq, 3 * dim}, random)};
    CpuDevice cpu(DeviceOptions{.cpu_cores = 1});
    EXPECT_EQ(attention_kernels(cpu, graph), std::make_pair(1, size_t{1}));
    EXPECT_EQ(compare(cpu.compile(graph)->run_host(inputs)[0],
                      cpu.compile(graph::expand_composites(graph))->run_host(inputs)[0], true),
              "");
  }
}

// Forms the kernel does not take run as the decomposition: q, k and v of different
// dtypes, batch axes that broadcast, a mask of another dtype than bool.
TEST(AttentionCompositeKernel, AFormWithoutTheKernelRunsAsItsDecomposition) {
  CpuDevice cpu(DeviceOptions{.cpu_cores = 1});
  Graph graph;
  Builder b(graph);
  const NodeId q = b.input("q", {2, 4, 8}, DType::f32), k = b.input("k", {2, 5, 8}, DType::f32);
  const NodeId v = b.input("v", {2, 5, 3}, DType::f32);
  b.output("f64", b.op("attention", {b.cast(q, DType::f64), b.cast(k, DType::f64), b.cast(v, DType::f64)},
                       {{"causal", int64_t{0}}}));
  b.output("shared", b.op("attention", {q, b.input("k1", {1, 5, 8}, DType::f32), b.input("v1", {1, 5, 3}, DType::f32)},
                          {{"causal", int64_t{0}}}));
  b.output("kernel", b.op("attention", {q, k, v}, {{"causal", int64_t{1}}}));
  const std::string text = cpu::print_composites(graph, cpu);
  EXPECT_NE(text.find("attention f64[2, 4, 3]: fallback: decomposition into "), std::string::npos) << text;
  EXPECT_NE(text.find("attention f32[2, 4, 3]: fallback: decomposition into "), std::string::npos) << text;
  EXPECT_NE(text.find("attention f32[2, 4, 3]: kernel attention\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace sx::device::testing
