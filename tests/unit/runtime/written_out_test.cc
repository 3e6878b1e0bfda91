// The composites change no node: a training step traced with the library, whose softmax,
// norms, GELU, cross-entropy and attention are one composite node each (and their
// gradients one composite_gradient node per input), compiles to the nodes that the same
// step traces with those operations written out in primitives (written_out/sexpgpu/ops.sx,
// the library as it wrote them before), in f32 and under the bf16 policy. Only the order of
// a gradient's sums differs, where a composite reads an input several times: its own
// contributions are summed first, then added to the input's others. The optimizer's update
// is one composite per parameter either way, which the cpu device runs by its kernel: one
// step per parameter in the profile.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "device/device.h"
#include "graph/passes.h"
#include "graph/primitive.h"
#include "graph/text.h"
#include "occurrences.h"
#include "runtime/compile.h"
#include "train/loaders.h"
#include "train/session.h"
#include "train/step.h"

namespace sx::runtime {
namespace {

using sx::testing::occurrences;

namespace fs = std::filesystem;

// The other composites: an RMS norm, the exact GELU, softmax and log-softmax over a
// batch of vectors, with SGD's momentum and weight decay.
constexpr const char* kClassifier = R"(
(require "sexpgpu/nn")
(defmodel net (dim classes)
  (let ((up (linear dim 24)) (norm (rms-norm 24)) (down (linear 24 classes)))
    (lambda (x) (down (gelu-erf (norm (up x)))))))
(defvar model (net 8 5))
(defun prepare (batch) (list :inputs (field batch :x) :targets (field batch :y)))
(defun loss (logits prepared)
  (+ (cross-entropy logits (getf prepared :targets))
     (mean (* (softmax logits :axis 0) (log-softmax logits)))
     (mean (normalize logits))))
(defrun :seed 2 :data (jsonl "rows.jsonl" :fields [:x :y]) :batch 4 :steps 4
        :optimizer (sgd :lr 0.1 :momentum 0.9 :weight-decay 0.01))
)";

// A folder holding `run.sx` and the data the runs read.
fs::path run_folder(const std::string& name, const std::string& run) {
  const fs::path dir = fs::temp_directory_path() / ("sexpgpu-written-out-" + name + "-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "run.sx") << run;
  std::ofstream text(dir / "text.txt");
  for (int i = 0; i < 40; ++i) text << "the keeper of the lighthouse counts ships. ";
  std::ofstream rows(dir / "rows.jsonl");
  for (int i = 0; i < 16; ++i) {
    rows << "{\"x\": [";
    for (int k = 0; k < 8; ++k) rows << (k ? ", " : "") << ((i * 7 + k * 3) % 11 - 5) / 4.0;
    rows << "], \"y\": " << i % 5 << "}\n";
  }
  return dir;
}

graph::Graph step_graph(const fs::path& file, const std::vector<std::string>& library_dirs) {
  train::SessionOptions options;
  options.interpreter.library_dirs = library_dirs;
  train::Session session(options);
  session.load(file.string());
  const lang::Value* data = session.settings().find("data");
  std::unique_ptr<train::Loader> loader = train::open_loader(*train::as_loader_spec(*data));
  const int64_t batch = session.settings().find("batch")->as_int();
  return train::trace_step(session, *loader, {.batch = batch, .total_steps = 4}).graph;
}

std::map<std::string, int> composites_in(const graph::Graph& g) {
  std::map<std::string, int> counted;
  for (const graph::Node& node : g.nodes) {
    if (node.prim->composite()) ++counted[std::string(node.op_name())];
  }
  return counted;
}

// The profile of one run of `g`, compiled for the cpu, on zeros.
std::string profile(const graph::Graph& g) {
  auto cpu = device::make_device("cpu", {.cpu_cores = 1});
  setenv("SEXPGPU_CPU_PROFILE", "1", 1);
  ::testing::internal::CaptureStderr();
  {
    Compiled compiled = compile(*cpu, g);
    std::vector<graph::Tensor> zeros;
    for (const graph::NamedNode& in : compiled.graph.inputs) {
      const graph::Node& node = compiled.graph.node(in.node);
      zeros.emplace_back(node.dtype, node.shape);
    }
    compiled.plan->run_host(zeros);
  }
  std::string printed = ::testing::internal::GetCapturedStderr();
  unsetenv("SEXPGPU_CPU_PROFILE");
  return printed;
}

// How many steps the profile's lines holding `what` count together.
int steps_of(const std::string& profile, const std::string& what) {
  int steps = 0;
  std::istringstream lines(profile);
  for (std::string line; std::getline(lines, line);) {
    if (line.find(what) == std::string::npos) continue;
    steps += std::stoi(line.substr(line.rfind(" x") + 2));
  }
  return steps;
}

struct Traced {
  graph::Graph with_composites, written_out;
};

Traced traced_both_ways(const std::string& name, const std::string& run) {
  const fs::path folder = run_folder(name, run);
  Traced t{step_graph(folder / "run.sx", {SEXPGPU_LIB_DIR}),
           step_graph(folder / "run.sx", {SEXPGPU_WRITTEN_OUT_DIR, SEXPGPU_LIB_DIR})};
  fs::remove_all(folder);
  return t;
}

// Each node of `g` as its primitive, attributes and type (not its inputs), counted.
std::map<std::string, int> nodes_of(const graph::Graph& g) {
  std::map<std::string, int> counted;
  for (const graph::Node& node : g.nodes) {
    ++counted[fmt::format("{} {{{}}} {}{}", node.op_name(), graph::attrs_str(node.attrs), graph::dtype_name(node.dtype),
                          graph::shape_str(node.shape))];
  }
  return counted;
}

void expect_the_same_nodes(const graph::Graph& with_composites, const graph::Graph& written_out) {
  auto reference = device::make_device("reference");
  for (bool bf16 : {false, true}) {
    SCOPED_TRACE(bf16 ? "bf16 products" : "f32");
    const graph::Graph a = bf16 ? graph::bf16_products(with_composites) : with_composites;
    const graph::Graph b = bf16 ? graph::bf16_products(written_out) : written_out;
    Compiled from_composites = compile(*reference, a), from_written_out = compile(*reference, b);
    EXPECT_EQ(nodes_of(from_composites.graph), nodes_of(from_written_out.graph));
  }
}

std::string file_text(const fs::path& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), {}};
}

