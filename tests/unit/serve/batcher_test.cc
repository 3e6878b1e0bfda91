// Batching (docs/serving.md, "serve"): "A call's outputs are the same bits whatever it runs
// with." Checked on the cpu device and on the reference device. That calls arriving while
// the device is busy run together is the server's part (server_test.cc).
#include "serve/batcher.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <set>
#include <span>

#include "forwarding_device.h"
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

// "A call's outputs are the same bits whatever it runs with": each of 16 calls, run in
// batches of every size from 1 to 16 and at every place in them, is the bits of the call
// run alone; with --batch 16 and with --batch 12, whose batches of 9 to 12 run in its
// program of 12 and the others in the powers of two, padded.
TEST_P(ServeBatching, EveryCallGetsTheBitsOfItsCallAloneInAnyBatch) {
  auto m = testing::tiny_lm({.mask = true});
  ServedModel model = served(m, shape_graph(m.graph, {.at = true}));
  auto device = make();
  std::vector<std::string> calls, alone;
  Batcher one(*device, model, 1);
  for (int i = 0; i < 16; ++i) {
    calls.push_back(call_of(i));
    alone.push_back(one.run({&calls.back(), 1}).at(0));
    ASSERT_EQ(alone.back().size(), 1 + 4 * testing::kVocab);
    ASSERT_EQ(alone.back()[0], 0) << alone.back().substr(1);
  }
  EXPECT_NE(alone[0], alone[1]);
  for (int max : {16, 12}) {
    Batcher batcher(*device, model, max);
    uint64_t runs = 0;
    for (size_t size = 1; size <= static_cast<size_t>(max); ++size) {
      for (size_t first = 0; first + size <= 16; first += size) {
        std::vector<std::string> answers = batcher.run(std::span(calls).subspan(first, size));
        ++runs;
        ASSERT_EQ(answers.size(), size);
        for (size_t k = 0; k < size; ++k)
          EXPECT_EQ(answers[k], alone[first + k])
              << "--batch " << max << ", a batch of " << size << ", call " << first + k;
      }
    }
    EXPECT_EQ(batcher.runs(), runs);
  }
  EXPECT_EQ(one.calls(), 16u);
}

// "An id outside the vocabulary is an error": a call whose id is -1, 32 (the vocabulary's
// size) or 2^31 - 1 gets status 1 naming its input and the id's place in it, and the other
// calls of its batch get the bits they get alone.
TEST_P(ServeBatching, AnIdOutsideTheVocabularyIsTheErrorOfItsCallAloneInABatch) {
  auto m = testing::tiny_lm();
  ServedModel model = served(m, shape_graph(m.graph, {}));
  auto device = make();
  Batcher one(*device, model, 1), batcher(*device, model, 5);
  for (int32_t id : {-1, static_cast<int32_t>(testing::kVocab), std::numeric_limits<int32_t>::max()}) {
    graph::Tensor bad = testing::ids(9);
    bad.data<int32_t>()[3] = id;
    std::vector<std::string> calls;
    for (uint32_t seed : {1, 2, 3, 4}) calls.push_back(testing::call_body({testing::ids(seed)}));
    calls.insert(calls.begin() + 2, testing::call_body({bad}));
    const std::string error =
        fmt::format("error[E-SERVE-008]: gather: index {} at [0, 3] of input `inputs` is outside its axis, 0 to {}", id,
                    testing::kVocab - 1);
    EXPECT_EQ(one.run({&calls[2], 1}).at(0), error_answer(error));
    uint64_t runs = batcher.runs();
    std::vector<std::string> answers = batcher.run(calls);
    ASSERT_EQ(answers.size(), calls.size());
    for (size_t k = 0; k < calls.size(); ++k) {
      if (k == 2) EXPECT_EQ(answers[k], error_answer(error));
      else EXPECT_EQ(answers[k], one.run({&calls[k], 1}).at(0)) << "call " << k;
    }
    // The batch, then each call alone.
    EXPECT_EQ(batcher.runs(), runs + 1 + calls.size());
  }
  EXPECT_EQ(batcher.calls(), 15u);
}

