// The cpu device's kernels of cross_entropy and of its gradient with respect to the
// logits (device/cpu/kernels/cross_entropy.cc) give the bits that the same device gives
// for the decomposition, on every instruction set this processor runs, in f32 and bf16,
// over 1 to 64 rows of 1 to 800 classes whose logits are normal values, ties, large
// magnitudes, or hold -inf or NaN, and a loss cotangent of several magnitudes, zero and
// infinity (a NaN for a NaN in the gradient: compare_bits), targets of every index dtype,
// logits of rank 1 to 3; a target outside the classes stops either kernel at the first
// one, as the decomposition's one_hot stops it. The schedule runs both by kernels.
#include <gtest/gtest.h>

#include <cstdlib>
#include <limits>
#include <random>

#include "composite_cases.h"
#include "device/cpu/cpu.h"
#include "device/cpu/isa.h"
#include "device/cpu/schedule.h"
#include "graph/autodiff.h"
#include "graph/index_error.h"
#include "graph/passes.h"
#include "util.h"

namespace sx::device::testing {
namespace {

using graph::Builder;
using graph::NodeId;

// Logits whose every row is of one kind: normal values, ties, large magnitudes, one -inf,
// one NaN (the last two make the loss NaN: -inf or NaN times a zero of the one_hot).
enum class Logits { normal, ties, large, minus_infinity, nan };

Tensor logits_of(Logits kind, DType dtype, int64_t rows, int64_t classes, std::mt19937& random) {
  return normal_rows(dtype, rows, classes, random, 2.0, [kind](double* row, int64_t r, int64_t n) {
    switch (kind) {
      case Logits::ties: std::fill(row, row + n, 1.25); break;
      case Logits::large:
        for (int64_t i = 0; i < n; ++i) row[i] *= 1e18;
        row[r % n] = 3e38;
        break;
      case Logits::minus_infinity: row[n / 2] = -std::numeric_limits<double>::infinity(); break;
      case Logits::nan: row[n - 1] = std::numeric_limits<double>::quiet_NaN(); break;
      case Logits::normal: break;
    }
  });
}

// Targets of `dtype`, the first row's 0 and the last's the last class.
Tensor targets_of(int64_t rows, int64_t classes, std::mt19937& random, DType dtype = DType::i32) {
  std::uniform_int_distribution<int64_t> pick(0, classes - 1);
  std::vector<double> v(static_cast<size_t>(rows));
  for (double& t : v) t = static_cast<double>(pick(random));
  v.front() = 0;
  if (rows > 1) v.back() = static_cast<double>(classes - 1);
  return Tensor::from_doubles(dtype, {rows}, v);
}

// Outputs "loss" (cross_entropy of inputs logits and targets, of i32 unless `targets`
// says) and, given `gradient`, "dx":
// the gradient of loss * g with respect to the logits, whose cotangent of the loss is g.
Graph loss_graph(DType dtype, int64_t rows, int64_t classes, bool gradient, DType targets = DType::i32) {
  Graph graph;
  Builder b(graph);
  const NodeId logits = b.input("logits", {rows, classes}, dtype);
  const NodeId loss = b.op("cross_entropy", {logits, b.input("targets", {rows}, targets)});
  b.output("loss", loss);
  if (gradient) {
    const std::vector<NodeId> wrt{logits};
    b.output("dx", graph::gradients(b, b.mul(loss, b.input("g", {}, dtype)), wrt)[0]);
  }
  return graph;
}

// Whether each cross_entropy node and each gradient of one runs by its kernel.
bool runs_by_kernels(const CpuDevice& cpu, const Graph& graph) {
  const std::string composites = cpu::print_composites(graph, cpu);
  return composites.find("cross_entropy f32[]: kernel") != std::string::npos ||
         composites.find("cross_entropy bf16[]: kernel") != std::string::npos;
}

std::vector<int64_t> class_counts() {
  if (std::getenv("SEXPGPU_TEST_EMULATED") != nullptr) return {3, 17, 100};
  return {1, 2, 3, 15, 16, 17, 31, 32, 33, 100, 257, 800};
}

TEST(CrossEntropyCompositeKernel, GivesItsDecompositionsBitsOnEveryInstructionSet) {
  std::mt19937 random(42);
  for (DType dtype : {DType::f32, DType::bf16}) {
    for (int64_t classes : class_counts()) {
      for (Logits kind : {Logits::normal, Logits::ties, Logits::large, Logits::minus_infinity, Logits::nan}) {
        const int64_t rows = 1 + (classes * 7 + static_cast<int64_t>(kind)) % 64;
        SCOPED_TRACE(fmt::format("{} rows of {} classes, logits of kind {}", rows, classes, static_cast<int>(kind)));
        const Graph graph = loss_graph(dtype, rows, classes, false);
        const Graph expanded = graph::expand_composites(graph);
        const std::vector<Tensor> inputs{logits_of(kind, dtype, rows, classes, random),
                                         targets_of(rows, classes, random)};
        for (cpu::Isa isa : cpu::host_isas()) {
          SCOPED_TRACE(cpu::isa_name(isa));
          CpuDevice cpu(DeviceOptions{.cpu_cores = 2, .cpu_isa = std::string(cpu::isa_name(isa))});
          ASSERT_TRUE(runs_by_kernels(cpu, graph)) << cpu::print_composites(graph, cpu);
          EXPECT_EQ(compare(cpu.compile(graph)->run_host(inputs)[0], cpu.compile(expanded)->run_host(inputs)[0], true),
                    "");
        }
      }
    }
  }
}

// The loss's cotangents g: 1, others, a zero, a large one, infinity.
std::vector<double> cotangents() { return {1.0, -3.7, 0.0, 1e30, std::numeric_limits<double>::infinity()}; }

TEST(CrossEntropyCompositeGradientKernel, GivesItsDecompositionsBitsOnEveryInstructionSet) {
  std::mt19937 random(7);
  for (DType dtype : {DType::f32, DType::bf16}) {
    const std::vector<int64_t> counts = class_counts();
    for (size_t k = 0; k < counts.size(); ++k) {
      const int64_t rows = 12, classes = counts[k];  // rows of every kind of rows_of_values, twice
      const double g = cotangents()[k % cotangents().size()];
      SCOPED_TRACE(fmt::format("{} rows of {} classes, g {}", graph::dtype_name(dtype), classes, g));
      const Graph graph = loss_graph(dtype, rows, classes, true);
      const Graph expanded = graph::expand_composites(graph);
      const std::vector<Tensor> inputs{rows_of_values(dtype, rows, classes, random), targets_of(rows, classes, random),
                                       Tensor::scalar(dtype, g)};
      for (cpu::Isa isa : cpu::host_isas()) {
        SCOPED_TRACE(cpu::isa_name(isa));
        CpuDevice cpu(DeviceOptions{.cpu_cores = 2, .cpu_isa = std::string(cpu::isa_name(isa))});
        const std::string composites = cpu::print_composites(graph, cpu);
        ASSERT_NE(composites.find("cross_entropy's gradient (input 0) " + std::string(graph::dtype_name(dtype)) +
                                  fmt::format("[{}, {}]: kernel", rows, classes)),
                  std::string::npos)
            << composites;
        EXPECT_EQ(compare_bits(cpu.compile(graph)->run_host(inputs)[1], cpu.compile(expanded)->run_host(inputs)[1]),
                  "");
      }
    }
  }
}

// Many rows over several threads: each row is its own, whichever thread takes it, and
// the rows' values are summed in their order.
TEST(CrossEntropyCompositeKernel, GivesTheSameBitsOnOneThreadAndOnSeveral) {
  std::mt19937 random(3);
  const Graph graph = loss_graph(DType::f32, 256, 512, true);
  const std::vector<Tensor> inputs{logits_of(Logits::normal, DType::f32, 256, 512, random),
                                   targets_of(256, 512, random), Tensor::scalar(DType::f32, 0.5)};
  const std::vector<Tensor> one = run_on("cpu", graph, inputs, 1), several = run_on("cpu", graph, inputs, 4);
  const std::vector<Tensor> expanded = run_on("cpu", graph::expand_composites(graph), inputs, 1);
  for (size_t k = 0; k < 2; ++k) {
    EXPECT_TRUE(same_bits(one[k], several[k])) << k;
    EXPECT_EQ(compare(one[k], expanded[k], true), "") << k;
  }
}

// Targets of each index dtype, and logits with a class axis alone (one row, a scalar
// target) or with two axes before it.
TEST(CrossEntropyCompositeKernel, TakesTargetsOfEveryIndexDtypeAndRowsOfAnyRank) {
  std::mt19937 random(9);
  for (DType targets : {DType::i64, DType::u8, DType::u16}) {
    SCOPED_TRACE(graph::dtype_name(targets));
    const Graph graph = loss_graph(DType::f32, 5, 40, true, targets);
    const std::vector<Tensor> inputs{logits_of(Logits::normal, DType::f32, 5, 40, random),
                                     targets_of(5, 40, random, targets), Tensor::scalar(DType::f32, 2)};
    const std::vector<Tensor> got = run_on("cpu", graph, inputs, 1);
    const std::vector<Tensor> want = run_on("cpu", graph::expand_composites(graph), inputs, 1);
    for (size_t k = 0; k < 2; ++k) EXPECT_EQ(compare(got[k], want[k], true), "") << k;
  }
  for (const graph::Shape& shape : {graph::Shape{40}, graph::Shape{2, 3, 40}}) {
    SCOPED_TRACE(graph::shape_str(shape));
    Graph graph;
    Builder b(graph);
    const graph::Shape rows(shape.begin(), shape.end() - 1);
    const NodeId logits = b.input("logits", shape, DType::f32);
    const NodeId loss = b.op("cross_entropy", {logits, b.input("targets", rows, DType::i32)});
    b.output("loss", loss);
    b.output("dx", graph::gradients(b, loss, std::vector<NodeId>{logits})[0]);
    const int64_t count = graph::numel(rows);
    const auto reshaped = [](const Tensor& t, const graph::Shape& to) { return Tensor(t.dtype(), to, t.bytes()); };
    const std::vector<Tensor> inputs{reshaped(logits_of(Logits::normal, DType::f32, count, 40, random), shape),
                                     reshaped(targets_of(count, 40, random), rows)};
    CpuDevice cpu(DeviceOptions{.cpu_cores = 1});
    ASSERT_TRUE(runs_by_kernels(cpu, graph)) << cpu::print_composites(graph, cpu);
    const std::vector<Tensor> got = cpu.compile(graph)->run_host(inputs);
    const std::vector<Tensor> want = cpu.compile(graph::expand_composites(graph))->run_host(inputs);
    for (size_t k = 0; k < 2; ++k) EXPECT_EQ(compare(got[k], want[k], true), "") << k;
  }
}

// The error a run of `graph` stops with, its primitive's name left out; none where it runs
// to its end.
std::optional<std::string> index_error(const Graph& graph, const std::vector<Tensor>& inputs,
                                       std::string_view primitive) {
  try {
    run_on("cpu", graph, inputs, 1);
  } catch (const graph::IndexOutOfRange& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.substr(0, primitive.size() + 2), fmt::format("{}: ", primitive));
    return fmt::format("index {} at {} of {}: {}", e.value(), graph::list_str(e.position()), e.input().value_or("?"),
                       message.substr(message.find(": ") + 2));
  }
  return std::nullopt;
}

// A target below 0 or at the class count stops the forward kernel and the gradient's at
// the first one, as the decomposition's one_hot stops it: the same value, place and
// message, which names the composite as the node that stopped (the decomposition's names
// its one_hot).
TEST(CrossEntropyCompositeKernel, StopsAtTheFirstTargetOutsideTheClasses) {
  std::mt19937 random(5);
  for (bool gradient : {false, true}) {
    const Graph graph = loss_graph(DType::f32, 6, 5, gradient);
    const Graph expanded = graph::expand_composites(graph);
    for (double bad : {-1.0, 5.0}) {
      SCOPED_TRACE(fmt::format("target {}, {}", bad, gradient ? "with the gradient" : "the loss alone"));
      std::vector<double> targets{0, 4, bad, 2, bad, 1};
      std::vector<Tensor> inputs{logits_of(Logits::normal, DType::f32, 6, 5, random),
                                 Tensor::from_doubles(DType::i32, {6}, targets)};
      if (gradient) inputs.push_back(Tensor::scalar(DType::f32, 1));
      const std::optional<std::string> error = index_error(graph, inputs, "cross_entropy");
      ASSERT_TRUE(error.has_value());
      EXPECT_EQ(*error, fmt::format("index {} at [2] of targets: index {} at [2] of input `targets` is outside its "
                                    "axis, 0 to 4",
                                    bad, bad));
      EXPECT_EQ(*error, index_error(expanded, inputs, "one_hot"));
    }
  }
}

}  // namespace
}  // namespace sx::device::testing
