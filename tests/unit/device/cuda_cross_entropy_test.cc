// The cuda device's kernels of cross_entropy, of its gradient with respect to the logits,
// and of the gradients of the norms' weight and bias, without a GPU: the functions of
// cross_entropy_math.h and gradient_math.h, run on the host pass by pass as the generated
// kernels' threads run them, give the reference's bits in f32 and bf16, over rows of
// several lengths and counts whose values include large magnitudes, ties, -inf and NaN,
// targets of every index dtype, and cotangents of several magnitudes, zero, infinity and
// NaN; a target outside the classes turns into the cpu device's error; the plan runs each
// by its kernels, which NVRTC compiles. On a GPU, the plan against the reference;
// skipped, saying why, where there is none.
#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <tuple>

#include "composite_cases.h"
#include "device/cuda/codegen.h"
#include "device/cuda/cross_entropy_math.h"
#include "device/cuda/cuda_device.h"
#include "device/cuda/nvrtc.h"
#include "device/cuda/program.h"
#include "formula_cases.h"
#include "graph/composite.h"
#include "graph/index_error.h"
#include "util.h"

namespace sx::device::testing {
namespace {

using graph::NodeId;

Tensor reshaped(const Tensor& t, const Shape& to) { return Tensor(t.dtype(), to, t.bytes()); }

// Target r of `targets`, as the kernels read it.
int64_t target_at(const Tensor& targets, int64_t r) {
  return graph::visit_index_dtype(targets.dtype(),
                                  [&](auto zero) { return static_cast<int64_t>(targets.data<decltype(zero)>()[r]); });
}

// Targets of `dtype` in [0, classes), the first row's 0 and the last's the last class.
Tensor targets_of(DType dtype, int64_t rows, int64_t classes, std::mt19937& random) {
  std::uniform_int_distribution<int64_t> pick(0, classes - 1);
  std::vector<double> v(static_cast<size_t>(rows));
  for (double& t : v) t = static_cast<double>(pick(random));
  v.front() = 0;
  v.back() = static_cast<double>(classes - 1);
  return Tensor::from_doubles(dtype, {rows}, v);
}

// Outputs "loss" (cross_entropy of inputs logits [rows, classes] and targets) and, given
// `gradient`, "dx": its composite_gradient with respect to the logits, of the loss's
// cotangent input "g".
Graph loss_graph(DType dtype, DType targets, int64_t rows, int64_t classes, bool gradient) {
  Graph graph;
  graph::Builder b(graph);
  const NodeId logits = b.input("logits", {rows, classes}, dtype);
  const NodeId target = b.input("targets", {rows}, targets);
  const NodeId loss = b.op("cross_entropy", {logits, target});
  b.output("loss", loss);
  if (gradient) {
    const graph::Node& forward = graph.node(loss);
    const graph::Attrs attrs = graph::gradient_attrs(*forward.prim, 0, forward.attrs);
    b.output("dx", b.op("composite_gradient", {logits, target, b.input("g", {}, dtype)}, attrs));
  }
  return graph;
}

// The loss and, given the cotangent (inputs[2]), the gradient, on the host: a row a call,
// then the loss's sum over the rows' values, as the kernels' passes compute them.
std::vector<Tensor> cross_entropy_on_host(const std::vector<Tensor>& inputs) {
  const Tensor& x = inputs[0];
  const int64_t length = x.shape().back(), rows = x.numel() / length;
  std::vector<Tensor> results{Tensor(x.dtype(), {})};
  if (inputs.size() == 3) results.emplace_back(x.dtype(), x.shape());
  graph::visit_dtype(x.dtype(), [&](auto types) {
    using S = typename decltype(types)::storage;
    using C = typename decltype(types)::compute;
    if constexpr (std::is_floating_point_v<C>) {
      std::vector<float> picked(static_cast<size_t>(rows));
      for (int64_t r = 0; r < rows; ++r) {
        const S* row = x.data<S>() + r * length;
        picked[r] = float(cuda::picked_log_probability<S, C>(row, length, target_at(inputs[1], r)));
        if (inputs.size() == 3) {
          cuda::cross_entropy_gradient_row<S, C>(row, target_at(inputs[1], r), inputs[2].data<S>()[0], rows,
                                                 results[1].data<S>() + r * length, length);
        }
      }
      results[0].data<S>()[0] = cuda::cross_entropy_loss<S, C>(picked.data(), rows);
    }
  });
  return results;
}

TEST(CudaCrossEntropy, GivesTheReferenceBitsOnTheHost) {
  std::mt19937 random(43);
  const std::vector<DType> index_dtypes = {DType::i32, DType::i64, DType::u8, DType::u16};
  const std::vector<double> cotangents = {
      1.0, 0.0, -2.5e30, std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN(), 0.375};
  int cases = 0;
  for (DType dtype : {DType::f32, DType::bf16}) {
    for (int64_t classes : {1, 2, 3, 17, 100, 257}) {
      for (int64_t rows : {1, 2, 6, 12, 64}) {
        const DType targets =
            index_dtypes[cases % 4] == DType::u8 && classes > 256 ? DType::i64 : index_dtypes[cases % 4];
        const double g = cotangents[cases % cotangents.size()];
        ++cases;
        SCOPED_TRACE(fmt::format("{} rows of {} {}, {} targets, g {}", rows, classes, graph::dtype_name(dtype),
                                 graph::dtype_name(targets), g));
        const Graph graph = loss_graph(dtype, targets, rows, classes, true);
        for (const graph::NamedNode& output : graph.outputs) {
          ASSERT_TRUE(cuda::has_composite_kernel(graph, graph.node(output.node))) << output.name;
        }
        // Each of the six kinds of row (composite_cases.h) in turn, from row 0 on; 64 rows
        // of normal values, for a finite loss summed over many rows.
        const Tensor logits = rows < 64
                                  ? rows_of_values(dtype, rows, classes, random)
                                  : normal_rows(dtype, rows, classes, random, 2.0, [](double*, int64_t, int64_t) {});
        const std::vector<Tensor> inputs{logits, targets_of(targets, rows, classes, random), Tensor::scalar(dtype, g)};
        const std::vector<Tensor> expected = run_on("reference", graph, inputs);
        const std::vector<Tensor> actual = cross_entropy_on_host(inputs);
        EXPECT_EQ(compare_bits(actual[0], expected[0]), "") << "loss";
        EXPECT_EQ(compare_bits(actual[1], expected[1]), "") << "dx";
      }
    }
  }
}

// A norm's form, and which of its inputs after x a gradient is taken with respect to.
struct ParameterCase {
  Form form;
  size_t input;
};

std::vector<ParameterCase> parameter_cases() {
  std::vector<ParameterCase> cases;
  for (const Form& form : forms()) {
    for (int k = 1; k <= form.row_operands; ++k) cases.push_back({form, static_cast<size_t>(k)});
  }
  return cases;
}

// Output "dp": the gradient of `c`'s norm with respect to its parameter, for x of `shape`
// and the cotangent g.
Graph parameter_graph(const ParameterCase& c, DType dtype, const Shape& shape) {
  Graph graph;
  graph::Builder b(graph);
  std::vector<NodeId> args{b.input("x", shape, dtype)};
  for (int k = 0; k < c.form.row_operands; ++k) args.push_back(b.input(fmt::format("p{}", k), {shape.back()}, dtype));
  // The composite's node in a copy, for its attributes as the builder completes them.
  Graph scratch = graph;
  const graph::Node forward = scratch.node(graph::Builder(scratch).op(c.form.op, args, c.form.attrs));
  args.push_back(b.input("g", shape, dtype));
  b.output("dp", b.op("composite_gradient", args, graph::gradient_attrs(*forward.prim, c.input, forward.attrs)));
  return graph;
}

// The parameter's gradient on the host: each row's statistics (a weight's), then a
// column's sum a call, as the kernels' passes compute them.
Tensor parameter_gradient_on_host(const ParameterCase& c, const std::vector<Tensor>& inputs) {
  const Tensor& x = inputs[0];
  const int64_t length = x.shape().back(), rows = x.numel() / length;
  const bool weight = c.input == 1 && c.form.attrs.get_int("weight") != 0;
  const bool centered = c.form.op == "layer_norm";
  const bool summed = x.shape().size() > 1;
  const double eps = c.form.attrs.get_double("eps");
  Tensor dp(x.dtype(), {length});
  graph::visit_dtype(x.dtype(), [&](auto types) {
    using S = typename decltype(types)::storage;
    using C = typename decltype(types)::compute;
    if constexpr (std::is_floating_point_v<C>) {
      const S* g = inputs.back().data<S>();
      std::vector<cuda::NormStatistics<C>> stats(static_cast<size_t>(rows));
      for (int64_t r = 0; r < rows; ++r) {
        const S* row = x.data<S>() + r * length;
        stats[r] = centered ? cuda::norm_statistics<S, C, true>(row, length, eps)
                            : cuda::norm_statistics<S, C, false>(row, length, eps);
      }
      for (int64_t i = 0; i < length; ++i) {
        const auto column = [&]<bool Centered, bool Weighted>() {
          return cuda::norm_parameter_gradient_column<S, C, Centered, Weighted>(x.data<S>(), g, stats.data(), rows,
                                                                                length, i, summed);
        };
        dp.data<S>()[i] = !weight    ? column.template operator()<true, false>()
                          : centered ? column.template operator()<true, true>()
                                     : column.template operator()<false, true>();
      }
    }
  });
  return dp;
}

TEST(CudaNormParameterGradients, GiveTheReferenceBitsOnTheHost) {
  std::mt19937 random(47);
  const std::vector<Shape> shapes = {{12, 1}, {12, 2}, {12, 7}, {12, 33}, {12, 100}, {7}, {1, 5}, {2, 3, 9}};
  for (const ParameterCase& c : parameter_cases()) {
    for (DType dtype : {DType::f32, DType::bf16}) {
      for (const Shape& shape : shapes) {
        SCOPED_TRACE(fmt::format("{} input {}, {} {}", c.form.label, c.input, graph::dtype_name(dtype),
                                 graph::shape_str(shape)));
        const Graph graph = parameter_graph(c, dtype, shape);
        ASSERT_TRUE(cuda::has_composite_kernel(graph, graph.node(graph.outputs[0].node)));
        const int64_t length = shape.back(), rows = graph::numel(shape) / length;
        std::vector<Tensor> inputs{reshaped(rows_of_values(dtype, rows, length, random), shape)};
        for (int k = 0; k < c.form.row_operands; ++k) inputs.push_back(row_operand(dtype, length, random));
        inputs.push_back(reshaped(cotangent_rows(dtype, rows, length, random), shape));
        EXPECT_EQ(compare_bits(parameter_gradient_on_host(c, inputs), run_on("reference", graph, inputs)[0]), "");
      }
    }
  }
}

// Logits of f64, a norm's parameter of x of no elements, and a gradient of f64 have no
// kernel: they are expanded.
TEST(CudaCrossEntropy, HasAKernelForTheKernelsFormsAlone) {
  const Graph loss = loss_graph(DType::f64, DType::i32, 2, 3, false);
  EXPECT_FALSE(cuda::has_composite_kernel(loss, loss.node(loss.outputs[0].node)));
  const ParameterCase weight{forms()[5], 1};
  ASSERT_EQ(weight.form.label, "rms_norm_weight");
  const Graph empty = parameter_graph(weight, DType::f32, {0, 4});
  EXPECT_FALSE(cuda::has_composite_kernel(empty, empty.node(empty.outputs[0].node)));
  const Graph f64 = parameter_graph(weight, DType::f64, {2, 4});
  EXPECT_FALSE(cuda::has_composite_kernel(f64, f64.node(f64.outputs[0].node)));
  EXPECT_TRUE(cuda::has_kernel(graph::PrimId::cross_entropy));
}

// A target below 0 or at the class count: the fault the kernels' checks record, their
// threads meeting the targets in any order, is the first, and gives the cpu device's
// error, for the loss and for its gradient.
TEST(CudaCrossEntropy, RecordsTheTargetTheCpuDeviceStopsAt) {
  std::mt19937 random(5);
  for (bool gradient : {false, true}) {
    for (double bad : {-1.0, 5.0}) {
      SCOPED_TRACE(fmt::format("target {}, {}", bad, gradient ? "the gradient" : "the loss"));
      const Graph graph = loss_graph(DType::f32, DType::i32, 6, 5, gradient);
      const std::vector<double> targets{0, 4, bad, 2, bad, 1};
      std::vector<Tensor> inputs{rows_of_values(DType::f32, 6, 5, random),
                                 Tensor::from_doubles(DType::i32, {6}, targets)};
      if (gradient) inputs.push_back(Tensor::scalar(DType::f32, 1));
      std::string expected;
      try {
        run_on("cpu", graph, inputs, 1);
      } catch (const graph::IndexOutOfRange& e) {
        expected = e.what();
      }
      ASSERT_FALSE(expected.empty());
      // The node that checks first: the loss's, before its gradient's.
      const NodeId checked = graph.outputs[0].node;
      const std::optional<cuda::IndexCheck> check = cuda::index_check(graph, checked);
      ASSERT_TRUE(check.has_value());
      EXPECT_EQ(check->operand, 1u);
      EXPECT_EQ(check->count, 6);
      EXPECT_EQ(check->length, 5);
      std::vector<int64_t> order = {0, 1, 2, 3, 4, 5};
      for (int shuffle = 0; shuffle < 3; ++shuffle) {
        std::shuffle(order.begin(), order.end(), random);
        cuda::IndexFault fault{};
        for (graph::NodeId node = 0; node < graph.nodes.size(); ++node) {
          if (!cuda::index_check(graph, node)) continue;
          for (int64_t j : order) {
            cuda::check_index(&fault, static_cast<uint32_t>(node), inputs[1].data<int32_t>(), j, check->length);
          }
        }
        EXPECT_EQ(cuda::index_fault_error(graph, fault).what(), expected);
      }
    }
  }
}

// Every kernel's form in one graph: the loss and its gradient of f32 and bf16, and each
// norm parameter's gradient of both.
Graph every_kernel() {
  Graph graph;
  graph::Builder b(graph);
  for (DType dtype : {DType::f32, DType::bf16}) {
    const std::string d(graph::dtype_name(dtype));
    const NodeId logits = b.input("logits " + d, {5, 40}, dtype);
    const NodeId targets = b.input("targets " + d, {5}, DType::i64);
    const NodeId loss = b.op("cross_entropy", {logits, targets});
    b.output("loss " + d, loss);
    const graph::Node& forward = graph.node(loss);
    const graph::Attrs attrs = graph::gradient_attrs(*forward.prim, 0, forward.attrs);
    b.output("dx " + d, b.op("composite_gradient", {logits, targets, b.input("g " + d, {}, dtype)}, attrs));
    for (const ParameterCase& c : parameter_cases()) {
      const std::string name = fmt::format("{} {} {}", c.form.label, c.input, d);
      std::vector<NodeId> args{b.input("x " + name, {3, 40}, dtype)};
      for (int k = 0; k < c.form.row_operands; ++k)
        args.push_back(b.input(fmt::format("p{} {}", k, name), {40}, dtype));
      Graph scratch = graph;
      const graph::Node norm = scratch.node(graph::Builder(scratch).op(c.form.op, args, c.form.attrs));
      args.push_back(b.input("g " + name, {3, 40}, dtype));
      b.output("dp " + name, b.op("composite_gradient", args, graph::gradient_attrs(*norm.prim, c.input, norm.attrs)));
    }
  }
  return graph;
}

TEST(CudaCrossEntropy, EachIsAStepOfGeneratedKernelsThatNvrtcCompiles) {
  const Graph graph = every_kernel();
  EXPECT_EQ(cuda::missing_kernels(graph), std::vector<std::string>{});
  const cuda::Program program = cuda::plan_program(graph);
  ASSERT_EQ(program.steps.size(), graph.outputs.size());
  size_t checking = 0, second = 0;
  for (size_t k = 0; k < program.steps.size(); ++k) {
    const cuda::Step& step = program.steps[k];
    const std::string& name = graph.outputs[k].name;  // the steps and outputs in the graph's order
    SCOPED_TRACE(name);
    EXPECT_EQ(step.kind, cuda::Step::Kind::row);
    checking += step.checks_indices;
    second += step.second_kernel.has_value();
    // Each pass's threads, and the place's bytes: the value, then the first pass's values
    // from the next 16-byte boundary (a float a row, or a row's three statistics).
    const size_t size = graph::dtype_size(graph.node(graph.outputs[k].node).dtype);
    if (name.starts_with("loss")) {
      EXPECT_EQ(std::tuple(step.threads, step.second_threads, step.bytes), std::tuple(5, 1, 16 + 5 * 4));
    } else if (name.starts_with("dx")) {
      EXPECT_EQ(std::tuple(step.threads, step.second_kernel.has_value(), step.bytes), std::tuple(5, false, 200 * size));
    } else if (step.second_kernel) {
      EXPECT_EQ(std::tuple(step.threads, step.second_threads, step.bytes),
                std::tuple(3, 40, (40 * size + 15) / 16 * 16 + 3 * 3 * 4));
    } else {
      EXPECT_EQ(std::tuple(step.threads, step.bytes), std::tuple(40, 40 * size));
    }
  }
  // The loss and its gradient check their targets; the loss and the weights' gradients
  // take two passes.
  EXPECT_EQ(checking, 4u);
  const size_t weights = 3;  // rms_norm's, and layer_norm's with and without a bias
  EXPECT_EQ(second, 2 * (1 + weights));
  for (const char* architecture : {"sm_80", "sm_90a"}) {
    EXPECT_GT(cuda::compile_cubin(program.source, architecture).size(), 1000u) << architecture;
  }
}

TEST(CudaCrossEntropy, GivesTheReferenceBitsOnTheGpu) {
  const Graph graph = every_kernel();
  std::mt19937 random(53);
  std::vector<Tensor> inputs;
  for (const graph::NamedNode& input : graph.inputs) {
    const graph::Node& node = graph.node(input.node);
    if (input.name.starts_with("targets")) {
      inputs.push_back(targets_of(node.dtype, 5, 40, random));
    } else if (node.shape.empty()) {
      inputs.push_back(Tensor::scalar(node.dtype, 0.75));
    } else if (node.shape.size() == 1) {
      inputs.push_back(row_operand(node.dtype, 40, random));
    } else {
      inputs.push_back(input.name.starts_with("g ") ? cotangent_rows(node.dtype, node.shape[0], 40, random)
                                                    : rows_of_values(node.dtype, node.shape[0], 40, random));
    }
  }
  if (std::string reason = gpu_unusable_reason(); !reason.empty()) GTEST_SKIP() << reason;
  const std::vector<Tensor> expected = run_on("reference", graph, inputs);
  const std::vector<Tensor> actual = run_on("cuda", graph, inputs);
  for (size_t k = 0; k < expected.size(); ++k) {
    SCOPED_TRACE(graph.outputs[k].name);
    EXPECT_EQ(compare_bits(actual[k], expected[k]), "");
  }
}

// A target outside the classes stops the loss and its gradient on the GPU with the cpu
// device's error.
TEST(CudaCrossEntropy, StopsAtTheCpuDevicesTargetOnTheGpu) {
  std::mt19937 random(59);
  const Graph graph = loss_graph(DType::bf16, DType::u16, 6, 5, true);
  const std::vector<double> targets{0, 4, 3, 2, 7, 1};
  const std::vector<Tensor> inputs{rows_of_values(DType::bf16, 6, 5, random),
                                   Tensor::from_doubles(DType::u16, {6}, targets), Tensor::scalar(DType::bf16, 1)};
  std::string expected;
  try {
    run_on("cpu", graph, inputs, 1);
  } catch (const graph::IndexOutOfRange& e) {
    expected = e.what();
  }
  ASSERT_EQ(expected, "cross_entropy: index 7 at [4] of input `targets` is outside its axis, 0 to 4");
  if (std::string reason = gpu_unusable_reason(); !reason.empty()) GTEST_SKIP() << reason;
  try {
    run_on("cuda", graph, inputs);
    ADD_FAILURE() << "no error";
  } catch (const graph::IndexOutOfRange& e) {
    EXPECT_EQ(e.what(), expected);
  }
}

}  // namespace
}  // namespace sx::device::testing
