// The prefetcher: batches in step order, equal to the loader's own; the seconds waited;
// clean shutdown however far ahead it is; the loader's exception rethrown on next().
#include "train/prefetcher.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "io/test_util.h"

namespace sx::train {
namespace {

using namespace std::chrono_literals;
using io::testing::TempDir;
using io::testing::write_file;

// A loader whose batch is one i64 tensor [batch] holding the step; it sleeps `delay`
// per batch, throws at `fail_at`, and counts the batches it made.
class FakeLoader final : public Loader {
 public:
  explicit FakeLoader(std::chrono::milliseconds delay = 0ms, int64_t fail_at = -1)
      : Loader(LoaderSpec{}), delay_(delay), fail_at_(fail_at) {
    fields_.push_back(FieldInfo{"step", graph::DType::i64, {}});
    size_ = 1;
  }
  Batch batch(uint64_t, int64_t step, int64_t batch_size) const override {
    std::this_thread::sleep_for(delay_);
    ++made;
    if (step == fail_at_) throw std::runtime_error("the loader broke at step " + std::to_string(step));
    graph::Tensor t(graph::DType::i64, {batch_size});
    for (int64_t i = 0; i < batch_size; ++i) t.data<int64_t>()[i] = step;
    return Batch{{{"step", std::move(t)}}};
  }
  mutable std::atomic<int> made{0};

 private:
  std::chrono::milliseconds delay_;
  int64_t fail_at_;
};

int64_t step_in(const Batch& batch) { return batch.find("step")->data<int64_t>()[0]; }

TEST(Prefetcher, GivesTheLoadersBatchesInStepOrder) {
  TempDir dir;
  std::string text;
  for (int i = 0; i < 2000; ++i) text += static_cast<char>('a' + i % 26);
  write_file(dir.file("input.txt"), text);
  LoaderSpec spec;
  spec.kind = LoaderKind::TextWindows;
  spec.path = spec.written = dir.file("input.txt");
  spec.window = 16;
  std::shared_ptr<const Loader> loader = open_loader(spec);
  Prefetcher prefetcher(loader, 9, 5, 4);
  for (int64_t step = 5; step < 25; ++step) {
    auto next = prefetcher.next();
    EXPECT_EQ(next.step, step);
    EXPECT_EQ(next.batch.fields, loader->batch(9, step, 4).fields);
    EXPECT_GE(next.waited_seconds, 0);
  }
}

TEST(Prefetcher, MakesAtMostDepthBatchesAhead) {
  auto loader = std::make_shared<FakeLoader>();
  Prefetcher prefetcher(loader, 0, 0, 2, {.depth = 3, .end_step = -1});
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(loader->made.load(), 3);
  EXPECT_EQ(step_in(prefetcher.next().batch), 0);
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(loader->made.load(), 4);
}

TEST(Prefetcher, SaysHowLongTheCallerWaited) {
  auto slow = std::make_shared<FakeLoader>(150ms);
  Prefetcher prefetcher(slow, 0, 0, 1);
  EXPECT_GE(prefetcher.next().waited_seconds, 0.1);
  auto fast = std::make_shared<FakeLoader>();
  Prefetcher ahead(fast, 0, 0, 1);
  std::this_thread::sleep_for(200ms);
  EXPECT_LT(ahead.next().waited_seconds, 0.1);
}

TEST(Prefetcher, StopsCleanlyWhereverItIs) {
  auto started = std::chrono::steady_clock::now();
  {
    // Full queue, the thread waiting for room.
    Prefetcher full(std::make_shared<FakeLoader>(), 0, 0, 1);
    std::this_thread::sleep_for(20ms);
  }
  {
    // In the middle of a slow batch: it finishes that one and makes no more.
    auto slow = std::make_shared<FakeLoader>(200ms);
    {
      Prefetcher busy(slow, 0, 0, 1);
      std::this_thread::sleep_for(20ms);
    }
    EXPECT_LE(slow->made.load(), 1);
  }
  {
    // Never asked, never started waiting: destroyed at once.
    Prefetcher idle(std::make_shared<FakeLoader>(), 0, 0, 1);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - started, 2s);
}

TEST(Prefetcher, RethrowsTheLoadersExceptionOnNext) {
  auto loader = std::make_shared<FakeLoader>(0ms, 3);
  Prefetcher prefetcher(loader, 0, 0, 1);
  for (int64_t step = 0; step < 3; ++step) EXPECT_EQ(prefetcher.next().step, step);
  for (int again = 0; again < 2; ++again) {
    try {
      prefetcher.next();
      FAIL() << "no exception";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "the loader broke at step 3");
    }
  }
  // It made nothing after the failure.
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(loader->made.load(), 4);
}

TEST(Prefetcher, ALoaderErrorKeepsItsDiagnostic) {
  TempDir dir;
  std::string tokens;
  for (int i = 0; i < 64; ++i) tokens += std::string("\xff\xff\xff\xff", 4);  // -1 as i32
  write_file(dir.file("t.bin"), tokens);
  LoaderSpec spec;
  spec.kind = LoaderKind::TokenWindows;
  spec.format = TokenFormat::i32;
  spec.path = spec.written = dir.file("t.bin");
  spec.window = 4;
  Prefetcher prefetcher(open_loader(spec), 0, 0, 2);
  try {
    prefetcher.next();
    FAIL() << "no exception";
  } catch (const lang::Error& e) {
    EXPECT_EQ(e.diagnostic().code, "E-RUN-022");
  }
}

TEST(Prefetcher, EndsAtItsEndStep) {
  auto loader = std::make_shared<FakeLoader>();
  Prefetcher prefetcher(loader, 0, 10, 1, {.depth = 4, .end_step = 12});
  EXPECT_EQ(prefetcher.next().step, 10);
  EXPECT_EQ(prefetcher.next().step, 11);
  EXPECT_THROW(prefetcher.next(), std::out_of_range);
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(loader->made.load(), 2);
}

}  // namespace
}  // namespace sx::train
