// Programs: roles checked when made, parameters and optimizer state read from
// the store and written back over it, the same results as the graph run by
// hand, the numbers read together, and no allocation after the first run.
#include "runtime/program.h"

#include <gtest/gtest.h>

#include "allocation_counter.h"
#include "graph/builder.h"

namespace sx::runtime {
namespace {

using graph::DType;
using graph::NodeId;
using graph::Tensor;

Tensor filled(graph::Shape shape, double start) {
  std::vector<double> values(static_cast<size_t>(graph::numel(shape)));
  for (size_t i = 0; i < values.size(); ++i) values[i] = start + 0.25 * static_cast<double>(i % 7);
  return Tensor::from_doubles(DType::f32, std::move(shape), values);
}

// One step of gradient descent with momentum on a linear layer's squared
// output: (w, v, x, lr) -> (w', v', loss). w and v are donated.
struct Step {
  graph::Graph graph;
  Step() {
    graph::Builder b(graph);
    NodeId w = b.input("w", {4, 3}, DType::f32), v = b.input("v", {4, 3}, DType::f32);
    NodeId x = b.input("x", {2, 4}, DType::f32), lr = b.input("lr", {}, DType::f32);
    NodeId y = b.matmul(x, w);
    NodeId loss = b.sum(b.mul(y, y), {0, 1});
    // d loss / d w = x^T (2y)
    NodeId g = b.matmul(b.transpose(x, {1, 0}), b.add(y, y));
    NodeId v2 = b.add(b.mul(b.broadcast_to(b.constant(Tensor::scalar(DType::f32, 0.9)), {4, 3}), v), g);
    NodeId w2 = b.sub(w, b.mul(b.broadcast_to(lr, {4, 3}), v2));
    b.output("w", w2);
    b.output("v", v2);
    b.output("loss", loss);
  }
  std::vector<Binding> inputs() const {
    return {{Role::parameter, "w"}, {Role::optimizer_state, "v"}, {Role::data, "x"}, {Role::step, "lr"}};
  }
  std::vector<Binding> outputs() const {
    return {{Role::parameter, "w"}, {Role::optimizer_state, "v"}, {Role::value, "loss"}};
  }
};

TEST(Program, UpdatesTheStoreInPlaceAsTheGraphRunByHandWould) {
  Step step;
  for (const char* name : {"cpu", "reference"}) {
    auto device = device::make_device(name);
    Store store(*device);
    store.put("w", filled({4, 3}, -1));
    store.put("v", Tensor(DType::f32, {4, 3}));
    const uint8_t* w_bytes = device::host_tensor(store.at("w")).bytes().data();
    Program program(*device, step.graph, step.inputs(), step.outputs());
    EXPECT_EQ(program.fed_inputs(), (std::vector<size_t>{2, 3}));
    EXPECT_EQ(program.returned_outputs(), (std::vector<size_t>{2}));
    device::Buffer x = device->upload(filled({2, 4}, 0.5)), lr = device->upload(Tensor::scalar(DType::f32, 0.01));
    std::vector<const device::Buffer*> fed{&x, &lr};
    // The same steps by hand: every value through the host.
    std::vector<Tensor> by_hand{filled({4, 3}, -1), Tensor(DType::f32, {4, 3}), filled({2, 4}, 0.5),
                                Tensor::scalar(DType::f32, 0.01)};
    auto plan = device->compile(step.graph);
    for (int i = 0; i < 4; ++i) {
      auto results = program.run(store, fed);
      std::vector<Tensor> want = plan->run_host(by_hand);
      by_hand[0] = want[0];
      by_hand[1] = want[1];
      ASSERT_EQ(results.size(), 1u);
      EXPECT_EQ(device->download(results[0]), want[2]) << name << " step " << i;
      EXPECT_EQ(store.read("w"), want[0]) << name << " step " << i;
      EXPECT_EQ(store.read("v"), want[1]) << name << " step " << i;
    }
    // The parameter stayed in its buffer: updated in place, never replaced.
    EXPECT_EQ(device::host_tensor(store.at("w")).bytes().data(), w_bytes) << name;
  }
}

// The numbers a program returns (metrics, counters, guards) come back in one vector, in
// the order of the outputs, each exactly its value; the values stay in buffers.
TEST(Program, ReturnsItsNumbersTogetherEachExactly) {
  graph::Graph g;
  graph::Builder b(g);
  NodeId x = b.input("x", {2, 3}, DType::f32);
  NodeId total = b.sum(x, {0, 1});
  b.output("y", b.mul(x, x));
  b.output("total", total);
  b.output("rows", b.constant(Tensor::scalar(DType::i32, 2)));
  b.output("positive", b.gt(total, b.constant(Tensor::scalar(DType::f32, 0))));
  b.output("third", b.div(total, b.constant(Tensor::scalar(DType::f32, 3))));
  std::vector<Binding> outputs{{Role::value, "y"},
                               {Role::metric, "total"},
                               {Role::counter, "rows"},
                               {Role::guard, "positive"},
                               {Role::metric, "third"}};
  Tensor fed_x = filled({2, 3}, -0.3);
  for (const char* name : {"cpu", "reference"}) {
    auto device = device::make_device(name);
    Store store(*device);
    Program program(*device, g, {{Role::data, "x"}}, outputs);
    EXPECT_EQ(program.returned_outputs(), std::vector<size_t>{0});
    EXPECT_EQ(program.number_outputs(), (std::vector<size_t>{1, 2, 3, 4}));
    EXPECT_EQ(program.graph().outputs.size(), 2u);
    device::Buffer x_buffer = device->upload(fed_x);
    std::vector<const device::Buffer*> fed{&x_buffer};
    auto values = program.run(store, fed);
    std::vector<double> numbers(program.read_numbers().begin(), program.read_numbers().end());
    std::vector<Tensor> want = device->compile(g)->run_host(std::vector<Tensor>{fed_x});
    ASSERT_EQ(values.size(), 1u);
    EXPECT_EQ(device->download(values[0]), want[0]) << name;
    EXPECT_EQ(numbers, (std::vector<double>{want[1].value(0), 2, 1, want[4].value(0)})) << name;
  }
}

TEST(Program, ACpuRunAllocatesNothingAfterTheFirst) {
  Step step;
  auto device = device::make_device("cpu");
  Store store(*device);
  store.put("w", filled({4, 3}, -1));
  store.put("v", Tensor(DType::f32, {4, 3}));
  std::vector<Binding> outputs = step.outputs();
  outputs[2].role = Role::metric;  // the loss, read as a number
  Program program(*device, step.graph, step.inputs(), outputs);
  device::Buffer x = device->upload(filled({2, 4}, 0.5)), lr = device->upload(Tensor::scalar(DType::f32, 0.01));
  std::vector<const device::Buffer*> fed{&x, &lr};
  program.run(store, fed);
  program.read_numbers();
  int64_t before = testing::allocations();
  for (int i = 0; i < 20; ++i) {
    program.run(store, fed);
    program.read_numbers();
  }
  EXPECT_EQ(testing::allocations() - before, 0);
}

std::string error_of(const std::function<void()>& body) {
  try {
    body();
  } catch (const ProgramError& e) {
    return e.what();
  } catch (const device::DeviceError& e) {
    return std::string("device: ") + e.what();
  }
  return "no error";
}

TEST(Program, RefusesRolesAndInputsThatDoNotFit) {
  Step step;
  auto device = device::make_device("cpu");
  auto inputs = step.inputs();
  auto outputs = step.outputs();
  EXPECT_EQ(error_of([&] { Program(*device, step.graph, {}, outputs); }),
            "a program of 4 inputs and 3 outputs was given 0 and 3 roles");
  auto bad_in = inputs;
  bad_in[2].role = Role::metric;
  EXPECT_EQ(error_of([&] { Program(*device, step.graph, bad_in, outputs); }), "input `x` cannot have the role metric");
  bad_in[2].role = Role::guard;
  EXPECT_EQ(error_of([&] { Program(*device, step.graph, bad_in, outputs); }), "input `x` cannot have the role guard");
  auto bad_out = outputs;
  bad_out[2].role = Role::data;
  EXPECT_EQ(error_of([&] { Program(*device, step.graph, inputs, bad_out); }),
            "output `loss` cannot have the role data");
  bad_out = outputs;
  bad_out[1].role = Role::metric;
  EXPECT_EQ(error_of([&] { Program(*device, step.graph, inputs, bad_out); }),
            "output `v`, a metric, must be a scalar, not f32[4, 3]");

  Program program(*device, step.graph, inputs, outputs);
  Store store(*device);
  device::Buffer x = device->upload(filled({2, 4}, 0.5)), lr = device->upload(Tensor::scalar(DType::f32, 0.01));
  std::vector<const device::Buffer*> fed{&x, &lr};
  EXPECT_EQ(error_of([&] { program.run(store, fed); }), "no value for `w` on the cpu device");
  store.put("w", Tensor(DType::f32, {3, 4}));
  store.put("v", Tensor(DType::f32, {4, 3}));
  EXPECT_EQ(error_of([&] { program.run(store, fed); }), "device: run: input 'w' must be f32[4, 3], got f32[3, 4]");
  std::vector<const device::Buffer*> short_feed{&x};
  EXPECT_EQ(error_of([&] { program.run(store, short_feed); }), "the program reads 2 fed inputs, got 1");
}

TEST(Store, HoldsValuesByPath) {
  auto device = device::make_device("reference");
  Store store(*device);
  EXPECT_FALSE(store.contains("a"));
  store.put("b", filled({2}, 1));
  store.put("a", filled({3}, 2));
  EXPECT_EQ(store.paths(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(store.read("a"), filled({3}, 2));
  store.put("a", filled({1}, 5));
  EXPECT_EQ(store.read("a"), filled({1}, 5));
  store.erase("a");
  EXPECT_FALSE(store.contains("a"));
  EXPECT_EQ(error_of([&] { store.read("a"); }), "no value for `a` on the reference device");
}

}  // namespace
}  // namespace sx::runtime
