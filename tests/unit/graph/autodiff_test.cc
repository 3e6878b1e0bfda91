// Gradients: every differentiable primitive's rule checked against central
// finite differences in f64 on the reference device, on each small sample of its
// record (samples.h), over the inputs that take the sample's dtype (not the
// indices or conditions). A differentiable primitive without such a sample fails.
#include "graph/autodiff.h"

#include <random>

#include "graph/errors.h"
#include "graph/primitive.h"
#include "samples/samples.h"
#include "test_util.h"

namespace sx::graph {
namespace {

using testing::tensor;

double run_loss(const Graph& g, const std::vector<Tensor>& inputs) { return testing::run(g, inputs)[0].value(0); }

// Checks the gradient of `sample` in f64 over the inputs that take the sample's dtype;
// false where the sample has no such case (no f64 result that emits `id`).
bool check_gradient(PrimId id, const samples::Sample& sample, std::mt19937& rng) {
  std::optional<samples::Instance> c = samples::instantiate(sample, DType::f64, rng);
  if (!c || !samples::emits(c->graph, id)) return false;
  Graph& g = c->graph;
  NodeId out = g.outputs[0].node;
  if (g.node(out).dtype != DType::f64) return false;
  std::vector<std::string> wrt;
  for (size_t i = 0; i < sample.inputs.size(); ++i) {
    if (!sample.inputs[i].dtype) wrt.push_back(c->input_names[i]);
  }
  if (wrt.empty()) return false;
  // A weighted sum makes every output element count differently.
  Builder b(g);
  NodeId weights = b.constant(samples::random_tensor(DType::f64, g.node(out).shape, rng));
  g.outputs.clear();
  b.output("loss", b.sum(b.mul(out, weights), {}));
  std::vector<Tensor> grads = testing::run(with_gradients(g, "loss", wrt), c->inputs);
  constexpr double eps = 1e-6;
  size_t w = 0;
  for (size_t i = 0; i < sample.inputs.size(); ++i) {
    if (sample.inputs[i].dtype) continue;
    const Tensor& grad = grads[++w];
    const std::vector<Tensor>& values = c->inputs;
    const std::string& name = c->input_names[i];
    EXPECT_EQ(grad.shape(), values[i].shape()) << name;
    if (grad.shape() != values[i].shape()) continue;
    for (int64_t k = 0; k < values[i].numel(); ++k) {
      std::vector<Tensor> plus = values, minus = values;
      plus[i].set_value(k, values[i].value(k) + eps);
      minus[i].set_value(k, values[i].value(k) - eps);
      double numeric = (run_loss(g, plus) - run_loss(g, minus)) / (2 * eps);
      EXPECT_NEAR(grad.value(k), numeric, 1e-5 * std::max(1.0, std::abs(numeric))) << name << "[" << k << "]";
    }
  }
  return true;
}

// Every sample of every differentiable primitive's record that is small enough.
TEST(Autodiff, GradientsMatchFiniteDifferences) {
  int checked_in_all = 0;
  for (const Primitive* p : all_primitives()) {
    if (!p->differentiable()) continue;
    SCOPED_TRACE(p->name);
    const samples::Record* record = samples::find_record(p->id);
    ASSERT_NE(record, nullptr) << p->name << " has no sample record";
    std::mt19937 rng(1234);
    int checked = 0;
    for (const samples::Sample& sample : record->samples) {
      if (sample.large) continue;
      SCOPED_TRACE(sample.label);
      try {
        checked += check_gradient(p->id, sample, rng) ? 1 : 0;
      } catch (const std::exception& e) {
        ADD_FAILURE() << p->name << " " << sample.label << ": " << e.what();
      }
    }
    EXPECT_GT(checked, 0) << p->name << " is differentiable, but no sample of its record gives an f64 result "
                          << "over an input of the sample's dtype to take finite differences on";
    checked_in_all += checked;
  }
  RecordProperty("cases", checked_in_all);
}

TEST(Autodiff, FanOutIsSummedAndBroadcastIsUndone) {
  Graph g;
  Builder b(g);
  NodeId x = b.input("x", {3}, DType::f64);
  NodeId m = b.input("m", {2, 3}, DType::f64);
  // loss = sum(x*x + x + m*x) with x*x + x broadcast over m's two rows:
  // d/dx = 2 (2x + 1) + sum_rows(m), d/dm = x per row
  b.output("loss", b.sum(b.add(b.add(b.mul(x, x), x), b.mul(m, x)), {}));
  std::vector<std::string> wrt{"x", "m"};
  auto out = testing::run(with_gradients(g, "loss", wrt),
                          {tensor(DType::f64, {3}, {1, 2, 3}), tensor(DType::f64, {2, 3}, {1, 1, 1, 2, 2, 2})});
  testing::expect_tensor(out[1], DType::f64, {3}, {9, 13, 17});
  testing::expect_tensor(out[2], DType::f64, {2, 3}, {1, 2, 3, 1, 2, 3});
}

TEST(Autodiff, NonDifferentiablePathsGiveZeros) {
  Graph g;
  Builder b(g);
  NodeId x = b.input("x", {3}, DType::f64);
  NodeId k = b.input("k", {3}, DType::i32);
  NodeId unused = b.input("unused", {2}, DType::f64);
  NodeId picked = b.cast(b.argmax(x, {0}), DType::f64);
  NodeId mask = b.cast(b.gt(x, b.literal(0.0)), DType::f64);
  b.output("loss", b.add(b.add(picked, b.sum(mask, {})), b.sum(b.cast(k, DType::f64), {})));
  (void)unused;
  std::vector<std::string> wrt{"x", "k", "unused"};
  auto out = testing::run(
      with_gradients(g, "loss", wrt),
      {tensor(DType::f64, {3}, {1, -2, 3}), tensor(DType::i32, {3}, {1, 2, 3}), tensor(DType::f64, {2}, {0, 0})});
  testing::expect_tensor(out[1], DType::f64, {3}, {0, 0, 0});
  testing::expect_tensor(out[2], DType::i32, {3}, {0, 0, 0});
  testing::expect_tensor(out[3], DType::f64, {2}, {0, 0});
}

TEST(Autodiff, NoGradientFlowsThroughStopGradient) {
  // loss = sum(x * stop(x)) + sum(stop(x * x)): d/dx = stop(x) = x. And softmax written
  // with its shift by the row's maximum held constant (as sexpgpu/ops' softmax is)
  // has the gradient s * (g - sum(g * s)), the maximum's path (zero in exact
  // arithmetic) not built at all.
  Graph g;
  Builder b(g);
  NodeId x = b.input("x", {3}, DType::f64);
  NodeId stopped = b.stop_gradient(x);
  b.output("loss", b.add(b.sum(b.mul(x, stopped), {}), b.sum(b.stop_gradient(b.mul(x, x)), {})));
  std::vector<std::string> wrt{"x"};
  auto out = testing::run(with_gradients(g, "loss", wrt), {tensor(DType::f64, {3}, {1, -2, 3})});
  testing::expect_tensor(out[1], DType::f64, {3}, {1, -2, 3});

  Graph s;
  Builder c(s);
  NodeId z = c.input("z", {2, 3}, DType::f64);
  NodeId e = c.exp(c.sub(z, c.stop_gradient(c.reduce_max(z, {1}, true))));
  NodeId softmax = c.div(e, c.sum(e, {1}, true));
  const double w[6] = {1, 2, 3, -1, 0, 4};
  NodeId weights = c.constant(tensor(DType::f64, {2, 3}, std::vector<double>(w, w + 6)));
  c.output("loss", c.sum(c.mul(softmax, weights), {}));
  const size_t before = s.nodes.size();
  std::vector<std::string> wrt_z{"z"};
  Graph with = with_gradients(s, "loss", wrt_z);
  for (size_t id = before; id < with.nodes.size(); ++id) {
    EXPECT_NE(with.nodes[id].op(), PrimId::eq) << "a mask of the maximum: its path was differentiated";
  }
  Tensor values = tensor(DType::f64, {2, 3}, {0.5, -1, 2, 3, 3, -2});
  auto got = testing::run(with, {values});
  for (int64_t row = 0; row < 2; ++row) {
    double total = 0, sum_gs = 0, p[3];
    for (int64_t j = 0; j < 3; ++j) total += std::exp(values.value(row * 3 + j));
    for (int64_t j = 0; j < 3; ++j) {
      p[j] = std::exp(values.value(row * 3 + j)) / total;
      sum_gs += p[j] * w[row * 3 + j];
    }
    for (int64_t j = 0; j < 3; ++j) {
      EXPECT_NEAR(got[1].value(row * 3 + j), p[j] * (w[row * 3 + j] - sum_gs), 1e-12) << row << ", " << j;
    }
  }
}

TEST(Autodiff, TheGradientOfDisjointSlicesIsTheirConcatenation) {
  // loss = sum(w . f(x[:, a:b])) over slices of x's columns: each slice's cotangent
  // lands on its columns. Slices that tile the columns give one concat (no pad, no
  // add); slices with gaps and an offset, a pad of a concat with zeros between;
  // overlapping slices, the sum of pads. Each gives the closed form.
  struct Case {
    std::vector<std::pair<int64_t, int64_t>> ranges;
    bool concat, adds;
  };
  for (const Case& c : {Case{{{0, 2}, {2, 5}, {5, 6}}, true, false}, Case{{{4, 5}, {1, 3}}, true, false},
                        Case{{{0, 4}, {2, 6}}, false, true}}) {
    Graph g;
    Builder b(g);
    NodeId x = b.input("x", {2, 6}, DType::f64);
    NodeId loss = b.scalar(0.0, DType::f64);
    for (size_t k = 0; k < c.ranges.size(); ++k) {
      NodeId piece = b.slice(x, {0, c.ranges[k].first}, {2, c.ranges[k].second});
      // d/dx of sum((k + 1) * piece * piece) is 2 (k + 1) x on the slice's columns.
      loss = b.add(loss, b.sum(b.mul(b.scalar(static_cast<double>(k + 1), DType::f64), b.mul(piece, piece)), {}));
    }
    b.output("loss", loss);
    const size_t before = g.nodes.size();
    std::vector<std::string> wrt{"x"};
    Graph with = with_gradients(g, "loss", wrt);
    bool concat = false, adds = false;
    for (size_t id = before; id < with.nodes.size(); ++id) {
      concat = concat || with.nodes[id].op() == PrimId::concat;
      adds = adds || (with.nodes[id].op() == PrimId::add && with.nodes[id].shape == Shape{2, 6});
    }
    EXPECT_EQ(concat, c.concat);
    EXPECT_EQ(adds, c.adds);
    Tensor values = tensor(DType::f64, {2, 6}, {1, 2, 3, 4, 5, 6, -1, -2, -3, -4, -5, -6});
    std::vector<double> want(12, 0.0);
    for (size_t k = 0; k < c.ranges.size(); ++k) {
      for (int64_t row = 0; row < 2; ++row) {
        for (int64_t col = c.ranges[k].first; col < c.ranges[k].second; ++col) {
          want[static_cast<size_t>(row * 6 + col)] += 2.0 * static_cast<double>(k + 1) * values.value(row * 6 + col);
        }
      }
    }
    testing::expect_tensor(testing::run(with, {values})[1], DType::f64, {2, 6}, want);
  }
}

TEST(Autodiff, LossMustBeAFloatScalar) {
  Graph g;
  Builder b(g);
  NodeId x = b.input("x", {3}, DType::f64);
  EXPECT_THROW(gradients(b, x, std::vector<NodeId>{x}), GraphError);
}

}  // namespace
}  // namespace sx::graph
