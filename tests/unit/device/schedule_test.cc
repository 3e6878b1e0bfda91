// The cpu device's schedule (device/cpu/schedule.h): lowering is a pure function of the
// graph (two lowerings are equal, and so are their texts); a small graph's schedule has
// its fused group, its product with an epilogue and its arena's size; a plan made of it
// reports that arena; a composite's kernel writes the cast to bf16 that reads it; and
// each composite is named with its fallback.
#include "device/cpu/schedule.h"

#include <gtest/gtest.h>

#include "device/cpu/cpu.h"
#include "util.h"

namespace sx::device::testing {
namespace {

using graph::Builder;
using graph::NodeId;

CpuDevice one_core() { return CpuDevice(DeviceOptions{.cpu_cores = 1}); }

// exp(x) * x + x over f32[4, 8]: one chain of three members, written to the output.
Graph three_member_chain() {
  Graph graph;
  Builder b(graph);
  NodeId x = b.input("x", {4, 8}, DType::f32);
  b.output("y", b.add(b.mul(b.exp(x), x), x));
  return graph;
}

TEST(Schedule, LoweringIsPure) {
  Graph graph = product_then_chain();
  Builder b(graph);
  b.output("s", b.sum(graph.inputs[0].node, {1}));
  const CpuDevice cpu = one_core();
  const cpu::Schedule first = cpu.schedule(graph), second = cpu.schedule(graph);
  EXPECT_TRUE(first.same_lowering(second));
  EXPECT_EQ(cpu::print_schedule(first), cpu::print_schedule(second));
}

TEST(Schedule, ChainIsOneFusedStep) {
  const cpu::Schedule schedule = one_core().schedule(three_member_chain());
  ASSERT_EQ(schedule.steps.size(), 1u) << cpu::print_schedule(schedule);
  const cpu::ScheduledStep& step = schedule.steps[0];
  EXPECT_EQ(step.kind, cpu::StepKind::fused);
  ASSERT_EQ(schedule.fusion.groups.size(), 1u);
  EXPECT_EQ(schedule.fusion.groups[0].members.size(), 3u);
  EXPECT_EQ(step.inputs, std::vector<NodeId>{0});  // x alone
  // In the arena, the output takes its 128 bytes; written into the caller's buffer, none.
  EXPECT_EQ(schedule.in_arena.size, 128u);
  EXPECT_EQ(schedule.in_place.size, 0u);
  ASSERT_EQ(schedule.direct_outputs.size(), 1u);
  EXPECT_EQ(schedule.direct_outputs[0].overwrites, std::vector<bool>{true});  // y may be written over x
  const std::string text = cpu::print_schedule(schedule);
  EXPECT_NE(text.find("fused 3 nodes (exp mul add)"), std::string::npos) << text;
  EXPECT_NE(text.find("into output \"y\""), std::string::npos) << text;
  EXPECT_NE(text.find("arena: 0 bytes"), std::string::npos) << text;
}

TEST(Schedule, ProductRunsItsChainAsEpilogue) {
  const cpu::Schedule schedule = one_core().schedule(product_then_chain());
  ASSERT_EQ(schedule.steps.size(), 1u) << cpu::print_schedule(schedule);
  EXPECT_EQ(schedule.steps[0].kind, cpu::StepKind::product);
  const std::string text = cpu::print_schedule(schedule);
  EXPECT_NE(text.find("product   matmul of f32[4, 8] and f32[8, 3] with fused 3 nodes (mul neg exp)"),
            std::string::npos)
      << text;
}

TEST(Schedule, PlanReportsTheScheduledArena) {
  Graph graph = three_member_chain();
  graph.outputs.push_back({"again", graph.outputs[0].node});  // two outputs of one node: computed in the arena
  CpuDevice cpu = one_core();
  const cpu::Schedule schedule = cpu.schedule(graph);
  EXPECT_TRUE(schedule.direct_outputs.empty());
  EXPECT_EQ(schedule.in_place.size, 128u);
  EXPECT_EQ(cpu.compile(graph)->memory().arena_bytes, schedule.in_place.memory.arena_bytes);
}

TEST(Schedule, CompositeKernelWritesItsCastToBf16) {
  Graph graph;
  Builder b(graph);
  NodeId softmax = b.op("softmax", {b.input("x", {4, 8}, DType::f32)});
  NodeId rounded = b.cast(softmax, DType::bf16);
  b.output("rounded", rounded);
  b.output("wide", b.cast(softmax, DType::f64));  // not to bf16: a step of its own
  const cpu::Schedule schedule = one_core().schedule(graph);
  const std::string text = cpu::print_schedule(schedule);
  ASSERT_EQ(schedule.steps.size(), 2u) << text;
  EXPECT_EQ(schedule.steps[0].rounded_cast, rounded);
  EXPECT_EQ(schedule.steps[0].outputs, (std::vector<NodeId>{softmax, rounded}));
  EXPECT_EQ(schedule.graph.node(schedule.steps[1].id).dtype, DType::f64);
  EXPECT_FALSE(schedule.steps[1].rounded_cast.has_value());
  EXPECT_NE(text.find("softmax of f32[4, 8] and its cast to bf16: %1 f32[4, 8] at 0 (128 bytes), %2 bf16[4, 8] into "
                      "output \"rounded\""),
            std::string::npos)
      << text;
}

TEST(Schedule, CompositesAreShownWithTheirKernelOrFallback) {
  Graph graph;
  Builder b(graph);
  NodeId x = b.input("x", {4, 8}, DType::f32);
  NodeId e = b.exp(x);
  b.output("y", b.op("softmax", {e}));
  b.output("z", b.op("softmax", {e}, {{"axes", std::vector<int64_t>{0}}}));
  const std::string text = cpu::print_composites(graph, one_core());
  EXPECT_EQ(text.rfind("%2 softmax f32[4, 8]: kernel softmax\n%3 softmax f32[4, 8]: fallback: decomposition into ", 0),
            0u)
      << text;
  EXPECT_NE(text.find("exp"), std::string::npos) << text;
  Graph plain = three_member_chain();
  EXPECT_EQ(cpu::print_composites(plain, one_core()), "no composites\n");
}

}  // namespace
}  // namespace sx::device::testing
