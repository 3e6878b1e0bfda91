// The micro-batched step (train/step_runner.h) and the one tree its sums follow
// (distributed/ordered_sum.h): workers' subtrees complete the one-process sum bit for bit,
// the micro-batches the workers share, the global batch's results, and an exchange that
// fails.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "distributed/ordered_sum.h"
#include "io/test_util.h"
#include "lang/diagnostic.h"
#include "train/codes.h"
#include "train/run_checkpoints.h"
#include "train/run_start.h"
#include "train/step_runner.h"

namespace sx::train {
namespace {

// Leaves whose sum rounds differently in another order: large ones that cancel, and small.
std::vector<float> uneven_leaves(int n) {
  constexpr float kPattern[] = {1e8f, 1.0f, -1e8f, 1.0f};
  std::vector<float> leaves;
  for (int i = 0; i < n; ++i) leaves.push_back(kPattern[i % 4] * (1.0f + static_cast<float>(i) / 64.0f));
  return leaves;
}

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

float tree_sum_by_workers(const std::vector<float>& leaves, int workers) {
  auto add = [](float& left, float& right) { left += right; };
  const int per_worker = static_cast<int>(leaves.size()) / workers;
  distributed::OrderedSum<float> across(add);
  for (int r = 0; r < workers; ++r) {
    distributed::OrderedSum<float> mine(add);
    for (int j = 0; j < per_worker; ++j) mine.push(leaves[static_cast<size_t>(r * per_worker + j)]);
    if (workers > 1) {
      EXPECT_EQ(mine.pending(), 1u) << "worker " << r << " of " << workers;
    }
    const int level = mine.top_level();
    across.push(mine.finish(), level);
  }
  return across.finish();
}

TEST(OrderedSum, WorkersSubtreesCompleteTheOneProcessSumBitForBit) {
  for (int leaves : {8, 12, 16}) {
    const std::vector<float> values = uneven_leaves(leaves);
    distributed::OrderedSum<float> one([](float& left, float& right) { left += right; });
    for (float v : values) one.push(v);
    const float alone = one.finish();
    for (int workers = 1; workers <= leaves; ++workers) {
      if (leaves % workers != 0 || (workers > 1 && !distributed::is_power_of_two(leaves / workers))) continue;
      EXPECT_EQ(bits(tree_sum_by_workers(values, workers)), bits(alone)) << leaves << " leaves, " << workers;
    }
    float left_to_right = 0;
    for (float v : values) left_to_right += v;
    EXPECT_NE(bits(left_to_right), bits(alone)) << "the leaves must tell the orders apart";
  }
}

constexpr const char* kMicroRunFile = R"(
(require "sexpgpu/nn")
(defvar model (mlp 2 8 :out 3))
(defun prepare (batch) (list :inputs (field batch :x) :targets (field batch :y)))
(defun loss (logits prepared)
  (let ((l (cross-entropy logits (getf prepared :targets))))
    (metric :half (/ l 2))
    (counter :rows (first (shape logits)))
    (guard (< l 100.0) "the loss is small")
    l))
(defrun :seed 2 :data (jsonl "data.jsonl" :fields [:x :y]) :batch 8 MICRO :steps 6
        :optimizer (adamw :lr 0.01) :grad-clip 1.0)
)";

struct MicroRun {
  io::testing::TempDir dir;
  std::unique_ptr<Session> session;
  std::unique_ptr<device::Device> cpu = device::make_device("cpu", {.cpu_cores = 1});
  std::shared_ptr<const Loader> loader;

  explicit MicroRun(const std::string& micro) {
    std::string text = kMicroRunFile;
    text.replace(text.find("MICRO"), 5, micro);
    std::ofstream(dir.file("run.sx")) << text;
    std::ofstream data(dir.file("data.jsonl"));
    for (int i = 0; i < 16; ++i)
      data << "{\"x\": [" << i * 0.5 << ", " << 2 - i * 0.25 << "], \"y\": " << i % 3 << "}\n";
    data.close();
    SessionOptions options;
    options.interpreter.library_dirs = {SEXPGPU_LIB_DIR};
    session = std::make_unique<Session>(options);
    session->load(dir.file("run.sx"));
    loader = open_loader(*as_loader_spec(*session->settings().find("data")));
  }

