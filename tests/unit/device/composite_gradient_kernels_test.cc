// The cpu device's kernels of the composites' gradients with respect to x
// (device/cpu/kernels/composite_gradient.cc) and to a norm's weight and bias
// (norm_parameter_gradient.cc) give the bits that the same device gives, on the same
// instruction set, for the gradient graph::gradients builds through the composite's
// decomposition, expanded: on every instruction set this processor runs, in f32 and
// bf16, over rows of lengths 1 to 800 (odd ones, and ones a vector's width does not
// divide; a weight's gradient over 1 to 300 rows) whose x includes large magnitudes,
// ties, -0, -inf and NaN and whose cotangent includes large magnitudes, zeros and NaN (a
// NaN for a NaN: compare_bits); on one thread and on several.
#include <gtest/gtest.h>

#include <algorithm>
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
#include "graph/passes.h"
#include "util.h"

namespace sx::device::testing {
namespace {

using graph::Builder;
using graph::NodeId;

// Outputs "d", the gradient of sum(form(x) * g) with respect to the form's input `input`
// (x, or a norm's weight or bias), every composite expanded (the plan would run the
// gradient's composite_gradient node by the kernel under test): the cotangent that
// reaches form(x) is 1 * g, which is g's bits.
Graph gradient_graph(const Form& form, DType dtype, int64_t rows, int64_t length, size_t input = 0) {
  Graph graph;
  Builder b(graph);
  const std::vector<NodeId> args = form_inputs(b, form, dtype, rows, length);
  const NodeId g = b.input("g", {rows, length}, dtype);
  const NodeId loss = b.sum(b.mul(b.op(form.op, args, form.attrs), g), {});
  const std::vector<NodeId> wrt{args[input]};
  b.output("d", graph::gradients(b, loss, wrt)[0]);
  return graph::expand_composites(graph);
}

// The kernel's gradient with respect to the form's input `input`, on `isa` and `cores`
// threads, of `inputs`: x, the form's row operands, the cotangent.
Tensor kernel_gradient(const Form& form, cpu::Isa isa, int cores, const std::vector<Tensor>& inputs, size_t input = 0) {
  Graph graph;
  Builder b(graph);
  std::vector<NodeId> ids;
  for (size_t k = 0; k < inputs.size(); ++k) {
    ids.push_back(b.input(fmt::format("in{}", k), inputs[k].shape(), inputs[k].dtype()));
  }
  const std::vector<NodeId> args(ids.begin(), ids.end() - 1);
  const graph::Node forward = graph.node(b.op(form.op, args, form.attrs));
  EXPECT_TRUE(cpu::runs_composite_gradient(graph, forward.op(), forward.attrs, input, ids));
  const cpu::StepContext context{.graph = graph, .cores = cores, .kernels = cpu::kernels_for(isa)};
  const cpu::Step step = cpu::make_composite_gradient_step(context, forward.op(), forward.attrs, input, ids);
  Tensor gradient(inputs[input].dtype(), inputs[input].shape());
  std::vector<const uint8_t*> in;
  for (const Tensor& tensor : inputs) in.push_back(tensor.bytes().data());
  step(in.data(), gradient.bytes().data());
  return gradient;
}

// Under emulation (SEXPGPU_TEST_EMULATED) a few lengths alone: each costs long there.
std::vector<int64_t> gradient_row_lengths() {
  if (std::getenv("SEXPGPU_TEST_EMULATED") != nullptr) return {3, 17, 100};
  return {1, 2, 3, 7, 8, 15, 16, 17, 31, 32, 33, 47, 64, 100, 255, 256, 257, 800};
}

// The forms with a weight or a bias.
std::vector<Form> norm_parameter_forms() {
  std::vector<Form> with;
  for (const Form& form : forms()) {
    if (form.row_operands > 0) with.push_back(form);
  }
  return with;
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
// operand too many, an input the composite does not have, another composite.
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
  const auto runs = [&](PrimId forward, const graph::Attrs& attrs, std::vector<NodeId> inputs, size_t input = 0) {
    return cpu::runs_composite_gradient(graph, forward, attrs, input, inputs);
  };
  EXPECT_TRUE(runs(PrimId::softmax, rows, {x, g}));
  EXPECT_TRUE(runs(PrimId::log_softmax, rows, {x, g}));
  EXPECT_TRUE(runs(PrimId::gelu, tanh, {x, g}));
  EXPECT_TRUE(runs(PrimId::layer_norm, weighted, {x, w, g}));
  EXPECT_TRUE(runs(PrimId::layer_norm, weighted, {x, w, g}, 1));
  EXPECT_FALSE(runs(PrimId::layer_norm, weighted, {x, w, g}, 2));  // no bias: no input 2
  EXPECT_FALSE(runs(PrimId::gelu, tanh, {x, g}, 1));
  EXPECT_FALSE(runs(PrimId::softmax, columns, {x, g}));
  EXPECT_FALSE(runs(PrimId::softmax, rows, {x64, x64}));
  EXPECT_FALSE(runs(PrimId::softmax, rows, {x, g_bf16}));
  EXPECT_FALSE(runs(PrimId::gelu, tanh, {x, g_row}));
  EXPECT_FALSE(runs(PrimId::gelu, other, {x, g}));
  EXPECT_FALSE(runs(PrimId::layer_norm, weighted, {x, w_short, g}));
  EXPECT_FALSE(runs(PrimId::layer_norm, weighted, {x, w, w, g}));
  EXPECT_FALSE(runs(PrimId::attention, rows, {x, g}));
}

// A norm's weight and bias: the gradient of each is a sum over the rows.
class NormParameterCompositeGradientKernel : public ::testing::TestWithParam<Form> {};

// Rows of x for sums over the rows: -0 (the first: -0 terms, whose sum from 0 is +0),
// ties (d = 0), large magnitudes (whose squares overflow), normal values; a NaN or an
// infinity in x makes its row's terms NaN, and so every column's sum
// (GivesNaNColumnsOfANaNRow).
Tensor finite_rows(DType dtype, int64_t rows, int64_t length, std::mt19937& random) {
  return normal_rows(dtype, rows, length, random, 2.0, [](double* row, int64_t r, int64_t n) {
    switch (r % 5) {
      case 0: std::fill(row, row + n, -0.0); break;
      case 1: std::fill(row, row + n, 1.25); break;
      case 2:
        for (int64_t i = 0; i < n; ++i) row[i] *= 1e18;
        row[0] = 3e38;
        break;
      default: break;
    }
  });
}

std::vector<Tensor> parameter_gradient_inputs(const Form& form, DType dtype, int64_t rows, int64_t length,
                                              std::mt19937& random) {
  std::vector<Tensor> inputs{finite_rows(dtype, rows, length, random)};
  for (int k = 0; k < form.row_operands; ++k) inputs.push_back(row_operand(dtype, length, random));
  // Cotangents of several magnitudes (so that the order of a sum shows) and zeros; a NaN
  // would make its column's sum NaN, whatever the order (GivesNaNColumnsOfANaNRow).
  inputs.push_back(normal_rows(dtype, rows, length, random, 1.0, [](double* row, int64_t r, int64_t n) {
    if (r % 3 == 1) std::fill(row, row + n / 2, 0.0);
    if (r % 3 == 2) std::transform(row, row + n, row, [](double v) { return v * 1e3; });
  }));
  return inputs;
}

// Rows by row lengths: one row (a sum of one term) and one column (row_sum's order); odd
// ones, ones a vector's width does not divide, and more columns than a thread's block.
std::vector<std::pair<int64_t, int64_t>> parameter_shapes() {
  if (std::getenv("SEXPGPU_TEST_EMULATED") != nullptr) return {{1, 17}, {33, 1}, {7, 100}};
  return {{1, 1}, {1, 17}, {2, 3}, {33, 1}, {300, 1}, {5, 16}, {7, 800}, {12, 33}, {64, 257}, {300, 100}, {3, 2100}};
}

TEST_P(NormParameterCompositeGradientKernel, GivesItsGradientGraphsBitsOnEveryInstructionSet) {
  const Form& form = GetParam();
  std::mt19937 random(3);
  for (DType dtype : {DType::f32, DType::bf16}) {
    for (auto [rows, length] : parameter_shapes()) {
      const std::vector<Tensor> inputs = parameter_gradient_inputs(form, dtype, rows, length, random);
      for (size_t input = 1; input <= static_cast<size_t>(form.row_operands); ++input) {
        SCOPED_TRACE(fmt::format("{} {} rows of {}, input {}", graph::dtype_name(dtype), rows, length, input));
        const Graph graph = gradient_graph(form, dtype, rows, length, input);
        for (cpu::Isa isa : cpu::host_isas()) {
          SCOPED_TRACE(cpu::isa_name(isa));
          CpuDevice cpu(DeviceOptions{.cpu_cores = 1, .cpu_isa = std::string(cpu::isa_name(isa))});
          const Tensor expanded = cpu.compile(graph)->run_host(inputs)[0];
          EXPECT_EQ(compare_bits(kernel_gradient(form, isa, 1, inputs, input), expanded), "");
        }
      }
    }
  }
}

// Each column is summed over the rows in order, whichever thread takes it; each row's
// statistics are its own.
TEST_P(NormParameterCompositeGradientKernel, GivesTheSameBitsOnOneThreadAndOnSeveral) {
  const Form& form = GetParam();
  std::mt19937 random(11);
  const cpu::Isa isa = cpu::choose_isa("");
  const std::vector<Tensor> inputs = parameter_gradient_inputs(form, DType::f32, 256, 200, random);
  for (size_t input = 1; input <= static_cast<size_t>(form.row_operands); ++input) {
    SCOPED_TRACE(fmt::format("input {}", input));
    const Tensor one = kernel_gradient(form, isa, 1, inputs, input);
    EXPECT_TRUE(same_bits(one, kernel_gradient(form, isa, 4, inputs, input)));
    const Graph graph = gradient_graph(form, DType::f32, 256, 200, input);
    CpuDevice cpu(DeviceOptions{.cpu_cores = 4, .cpu_isa = std::string(cpu::isa_name(isa))});
    EXPECT_EQ(compare_bits(one, cpu.compile(graph)->run_host(inputs)[0]), "");
  }
}

// x's edges of rows_of_values (-inf, a NaN, a row of -inf) and cotangent_rows' (a NaN).
TEST_P(NormParameterCompositeGradientKernel, GivesNaNColumnsOfANaNRow) {
  const Form& form = GetParam();
  std::mt19937 random(5);
  for (DType dtype : {DType::f32, DType::bf16}) {
    std::vector<Tensor> inputs = gradient_inputs(form, dtype, 12, 40, random);
    for (size_t input = 1; input <= static_cast<size_t>(form.row_operands); ++input) {
      SCOPED_TRACE(fmt::format("{} input {}", graph::dtype_name(dtype), input));
      const Graph graph = gradient_graph(form, dtype, 12, 40, input);
      const cpu::Isa isa = cpu::choose_isa("");
      CpuDevice cpu(DeviceOptions{.cpu_cores = 1, .cpu_isa = std::string(cpu::isa_name(isa))});
      EXPECT_EQ(compare_bits(kernel_gradient(form, isa, 1, inputs, input), cpu.compile(graph)->run_host(inputs)[0]),
                "");
    }
  }
}

// x of one row of rank 1: the weight and bias have x's shape, so nothing is summed (a -0
// term stays -0, where a sum from 0 gives +0): g's zeros of either sign make -0 terms.
TEST(NormParameterCompositeGradientKernels, OfARowOfRankOneAreItsTerms) {
  const int64_t length = 9;
  std::vector<double> x(length, -0.0), ones(length, 1.0), g(length, 0.0);
  x[0] = 1.5;
  g[0] = 1;
  for (int64_t i = 2; i < length; i += 2) g[static_cast<size_t>(i)] = -0.0;
  const cpu::Isa isa = cpu::choose_isa("");
  for (const Form& form : norm_parameter_forms()) {
    std::vector<Tensor> inputs{Tensor::from_doubles(DType::f32, {length}, x)};
    for (int k = 0; k < form.row_operands; ++k) inputs.push_back(Tensor::from_doubles(DType::f32, {length}, ones));
    inputs.push_back(Tensor::from_doubles(DType::f32, {length}, g));
    for (size_t input = 1; input <= static_cast<size_t>(form.row_operands); ++input) {
      SCOPED_TRACE(fmt::format("{} input {}", form.label, input));
      Graph graph;
      Builder b(graph);
      std::vector<NodeId> args;
      for (size_t k = 0; k + 1 < inputs.size(); ++k)
        args.push_back(b.input(fmt::format("in{}", k), {length}, DType::f32));
      const NodeId cotangent = b.input("g", {length}, DType::f32);
      const NodeId loss = b.sum(b.mul(b.op(form.op, args, form.attrs), cotangent), {});
      b.output("d", graph::gradients(b, loss, std::vector<NodeId>{args[input]})[0]);
      CpuDevice cpu(DeviceOptions{.cpu_cores = 1, .cpu_isa = std::string(cpu::isa_name(isa))});
      const Tensor expected = cpu.compile(graph::expand_composites(graph))->run_host(inputs)[0];
      EXPECT_EQ(compare_bits(kernel_gradient(form, isa, 1, inputs, input), expected), "");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(WeightAndBias, NormParameterCompositeGradientKernel,
                         ::testing::ValuesIn(norm_parameter_forms()),
                         [](const ::testing::TestParamInfo<Form>& p) { return p.param.label; });

}  // namespace
}  // namespace sx::device::testing
