// The cuda device's kernels of the composites' gradients with respect to x without a GPU:
// gradient_math.h's functions, a row (gelu's: an element) at a time as each GPU thread
// computes it, give the reference's bits of the gradient's decomposition in f32 and bf16,
// over rows of many lengths whose x includes large magnitudes, ties, -inf and NaN and
// whose cotangent includes large magnitudes, zeros and NaN; which gradients have a kernel;
// and NVRTC compiles the kernels. On a GPU, the plan against the reference; skipped,
// saying why, where there is none.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "composite_cases.h"
#include "device/cuda/codegen.h"
#include "device/cuda/cuda_device.h"
#include "device/cuda/gradient_math.h"
#include "device/cuda/nvrtc.h"
#include "device/cuda/program.h"
#include "formula_cases.h"
#include "graph/composite.h"
#include "util.h"

namespace sx::device::testing {
namespace {

using graph::NodeId, graph::PrimId;

// The composite_gradient of `form` with respect to x, of `args`: x, its row operands and
// the cotangent.
NodeId gradient_node(Graph& graph, const Form& form, const std::vector<NodeId>& args) {
  // The composite's node in a copy, for its attributes as the builder completes them.
  Graph scratch = graph;
  const std::vector<NodeId> operands(args.begin(), args.end() - 1);
  const graph::Node forward = scratch.node(graph::Builder(scratch).op(form.op, operands, form.attrs));
  return graph::Builder(graph).op("composite_gradient", args, graph::gradient_attrs(*forward.prim, 0, forward.attrs));
}

// Outputs "dx": the gradient of `form` with respect to x, given the cotangent g, alone.
Graph gradient_graph(const Form& form, DType dtype, int64_t rows, int64_t length) {
  Graph graph;
  graph::Builder b(graph);
  std::vector<NodeId> args = form_inputs(b, form, dtype, rows, length);
  args.push_back(b.input("g", {rows, length}, dtype));
  b.output("dx", gradient_node(graph, form, args));
  return graph;
}

// The gradient on the host, by gradient_math.h's functions: one call per row (per
// element, gelu's), as the generated kernel's threads make them.
Tensor on_host(const Form& form, const std::vector<Tensor>& inputs) {
  const Tensor& x = inputs[0];
  const int64_t length = x.shape().back();
  const int64_t rows = x.numel() / length;
  Tensor dx(x.dtype(), x.shape());
  const bool weighted = form.attrs.has("weight") && form.attrs.get_int("weight") != 0;
  graph::visit_dtype(x.dtype(), [&](auto types) {
    using S = typename decltype(types)::storage;
    using C = typename decltype(types)::compute;
    if constexpr (std::is_floating_point_v<C>) {
      const S* g = inputs.back().data<S>();
      const S* w = weighted ? inputs[1].data<S>() : nullptr;
      const double eps = form.attrs.has("eps") ? form.attrs.get_double("eps") : 0.0;
      for (int64_t r = 0; r < rows; ++r) {
        const S* row = x.data<S>() + r * length;
        const S* g_row = g + r * length;
        S* out = dx.data<S>() + r * length;
        if (form.op == "softmax") cuda::softmax_gradient_row<S, C>(row, g_row, out, length);
        if (form.op == "log_softmax") cuda::log_softmax_gradient_row<S, C>(row, g_row, out, length);
        if (form.op == "layer_norm") cuda::norm_gradient_row<S, C, true>(row, w, g_row, out, length, eps);
        if (form.op == "rms_norm") cuda::norm_gradient_row<S, C, false>(row, w, g_row, out, length, eps);
        if (form.op != "gelu") continue;
        for (int64_t j = 0; j < length; ++j) {
          out[j] = form.attrs.get_string("form") == "tanh"
                       ? cuda::gelu_tanh_gradient_element<S, C>(row[j], g_row[j])
                       : cuda::gelu_erf_gradient_element<S, C>(row[j], g_row[j], 2.0 / std::sqrt(std::numbers::pi));
        }
      }
    }
  });
  return dx;
}

TEST(CudaGradients, GiveTheReferenceBitsOnTheHost) {
  std::mt19937 random(43);
  const int64_t rows = 12;  // every pairing of x's six kinds of row and g's four
  for (const Form& form : forms()) {
    for (DType dtype : {DType::f32, DType::bf16}) {
      for (int64_t length : {1, 2, 3, 7, 32, 33, 100, 257}) {
        SCOPED_TRACE(fmt::format("{} {} rows of {}", form.label, graph::dtype_name(dtype), length));
        const Graph graph = gradient_graph(form, dtype, rows, length);
        ASSERT_TRUE(cuda::has_composite_kernel(graph, graph.node(graph.outputs[0].node)));
        const std::vector<Tensor> inputs = gradient_inputs(form, dtype, rows, length, random);
        EXPECT_EQ(compare_bits(on_host(form, inputs), run_on("reference", graph, inputs)[0]), "");
      }
    }
  }
}

// The gradients of f64 and of a softmax over another axis than the last have no kernel:
// they are expanded. A norm's weight's has one (cuda_cross_entropy_test.cc tests it).
TEST(CudaGradients, HaveAKernelForTheKernelsFormsAlone) {
  Graph graph;
  graph::Builder b(graph);
  const NodeId x = b.input("x", {4, 6}, DType::f32), w = b.input("w", {6}, DType::f32);
  const NodeId g = b.input("g", {4, 6}, DType::f32);
  const graph::Attrs norm = {{"eps", 1e-5}, {"weight", int64_t{1}}, {"bias", int64_t{0}}};
  const graph::Node layer = graph.node(b.op("layer_norm", {x, w}, norm));
  const NodeId of_x = b.op("composite_gradient", {x, w, g}, graph::gradient_attrs(*layer.prim, 0, layer.attrs));
  const NodeId of_w = b.op("composite_gradient", {x, w, g}, graph::gradient_attrs(*layer.prim, 1, layer.attrs));
  const graph::Node columns = graph.node(b.op("softmax", {x}, {{"axes", std::vector<int64_t>{0}}}));
  const NodeId of_columns = b.op("composite_gradient", {x, g}, graph::gradient_attrs(*columns.prim, 0, columns.attrs));
  const NodeId x64 = b.input("x64", {4, 6}, DType::f64);
  const graph::Node gelu64 = graph.node(b.op("gelu", {x64}, {{"form", std::string("erf")}}));
  const NodeId of_gelu64 = b.op("composite_gradient", {x64, b.input("g64", {4, 6}, DType::f64)},
                                graph::gradient_attrs(*gelu64.prim, 0, gelu64.attrs));
  EXPECT_TRUE(cuda::has_composite_kernel(graph, graph.node(of_x)));
  EXPECT_TRUE(cuda::has_composite_kernel(graph, graph.node(of_w)));
  EXPECT_FALSE(cuda::has_composite_kernel(graph, graph.node(of_columns)));
  EXPECT_FALSE(cuda::has_composite_kernel(graph, graph.node(of_gelu64)));
  EXPECT_TRUE(cuda::has_kernel(PrimId::composite_gradient));
}

// Every form's gradient of f32 and bf16 in one graph.
Graph every_gradient() {
  Graph graph;
  graph::Builder b(graph);
  for (DType dtype : {DType::f32, DType::bf16}) {
    for (const Form& form : forms()) {
      std::vector<NodeId> args = {
          b.input(fmt::format("x {} {}", form.label, graph::dtype_name(dtype)), {3, 40}, dtype)};
      for (int k = 0; k < form.row_operands; ++k) {
        args.push_back(b.input(fmt::format("p{} {} {}", k, form.label, graph::dtype_name(dtype)), {40}, dtype));
      }
      args.push_back(b.input(fmt::format("g {} {}", form.label, graph::dtype_name(dtype)), {3, 40}, dtype));
      b.output(fmt::format("dx {} {}", form.label, graph::dtype_name(dtype)), gradient_node(graph, form, args));
    }
  }
  return graph;
}

TEST(CudaGradients, EachIsOneStepOfAGeneratedKernelThatNvrtcCompiles) {
  const Graph graph = every_gradient();
  EXPECT_EQ(cuda::missing_kernels(graph), std::vector<std::string>{});
  cuda::Program program = cuda::plan_program(graph);
  ASSERT_EQ(program.steps.size(), 2 * forms().size());
  EXPECT_EQ(program.kernel_names.size(), 2 * forms().size());
  for (const cuda::Step& step : program.steps) {
    EXPECT_TRUE(program.kernel_names[step.kernel].starts_with("sx_gradient_"));
    const bool by_elements = step.kind == cuda::Step::Kind::fused;
    EXPECT_EQ(step.n, by_elements ? 3 * 40 : 3);
  }
  for (const char* architecture : {"sm_80", "sm_90a"}) {
    EXPECT_GT(cuda::compile_cubin(program.source, architecture).size(), 1000u) << architecture;
  }
}

TEST(CudaGradients, GiveTheReferenceBitsOnTheGpu) {
  const Graph graph = every_gradient();
  std::mt19937 random(47);
  std::vector<Tensor> inputs;
  for (const graph::NamedNode& input : graph.inputs) {
    const graph::Node& node = graph.node(input.node);
    const bool cotangent = input.name.starts_with("g ");
    inputs.push_back(node.shape.size() == 1 ? row_operand(node.dtype, 40, random)
                     : cotangent            ? cotangent_rows(node.dtype, 3, 40, random)
                                            : rows_of_values(node.dtype, 3, 40, random));
  }
  if (std::string reason = gpu_unusable_reason(); !reason.empty()) GTEST_SKIP() << reason;
  std::vector<Tensor> expected = run_on("reference", graph, inputs);
  std::vector<Tensor> actual = run_on("cuda", graph, inputs);
  for (size_t k = 0; k < expected.size(); ++k) {
    SCOPED_TRACE(graph.outputs[k].name);
    EXPECT_EQ(compare_bits(actual[k], expected[k]), "");
  }
}

}  // namespace
}  // namespace sx::device::testing
