// A training step on the cpu device gives the same bits whether it runs the optimizer's
// updates by their kernels (device/cpu/kernels/update.cc) or as their decompositions (as
// it did before they had kernels): after a few steps every parameter and every tensor of
// the optimizer's state, what a checkpoint holds, has the same bytes, for adamw and for
// sgd with momentum, with and without gradient clipping and an EMA.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>

#include "device/device.h"
#include "forwarding_device.h"
#include "io/test_util.h"
#include "runtime/compile.h"
#include "train/run_checkpoints.h"
#include "train/run_start.h"
#include "train/session.h"
#include "train/step.h"
#include "train/step_feed.h"
#include "train/step_results.h"

namespace sx::train {
namespace {

// The cpu device, but running the updates (and their parts) as their decompositions.
class DecomposingDevice : public sx::testing::ForwardingDevice {
 public:
  using ForwardingDevice::ForwardingDevice;
  bool runs(const graph::Graph& graph, const graph::Node& node) const override {
    const graph::PrimId op = node.op();
    if (op == graph::PrimId::adamw || op == graph::PrimId::sgd || op == graph::PrimId::part) return false;
    return inner_.runs(graph, node);
  }
};

std::string run_file(const std::string& settings) {
  return R"(
(require "sexpgpu/nn")
(defvar model (mlp 2 8 :out 3))
(defun loss (logits batch) (cross-entropy logits (field batch :y)))
(defun prepare (batch) (list :inputs (field batch :x) :y (field batch :y)))
(defrun :seed 2 :data (jsonl "data.jsonl" :fields [:x :y]) :batch 4 :steps 4 )" +
         settings + ")\n";
}

struct Trained {
  std::map<std::string, graph::Tensor> values;  // the parameters and the optimizer's state, by name
  bool decomposes_updates = false;              // whether the step runs its updates as their decompositions
};

Trained trained(const io::testing::TempDir& dir, device::Device& device, int64_t steps) {
  SessionOptions options;
  options.interpreter.library_dirs = {SEXPGPU_LIB_DIR};
  Session session(options);
  session.load(dir.file("run.sx"));
  auto loader = open_loader(*as_loader_spec(*session.settings().find("data")));
  StepGraph step = trace_step(session, *loader, {.batch = 4, .total_steps = steps});
  runtime::Store store(device);
  resume_or_start(session, store, step, checkpoint_tables(session, step), RunPlace{});
  runtime::Program program(device, session.under_precision(step.graph), step.inputs, step.outputs);
  StepFeed feed(device, program, session.seed(), kDataPrefix);
  for (int64_t s = 0; s < steps; ++s) {
    check_step(run_step(session, program, store, feed.fill(loader->batch(session.seed(), s, 4), s), s), step, s);
  }
  Trained out;
  for (const std::string& path : store.paths()) out.values.emplace(path, store.read(path));
  const std::vector<graph::PrimId> decomposed = runtime::compile(device, step.graph).decomposed;
  for (graph::PrimId update : {graph::PrimId::adamw, graph::PrimId::sgd}) {
    out.decomposes_updates |= std::find(decomposed.begin(), decomposed.end(), update) != decomposed.end();
  }
  return out;
}

TEST(UpdateKernels, TrainTheBitsOfTheDecomposedUpdates) {
  auto cpu = device::make_device("cpu", {.cpu_cores = 2});
  DecomposingDevice decomposing(*cpu);
  for (const char* settings :
       {":optimizer (adamw :lr 0.01 :weight-decay 0.01) :grad-clip 1.0 :ema 0.999", ":optimizer (adamw :lr 0.01)",
        ":optimizer (sgd :lr 0.1 :momentum 0.9 :weight-decay 0.01) :grad-clip 0.5", ":optimizer (sgd :lr 0.1)"}) {
    SCOPED_TRACE(settings);
    io::testing::TempDir dir;
    std::ofstream(dir.file("run.sx")) << run_file(settings);
    std::ofstream data(dir.file("data.jsonl"));
    for (int i = 0; i < 8; ++i)
      data << "{\"x\": [" << i * 0.5 << ", " << 2 - i * 0.25 << "], \"y\": " << i % 3 << "}\n";
    data.close();
    const Trained by_kernels = trained(dir, *cpu, 4), decomposed = trained(dir, decomposing, 4);
    EXPECT_FALSE(by_kernels.decomposes_updates);
    EXPECT_TRUE(decomposed.decomposes_updates);
    ASSERT_EQ(by_kernels.values.size(), decomposed.values.size());
    EXPECT_GE(by_kernels.values.size(), 4u);
    for (const auto& [path, value] : by_kernels.values) EXPECT_TRUE(value == decomposed.values.at(path)) << path;
  }
}

}  // namespace
}  // namespace sx::train
