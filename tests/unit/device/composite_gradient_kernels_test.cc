// The cpu device's kernels of the composites' gradients with respect to x
// (device/cpu/kernels/composite_gradient.cc) give the bits that the same device gives,
// on the same instruction set, for the gradient graph::gradients builds through the
// composite's decomposition: on every instruction set this processor runs, in f32 and
// bf16, over rows of lengths 1 to 800 (odd ones, and ones a vector's width does not
// divide) whose x includes large magnitudes, ties, -inf and NaN and whose cotangent
// includes large magnitudes, zeros and NaN (a NaN for a NaN: compare_bits); on one
// thread and on several.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <random>

#include "composite_cases.h"
#include "device/cpu/cpu.h"
#include "device/cpu/isa.h"
#include "device/cpu/kernels.h"
#include "device/cpu/products/gemm.h"
#include "graph/autodiff.h"
#include "util.h"

namespace sx::device::testing {
namespace {

using graph::Builder;
using graph::NodeId;

// Outputs "dx", the gradient of sum(form(x) * g) with respect to x: the cotangent that
// reaches form(x) is 1 * g, which is g's bits.
Graph gradient_graph(const Form& form, DType dtype, int64_t rows, int64_t length) {
  Graph graph;
  Builder b(graph);
  const std::vector<NodeId> args = form_inputs(b, form, dtype, rows, length);
  const NodeId x = args[0];
  const NodeId g = b.input("g", {rows, length}, dtype);
  const NodeId loss = b.sum(b.mul(b.op(form.op, args, form.attrs), g), {});
  const std::vector<NodeId> wrt{x};
  b.output("dx", graph::gradients(b, loss, wrt)[0]);
  return graph;
}

// The kernel's gradient with respect to x, on `isa` and `cores` threads, of `inputs`:
// x, the form's row operands, the cotangent.
Tensor kernel_gradient(const Form& form, cpu::Isa isa, int cores, const std::vector<Tensor>& inputs) {
  Graph graph;
  Builder b(graph);
  std::vector<NodeId> ids;
  for (size_t k = 0; k < inputs.size(); ++k) {
    ids.push_back(b.input(fmt::format("in{}", k), inputs[k].shape(), inputs[k].dtype()));
  }
  const std::vector<NodeId> args(ids.begin(), ids.end() - 1);
  const graph::Node forward = graph.node(b.op(form.op, args, form.attrs));
  EXPECT_TRUE(cpu::runs_composite_gradient(graph, forward.op(), forward.attrs, ids));
  const cpu::StepContext context{.graph = graph, .cores = cores, .kernels = cpu::kernels_for(isa)};
  const cpu::Step step = cpu::make_composite_gradient_step(context, forward.op(), forward.attrs, graph.node(ids[0]));
  Tensor dx(inputs[0].dtype(), inputs[0].shape());
  std::vector<const uint8_t*> in;
  for (const Tensor& input : inputs) in.push_back(input.bytes().data());
  step(in.data(), dx.bytes().data());
  return dx;
}

// Empty when each element has the bits it should, a NaN being any NaN: where two NaNs
// meet in one operation, whose sign and payload the result takes is the compiler's
// choice (it orders a commutative operation's operands as it likes), in the plan's loops
// as in the kernels.
std::string compare_bits(const Tensor& actual, const Tensor& expected) {
  const std::string differ = compare(actual, expected, true);
  if (differ.find("NaN payload") == std::string::npos) return differ;
  for (int64_t i = 0; i < actual.numel(); ++i) {
    const double a = actual.value(i), e = expected.value(i);
    if (!(std::isnan(a) && std::isnan(e)) && std::signbit(a) != std::signbit(e)) {
      return fmt::format("element {}: got {}, want {} (bits)", i, a, e);
    }
  }
  return "";
}

// Under emulation (SEXPGPU_TEST_EMULATED) a few lengths alone: each costs long there.
std::vector<int64_t> gradient_row_lengths() {
  if (std::getenv("SEXPGPU_TEST_EMULATED") != nullptr) return {3, 17, 100};
  return {1, 2, 3, 7, 8, 15, 16, 17, 31, 32, 33, 47, 64, 100, 255, 256, 257, 800};
}

class CompositeGradientKernel : public ::testing::TestWithParam<Form> {};

TEST_P(CompositeGradientKernel, GivesItsGradientGraphsBitsOnEveryInstructionSet) {
  const Form& form = GetParam();
  std::mt19937 random(42);
  const int64_t rows = 12;  // every pairing of x's six kinds of row and g's four
  for (DType dtype : {DType::f32, DType::bf16}) {
    for (int64_t length : gradient_row_lengths()) {
      SCOPED_TRACE(fmt::format("{} rows of {}", graph::dtype_name(dtype), length));
      const Graph graph = gradient_graph(form, dtype, rows, length);
      const std::vector<Tensor> inputs = gradient_inputs(form, dtype, rows, length, random);
      for (cpu::Isa isa : cpu::host_isas()) {
        SCOPED_TRACE(cpu::isa_name(isa));
        CpuDevice cpu(DeviceOptions{.cpu_cores = 1, .cpu_isa = std::string(cpu::isa_name(isa))});
        const Tensor expanded = cpu.compile(graph)->run_host(inputs)[0];
        EXPECT_EQ(compare_bits(kernel_gradient(form, isa, 1, inputs), expanded), "");
      }
    }
  }
}

// Many rows over several threads: each row (gelu's: each block) is its own, whichever
// thread takes it.
TEST_P(CompositeGradientKernel, GivesTheSameBitsOnOneThreadAndOnSeveral) {
  const Form& form = GetParam();
  std::mt19937 random(7);
  const cpu::Isa isa = cpu::choose_isa("");
  const std::vector<Tensor> inputs = gradient_inputs(form, DType::f32, 64, 256, random);
  const Tensor one = kernel_gradient(form, isa, 1, inputs);
  EXPECT_TRUE(same_bits(one, kernel_gradient(form, isa, 4, inputs)));
  const Graph graph = gradient_graph(form, DType::f32, 64, 256);
  CpuDevice cpu(DeviceOptions{.cpu_cores = 4, .cpu_isa = std::string(cpu::isa_name(isa))});
  EXPECT_EQ(compare_bits(one, cpu.compile(graph)->run_host(inputs)[0]), "");
}

INSTANTIATE_TEST_SUITE_P(EveryForm, CompositeGradientKernel, ::testing::ValuesIn(forms()),
                         [](const ::testing::TestParamInfo<Form>& p) { return p.param.label; });

// The forms the kernels do not take: a softmax over columns, an f64 x, a cotangent of
// another dtype or shape, a gelu of no known form, a norm's weight of another length, an
// operand too many, another composite.
TEST(CompositeGradientKernels, RefuseTheFormsTheyDoNotTake) {
  Graph graph;
  Builder b(graph);
  const NodeId x = b.input("x", {4, 8}, DType::f32), g = b.input("g", {4, 8}, DType::f32);
  const NodeId x64 = b.input("x64", {4, 8}, DType::f64), g_bf16 = b.input("g_bf16", {4, 8}, DType::bf16);
  const NodeId g_row = b.input("g_row", {8}, DType::f32);
  const NodeId w = b.input("w", {8}, DType::f32), w_short = b.input("w_short", {4}, DType::f32);
  const graph::Attrs rows{{"axes", std::vector<int64_t>{1}}}, columns{{"axes", std::vector<int64_t>{0}}};
  const graph::Attrs tanh{{"form", std::string("tanh")}}, other{{"form", std::string("exact")}};
  const graph::Attrs weighted{{"eps", 1e-5}, {"weight", int64_t{1}}, {"bias", int64_t{0}}};
  using graph::PrimId;
  const auto runs = [&](PrimId forward, const graph::Attrs& attrs, std::vector<NodeId> inputs) {
    return cpu::runs_composite_gradient(graph, forward, attrs, inputs);
  };
  EXPECT_TRUE(runs(PrimId::softmax, rows, {x, g}));
  EXPECT_TRUE(runs(PrimId::log_softmax, rows, {x, g}));
  EXPECT_TRUE(runs(PrimId::gelu, tanh, {x, g}));
  EXPECT_TRUE(runs(PrimId::layer_norm, weighted, {x, w, g}));
  EXPECT_FALSE(runs(PrimId::softmax, columns, {x, g}));
  EXPECT_FALSE(runs(PrimId::softmax, rows, {x64, x64}));
  EXPECT_FALSE(runs(PrimId::softmax, rows, {x, g_bf16}));
  EXPECT_FALSE(runs(PrimId::gelu, tanh, {x, g_row}));
  EXPECT_FALSE(runs(PrimId::gelu, other, {x, g}));
  EXPECT_FALSE(runs(PrimId::layer_norm, weighted, {x, w_short, g}));
  EXPECT_FALSE(runs(PrimId::layer_norm, weighted, {x, w, w, g}));
  EXPECT_FALSE(runs(PrimId::attention, rows, {x, g}));
}

}  // namespace
}  // namespace sx::device::testing