// A device whose runs fail, as one out of memory does.
class FailingDevice : public sx::testing::ForwardingDevice {
 public:
  using ForwardingDevice::ForwardingDevice;
  std::unique_ptr<device::Plan> compile(const graph::Graph& graph) override {
    return std::make_unique<FailingPlan>(*this, graph);
  }

 private:
  class FailingPlan : public device::Plan {
   public:
    FailingPlan(device::Device& device, const graph::Graph& graph) : Plan(device, graph) {}
    using Plan::run;
    void run(std::span<const device::Buffer* const>, std::span<device::Buffer* const>) override {
      throw device::DeviceError("no memory left");
    }
  };
};

// A device that counts the programs compiled on it and keeps the data a run uploads.
class RecordingDevice : public sx::testing::ForwardingDevice {
 public:
  using ForwardingDevice::ForwardingDevice;
  std::unique_ptr<device::Plan> compile(const graph::Graph& graph) override {
    ++compiled;
    return inner_.compile(graph);
  }
  device::Buffer upload(graph::Tensor value) override {
    uploaded.push_back(value);
    return inner_.upload(std::move(value));
  }

  int compiled = 0;
  std::vector<graph::Tensor> uploaded;
};

// Programs for 1, 2, 4, 8 and 12 calls are compiled for --batch 12, not twelve: a batch
// runs in the smallest that holds it, its rows past the calls copies of the first call,
// and only the calls are answered.
TEST(ServeBatcher, ABatchRunsInTheSmallestProgramThatHoldsItPaddedWithItsFirstCall) {
  auto m = testing::tiny_lm();
  ServedModel model = served(m, shape_graph(m.graph, {.at = true}));
  auto inner = device::make_device("reference");
  RecordingDevice single(*inner);
  Batcher one(single, model, 1);
  RecordingDevice device(*inner);
  Batcher batcher(device, model, 12);
  EXPECT_EQ(batcher.max_batch(), 12);
  ASSERT_GT(single.compiled, 0);
  EXPECT_EQ(device.compiled, 5 * single.compiled);
  std::vector<std::string> calls;
  for (int i = 0; i < 12; ++i) {
    calls.push_back(testing::call_body({testing::ids(static_cast<uint32_t>(i)), at(i % testing::kWindow)}));
  }
  for (auto [size, rows] : {std::pair<size_t, int64_t>{3, 4}, {5, 8}, {9, 12}, {12, 12}}) {
    device.uploaded.clear();
    std::vector<std::string> answers = batcher.run(std::span(calls).first(size));
    ASSERT_EQ(answers.size(), size);
    for (size_t k = 0; k < size; ++k) EXPECT_EQ(answers[k], one.run({&calls[k], 1}).at(0)) << size << " calls";
    ASSERT_EQ(device.uploaded.size(), 2u);  // the ids and `at`, each stacked
    for (const graph::Tensor& input : device.uploaded) {
      ASSERT_EQ(input.shape().at(0), rows) << size << " calls";
      std::span<const uint8_t> bytes = input.bytes();
      const size_t row_bytes = bytes.size() / static_cast<size_t>(rows);
      for (size_t r = size; r < static_cast<size_t>(rows); ++r) {
        EXPECT_TRUE(std::ranges::equal(bytes.subspan(r * row_bytes, row_bytes), bytes.first(row_bytes))) << "row " << r;
      }
    }
  }
}

// A device that fails a run answers each of its calls with the error, and serves on.
TEST(ServeBatcher, ADeviceFailureIsEveryCallsErrorAnswer) {
  auto m = testing::tiny_lm();
  auto inner = device::make_device("reference");
  FailingDevice device(*inner);
  Batcher batcher(device, served(m, shape_graph(m.graph, {})), 2);
  std::vector<std::string> calls{testing::call_body({testing::ids(1)}), testing::call_body({testing::ids(2)})};
  for (const std::string& answer : batcher.run(calls)) {
    EXPECT_EQ(answer[0], 1);
    EXPECT_NE(answer.find("error[E-SERVE-009]: the device failed to run the call: no memory left"), std::string::npos)
        << answer;
  }
  EXPECT_EQ(batcher.runs(), 1u);
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
