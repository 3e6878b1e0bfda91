// Gradients: every differentiable primitive's rule checked against central
// finite differences in f64 on the reference device. The table is keyed by
// primitive name; a registered differentiable primitive without a case fails.
#include "graph/autodiff.h"

#include <map>
#include <random>

#include "graph/errors.h"
#include "test_util.h"

namespace sx::graph {
namespace {

using testing::tensor;
using Inputs = const std::vector<NodeId>&;

struct InputSpec {
  std::string name;
  Shape shape;
  double low = -2, high = 2;
};

struct GradCase {
  std::vector<InputSpec> inputs;
  std::function<NodeId(Builder&, Inputs)> f;
};

Tensor random_tensor(const InputSpec& spec, std::mt19937& rng) {
  std::uniform_real_distribution<double> dist(spec.low, spec.high);
  std::vector<double> values(static_cast<size_t>(numel(spec.shape)));
  for (double& v : values) v = dist(rng);
  return tensor(DType::f64, spec.shape, values);
}

GradCase unary(std::string_view op, double low = -2, double high = 2) {
  return {{{"x", {2, 3}, low, high}}, [op = std::string(op)](Builder& b, Inputs x) { return b.op(op, {x[0]}); }};
}

GradCase binary(std::string_view op, double low = -2, double high = 2) {
  return {{{"x", {2, 3}, low, high}, {"y", {3}, low, high}}, [op = std::string(op)](Builder& b, Inputs x) {
            return b.op(op, {x[0], x[1]});
          }};
}

NodeId index_constant(Builder& b, Shape shape, std::vector<double> values) {
  return b.constant(tensor(DType::i32, std::move(shape), std::move(values)));
}

const std::map<std::string, GradCase>& grad_cases() {
  static const std::map<std::string, GradCase> cases = {
      {"neg", unary("neg")},
      {"abs", unary("abs")},
      {"exp", unary("exp")},
      {"log", unary("log", 0.5, 3)},
      {"sqrt", unary("sqrt", 0.5, 3)},
      {"rsqrt", unary("rsqrt", 0.5, 3)},
      {"sin", unary("sin")},
      {"cos", unary("cos")},
      {"tanh", unary("tanh")},
      {"erf", unary("erf")},
      {"logistic", unary("logistic")},
      {"add", binary("add")},
      {"sub", binary("sub")},
      {"mul", binary("mul")},
      {"div", binary("div", 0.5, 2)},
      {"pow", {{{"x", {2, 3}, 0.5, 2}, {"y", {2, 3}, -1, 2}}, [](Builder& b, Inputs x) { return b.pow(x[0], x[1]); }}},
      {"max", binary("max")},
      {"min", binary("min")},
      {"where",
       {{{"x", {3}}, {"y", {3}}},
        [](Builder& b, Inputs x) {
          NodeId cond = b.constant(tensor(DType::boolean, {3}, {1, 0, 1}));
          return b.where(cond, x[0], x[1]);
        }}},
      {"cast",
       {{{"x", {3}}},
        [](Builder& b, Inputs x) {
          return b.emit(primitive("cast"), {x[0]}, {{"dtype", DType::f64}});
        }}},
      {"sum",
       {{{"x", {2, 3, 4}}},
        [](Builder& b, Inputs x) {
          return b.sum(x[0], {0, 2});
        }}},
      {"reduce_max", {{{"x", {2, 3}}}, [](Builder& b, Inputs x) { return b.reduce_max(x[0], {1}, true); }}},
      {"reduce_min", {{{"x", {2, 3}}}, [](Builder& b, Inputs x) { return b.reduce_min(x[0], {0}); }}},
      {"reshape",
       {{{"x", {2, 3}}},
        [](Builder& b, Inputs x) {
          return b.reshape(x[0], {3, 2});
        }}},
      {"transpose",
       {{{"x", {2, 3, 4}}},
        [](Builder& b, Inputs x) {
          return b.transpose(x[0], {2, 0, 1});
        }}},
      {"broadcast",
       {{{"x", {3, 1}}},
        [](Builder& b, Inputs x) {
          return b.broadcast(x[0], {2, 3, 4});
        }}},
      {"slice",
       {{{"x", {4, 5}}},
        [](Builder& b, Inputs x) {
          return b.slice(x[0], {1, 0}, {4, 5}, {2, 2});
        }}},
      {"concat",
       {{{"x", {2, 1}}, {"y", {2, 3}}},
        [](Builder& b, Inputs x) {
          return b.concat({x[0], x[1], x[0]}, 1);
        }}},
      {"pad",
       {{{"x", {2, 3}}},
        [](Builder& b, Inputs x) {
          return b.pad(x[0], {1, 0}, {0, 2}, {0, 1}, 0.5);
        }}},
      {"gather",
       {{{"x", {3, 2}}},
        [](Builder& b, Inputs x) {
          return b.gather(x[0], index_constant(b, {2, 2}, {2, 0, 2, 1}), 0);
        }}},
      {"scatter_add",
       {{{"x", {3, 2}}, {"u", {3, 4}}},
        [](Builder& b, Inputs x) {
          return b.scatter_add(x[0], index_constant(b, {4}, {1, 0, 1, 1}), x[1], 1);
        }}},
      {"matmul", {{{"a", {2, 2, 3}}, {"c", {3, 4}}}, [](Builder& b, Inputs x) { return b.matmul(x[0], x[1]); }}},
  };
  return cases;
}

double run_loss(const Graph& g, const std::vector<Tensor>& inputs) { return testing::run(g, inputs)[0].value(0); }

void check_gradient(const GradCase& c) {
  std::mt19937 rng(1234);
  Graph g;
  Builder b(g);
  std::vector<NodeId> xs;
  std::vector<std::string> names;
  std::vector<Tensor> values;
  for (const InputSpec& spec : c.inputs) {
    xs.push_back(b.input(spec.name, spec.shape, DType::f64));
    names.push_back(spec.name);
    values.push_back(random_tensor(spec, rng));
  }
  NodeId out = c.f(b, xs);
  // A weighted sum makes every output element count differently.
  NodeId weights = b.constant(random_tensor({"w", b.shape(out)}, rng));
  b.output("loss", b.sum(b.mul(out, weights), {}));
  std::vector<Tensor> grads = testing::run(with_gradients(g, "loss", names), values);
  constexpr double eps = 1e-6;
  for (size_t i = 0; i < values.size(); ++i) {
    const Tensor& grad = grads[i + 1];
    ASSERT_EQ(grad.shape(), values[i].shape()) << names[i];
    for (int64_t k = 0; k < values[i].numel(); ++k) {
      std::vector<Tensor> plus = values, minus = values;
      plus[i].set_value(k, values[i].value(k) + eps);
      minus[i].set_value(k, values[i].value(k) - eps);
      double numeric = (run_loss(g, plus) - run_loss(g, minus)) / (2 * eps);
      EXPECT_NEAR(grad.value(k), numeric, 1e-5 * std::max(1.0, std::abs(numeric))) << names[i] << "[" << k << "]";
    }
  }
}

TEST(Autodiff, EveryDifferentiablePrimitiveHasAFiniteDifferenceCase) {
  for (const Primitive* p : all_primitives()) {
    if (!p->differentiable()) continue;
    EXPECT_TRUE(grad_cases().contains(std::string(p->name)))
        << p->name << " is differentiable but has no finite-difference case in autodiff_test.cc";
  }
}

TEST(Autodiff, GradientsMatchFiniteDifferences) {
  for (const auto& [name, c] : grad_cases()) {
    SCOPED_TRACE(name);
    try {
      check_gradient(c);
    } catch (const std::exception& e) {
      ADD_FAILURE() << name << ": " << e.what();
    }
  }
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

TEST(Autodiff, LossMustBeAFloatScalar) {
  Graph g;
  Builder b(g);
  NodeId x = b.input("x", {3}, DType::f64);
  EXPECT_THROW(gradients(b, x, std::vector<NodeId>{x}), GraphError);
}

}  // namespace
}  // namespace sx::graph
