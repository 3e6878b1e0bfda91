// The cpu device's kernels of the optimizer updates (device/cpu/kernels/update.cc) give
// the bits of the update's decomposition run by the same device: adamw with and without
// weight decay, sgd plain, with weight decay and with momentum (at the run's first step
// and after), each with its gradient scaled (the clipping its step computes itself) and
// not, over values that include 0, -0, infinities, NaNs, huge and subnormal ones, on every
// instruction set this processor runs, on 1 and 2 threads, at lengths that leave part of
// a vector. Each value is written into the buffer of the part that takes it (the slice of
// the part's decomposition), over the operand it replaces where the caller passes that
// operand's buffer (a training step); an update read whole writes its stacked values,
// which the slices copy. A NaN matches any
// NaN: where both operands of an operation are NaNs, which payload the processor keeps
// follows the operand order the compiler chose (as in chains_test.cc).
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>

#include "device/cpu/cpu.h"
#include "device/cpu/isa.h"
#include "device/cpu/schedule.h"
#include "graph/passes.h"
#include "util.h"

namespace sx::device::testing {
namespace {

using graph::Builder;
using graph::NodeId;
using graph::PrimId;

struct Form {
  std::string label;
  bool adamw = true, decays = false, momentum = false, first = false, scaled = false;
  int values() const { return adamw ? 3 : (momentum ? 2 : 1); }
};

void PrintTo(const Form& form, std::ostream* out) { *out << form.label; }

std::vector<Form> forms() {
  std::vector<Form> all;
  for (bool scaled : {false, true}) {
    const std::string scale = scaled ? "_scaled" : "";
    for (bool decays : {false, true}) {
      const std::string decay = decays ? "_decay" : "";
      all.push_back({.label = "adamw" + decay + scale, .decays = decays, .scaled = scaled});
      all.push_back({.label = "sgd" + decay + scale, .adamw = false, .decays = decays, .scaled = scaled});
      for (bool first : {true, false}) {
        all.push_back({.label = std::string("sgd_momentum") + (first ? "_first" : "") + decay + scale,
                       .adamw = false,
                       .decays = decays,
                       .momentum = true,
                       .first = first,
                       .scaled = scaled});
      }
    }
  }
  return all;
}

// n floats, a few of them at the edges: zeros of both signs, infinities, NaNs of two
// payloads and both signs, the largest and subnormal magnitudes.
Tensor values_with_edges(int64_t n, std::mt19937& random) {
  const float edges[] = {0.0f,
                         -0.0f,
                         std::numeric_limits<float>::infinity(),
                         -std::numeric_limits<float>::infinity(),
                         std::bit_cast<float>(0x7fc00000u),
                         std::bit_cast<float>(0xffc12345u),
                         3e38f,
                         -3.4e38f,
                         1e-40f,
                         -1e-45f,
                         std::numeric_limits<float>::min()};
  std::normal_distribution<float> normal(0.0f, 1.5f);
  std::uniform_int_distribution<size_t> edge(0, std::size(edges) - 1);
  Tensor t(DType::f32, {n});
  auto* data = reinterpret_cast<float*>(t.bytes().data());
  for (int64_t i = 0; i < n; ++i) data[i] = random() % 7 == 0 ? edges[edge(random)] : normal(random);
  return t;
}

// Empty when every element of `got` has the bits of `want`'s, or both are NaN; else where not.
std::string differences(const Tensor& got, const Tensor& want) {
  if (got.dtype() != DType::f32 || got.shape() != want.shape()) return compare(got, want, true);
  const auto* a = reinterpret_cast<const float*>(got.bytes().data());
  const auto* e = reinterpret_cast<const float*>(want.bytes().data());
  for (int64_t i = 0; i < got.numel(); ++i) {
    if (std::bit_cast<uint32_t>(a[i]) != std::bit_cast<uint32_t>(e[i]) && !(std::isnan(a[i]) && std::isnan(e[i]))) {
      return fmt::format("element {}: got {:08x}, want {:08x}", i, std::bit_cast<uint32_t>(a[i]),
                         std::bit_cast<uint32_t>(e[i]));
    }
  }
  return "";
}

Tensor f32_scalar(double value) { return Tensor::scalar(DType::f32, value); }

// The update of one parameter of n elements, its operands the graph's inputs, its values
// the outputs (taken by parts where it has several; also the update itself where `whole`).
struct UpdateCase {
  Graph graph;
  std::vector<Tensor> inputs;
};

UpdateCase update_case(const Form& form, int64_t n, bool whole, std::mt19937& random) {
  UpdateCase c;
  Builder b(c.graph);
  auto tensor = [&](const std::string& name) {
    c.inputs.push_back(values_with_edges(n, random));
    return b.input(name, {n}, DType::f32);
  };
  auto scalar = [&](const std::string& name, double value) {
    c.inputs.push_back(f32_scalar(value));
    return b.input(name, {}, DType::f32);
  };
  const NodeId p = tensor("p");
  NodeId g = tensor("g");
  if (form.scaled) g = b.mul(g, scalar("clip", 0.37));
  std::vector<NodeId> args{p, g};
  graph::Attrs attrs{{"weight_decay", int64_t{form.decays}}};
  if (form.adamw) {
    args.push_back(tensor("m"));
    args.push_back(tensor("v"));
    for (double s : {0.9, 0.1, 0.999, 0.001, 0.3, 1e-8, -3e-3})
      args.push_back(scalar(fmt::format("s{}", args.size()), s));
    if (form.decays) args.push_back(scalar("decay", 0.99997));
  } else {
    args.push_back(scalar("neg_step", -0.1));
    if (form.decays) args.push_back(scalar("weight_decay", 0.01));
    if (form.momentum) {
      args.push_back(tensor("buffer"));
      args.push_back(scalar("momentum", 0.9));
      c.inputs.push_back(Tensor::scalar(DType::boolean, form.first ? 1 : 0));
      args.push_back(b.input("first", {}, DType::boolean));
    }
    attrs.set("momentum", int64_t{form.momentum});
  }
  const NodeId update = b.op(form.adamw ? "adamw" : "sgd", args, attrs);
  if (form.values() == 1) b.output("0", update);
  for (int v = 0; v < form.values() && form.values() > 1; ++v) {
    b.output(std::to_string(v), b.op("part", {update}, {{"index", int64_t{v}}}));
  }
  if (whole) b.output("whole", update);
  return c;
}

// The steps of the schedule that do work (not views).
size_t working_steps(const cpu::Schedule& schedule) {
  return static_cast<size_t>(
      std::count_if(schedule.steps.begin(), schedule.steps.end(),
                    [](const cpu::ScheduledStep& step) { return step.kind != cpu::StepKind::view; }));
}

// The schedule's step of the update, which must be one.
const cpu::ScheduledStep* update_step(const cpu::Schedule& schedule) {
  for (const cpu::ScheduledStep& step : schedule.steps) {
    const PrimId op = schedule.graph.node(step.id).op();
    if (step.kind == cpu::StepKind::kernel && (op == PrimId::adamw || op == PrimId::sgd)) return &step;
  }
  return nullptr;
}

// Under emulation (SEXPGPU_TEST_EMULATED) short lengths alone.
std::vector<int64_t> lengths() {
  if (std::getenv("SEXPGPU_TEST_EMULATED") != nullptr) return {5, 37};
  // 20011 and 40009: two threads; 40009: adamw fetches ahead.
  return {1, 5, 37, 1003, 20011, 40009};
}

class UpdateKernel : public ::testing::TestWithParam<Form> {};

TEST_P(UpdateKernel, GivesItsDecompositionsBitsOnEveryInstructionSetAndThreadCount) {
  const Form& form = GetParam();
  std::mt19937 random(17);
  for (int64_t n : lengths()) {
    SCOPED_TRACE(fmt::format("{} elements", n));
    const UpdateCase c = update_case(form, n, false, random);
    const Graph expanded = graph::expand_composites(c.graph);
    for (cpu::Isa isa : cpu::host_isas()) {
      SCOPED_TRACE(cpu::isa_name(isa));
      CpuDevice one(DeviceOptions{.cpu_cores = 1, .cpu_isa = std::string(cpu::isa_name(isa))});
      const std::vector<Tensor> want = one.compile(expanded)->run_host(c.inputs);
      ASSERT_EQ(update_step(one.schedule(expanded)), nullptr);
      for (int cores : {1, 2}) {
        SCOPED_TRACE(fmt::format("{} cores", cores));
        CpuDevice cpu(DeviceOptions{.cpu_cores = cores, .cpu_isa = std::string(cpu::isa_name(isa))});
        const cpu::Schedule schedule = cpu.schedule(c.graph);
        const cpu::ScheduledStep* step = update_step(schedule);
        ASSERT_NE(step, nullptr) << cpu::print_schedule(schedule);
        // One step, writing every value into its output; the scaling computed in it.
        EXPECT_EQ(working_steps(schedule), 1u) << cpu::print_schedule(schedule);
        EXPECT_EQ(step->outputs.size(), static_cast<size_t>(form.values()));
        EXPECT_EQ(schedule.absorbed_scale[step->id], form.scaled ? 2u : 0u);
        EXPECT_EQ(schedule.direct_outputs.size(), static_cast<size_t>(form.values()));
        const std::vector<Tensor> got = cpu.compile(c.graph)->run_host(c.inputs);
        ASSERT_EQ(got.size(), want.size());
        for (size_t k = 0; k < got.size(); ++k) EXPECT_EQ(differences(got[k], want[k]), "") << "value " << k;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(EveryForm, UpdateKernel, ::testing::ValuesIn(forms()),
                         [](const ::testing::TestParamInfo<Form>& p) { return p.param.label; });

// A training step passes each parameter's and state's buffer as the output that replaces
// it: the step writes each value over the operand it is computed from.
TEST(UpdateKernels, WriteEachValueOverTheBufferOfItsOperand) {
  std::mt19937 random(3);
  // adamw with decay, sgd with momentum after the first step, their gradients scaled
  for (const Form& form : {forms()[12], forms()[15]}) {
    SCOPED_TRACE(form.label);
    const UpdateCase c = update_case(form, 1003, false, random);
    CpuDevice cpu(DeviceOptions{.cpu_cores = 2});
    const cpu::Schedule schedule = cpu.schedule(c.graph);
    // Value v replaces input `replaced[v]`: the parameter, then the state.
    std::vector<size_t> replaced;
    for (const char* name : {"p", "m", "v", "buffer"}) {
      for (size_t i = 0; i < c.graph.inputs.size(); ++i) {
        if (c.graph.inputs[i].name == name) replaced.push_back(i);
      }
    }
    ASSERT_EQ(replaced.size(), static_cast<size_t>(form.values()));
    for (size_t v = 0; v < replaced.size(); ++v) {
      EXPECT_TRUE(schedule.direct_outputs[static_cast<size_t>(schedule.direct_of[v])].overwrites[replaced[v]]) << v;
    }
    const std::vector<Tensor> want = cpu.compile(c.graph)->run_host(c.inputs);
    std::vector<Buffer> buffers;
    for (const Tensor& input : c.inputs) buffers.push_back(cpu.upload(input));
    std::vector<const Buffer*> in;
    for (const Buffer& buffer : buffers) in.push_back(&buffer);
    std::vector<Buffer*> out;
    for (size_t r : replaced) out.push_back(&buffers[r]);
    cpu.compile(c.graph)->run(in, out);
    for (size_t v = 0; v < replaced.size(); ++v)
      EXPECT_TRUE(same_bits(cpu.download(buffers[replaced[v]]), want[v])) << v;
  }
}

// Read whole (the stacked values an output), the update writes the stacked values and
// each part's slice copies its value out of them.
TEST(UpdateKernels, ReadWholeWriteTheStackedValuesThatTheirPartsCopy) {
  std::mt19937 random(5);
  for (const Form& form : {forms()[4], forms()[6]}) {  // adamw with decay, sgd with momentum at the first step
    SCOPED_TRACE(form.label);
    const UpdateCase c = update_case(form, 37, true, random);
    CpuDevice cpu(DeviceOptions{.cpu_cores = 1});
    const cpu::Schedule schedule = cpu.schedule(c.graph);
    const cpu::ScheduledStep* step = update_step(schedule);
    ASSERT_NE(step, nullptr);
    EXPECT_EQ(step->outputs, std::vector<NodeId>{step->id});
    EXPECT_EQ(working_steps(schedule), static_cast<size_t>(1 + form.values())) << cpu::print_schedule(schedule);
    const std::vector<Tensor> got = cpu.compile(c.graph)->run_host(c.inputs);
    const std::vector<Tensor> want = cpu.compile(graph::expand_composites(c.graph))->run_host(c.inputs);
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < got.size(); ++k) EXPECT_EQ(differences(got[k], want[k]), "") << k;
  }
}

// The schedule names the kernel, and the scaling its step computes.
TEST(UpdateKernels, TheScheduleShowsTheKernelAndItsScaling) {
  std::mt19937 random(9);
  const UpdateCase c = update_case(forms()[12], 8, false, random);  // adamw with decay, its gradient scaled
  CpuDevice cpu(DeviceOptions{.cpu_cores = 1});
  const std::string composites = cpu::print_composites(c.graph, cpu);
  EXPECT_NE(composites.find("adamw f32[3, 8]: kernel adamw\n"), std::string::npos) << composites;
  EXPECT_NE(composites.find("part f32[8]: written by the kernel of %"), std::string::npos) << composites;
  const std::string text = cpu::print_schedule(cpu.schedule(c.graph));
  EXPECT_NE(text.find("kernel    adamw of f32[8] and f32[8] and"), std::string::npos) << text;
  EXPECT_NE(text.find(", its gradient scaled by its last operand: "), std::string::npos) << text;
  EXPECT_NE(text.find("f32[1, 8] into output \"2\""), std::string::npos) << text;
}

}  // namespace
}  // namespace sx::device::testing