// bench/gpt.sx: a GPT of sexpgpu/nn's layers (two blocks) with AdamW and clipping.
TEST(WrittenOut, TheBenchmarksGptStepWithCompositesIsTheStepWrittenOut) {
  const Traced t = traced_both_ways("gpt", file_text(SEXPGPU_BENCH_GPT));
  // Two blocks: a layer-norm before each attention and each MLP, and the final one.
  EXPECT_EQ(composites_in(t.with_composites),
            (std::map<std::string, int>{{"adamw", 29},
                                        {"attention", 2},
                                        {"composite_gradient", 5 * 3 + 2 * 3 + 2 + 1},  // one per float input
                                        {"cross_entropy", 1},
                                        {"gelu", 2},
                                        {"layer_norm", 5},
                                        {"part", 3 * 29}}));
  EXPECT_EQ(composites_in(t.written_out), (std::map<std::string, int>{{"adamw", 29}, {"part", 3 * 29}}));
  expect_the_same_nodes(t.with_composites, t.written_out);
  // Each of the 29 parameters' AdamW updates is one step of its kernel, which scales the
  // clipped gradient itself (a profile line per shape, with the steps of that shape
  // counted: "x2").
  const std::string printed = profile(t.with_composites);
  EXPECT_EQ(steps_of(printed, "adamw of f32["), 29) << printed;
  EXPECT_EQ(steps_of(printed, ", its gradient scaled by its last operand"), 29) << printed;
  // Each of the five layer-norms, and each of its gradients (by its input, weight and
  // bias), is one step of its kernel.
  EXPECT_EQ(steps_of(printed, "layer_norm of f32["), 5) << printed;
  for (int input = 0; input < 3; ++input) {
    EXPECT_EQ(steps_of(printed, fmt::format("layer_norm's gradient (input {}) of f32[", input)), 5) << printed;
  }
}

TEST(WrittenOut, AClassifiersStepWithCompositesIsTheStepWrittenOut) {
  const Traced t = traced_both_ways("classifier", kClassifier);
  EXPECT_EQ(composites_in(t.with_composites), (std::map<std::string, int>{{"composite_gradient", 7},
                                                                          {"cross_entropy", 1},
                                                                          {"gelu", 1},
                                                                          {"layer_norm", 1},
                                                                          {"log_softmax", 1},
                                                                          {"part", 2 * 5},
                                                                          {"rms_norm", 1},
                                                                          {"sgd", 5},
                                                                          {"softmax", 1}}));
  expect_the_same_nodes(t.with_composites, t.written_out);
}

}  // namespace
}  // namespace sx::runtime
