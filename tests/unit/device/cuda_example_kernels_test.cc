// The generated kernels of the example models' training steps, without a GPU: each step
// traced as `sexpgpu run` traces it, compiled for the cuda device by the runtime (its
// composites expanded where the device lacks a kernel for them), every kernel the cuda device
// generates for it compiled by NVRTC for sm_80 and sm_90a, and no primitive of it left
// without a cuda kernel.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "device/cuda/codegen.h"
#include "device/cuda/nvrtc.h"
#include "device/cuda/program.h"
#include "forwarding_device.h"
#include "graph/composite.h"
#include "io/test_util.h"
#include "runtime/compile.h"
#include "train/loaders.h"
#include "train/model_alone.h"
#include "train/session.h"
#include "train/step.h"

namespace sx::device::testing {
namespace {

// A device that supports what the cuda device supports and keeps the graph it is given
// to compile (running it on the reference device, which needs no GPU).
class GraphKeeper : public sx::testing::ForwardingDevice {
 public:
  using ForwardingDevice::ForwardingDevice;
  bool supports(graph::PrimId primitive) const override { return cuda::has_kernel(primitive); }
  // As the cuda device decides (CudaDevice::runs): a composite in a form its kernel takes.
  bool runs(const graph::Graph& graph, const graph::Node& node) const override {
    return supports(node.op()) && (!node.prim->composite() || cuda::has_composite_kernel(graph, node));
  }
  std::unique_ptr<Plan> compile(const graph::Graph& graph) override {
    kept = graph;
    return inner_.compile(graph);
  }
  graph::Graph kept;
};

// `graph` as the cuda device plans it: compiled by the runtime (the composites the device
// does not run in their form expanded, and those whose refused gradient reads their
// decomposition), then the device's own expansion.
graph::Graph as_planned(const graph::Graph& graph) {
  auto reference = make_device("reference");
  GraphKeeper keeper(*reference);
  runtime::compile(keeper, graph);
  return cuda::with_composites_expanded(keeper.kept);
}

std::unique_ptr<train::Session> loaded_session(const std::filesystem::path& run_file) {
  train::SessionOptions options;
  options.interpreter.library_dirs = {SEXPGPU_LIB_DIR};
  auto session = std::make_unique<train::Session>(options);
  session->load(run_file.string());
  return session;
}

// The step graph of the example's run file, as the cuda device plans it.
graph::Graph example_step(const std::filesystem::path& run_file) {
  std::unique_ptr<train::Session> session = loaded_session(run_file);
  auto loader = train::open_loader(*train::as_loader_spec(*session->settings().find("data")));
  train::StepGraph step = train::trace_step(*session, *loader, {.batch = 2, .total_steps = 2});
  return as_planned(session->under_precision(step.graph));
}

// Every kernel the cuda device generates for `graph` (more than `least`), compiled for both
// architectures.
void compile_generated_kernels(const graph::Graph& graph, size_t least = 10) {
  cuda::Program generated = cuda::generated_kernels(graph);
  const std::string& source = generated.source;
  size_t kernels = generated.kernel_names.size();
  EXPECT_GT(kernels, least);
  for (const char* architecture : {"sm_80", "sm_90a"}) {
    EXPECT_GT(cuda::compile_cubin(source, architecture).size(), 1000u) << architecture;
  }
  // Every primitive of the step has a cuda kernel: none is refused (E-DEVICE-007).
  EXPECT_EQ(cuda::missing_kernels(graph), std::vector<std::string>{});
}

// The composites the step keeps, each one node of a kernel of its own: "adamw",
// "composite_gradient of softmax input 0", ...
std::set<std::string> kept_composites(const graph::Graph& graph) {
  std::set<std::string> kept;
  for (const graph::Node& node : graph.nodes) {
    if (!node.prim->composite()) continue;
    kept.insert(node.op() == graph::PrimId::composite_gradient
                    ? fmt::format("composite_gradient of {} input {}", graph::gradient_of(node.attrs).name,
                                  node.attrs.get_int("input"))
                    : std::string(node.op_name()));
  }
  return kept;
}

// Its updates, and the attention's softmax, the GELU, the layer-norms and the
// cross-entropy with their gradients with respect to x (the logits), and the layer-norms'
// gradients with respect to their weight and bias, run by kernels of their own: none is
// expanded.
TEST(CudaExampleKernels, TinyLm) {
  graph::Graph step = example_step(std::filesystem::path(SEXPGPU_EXAMPLES_DIR) / "tiny-lm/run.sx");
  EXPECT_EQ(kept_composites(step),
            (std::set<std::string>{"adamw", "composite_gradient of cross_entropy input 0",
                                   "composite_gradient of gelu input 0", "composite_gradient of layer_norm input 0",
                                   "composite_gradient of layer_norm input 1",
                                   "composite_gradient of layer_norm input 2", "composite_gradient of softmax input 0",
                                   "cross_entropy", "gelu", "layer_norm", "softmax"}));
  compile_generated_kernels(step);
}

// The model alone, as `serve` runs it: its attention (causal) is one kernel.
TEST(CudaExampleKernels, TinyLmServed) {
  const std::filesystem::path run_file = std::filesystem::path(SEXPGPU_EXAMPLES_DIR) / "tiny-lm/run.sx";
  std::unique_ptr<train::Session> session = loaded_session(run_file);
  auto loader = train::open_loader(*train::as_loader_spec(*session->settings().find("data")));
  graph::Graph model = as_planned(train::trace_model_alone(*session, *loader).graph);
  EXPECT_EQ(kept_composites(model), (std::set<std::string>{"attention", "gelu", "layer_norm"}));
  compile_generated_kernels(model, 4);
}

// Under `:precision :bf16` the step's products take bf16 operands, cast from the f32
// weights and activations; the kernels are the f32 step's but for those (not compiled
// again here).
TEST(CudaExampleKernels, TinyLmUnderBf16HasAKernelForEveryPrimitive) {
  io::testing::TempDir dir;
  std::filesystem::path example = std::filesystem::path(SEXPGPU_EXAMPLES_DIR) / "tiny-lm";
  std::filesystem::copy_file(example / "text.txt", dir.file("text.txt"));
  std::ifstream in(example / "run.sx");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_NE(text.find("(defrun :seed 1"), std::string::npos);
  text.replace(text.find("(defrun :seed 1"), 15, "(defrun :seed 1 :precision :bf16");
  std::ofstream(dir.file("run.sx")) << text;
  graph::Graph step = example_step(dir.file("run.sx"));
  int bf16_products = 0;
  for (const graph::Node& node : step.nodes) {
    bf16_products += node.op() == graph::PrimId::matmul && node.dtype == graph::DType::bf16;
  }
  EXPECT_GT(bf16_products, 0);
  EXPECT_EQ(cuda::missing_kernels(step), std::vector<std::string>{});
}

// bench/gpt.sx, the benchmarks' GPT (its gpt-tiny; gpt-small has the same primitives):
// AdamW and gradient clipping beside the examples' layers.
TEST(CudaExampleKernels, BenchGptHasAKernelForEveryPrimitive) {
  io::testing::TempDir dir;
  std::filesystem::copy_file(std::filesystem::path(SEXPGPU_BENCH_DIR) / "gpt.sx", dir.file("gpt.sx"));
  std::ofstream text(dir.file("text.txt"));
  for (int line = 0; line < 40; ++line) text << "A story of a lighthouse keeper, told over and over again.\n";
  text.close();
  graph::Graph step = example_step(dir.file("gpt.sx"));
  EXPECT_GT(step.nodes.size(), 300u);
  EXPECT_EQ(cuda::missing_kernels(step), std::vector<std::string>{});
}

TEST(CudaExampleKernels, Addition) {
  io::testing::TempDir dir;
  std::filesystem::copy_file(std::filesystem::path(SEXPGPU_EXAMPLES_DIR) / "addition/run.sx", dir.file("run.sx"));
  // A few sums as make_data.py writes them: a, '+', b, '=' and the sum's digits reversed.
  for (const char* name : {"train.jsonl", "test.jsonl"}) {
    std::ofstream(dir.file(name)) << "{\"ids\": [1, 2, 3, 10, 4, 5, 6, 11, 9, 7, 5, 0]}\n"
                                     "{\"ids\": [0, 0, 7, 10, 0, 0, 5, 11, 2, 1, 0, 0]}\n";
  }
  compile_generated_kernels(example_step(dir.file("run.sx")));
}

}  // namespace
}  // namespace sx::device::testing
