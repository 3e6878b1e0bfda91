// The batching transformation: for every primitive, vmap(f) on stacked
// inputs equals f on each row, stacked; every non-empty subset of the
// inputs is batched in turn. The table is keyed by primitive name; a
// registered primitive with inputs and no case fails.
#include <map>
#include <random>

#include "graph/errors.h"
#include "graph/passes.h"
#include "graph/primitive.h"
#include "test_util.h"

namespace sx::graph {
namespace {

using testing::tensor;
using Inputs = const std::vector<NodeId>&;
constexpr int64_t kBatch = 3;

struct InputSpec {
  std::string name;
  Shape shape;
  DType dtype = DType::f64;
  double low = -2, high = 2;
};

struct BatchCase {
  std::vector<InputSpec> inputs;
  std::function<NodeId(Builder&, Inputs)> f;
};

BatchCase with_op(std::string_view op, std::vector<InputSpec> inputs, Attrs attrs = {}) {
  return {std::move(inputs), [op = std::string(op), attrs](Builder& b, Inputs x) { return b.op(op, x, attrs); }};
}

BatchCase unary(std::string_view op, DType dtype = DType::f64, double low = -2, double high = 2) {
  return with_op(op, {{"x", {2, 3}, dtype, low, high}});
}

BatchCase binary(std::string_view op, DType dtype = DType::f64, double low = -2, double high = 2) {
  return with_op(op, {{"x", {2, 3}, dtype, low, high}, {"y", {3}, dtype, low, high}});
}

const std::map<std::string, BatchCase>& batch_cases() {
  static const std::map<std::string, BatchCase> cases = {
      {"neg", unary("neg")},
      {"abs", unary("abs")},
      {"sign", unary("sign", DType::i32, -3, 3)},
      {"exp", unary("exp")},
      {"log", unary("log", DType::f64, 0.5, 2)},
      {"sqrt", unary("sqrt", DType::f64, 0.5, 2)},
      {"rsqrt", unary("rsqrt", DType::f64, 0.5, 2)},
      {"sin", unary("sin")},
      {"cos", unary("cos")},
      {"tanh", unary("tanh")},
      {"erf", unary("erf")},
      {"logistic", unary("logistic")},
      {"logical_not", unary("logical_not", DType::boolean, 0, 2)},
      {"add", binary("add")},
      {"sub", binary("sub")},
      {"mul", binary("mul")},
      {"div", binary("div", DType::f64, 0.5, 2)},
      {"pow", binary("pow", DType::f64, 0.5, 2)},
      {"max", binary("max")},
      {"min", binary("min")},
      {"eq", binary("eq", DType::i32, 0, 2)},
      {"ne", binary("ne", DType::i32, 0, 2)},
      {"lt", binary("lt")},
      {"le", binary("le")},
      {"gt", binary("gt")},
      {"ge", binary("ge")},
      {"logical_and", binary("logical_and", DType::boolean, 0, 2)},
      {"logical_or", binary("logical_or", DType::boolean, 0, 2)},
      {"where", with_op("where", {{"c", {3}, DType::boolean, 0, 2}, {"x", {2, 3}}, {"y", {3}}})},
      {"cast", with_op("cast", {{"x", {2, 3}}}, {{"dtype", DType::i32}})},
      {"sum", with_op("sum", {{"x", {2, 3}}}, {{"axes", std::vector<int64_t>{-1}}})},
      {"reduce_max",
       with_op("reduce_max", {{"x", {2, 3}}}, {{"axes", std::vector<int64_t>{0}}, {"keepdims", int64_t{1}}})},
      {"reduce_min", with_op("reduce_min", {{"x", {2, 3}}}, {{"axes", std::vector<int64_t>{}}})},
      {"argmax", with_op("argmax", {{"x", {2, 3}}}, {{"axes", std::vector<int64_t>{1}}})},
      {"argmin", with_op("argmin", {{"x", {2, 3}}}, {{"axes", std::vector<int64_t>{0, 1}}})},
      {"reshape", with_op("reshape", {{"x", {2, 3}}}, {{"shape", std::vector<int64_t>{3, 1, 2}}})},
      {"transpose", with_op("transpose", {{"x", {2, 3, 4}}}, {{"perm", std::vector<int64_t>{2, 0, 1}}})},
      {"broadcast", with_op("broadcast", {{"x", {3, 1}}}, {{"shape", std::vector<int64_t>{2, 3, 4}}})},
      {"slice", with_op("slice", {{"x", {4, 5}}},
                        {{"start", std::vector<int64_t>{1, 0}},
                         {"stop", std::vector<int64_t>{4, 5}},
                         {"step", std::vector<int64_t>{2, 2}}})},
      {"concat", with_op("concat", {{"x", {2, 1}}, {"y", {2, 3}}}, {{"axis", int64_t{1}}})},
      {"pad", with_op("pad", {{"x", {2, 3}}},
                      {{"low", std::vector<int64_t>{1, 0}},
                       {"high", std::vector<int64_t>{0, 2}},
                       {"interior", std::vector<int64_t>{0, 1}},
                       {"value", 0.5}})},
      {"gather", with_op("gather", {{"x", {3, 2}}, {"i", {2, 2}, DType::i32, 0, 3}}, {{"axis", int64_t{1}}})},
      {"scatter_add",
       with_op("scatter_add", {{"x", {3, 2}}, {"i", {4}, DType::i32, 0, 3}, {"u", {4, 2}}}, {{"axis", int64_t{0}}})},
      {"one_hot",
       with_op("one_hot", {{"i", {2, 3}, DType::i32, 0, 4}}, {{"depth", int64_t{4}}, {"dtype", DType::f32}})},
      {"matmul", with_op("matmul", {{"a", {2, 3}}, {"c", {3, 4}}})},
      {"random_normal", with_op("random_normal", {{"k", {}, DType::i64, 0, 1000}},
                                {{"shape", std::vector<int64_t>{2, 3}}, {"dtype", DType::f64}})},
      {"random_uniform", with_op("random_uniform", {{"k", {}, DType::i64, 0, 1000}},
                                 {{"shape", std::vector<int64_t>{5}}, {"dtype", DType::f32}})},
      {"random_bernoulli",
       with_op("random_bernoulli", {{"k", {}, DType::i64, 0, 1000}}, {{"shape", std::vector<int64_t>{5}}, {"p", 0.5}})},
  };
  return cases;
}

Tensor random_tensor(DType dtype, const Shape& shape, double low, double high, std::mt19937& rng) {
  std::uniform_real_distribution<double> dist(low, high);
  std::vector<double> values(static_cast<size_t>(numel(shape)));
  for (double& v : values) v = is_float(dtype) ? dist(rng) : std::floor(dist(rng));
  return tensor(dtype, shape, values);
}

Tensor row_of(const Tensor& t, int64_t row) {
  Shape shape(t.shape().begin() + 1, t.shape().end());
  size_t size = static_cast<size_t>(numel(shape)) * dtype_size(t.dtype());
  auto begin = t.bytes().begin() + static_cast<std::ptrdiff_t>(size * static_cast<size_t>(row));
  return Tensor(t.dtype(), shape, std::vector<uint8_t>(begin, begin + static_cast<std::ptrdiff_t>(size)));
}

void check_batching(const BatchCase& c, const std::vector<bool>& batched) {
  std::mt19937 rng(99);
  Graph g;
  Builder b(g);
  std::vector<NodeId> xs;
  std::vector<std::string> batched_names;
  std::vector<Tensor> stacked;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const InputSpec& spec = c.inputs[i];
    xs.push_back(b.input(spec.name, spec.shape, spec.dtype));
    Shape shape = spec.shape;
    if (batched[i]) {
      batched_names.push_back(spec.name);
      shape.insert(shape.begin(), kBatch);
    }
    stacked.push_back(random_tensor(spec.dtype, shape, spec.low, spec.high, rng));
  }
  b.output("out", c.f(b, xs));
  Tensor all = testing::run(vmap(g, batched_names, kBatch), stacked)[0];
  for (int64_t row = 0; row < kBatch; ++row) {
    std::vector<Tensor> inputs;
    for (size_t i = 0; i < stacked.size(); ++i) inputs.push_back(batched[i] ? row_of(stacked[i], row) : stacked[i]);
    Tensor expected = testing::run(g, inputs)[0];
    EXPECT_EQ(row_of(all, row), expected) << "row " << row;
  }
}

TEST(Batching, EveryPrimitiveWithInputsHasACase) {
  for (const Primitive* p : all_primitives()) {
    if (p->arity == 0) continue;  // never batched: nothing it reads carries the axis
    EXPECT_TRUE(batch_cases().contains(std::string(p->name))) << p->name << " has no case in batching_test.cc";
  }
}

TEST(Batching, VmapEqualsStackingRows) {
  for (const auto& [name, c] : batch_cases()) {
    size_t n = c.inputs.size();
    for (unsigned mask = 1; mask < (1u << n); ++mask) {
      std::vector<bool> batched(n);
      for (size_t i = 0; i < n; ++i) batched[i] = (mask >> i) & 1;
      SCOPED_TRACE(name + " with inputs mask " + std::to_string(mask));
      try {
        check_batching(c, batched);
      } catch (const std::exception& e) {
        ADD_FAILURE() << name << " with inputs mask " << mask << ": " << e.what();
      }
    }
  }
}

TEST(Batching, RefusesUnknownInputsAndEmptyBatches) {
  Graph g;
  Builder b(g);
  b.output("y", b.neg(b.input("x", {2}, DType::f32)));
  std::vector<std::string> unknown{"z"}, known{"x"};
  EXPECT_THROW(vmap(g, unknown, 2), GraphError);
  EXPECT_THROW(vmap(g, known, 0), GraphError);
}

TEST(Batching, UnbatchedOutputsAreBroadcast) {
  Graph g;
  Builder b(g);
  NodeId x = b.input("x", {2}, DType::f32);
  NodeId y = b.input("y", {2}, DType::f32);
  b.output("x2", b.add(x, x));
  b.output("y2", b.add(y, y));
  std::vector<std::string> batched{"x"};
  Graph v = vmap(g, batched, 4);
  EXPECT_EQ(v.node(*v.find_output("x2")).shape, (Shape{4, 2}));
  EXPECT_EQ(v.node(*v.find_output("y2")).shape, (Shape{4, 2}));
}

}  // namespace
}  // namespace sx::graph
