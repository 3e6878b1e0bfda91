// The training loop's parts (train/run_start.h, step_feed.h, step_results.h) run step
// after step as `train` runs them: after the first step no buffer of the device is
// allocated (the feed writes each batch, random key and step number into its own), and
// a step's loss, metrics, counters and guards come back in one copy from the device.
#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include "device/device.h"
#include "forwarding_device.h"
#include "io/test_util.h"
#include "train/run_checkpoints.h"
#include "train/run_start.h"
#include "train/session.h"
#include "train/step.h"
#include "train/step_feed.h"
#include "train/step_results.h"

namespace sx::train {
namespace {

// Counts the buffers made on the device and the copies from it.
class CountingDevice : public sx::testing::ForwardingDevice {
 public:
  using ForwardingDevice::ForwardingDevice;
  device::Buffer allocate(const graph::ValueType& type) override {
    ++buffers_made;
    return inner_.allocate(type);
  }
  device::Buffer upload(graph::Tensor value) override {
    ++buffers_made;
    return inner_.upload(std::move(value));
  }
  device::Event download_into(const device::Buffer& buffer, std::span<uint8_t> bytes) override {
    ++downloads;
    return inner_.download_into(buffer, bytes);
  }

  int64_t buffers_made = 0, downloads = 0;
};

// A classifier whose step reads a batch, a random key (the noise on its inputs) and the
// step (AdamW's), and logs a metric, a counter and a guard.
constexpr const char* kRunFile = R"(
(require "sexpgpu/nn")
(defvar model (mlp 2 8 :out 3))
(defun prepare (batch)
  (list :inputs (+ (field batch :x) (normal [4 2] :std 0.01)) :targets (field batch :y)))
(defun loss (logits prepared)
  (let ((l (cross-entropy logits (getf prepared :targets))))
    (metric :half (/ l 2))
    (counter :rows 4)
    (guard (< l 100.0) "the loss is small")
    l))
(defrun :seed 2 :data (jsonl "data.jsonl" :fields [:x :y]) :batch 4 :steps 6 :optimizer (adamw :lr 0.01))
)";

TEST(StepLoop, AllocatesNoBufferAfterTheFirstStepAndReadsEachStepInOneCopy) {
  io::testing::TempDir dir;
  std::ofstream(dir.file("run.sx")) << kRunFile;
  std::ofstream data(dir.file("data.jsonl"));
  for (int i = 0; i < 8; ++i) data << "{\"x\": [" << i * 0.5 << ", " << 2 - i * 0.25 << "], \"y\": " << i % 3 << "}\n";
  data.close();
  SessionOptions options;
  options.interpreter.library_dirs = {SEXPGPU_LIB_DIR};
  Session session(options);
  session.load(dir.file("run.sx"));
  auto cpu = device::make_device("cpu", {.cpu_cores = 1});
  CountingDevice device(*cpu);

  auto loader = open_loader(*as_loader_spec(*session.settings().find("data")));
  StepGraph step = trace_step(session, *loader, {.batch = 4, .total_steps = 6});
  runtime::Store store(device);
  RunStart start = resume_or_start(session, store, step, checkpoint_tables(session, step), RunPlace{});
  runtime::Program program(device, session.under_precision(step.graph), step.inputs, step.outputs);
  std::vector<runtime::Role> fed;
  for (size_t i : program.fed_inputs()) fed.push_back(program.inputs()[i].role);
  EXPECT_EQ(std::count(fed.begin(), fed.end(), runtime::Role::random_key), 1);
  EXPECT_EQ(std::count(fed.begin(), fed.end(), runtime::Role::step), 1);
  StepFeed feed(device, program, session.seed(), kDataPrefix);

  int64_t made_by_the_first_step = 0;
  for (int64_t s = 0; s < 6; ++s) {
    const Batch batch = loader->batch(session.seed(), s, 4);
    const int64_t downloads = device.downloads;
    StepResults results = run_step(session, program, store, feed.fill(batch, s), s);
    EXPECT_EQ(device.downloads - downloads, 1) << "step " << s;
    std::vector<std::pair<std::string, double>> logged = results.logged(start.counters);
    check_step(results, step, s);
    ASSERT_EQ(logged.size(), 4u);
    EXPECT_EQ(logged[0].first, "loss");
    EXPECT_EQ(logged[1].first, "lr");
    EXPECT_EQ(logged[2].first, "half");
    EXPECT_NEAR(logged[2].second, results.loss / 2, 1e-6 * results.loss);
    EXPECT_EQ(logged[3], (std::pair<std::string, double>{"rows", 4.0 * static_cast<double>(s + 1)}));
    if (s == 0) made_by_the_first_step = device.buffers_made;
  }
  EXPECT_EQ(device.buffers_made, made_by_the_first_step);
}

}  // namespace
}  // namespace sx::train
