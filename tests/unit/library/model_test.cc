// library::Model, the C API's model and `sexpgpu serve`'s: calls from several threads
// batched as serve batches its clients' ("Calls that arrive while the device is busy
// run together"), each with the bits it gets alone.
#include "library/model.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "forwarding_device.h"
#include "serve/fixture.h"

namespace sx::library {
namespace {

using serve::testing::TempDir;

TEST(LibraryModel, OneThreadsCallsRunOneAtATime) {
  TempDir tmp;
  serve::testing::write_model(tmp / "export", serve::testing::tiny_lm());
  Model model(tmp / "export", {.batch = 8});
  EXPECT_EQ(model.about().inputs.at(0).name, "inputs");
  EXPECT_EQ(model.source().shown, tmp / "export");
  for (uint32_t seed = 0; seed < 5; ++seed) {
    std::string answer = model.run(serve::testing::call_body({serve::testing::ids(seed)}));
    ASSERT_EQ(answer.at(0), 0) << answer.substr(1);
  }
  EXPECT_EQ(model.batcher().calls(), 5u);
  EXPECT_EQ(model.batcher().runs(), 5u);
}

// The cpu device, whose uploads wait while the test holds its gate closed: a batch's run
// uploads its calls' inputs first, so a closed gate holds the device busy.
// The device the gate holds: a base of GatedDevice's, made before the ForwardingDevice
// that refers to it.
struct OwnedCpu {
  std::unique_ptr<device::Device> cpu = device::make_device("cpu", {.cpu_cores = 1});
};

class GatedDevice : private OwnedCpu, public sx::testing::ForwardingDevice {
 public:
  GatedDevice() : ForwardingDevice(*cpu) {}
  device::Buffer upload(graph::Tensor value) override {
    std::unique_lock lock(mutex_);
    ++waiting_;
    changed_.notify_all();
    changed_.wait(lock, [&] { return open_; });
    --waiting_;
    return inner_.upload(std::move(value));
  }

  void wait_for_an_upload() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return waiting_ > 0; });
  }
  void set_open(bool open) {
    std::lock_guard lock(mutex_);
    open_ = open;
    changed_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  int waiting_ = 0;
  bool open_ = true;
};

// Eight threads against --batch 8: the first call runs at once, alone; the seven that
// arrive while it runs wait, and run together as soon as it is done, each with the bits
// its call gets alone.
TEST(LibraryModel, CallsThatArriveWhileTheDeviceRunsRunTogether) {
  TempDir tmp;
  serve::testing::write_model(tmp / "export", serve::testing::tiny_lm());
  Model alone(tmp / "export", {});
  std::vector<std::string> calls, expected;
  for (uint32_t seed = 0; seed < 8; ++seed) {
    calls.push_back(serve::testing::call_body({serve::testing::ids(seed)}));
    expected.push_back(alone.run(calls.back()));
  }
  GatedDevice* gated = nullptr;
  Model model(tmp / "export", {.batch = 8, .make_device = [&] {
                                 auto device = std::make_unique<GatedDevice>();
                                 gated = device.get();
                                 return device;
                               }});
  gated->set_open(false);
  std::vector<std::string> answers(8);
  std::vector<std::thread> threads;
  threads.emplace_back([&] { answers[0] = model.run(calls[0]); });
  gated->wait_for_an_upload();
  for (size_t t = 1; t < 8; ++t) threads.emplace_back([&, t] { answers[t] = model.run(calls[t]); });
  while (model.calls_waiting() < 7) std::this_thread::yield();
  gated->set_open(true);
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(answers, expected);
  EXPECT_EQ(model.batcher().calls(), 8u);
  EXPECT_EQ(model.batcher().runs(), 2u);
}

}  // namespace
}  // namespace sx::library