  // The first step's results, micro-batched on `world` or fused.
  StepResults first_step(std::optional<MicroBatches> micro, distributed::World* world) {
    StepGraph step =
        trace_step(*session, *loader, {.batch = micro ? micro->rows : 8, .total_steps = 6, .split = micro.has_value()});
    runtime::Store store(*cpu);
    resume_or_start(*session, store, step, checkpoint_tables(*session, step), RunPlace{});
    const StepData data{.loader = loader, .seed = 2, .first = 0, .end = 6};
    std::unique_ptr<StepRunner> runner = micro ? micro_batched_steps(*session, *cpu, step, data, *micro, *world)
                                               : fused_steps(*session, *cpu, step, data, 8);
    double waited = 0;
    return runner->run(store, 0, waited);
  }
};

std::string code_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const lang::Error& e) {
    return e.diagnostic().code;
  }
  return "none";
}

TEST(MicroBatches, AreSharedByWorkersThatEachOwnAPowerOfTwo) {
  MicroRun set(":micro-batch 2");
  const RunSettings& run = set.session->settings();
  MicroBatches one = micro_batches(run, 2, 8, 1);
  EXPECT_EQ(one.rows, 2);
  EXPECT_EQ(one.count, 4);
  EXPECT_EQ(one.per_worker, 4);
  EXPECT_EQ(micro_batches(run, 2, 8, 4).per_worker, 1);
  EXPECT_EQ(code_of([&] { micro_batches(run, 2, 8, 3); }), kBatchNotSplit);
  EXPECT_EQ(code_of([&] { micro_batches(run, 2, 6, 1); }), "none");  // 3 micro-batches, one worker
  EXPECT_EQ(code_of([&] { micro_batches(run, 2, 7, 1); }), kBatchNotSplit);
  // Without :micro-batch, the most parts up to 8, a power of two, that divide the batch.
  EXPECT_EQ(micro_batches(run, std::nullopt, 8, 2).rows, 1);
  EXPECT_EQ(micro_batches(run, std::nullopt, 12, 1).count, 4);
  EXPECT_EQ(micro_batches(run, std::nullopt, 7, 1).count, 1);
}

TEST(MicroBatchedStep, ReportsTheGlobalBatchAsTheFusedStepDoes) {
  // A session traces one step: each is its own, from the same seed.
  MicroRun fused_run(":micro-batch 2"), set(":micro-batch 2");
  StepResults fused = fused_run.first_step(std::nullopt, nullptr);
  std::unique_ptr<distributed::World> alone = distributed::world_alone();
  StepResults micro = set.first_step(micro_batches(set.session->settings(), 2, 8, 1), alone.get());
  ASSERT_EQ(micro.metrics.size(), fused.metrics.size());
  for (size_t k = 0; k < fused.metrics.size(); ++k) {
    EXPECT_EQ(micro.metrics[k].first, fused.metrics[k].first);
    EXPECT_NEAR(micro.metrics[k].second, fused.metrics[k].second, 1e-5 * std::abs(fused.metrics[k].second) + 1e-6)
        << fused.metrics[k].first;
  }
  ASSERT_EQ(micro.counts.size(), 1u);
  EXPECT_EQ(micro.counts[0].second, 8);  // every micro-batch's rows
  EXPECT_TRUE(micro.failed_guards.empty());
}

// Rank 0 of two whose exchanges fail, as when the other worker is gone.
class LostWorld final : public distributed::World {
 public:
  int rank() const override { return 0; }
  int size() const override { return 2; }
  void all_gather(std::span<const std::byte>, std::span<std::byte>) override {
    throw distributed::WorldError("the other worker is gone");
  }
  void all_to_all(std::span<const std::byte>, std::span<std::byte>) override {
    throw distributed::WorldError("the other worker is gone");
  }

 protected:
  void stop_all(int) override {}
};

TEST(MicroBatchedStep, StopsWithACodeWhenAnExchangeFails) {
  MicroRun set(":micro-batch 2");
  LostWorld lost;
  try {
    set.first_step(micro_batches(set.session->settings(), 2, 8, 2), &lost);
    FAIL() << "the step ran without the other worker";
  } catch (const lang::Error& e) {
    EXPECT_EQ(e.diagnostic().code, std::string("E-RUN-013"));
    EXPECT_NE(e.diagnostic().message.find("the other worker is gone"), std::string::npos) << e.diagnostic().message;
  }
}

}  // namespace
}  // namespace sx::train
