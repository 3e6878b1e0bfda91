// The cuda device's kernels of the optimizer updates (adamw, sgd) without a GPU:
// update_math.h's functions, an element at a time as each GPU thread computes it, give the
// reference's bits of the update's decomposition in every form, over ordinary and edge
// values; an update is one step of a generated kernel that NVRTC compiles, its parts
// slices of its values. On a GPU, the plan against the reference; skipped, saying why,
// where there is none.
#include <gtest/gtest.h>

#include "device/cuda/codegen.h"
#include "device/cuda/cuda_device.h"
#include "device/cuda/nvrtc.h"
#include "device/cuda/program.h"
#include "device/cuda/update_math.h"
#include "formula_cases.h"
#include "util.h"

// Named apart from the other cuda tests' helpers, which a unity build compiles beside these.
namespace sx::device::testing::cuda_updates {
namespace {

using graph::NodeId, graph::PrimId;

// An update's form: adamw (weight decay or not) or sgd (weight decay, momentum).
struct Form {
  bool adamw = true;
  bool decays = false;
  bool momentum = false;
  std::string name() const {
    return fmt::format("{}{}{}", adamw ? "adamw" : "sgd", decays ? " weight_decay" : "", momentum ? " momentum" : "");
  }
};

std::vector<Form> forms() {
  return {{true, false, false}, {true, true, false},  {false, false, false},
          {false, true, false}, {false, false, true}, {false, true, true}};
}

// The elements each tensor operand cycles through besides random ones: zeros, infinities,
// NaN, subnormals, the largest floats and values of mixed magnitude.
constexpr float kEdges[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-40f, -3e-39f, 3.4e38f, -3.4e38f, 1e-30f, 1e30f};

Tensor edge_tensor(int64_t n, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 2.0f);
  Tensor t(DType::f32, {n});
  for (int64_t i = 0; i < n; ++i) {
    const int64_t at = static_cast<int64_t>(rng() % (2 * std::size(kEdges)));
    t.set_value(i, at < static_cast<int64_t>(std::size(kEdges)) ? kEdges[at] : normal(rng));
  }
  return t;
}

Tensor scalar(float value) {
  Tensor t(DType::f32, {});
  t.set_value(0, value);
  return t;
}

// The update alone on a parameter of n elements, its stacked values the output; and its
// inputs: edge tensors, the scalars an optimizer gives (`first` for sgd's flag).
struct Case {
  Graph graph;
  std::vector<Tensor> inputs;
};

Case update_case(const Form& form, int64_t n, bool first, std::mt19937& rng) {
  Case c;
  graph::Builder b(c.graph);
  std::vector<NodeId> args;
  auto tensor = [&](const char* name) {
    args.push_back(b.input(name, {n}, DType::f32));
    c.inputs.push_back(edge_tensor(n, rng));
  };
  auto number = [&](const char* name, float value) {
    args.push_back(b.input(name, {}, DType::f32));
    c.inputs.push_back(scalar(value));
  };
  tensor("p");
  tensor("g");
  if (form.adamw) {
    tensor("m");
    tensor("v");
    const float beta1 = 0.9f, beta2 = 0.999f;
    number("beta1", beta1);
    number("rest1", 1 - beta1);
    number("beta2", beta2);
    number("rest2", 1 - beta2);
    number("bias2_sqrt", std::sqrt(1 - beta2 * beta2 * beta2));
    number("eps", 1e-8f);
    number("neg_step", -3e-4f / (1 - beta1 * beta1 * beta1));
    if (form.decays) number("decay", 1 - 3e-4f * 0.1f);
    b.output("values", b.op("adamw", args, {{"weight_decay", int64_t{form.decays}}}));
    return c;
  }
  number("neg_step", -0.01f);
  if (form.decays) number("weight_decay", 0.05f);
  if (form.momentum) {
    tensor("buffer");
    number("momentum", 0.9f);
    args.push_back(b.input("first", {}, DType::boolean));
    Tensor flag(DType::boolean, {});
    flag.set_value(0, first ? 1 : 0);
    c.inputs.push_back(flag);
  }
  b.output("values", b.op("sgd", args, {{"weight_decay", int64_t{form.decays}}, {"momentum", int64_t{form.momentum}}}));
  return c;
}

// The update's values on the host, by update_math.h's functions, an element per call as
// the generated kernel's threads make them.
Tensor on_host(const Form& form, const std::vector<Tensor>& in, const graph::Shape& shape) {
  Tensor out(DType::f32, shape);
  const int64_t n = in[0].numel();
  auto f = [&](size_t k) { return in[k].data<float>(); };
  auto s = [&](size_t k) { return in[k].data<float>()[0]; };
  float* values = out.data<float>();
  for (int64_t i = 0; i < n; ++i) {
    if (form.adamw) {
      const cuda::AdamwScalars scalars{s(4), s(5), s(6), s(7), s(8), s(9), s(10), form.decays ? s(11) : 1.0f};
      if (form.decays) {
        cuda::adamw_element<true>(f(0), f(1), f(2), f(3), scalars, values, n, i);
      } else {
        cuda::adamw_element<false>(f(0), f(1), f(2), f(3), scalars, values, n, i);
      }
      continue;
    }
    const size_t buffer = form.decays ? 4 : 3;
    const float weight_decay = form.decays ? s(3) : 0.0f;
    if (!form.momentum) {
      if (form.decays) {
        cuda::sgd_element<true, false>(f(0), f(1), s(2), weight_decay, nullptr, 0.0f, false, values, n, i);
      } else {
        cuda::sgd_element<false, false>(f(0), f(1), s(2), weight_decay, nullptr, 0.0f, false, values, n, i);
      }
      continue;
    }
    const bool first = in[buffer + 2].value(0) != 0;
    if (form.decays) {
      cuda::sgd_element<true, true>(f(0), f(1), s(2), weight_decay, f(buffer), s(buffer + 1), first, values, n, i);
    } else {
      cuda::sgd_element<false, true>(f(0), f(1), s(2), weight_decay, f(buffer), s(buffer + 1), first, values, n, i);
    }
  }
  return out;
}

TEST(CudaUpdates, GiveTheReferenceBitsOnTheHost) {
  std::mt19937 rng(23);
  for (const Form& form : forms()) {
    for (bool first : {false, true}) {
      if (first && !form.momentum) continue;
      for (int64_t n : {1, 7, 300}) {
        SCOPED_TRACE(fmt::format("{}{} n {}", form.name(), first ? " first" : "", n));
        Case c = update_case(form, n, first, rng);
        const graph::Node& update = c.graph.node(c.graph.outputs[0].node);
        ASSERT_TRUE(cuda::has_composite_kernel(c.graph, update));
        EXPECT_EQ(compare_bits(on_host(form, c.inputs, update.shape), run_on("reference", c.graph, c.inputs)[0]), "");
      }
    }
  }
}

// A training step's shape of it: the update's parts read by the step's outputs. The
// update is one step of its kernel; its parts are expanded into slices of its values.
Graph with_parts(const Form& form) {
  std::mt19937 rng(29);
  Graph g = update_case(form, 12, false, rng).graph;
  const NodeId update = g.outputs[0].node;
  graph::Builder b(g);
  g.outputs.clear();
  const int values = form.adamw ? 3 : (form.momentum ? 2 : 1);
  if (values == 1) {
    b.output("p", update);  // sgd without momentum: its one value, not stacked
    return g;
  }
  for (int k = 0; k < values; ++k) {
    b.output(fmt::format("value{}", k), b.op("part", {update}, {{"index", int64_t{k}}}));
  }
  return g;
}

TEST(CudaUpdates, EachFormIsOneStepOfAGeneratedKernelThatNvrtcCompiles) {
  std::string source;
  for (const Form& form : forms()) {
    SCOPED_TRACE(form.name());
    Graph g = with_parts(form);
    EXPECT_TRUE(cuda::has_kernel(form.adamw ? PrimId::adamw : PrimId::sgd));
    EXPECT_FALSE(cuda::has_kernel(PrimId::part));
    Graph planned = cuda::with_composites_expanded(g);
    EXPECT_EQ(cuda::missing_kernels(planned), std::vector<std::string>{});
    cuda::Program program = cuda::plan_program(planned);
    ASSERT_EQ(program.kernel_names.size(), 1u);
    EXPECT_TRUE(program.kernel_names[0].starts_with("sx_update_"));
    size_t updates = 0;
    for (const cuda::Step& step : program.steps) {
      if (step.kind != cuda::Step::Kind::fused) continue;
      ++updates;
      EXPECT_EQ(step.n, 12);
    }
    EXPECT_EQ(updates, 1u);
    source += program.source;
  }
  for (const char* architecture : {"sm_80", "sm_90a"}) {
    EXPECT_GT(cuda::compile_cubin(source, architecture).size(), 1000u) << architecture;
  }
}

TEST(CudaUpdates, GiveTheReferenceBitsOnTheGpu) {
  if (std::string reason = gpu_unusable_reason(); !reason.empty()) GTEST_SKIP() << reason;
  std::mt19937 rng(31);
  for (const Form& form : forms()) {
    for (bool first : {false, true}) {
      if (first && !form.momentum) continue;
      SCOPED_TRACE(fmt::format("{}{}", form.name(), first ? " first" : ""));
      Case c = update_case(form, 1000, first, rng);
      // GPU NaNs are the canonical one, which compare_bits takes as any NaN.
      EXPECT_EQ(compare_bits(run_on("cuda", c.graph, c.inputs)[0], run_on("reference", c.graph, c.inputs)[0]), "");
    }
  }
}

}  // namespace
}  // namespace sx::device::testing::cuda_updates
