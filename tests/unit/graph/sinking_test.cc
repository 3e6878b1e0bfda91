// take_at's gather sinking: for every primitive with a sinking rule, a case
// whose result is taken at each of its axes in turn; the rule must move the
// gather past the node exactly where the case says, and the outputs must be
// the bits of a gather at the end, at every place, on the reference and cpu
// devices. Then a small transformer: one row of its final projection and of
// the work after it, and the same bits.
#include <fmt/format.h>

#include <iostream>
#include <map>
#include <random>

#include "device/device.h"
#include "graph/cost.h"
#include "graph/index_error.h"
#include "graph/passes.h"
#include "graph/primitive.h"
#include "test_util.h"

namespace sx::graph {
namespace {

using Inputs = const std::vector<NodeId>&;

struct InputSpec {
  Shape shape;
  DType dtype = DType::f64;
  double low = -2, high = 2;
};

struct SinkCase {
  std::vector<InputSpec> inputs;
  std::function<NodeId(Builder&, Inputs)> f;
  std::vector<bool> sinks;  // per axis of the result: whether the gather moves past the node
};

SinkCase emitted(std::string_view op, std::vector<InputSpec> inputs, Attrs attrs, std::vector<bool> sinks) {
  return {std::move(inputs),
          [op = std::string(op), attrs](Builder& b, Inputs x) { return b.emit(primitive(op), x, attrs); },
          std::move(sinks)};
}

SinkCase elementwise(std::string_view op, int arity, DType dtype = DType::f64, double low = -2, double high = 2) {
  return emitted(op, std::vector<InputSpec>(static_cast<size_t>(arity), {{2, 3, 4}, dtype, low, high}), {},
                 {true, true, true});
}

const std::map<std::string, SinkCase>& sink_cases() {
  using Ints = std::vector<int64_t>;
  static const std::map<std::string, SinkCase> cases = {
      {"neg", elementwise("neg", 1)},
      {"abs", elementwise("abs", 1)},
      {"sign", elementwise("sign", 1, DType::i32, -3, 3)},
      {"exp", elementwise("exp", 1)},
      {"log", elementwise("log", 1, DType::f64, 0.5, 2)},
      {"sqrt", elementwise("sqrt", 1, DType::f64, 0.5, 2)},
      {"rsqrt", elementwise("rsqrt", 1, DType::f64, 0.5, 2)},
      {"sin", elementwise("sin", 1)},
      {"cos", elementwise("cos", 1)},
      {"tanh", elementwise("tanh", 1)},
      {"erf", elementwise("erf", 1)},
      {"logistic", elementwise("logistic", 1)},
      {"logical_not", elementwise("logical_not", 1, DType::boolean, 0, 2)},
      {"stop_gradient", elementwise("stop_gradient", 1)},
      {"add", elementwise("add", 2)},
      {"sub", elementwise("sub", 2)},
      {"mul", elementwise("mul", 2)},
      {"div", elementwise("div", 2, DType::f64, 0.5, 2)},
      {"pow", elementwise("pow", 2, DType::f64, 0.5, 2)},
      {"max", elementwise("max", 2)},
      {"min", elementwise("min", 2)},
      {"eq", elementwise("eq", 2, DType::i32, 0, 2)},
      {"ne", elementwise("ne", 2, DType::i32, 0, 2)},
      {"lt", elementwise("lt", 2)},
      {"le", elementwise("le", 2)},
      {"gt", elementwise("gt", 2)},
      {"ge", elementwise("ge", 2)},
      {"logical_and", elementwise("logical_and", 2, DType::boolean, 0, 2)},
      {"logical_or", elementwise("logical_or", 2, DType::boolean, 0, 2)},
      {"where",
       emitted("where", {{{2, 3, 4}, DType::boolean, 0, 2}, {{2, 3, 4}}, {{2, 3, 4}}}, {}, {true, true, true})},
      {"cast", emitted("cast", {{{2, 3, 4}}}, {{"dtype", DType::f32}}, {true, true, true})},
      // Over the last axis: every other axis sinks; over the first: none (each
      // place would be summed in another layout).
      {"sum", emitted("sum", {{{2, 3, 4, 5}}}, {{"axes", Ints{3}}, {"keepdims", int64_t{0}}}, {true, true, true})},
      {"reduce_max",
       emitted("reduce_max", {{{2, 3, 4}}}, {{"axes", Ints{2}}, {"keepdims", int64_t{1}}}, {true, true, false})},
      {"reduce_min",
       emitted("reduce_min", {{{2, 3, 4}}}, {{"axes", Ints{0}}, {"keepdims", int64_t{0}}}, {false, false})},
      {"argmax",
       emitted("argmax", {{{2, 3, 4, 5}}}, {{"axes", Ints{2}}, {"keepdims", int64_t{0}}}, {true, true, false})},
      {"argmin",
       emitted("argmin", {{{2, 3, 4}}}, {{"axes", Ints{1, 2}}, {"keepdims", int64_t{1}}}, {true, false, false})},
      // [2, 3, 4] as [2, 3, 2, 2]: the split axis's halves are not axes of the input.
      {"reshape", emitted("reshape", {{{2, 3, 4}}}, {{"shape", Ints{2, 3, 2, 2}}}, {true, true, false, false})},
      {"transpose", emitted("transpose", {{{2, 3, 4}}}, {{"perm", Ints{2, 0, 1}}}, {true, true, true})},
      // An added axis and a stretched one read the input whole.
      {"broadcast", emitted("broadcast", {{{3, 1}}}, {{"shape", Ints{2, 3, 4}}}, {true, true, true})},
      {"slice",
       emitted("slice", {{{2, 3, 4}}}, {{"start", Ints{0, 1, 0}}, {"stop", Ints{2, 3, 4}}, {"step", Ints{1, 1, 1}}},
               {true, false, true})},
      {"concat", emitted("concat", {{{2, 3, 4}}, {{2, 3, 2}}}, {{"axis", int64_t{2}}}, {true, true, false})},
      {"pad", emitted("pad", {{{2, 3, 4}}},
                      {{"low", Ints{0, 1, 0}}, {"high", Ints{0, 0, 1}}, {"interior", Ints{0, 0, 0}}, {"value", 0.5}},
                      {true, false, false})},
      // x [2, 5, 4] at indices [3, 2] along axis 1: [2, 3, 2, 4], the middle axes the indices'.
      {"gather",
       emitted("gather", {{{2, 5, 4}}, {{3, 2}, DType::i32, 0, 5}}, {{"axis", int64_t{1}}}, {true, true, true, true})},
      {"one_hot", emitted("one_hot", {{{2, 3}, DType::i32, -1, 5}}, {{"depth", int64_t{4}}, {"dtype", DType::f64}},
                          {true, true, false})},
      {"matmul", emitted("matmul", {{{2, 3, 4}}, {{2, 4, 5}}}, {}, {true, true, true})},
  };
  return cases;
}

Tensor random_input(const InputSpec& spec, std::mt19937& rng) {
  std::uniform_real_distribution<double> dist(spec.low, spec.high);
  std::vector<double> values(static_cast<size_t>(numel(spec.shape)));
  for (double& v : values) v = is_float(spec.dtype) ? dist(rng) : std::floor(dist(rng));
  return Tensor::from_doubles(spec.dtype, spec.shape, values);
}

// The plan take_at replaced: each output gathered at the end.
Graph gathered_at_the_end(const Graph& graph) {
  Graph out = graph;
  Builder b(out);
  NodeId at = b.input("at", {1}, DType::i32);
  for (NamedNode& o : out.outputs) o.node = b.gather(o.node, at, 1);
  return out;
}

// take_at(graph) and the gather at the end give the same bits at every place
// of the axis, on both devices. The gather at the end refuses the places outside
// it; take_at's caller refuses them before the run (its gathers may have sunk past
// a broadcast of the axis, where none reads the place).
void expect_same_bits_at_every_place(const Graph& graph, const std::vector<Tensor>& inputs, const std::string& label) {
  Graph sunk = take_at(graph), naive = gathered_at_the_end(graph);
  int64_t length = graph.node(graph.outputs[0].node).shape[1];
  for (std::string_view device : {"reference", "cpu"}) {
    for (int64_t place = -1; place <= length; ++place) {
      std::vector<Tensor> with_at = inputs;
      with_at.push_back(testing::tensor(DType::i32, {1}, {static_cast<double>(place)}));
      if (place < 0 || place == length) {
        EXPECT_THROW(testing::run_on(device, naive, with_at), IndexOutOfRange) << label << " at " << place;
        continue;
      }
      std::vector<Tensor> got = testing::run_on(device, sunk, with_at), want = testing::run_on(device, naive, with_at);
      ASSERT_EQ(got.size(), want.size());
      for (size_t o = 0; o < got.size(); ++o) {
        EXPECT_EQ(got[o], want[o]) << label << " on " << device << ", output " << o << " at " << place;
      }
    }
  }
}

TEST(Sinking, EveryPrimitiveWithASinkingRuleHasACase) {
  for (const Primitive* p : all_primitives()) {
    if (p->sink) {
      EXPECT_TRUE(sink_cases().contains(std::string(p->name))) << p->name << " has no case here";
    }
  }
}

TEST(Sinking, EachRuleMovesTheGatherWhereItSaysAndKeepsTheBits) {
  std::mt19937 rng(7);
  for (const auto& [name, c] : sink_cases()) {
    Graph g;
    Builder b(g);
    std::vector<NodeId> xs;
    std::vector<Tensor> inputs;
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      xs.push_back(b.input("x" + std::to_string(i), c.inputs[i].shape, c.inputs[i].dtype));
      inputs.push_back(random_input(c.inputs[i], rng));
    }
    NodeId y = c.f(b, xs);
    Shape full = b.shape(y);
    ASSERT_EQ(full.size(), c.sinks.size()) << name;
    for (size_t axis = 0; axis < full.size(); ++axis) {
      // The axis taken at, moved to the second place, where take_at takes it.
      std::vector<int64_t> perm;
      for (int64_t d = 0; d < static_cast<int64_t>(full.size()); ++d) perm.push_back(d);
      perm.erase(perm.begin() + static_cast<int64_t>(axis));
      perm.insert(perm.begin() + 1, static_cast<int64_t>(axis));
      Graph one = g;
      Builder ob(one);
      ob.output("y", axis == 1 ? y : ob.transpose(y, perm));
      std::string label = fmt::format("{} at axis {}", name, axis);
      Graph sunk = take_at(one);
      int whole = 0;
      for (const Node& node : sunk.nodes) whole += node.op() == primitive(name).id && node.shape == full ? 1 : 0;
      EXPECT_EQ(whole, c.sinks[axis] ? 0 : 1) << label << ": the node computed whole";
      expect_same_bits_at_every_place(one, inputs, label);
    }
  }
}

TEST(Sinking, ANodeNeededWholeIsComputedOnceAndGathered) {
  // h feeds a projection, which sinks, and a sum over the axis, which needs
  // all of h: h is computed whole, once, and its place gathered from it.
  Graph g;
  Builder b(g);
  NodeId x = b.input("x", {1, 5, 3}, DType::f32);
  NodeId w = b.input("w", {3, 4}, DType::f32);
  NodeId h = b.tanh(x);
  b.output("projected", b.matmul(h, w));
  b.output("pooled", b.broadcast(b.sum(h, {1}, true), {1, 5, 3}));
  Graph sunk = take_at(g);
  int tanhs = 0, full_products = 0;
  for (const Node& node : sunk.nodes) {
    tanhs += node.op() == PrimId::tanh ? 1 : 0;
    full_products += node.op() == PrimId::matmul && node.shape[1] == 5 ? 1 : 0;
  }
  EXPECT_EQ(tanhs, 1);
  EXPECT_EQ(full_products, 0);
  std::mt19937 rng(3);
  expect_same_bits_at_every_place(g,
                                  {random_input({{1, 5, 3}, DType::f32}, rng), random_input({{3, 4}, DType::f32}, rng)},
                                  "tanh feeding a projection and a pooling");
}

// A transformer-like model: token embedding, a position table, one block of
// causal self-attention with a residual, a final layer norm, a projection to
// the vocabulary and log-softmax.
constexpr int64_t kWindow = 16, kWidth = 16, kHeads = 2, kVocab = 64;

NodeId layer_norm(Builder& b, NodeId x) {
  auto width = static_cast<double>(b.shape(x).back());
  NodeId mean = b.div(b.sum(x, {-1}, true), b.literal(width));
  NodeId centered = b.sub(x, mean);
  NodeId variance = b.div(b.sum(b.mul(centered, centered), {-1}, true), b.literal(width));
  return b.mul(centered, b.rsqrt(b.add(variance, b.literal(1e-5))));
}

NodeId softmax_last(Builder& b, NodeId x) {
  NodeId shifted = b.sub(x, b.reduce_max(x, {-1}, true));
  NodeId e = b.exp(shifted);
  return b.div(e, b.sum(e, {-1}, true));
}

// The projection to the vocabulary and what follows it: the part whose work
// take_at must do for one row.
NodeId head(Builder& b, NodeId hidden, NodeId projection) {
  NodeId logits = b.matmul(hidden, projection);
  NodeId shifted = b.sub(logits, b.reduce_max(logits, {-1}, true));
  return b.sub(shifted, b.log(b.sum(b.exp(shifted), {-1}, true)));
}

NodeId attention(Builder& b, NodeId x, NodeId wq, NodeId wk, NodeId wv, NodeId wo) {
  int64_t per_head = kWidth / kHeads;
  auto heads = [&](NodeId w) {
    return b.transpose(b.reshape(b.matmul(x, w), {1, kWindow, kHeads, per_head}), {0, 2, 1, 3});
  };
  NodeId q = heads(wq), k = heads(wk), v = heads(wv);
  NodeId scores = b.mul(b.matmul(q, b.transpose(k, {0, 1, 3, 2})), b.literal(1.0 / std::sqrt(per_head)));
  NodeId causal = b.ge(b.iota({kWindow, kWindow}, 0), b.iota({kWindow, kWindow}, 1));
  NodeId masked = b.where(causal, scores, b.literal(-1e9));
  NodeId mixed = b.matmul(softmax_last(b, masked), v);
  return b.matmul(b.reshape(b.transpose(mixed, {0, 2, 1, 3}), {1, kWindow, kWidth}), wo);
}

struct Model {
  Graph graph;
  std::vector<Tensor> inputs;
};

Model transformer() {
  Model m;
  Builder b(m.graph);
  std::mt19937 rng(5);
  auto weight = [&](std::string name, Shape shape) {
    m.inputs.push_back(random_input({shape, DType::f32, -0.5, 0.5}, rng));
    return b.input(std::move(name), std::move(shape), DType::f32);
  };
  NodeId tokens = b.input("inputs", {1, kWindow}, DType::i32);
  m.inputs.push_back(random_input({{1, kWindow}, DType::i32, 0, kVocab}, rng));
  NodeId embedding = weight("embedding", {kVocab, kWidth}), positions = weight("positions", {kWindow, kWidth});
  NodeId wq = weight("wq", {kWidth, kWidth}), wk = weight("wk", {kWidth, kWidth});
  NodeId wv = weight("wv", {kWidth, kWidth}), wo = weight("wo", {kWidth, kWidth});
  NodeId projection = weight("projection", {kWidth, kVocab});
  NodeId x = b.add(b.gather(embedding, tokens, 0), positions);
  x = b.add(x, attention(b, layer_norm(b, x), wq, wk, wv, wo));
  b.output("logits", head(b, layer_norm(b, x), projection));
  return m;
}

TEST(Sinking, ATransformerComputesOneRowOfItsHeadWithTheSameBits) {
  Model m = transformer();
  expect_same_bits_at_every_place(m.graph, m.inputs, "transformer");
}

TEST(Sinking, BatchedCallsGiveEachCallsBits) {
  // As a server runs it: calls batched by vmap over the window and `at`; each
  // call's row must be the bits it gets alone.
  Model m = transformer();
  Graph sunk = take_at(m.graph);
  constexpr int64_t kCalls = 3;
  std::vector<std::string> per_call{"inputs", "at"};
  Graph batched = vmap(sunk, per_call, kCalls);
  std::mt19937 rng(8);
  std::vector<Tensor> windows, places;
  for (int64_t call = 0; call < kCalls; ++call) {
    windows.push_back(random_input({{1, kWindow}, DType::i32, 0, kVocab}, rng));
    places.push_back(testing::tensor(DType::i32, {1}, {static_cast<double>(call * 7)}));
  }
  auto stacked = [](const std::vector<Tensor>& rows) {
    Shape shape = rows[0].shape();
    shape.insert(shape.begin(), static_cast<int64_t>(rows.size()));
    std::vector<uint8_t> bytes;
    for (const Tensor& r : rows) bytes.insert(bytes.end(), r.bytes().begin(), r.bytes().end());
    return Tensor(rows[0].dtype(), shape, bytes);
  };
  std::vector<Tensor> inputs = m.inputs;
  inputs[0] = stacked(windows);
  inputs.push_back(stacked(places));
  for (std::string_view device : {"reference", "cpu"}) {
    Tensor together = testing::run_on(device, batched, inputs)[0];
    for (int64_t call = 0; call < kCalls; ++call) {
      std::vector<Tensor> alone_inputs = m.inputs;
      alone_inputs[0] = windows[static_cast<size_t>(call)];
      alone_inputs.push_back(places[static_cast<size_t>(call)]);
      Tensor alone = testing::run_on(device, sunk, alone_inputs)[0];
      size_t size = alone.bytes().size();
      std::vector<uint8_t> row(together.bytes().begin() + static_cast<int64_t>(call * size),
                               together.bytes().begin() + static_cast<int64_t>((call + 1) * size));
      EXPECT_EQ(Tensor(alone.dtype(), alone.shape(), row), alone) << device << ", call " << call;
    }
  }
}

TEST(Sinking, ATransformerSavesTheWindowLessOneRowOfItsHead) {
  Model m = transformer();
  Graph head_alone;
  Builder b(head_alone);
  b.output("logits", head(b, b.input("hidden", {1, kWindow, kWidth}, DType::f32),
                          b.input("projection", {kWidth, kVocab}, DType::f32)));
  int64_t whole = flops(m.graph), taken = flops(take_at(m.graph)), head_flops = flops(head_alone);
  std::cout << "transformer: " << whole << " flops whole, " << taken << " with take_at; the head alone " << head_flops
            << "\n";
  // At least the head's work for every row but one.
  EXPECT_GE(whole - taken, head_flops * (kWindow - 1) / kWindow);
}

}  // namespace
}  // namespace sx::graph
