// Batching (docs/serving.md, "serve"): "Calls that arrive while the device is busy run
// together as one batch when it is free, up to --batch, so a call that arrives alone runs
// at once and waits for no other. A call's outputs are the same bits whatever it runs
// with." Checked on the cpu device and on the reference device.
#include "serve/batcher.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <set>
#include <thread>

#include "serve/errors.h"
#include "serve/fixture.h"

namespace sx::serve {
namespace {

ServedModel served(const testing::TestModel& m, ShapedGraph shaped) {
  ServedModel s;
  s.graph = std::move(shaped.graph);
  s.at_limit = shaped.at_limit;
  s.weights = m.weights;
  std::set<std::string> parameters;
  for (const auto& p : m.parameters) parameters.insert(p.name);
  for (const auto& in : s.graph.inputs) {
    if (!parameters.contains(in.name)) {
      s.about.inputs.push_back({in.name, s.graph.node(in.node).shape, s.graph.node(in.node).dtype});
    }
  }
  for (const auto& out : s.graph.outputs) {
    s.about.outputs.push_back({out.name, s.graph.node(out.node).shape, s.graph.node(out.node).dtype});
  }
  return s;
}

graph::Tensor at(int32_t place) {
  graph::Tensor t(graph::DType::i32, {1});
  t.data<int32_t>()[0] = place;
  return t;
}

// Call i of the mask-and-at model: its own ids, mask and place.
std::string call_of(int i) {
  graph::Tensor mask(graph::DType::boolean, {1, testing::kWindow});
  for (int64_t k = 0; k < testing::kWindow; ++k) mask.data<bool>()[k] = (k + i) % 3 != 0;
  return testing::call_body({testing::ids(static_cast<uint32_t>(i)), mask, at(i % testing::kWindow)});
}

class ServeBatching : public ::testing::TestWithParam<std::string> {
 protected:
  std::unique_ptr<device::Device> make() {
    return device::make_device(GetParam(), {.cpu_cores = GetParam() == "cpu" ? 2 : 0});
  }
};

// "A call's outputs are the same bits whatever it runs with": 16 clients at once, each
// sending its own inputs, each answer the bits of the same call run alone.
TEST_P(ServeBatching, SixteenConcurrentClientsGetTheBitsOfTheirCallAlone) {
  auto m = testing::tiny_lm({.mask = true});
  ServedModel model = served(m, shape_graph(m.graph, {.at = true}));
  auto device = make();
  std::vector<std::string> alone;
  {
    Batcher one(*device, model, 1);
    for (int i = 0; i < 16; ++i) alone.push_back(one.call(call_of(i)));
  }
  for (const std::string& answer : alone) {
    ASSERT_EQ(answer.size(), 1 + 4 * testing::kVocab);
    ASSERT_EQ(answer[0], 0) << answer.substr(1);
  }
  EXPECT_NE(alone[0], alone[1]);
  Batcher batcher(*device, model, 16);
  for (int round = 0; round < 8; ++round) {
    std::vector<std::string> answers(16);
    std::vector<std::thread> clients;
    for (int i = 0; i < 16; ++i) clients.emplace_back([&, i] { answers[i] = batcher.call(call_of(i)); });
    for (auto& c : clients) c.join();
    for (int i = 0; i < 16; ++i) EXPECT_EQ(answers[i], alone[i]) << "round " << round << ", client " << i;
  }
  EXPECT_EQ(batcher.calls(), 128u);
  EXPECT_LE(batcher.runs(), 128u);
}

// A device that holds its first run until the test lets it go, so that calls are known to
// arrive while it is busy.
class GatedDevice : public device::Device {
 public:
  explicit GatedDevice(device::Device& inner) : inner_(inner) {}
  std::string name() const override { return inner_.name(); }
  std::unique_ptr<device::Plan> compile(const graph::Graph& graph) override {
    return std::make_unique<GatedPlan>(*this, graph, inner_.compile(graph));
  }
  device::Buffer allocate(const graph::ValueType& type) override { return inner_.allocate(type); }
  device::Buffer upload(graph::Tensor value) override { return inner_.upload(std::move(value)); }
  graph::Tensor download(const device::Buffer& buffer) override { return inner_.download(buffer); }

  void wait_until_busy() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return runs_ > 0; });
  }
  void open() {
    std::lock_guard lock(mutex_);
    open_ = true;
    changed_.notify_all();
  }

 private:
  class GatedPlan : public device::Plan {
   public:
    GatedPlan(GatedDevice& device, const graph::Graph& graph, std::unique_ptr<device::Plan> inner)
        : Plan(device, graph), gated_(device), inner_(std::move(inner)) {}
    using Plan::run;
    void run(std::span<const device::Buffer* const> inputs, std::span<device::Buffer* const> outputs) override {
      {
        std::unique_lock lock(gated_.mutex_);
        ++gated_.runs_;
        gated_.changed_.notify_all();
        gated_.changed_.wait(lock, [&] { return gated_.open_; });
      }
      inner_->run(inputs, outputs);
    }

   private:
    GatedDevice& gated_;
    std::unique_ptr<device::Plan> inner_;
  };

  device::Device& inner_;
  std::mutex mutex_;
  std::condition_variable changed_;
  int runs_ = 0;
  bool open_ = false;
};

// "a call that arrives alone runs at once": the first call starts a run by itself; the
// 15 that arrive while it runs go together, as one run, when it is done.
TEST_P(ServeBatching, CallsThatArriveWhileTheDeviceIsBusyRunTogether) {
  auto m = testing::tiny_lm({.mask = true});
  ServedModel model = served(m, shape_graph(m.graph, {.at = true}));
  auto inner = make();
  GatedDevice device(*inner);
  Batcher batcher(device, model, 16);
  std::vector<std::string> answers(16);
  std::vector<std::thread> clients;
  clients.emplace_back([&] { answers[0] = batcher.call(call_of(0)); });
  device.wait_until_busy();
  for (int i = 1; i < 16; ++i) clients.emplace_back([&, i] { answers[i] = batcher.call(call_of(i)); });
  while (batcher.waiting() < 15) std::this_thread::yield();
  device.open();
  for (auto& c : clients) c.join();
  EXPECT_EQ(batcher.calls(), 16u);
  EXPECT_EQ(batcher.runs(), 2u);
  Batcher one(*inner, model, 1);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(answers[i], one.call(call_of(i))) << "call " << i;
}

TEST_P(ServeBatching, AfterStopACallIsAnsweredWithAnError) {
  auto m = testing::tiny_lm();
  auto device = make();
  Batcher batcher(*device, served(m, shape_graph(m.graph, {})), 2);
  batcher.stop();
  std::string answer = batcher.call(testing::call_body({testing::ids(1)}));
  EXPECT_EQ(answer[0], 1);
  EXPECT_NE(answer.find("error[E-SERVE-009]: the server is stopping"), std::string::npos) << answer;
}

TEST(ServeBatcher, BatchOutsideOneTo256IsRefused) {
  auto m = testing::tiny_lm();
  auto device = device::make_device("reference");
  for (int batch : {0, 257}) {
    try {
      Batcher batcher(*device, served(m, shape_graph(m.graph, {})), batch);
      ADD_FAILURE() << "--batch " << batch;
    } catch (const ServeError& e) {
      EXPECT_EQ(e.code(), std::string("E-SERVE-004"));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, ServeBatching, ::testing::Values("cpu", "reference"));

}  // namespace
}  // namespace sx::serve
