// The cuda device's kernels of the forward composites (softmax, log_softmax, layer_norm,
// rms_norm, gelu) without a GPU: composite_math.h's functions, a row (or an element) at a
// time as each GPU thread computes it, give the reference's bits of the decomposition;
// which forms have a kernel and which are expanded; and NVRTC compiles the kernels. On a
// GPU, the plan against the reference; skipped, saying why, where there is none.
#include <gtest/gtest.h>

#include "device/cuda/codegen.h"
#include "device/cuda/composite_math.h"
#include "device/cuda/cuda_device.h"
#include "device/cuda/nvrtc.h"
#include "device/cuda/program.h"
#include "formula_cases.h"
#include "util.h"

namespace sx::device::testing {
namespace {

using graph::NodeId, graph::PrimId;

// A composite's form: its primitive and attributes, and how many operands of the row's
// length (weight, bias) follow x.
struct Form {
  const char* name;
  const char* prim;
  graph::Attrs attrs;
  int row_operands = 0;
};

std::vector<Form> forms() {
  const graph::Attrs last_axis = {{"axes", std::vector<int64_t>{-1}}};
  auto norm = [](int64_t weight, int64_t bias) {
    return graph::Attrs{{"eps", 1e-5}, {"weight", weight}, {"bias", bias}};
  };
  return {
      {"softmax", "softmax", last_axis},
      {"log_softmax", "log_softmax", last_axis},
      {"layer_norm", "layer_norm", norm(0, 0)},
      {"layer_norm weight", "layer_norm", norm(1, 0), 1},
      {"layer_norm bias", "layer_norm", norm(0, 1), 1},
      {"layer_norm weight bias", "layer_norm", norm(1, 1), 2},
      {"rms_norm", "rms_norm", {{"eps", 1e-6}, {"weight", int64_t{0}}}},
      {"rms_norm weight", "rms_norm", {{"eps", 1e-6}, {"weight", int64_t{1}}}, 1},
      {"gelu tanh", "gelu", {{"form", std::string("tanh")}}},
      {"gelu erf", "gelu", {{"form", std::string("erf")}}},
  };
}

// A graph of the form alone on x [rows, length] (and its weight and bias [length]).
Graph form_graph(const Form& form, int64_t rows, int64_t length, DType dtype) {
  Graph g;
  graph::Builder b(g);
  std::vector<NodeId> args = {b.input("x", {rows, length}, dtype)};
  for (int k = 0; k < form.row_operands; ++k) args.push_back(b.input(fmt::format("w{}", k), {length}, dtype));
  b.output("y", b.op(form.prim, args, form.attrs));
  return g;
}

// The rows of row_values.
constexpr int64_t kRows = 6;

// Rows of the cases the kernels must agree on: ordinary values; ties (the largest
// repeated); large magnitudes, one near the dtype's largest; every third element -inf
// (the whole row where it is one element); values far from 0 with a small spread; and
// subnormals, with a NaN in the middle of the row.
Tensor row_values(DType dtype, int64_t length, std::mt19937& rng) {
  std::normal_distribution<double> normal(0.0, 3.0);
  const double inf = std::numeric_limits<double>::infinity();
  const double subnormal = dtype == DType::f64 ? 1e-310 : 1e-39;
  Tensor x(dtype, {kRows, length});
  for (int64_t j = 0; j < length; ++j) {
    double values[kRows] = {normal(rng),
                            std::round(normal(rng) / 2),
                            normal(rng) * 1e15,
                            j % 3 == 0 ? -inf : normal(rng),
                            1000 + normal(rng) * 1e-3,
                            j == length / 2 ? std::nan("") : normal(rng) * subnormal};
    if (j == length / 2) values[2] = dtype == DType::f64 ? 1e300 : 3e38;
    for (int64_t r = 0; r < kRows; ++r) x.set_value(r * length + j, values[r]);
  }
  return x;
}

// The form's result on the host, by composite_math.h's functions: one call per row (or
// per element, gelu), as the generated kernel's threads make them.
Tensor on_host(const Graph& g, const std::vector<Tensor>& inputs) {
  const graph::Node& node = g.node(g.outputs[0].node);
  const Tensor& x = inputs[0];
  const int64_t length = x.shape().back();
  const int64_t rows = x.numel() / length;
  Tensor y(x.dtype(), x.shape());
  graph::visit_dtype(x.dtype(), [&](auto types) {
    using S = typename decltype(types)::storage;
    using C = typename decltype(types)::compute;
    const S* in = x.data<S>();
    S* out = y.data<S>();
    auto operand = [&](const char* attr, size_t at) {
      return node.attrs.get_int(attr) ? inputs[at].data<S>() : nullptr;
    };
    const double eps = node.op() == PrimId::gelu || node.op() == PrimId::softmax || node.op() == PrimId::log_softmax
                           ? 0.0
                           : node.attrs.get_double("eps");
    for (int64_t r = 0; r < rows; ++r) {
      const S* row = in + r * length;
      S* row_out = out + r * length;
      switch (node.op()) {
        case PrimId::softmax: cuda::softmax_row<S, C>(row, row_out, length); break;
        case PrimId::log_softmax: cuda::log_softmax_row<S, C>(row, row_out, length); break;
        case PrimId::layer_norm: {
          const S* weight = operand("weight", 1);
          const S* bias = operand("bias", weight ? 2 : 1);
          cuda::layer_norm_row<S, C>(row, weight, bias, row_out, length, eps);
          break;
        }
        case PrimId::rms_norm: cuda::rms_norm_row<S, C>(row, operand("weight", 1), row_out, length, eps); break;
        default:
          for (int64_t j = 0; j < length; ++j) {
            row_out[j] = node.attrs.get_string("form") == "tanh" ? cuda::gelu_tanh_element<S, C>(row[j])
                                                                 : cuda::gelu_erf_element<S, C>(row[j]);
          }
      }
    }
  });
  return y;
}

std::vector<Tensor> form_inputs(const Form& form, DType dtype, int64_t length, std::mt19937& rng) {
  std::vector<Tensor> inputs = {row_values(dtype, length, rng)};
  for (int k = 0; k < form.row_operands; ++k) inputs.push_back(random_tensor(dtype, {length}, rng));
  return inputs;
}

TEST(CudaComposites, GiveTheReferenceBitsOnTheHost) {
  std::mt19937 rng(17);
  for (const Form& form : forms()) {
    for (DType dtype : {DType::f32, DType::f64, DType::bf16}) {
      for (int64_t length : {1, 3, 32, 33, 768, 1000}) {
        SCOPED_TRACE(fmt::format("{} {} length {}", form.name, graph::dtype_name(dtype), length));
        Graph g = form_graph(form, kRows, length, dtype);
        ASSERT_TRUE(cuda::has_composite_kernel(g, g.node(g.outputs[0].node)));
        std::vector<Tensor> inputs = form_inputs(form, dtype, length, rng);
        EXPECT_EQ(compare_bits(on_host(g, inputs), run_on("reference", g, inputs)[0]), "");
      }
    }
  }
}

// The form of each composite that has no kernel is expanded, by node: the softmax over
// rows stays one node beside the one over columns, which is expanded; a bf16 gelu has a
// kernel, as the f32 one.
TEST(CudaComposites, KeepTheFormsWithAKernelAndExpandTheOthers) {
  Graph g;
  graph::Builder b(g);
  NodeId x = b.input("x", {4, 6}, DType::f32);
  NodeId rows = b.op("softmax", {x}, {{"axes", std::vector<int64_t>{-1}}});
  NodeId columns = b.op("softmax", {x}, {{"axes", std::vector<int64_t>{0}}});
  NodeId half = b.op("gelu", {b.cast(x, DType::bf16)}, {{"form", std::string("erf")}});
  NodeId odd_weight = b.op("rms_norm", {x, b.input("w", {1}, DType::f32)}, {{"eps", 1e-6}, {"weight", int64_t{1}}});
  NodeId scalar = b.op("gelu", {b.input("s", {}, DType::f32)}, {{"form", std::string("tanh")}});
  for (NodeId node : {rows, columns, half, odd_weight, scalar}) b.output(fmt::format("y{}", node), node);
  EXPECT_TRUE(cuda::has_composite_kernel(g, g.node(rows)));
  EXPECT_TRUE(cuda::has_composite_kernel(g, g.node(scalar)));
  EXPECT_FALSE(cuda::has_composite_kernel(g, g.node(columns)));
  EXPECT_TRUE(cuda::has_composite_kernel(g, g.node(half)));
  EXPECT_FALSE(cuda::has_composite_kernel(g, g.node(odd_weight)));
  EXPECT_EQ(cuda::missing_kernels(g), (std::vector<std::string>{"softmax (f32)", "rms_norm (f32)"}));
  Graph planned = cuda::with_composites_expanded(g);
  size_t composites = 0;
  for (const graph::Node& node : planned.nodes) composites += node.prim->composite();
  EXPECT_EQ(composites, 3u);
  EXPECT_EQ(cuda::missing_kernels(planned), std::vector<std::string>{});
  EXPECT_TRUE(cuda::has_kernel(PrimId::softmax));
  EXPECT_TRUE(cuda::has_kernel(PrimId::attention));  // in the forms its kernel takes
}

constexpr DType kDTypes[] = {DType::f32, DType::f64, DType::bf16};

// One graph of every form, f32, f64 and bf16.
Graph every_form() {
  Graph g;
  graph::Builder b(g);
  for (DType dtype : kDTypes) {
    NodeId x = b.input(fmt::format("x{}", graph::dtype_name(dtype)), {kRows, 40}, dtype);
    NodeId weight = b.input(fmt::format("w{}", graph::dtype_name(dtype)), {40}, dtype);
    for (const Form& form : forms()) {
      std::vector<NodeId> args = {x};
      for (int k = 0; k < form.row_operands; ++k) args.push_back(weight);
      b.output(fmt::format("{} {}", form.name, graph::dtype_name(dtype)), b.op(form.prim, args, form.attrs));
    }
  }
  return g;
}

TEST(CudaComposites, EachFormIsOneStepOfAGeneratedKernelThatNvrtcCompiles) {
  Graph g = every_form();
  EXPECT_EQ(cuda::missing_kernels(g), std::vector<std::string>{});
  cuda::Program program = cuda::plan_program(g);
  ASSERT_EQ(program.steps.size(), std::size(kDTypes) * forms().size());
  for (const cuda::Step& step : program.steps) {
    bool gelu = program.kernel_names[step.kernel].starts_with("sx_gelu_");
    EXPECT_EQ(step.kind, gelu ? cuda::Step::Kind::fused : cuda::Step::Kind::row);
    EXPECT_EQ(step.n, gelu ? kRows * 40 : kRows);
  }
  EXPECT_EQ(program.kernel_names.size(), std::size(kDTypes) * forms().size());
  for (const char* architecture : {"sm_80", "sm_90a"}) {
    EXPECT_GT(cuda::compile_cubin(program.source, architecture).size(), 1000u) << architecture;
  }
}

TEST(CudaComposites, GiveTheReferenceBitsOnTheGpu) {
  Graph g = every_form();
  std::mt19937 rng(19);
  std::vector<Tensor> inputs;
  for (const graph::NamedNode& input : g.inputs) {
    const graph::Node& node = g.node(input.node);
    // f32 and bf16 rows of every case; f64 ordinary values, whose results libdevice's
    // functions keep within a rounding or two of the reference's.
    bool rows = node.shape.size() == 2 && node.dtype != DType::f64;
    inputs.push_back(rows ? row_values(node.dtype, node.shape[1], rng) : random_tensor(node.dtype, node.shape, rng));
  }
  if (std::string reason = gpu_unusable_reason(); !reason.empty()) GTEST_SKIP() << reason;
  std::vector<Tensor> expected = run_on("reference", g, inputs);
  std::vector<Tensor> actual = run_on("cuda", g, inputs);
  for (size_t k = 0; k < expected.size(); ++k) {
    SCOPED_TRACE(g.outputs[k].name);
    if (expected[k].dtype() != DType::f64) {
      EXPECT_EQ(compare_bits(actual[k], expected[k]), "");
    } else {
      // libdevice's f64 exp, log, tanh and erf, within an ulp of the C library's.
      EXPECT_EQ(compare(actual[k], expected[k], false, 40), "");
    }
  }
}

}  // namespace
}  // namespace sx::device::testing
