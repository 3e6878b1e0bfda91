// Rules at their edges, each pinned so that changing it fails a test:
// broadcasting a size-0 axis against a size-1 axis (NumPy's rule: 0), the
// gradients of max and min at ties and of the extremum reductions at ties,
// and the gradient through a cast that changes the dtype.
#include "graph/autodiff.h"
#include "graph/shape.h"
#include "test_util.h"

namespace sx::graph {
namespace {

using testing::tensor;

TEST(EdgeRules, ASizeZeroAxisBroadcastsAgainstSizeOneToZero) {
  EXPECT_EQ(broadcast_shapes({0}, {1}), Shape{0});
  EXPECT_EQ(broadcast_shapes({1}, {0}), Shape{0});
  EXPECT_EQ(broadcast_shapes({0, 3}, {1, 3}), (Shape{0, 3}));
  EXPECT_EQ(broadcast_shapes({2, 1}, {1, 0}), (Shape{2, 0}));
  EXPECT_EQ(broadcast_shapes({0}, {2}), std::nullopt);
  Tensor sum = testing::eval([](Builder& b) {
    return b.add(b.zeros({0, 2}, DType::f32), b.zeros({1, 2}, DType::f32));
  });
  EXPECT_EQ(sum.shape(), (Shape{0, 2}));
}

// The gradients of loss(x, y) = sum(f(x, y) * w) by x and y, at x and y.
std::vector<Tensor> gradients_of(const std::function<NodeId(Builder&, NodeId, NodeId)>& f, const Tensor& x,
                                 const Tensor& y) {
  Graph g;
  Builder b(g);
  NodeId xi = b.input("x", x.shape(), DType::f64);
  NodeId yi = b.input("y", y.shape(), DType::f64);
  NodeId w = b.constant(tensor(DType::f64, {3}, {1, 10, 100}));
  b.output("loss", b.sum(b.mul(f(b, xi, yi), w), {}));
  std::vector<std::string> wrt{"x", "y"};
  std::vector<Tensor> out = testing::run(with_gradients(g, "loss", wrt), {x, y});
  return {out[1], out[2]};
}

TEST(EdgeRules, MaxAndMinGiveATieToTheirFirstOperand) {
  Tensor x = tensor(DType::f64, {3}, {1, 5, 2}), y = tensor(DType::f64, {3}, {1, 3, 4});
  auto max = gradients_of([](Builder& b, NodeId p, NodeId q) { return b.max(p, q); }, x, y);
  testing::expect_tensor(max[0], DType::f64, {3}, {1, 10, 0});
  testing::expect_tensor(max[1], DType::f64, {3}, {0, 0, 100});
  auto min = gradients_of([](Builder& b, NodeId p, NodeId q) { return b.min(p, q); }, x, y);
  testing::expect_tensor(min[0], DType::f64, {3}, {1, 0, 100});
  testing::expect_tensor(min[1], DType::f64, {3}, {0, 10, 0});
}

TEST(EdgeRules, AnExtremumReductionSplitsItsGradientAmongTies) {
  for (bool is_max : {true, false}) {
    Graph g;
    Builder b(g);
    NodeId x = b.input("x", {2, 3}, DType::f64);
    NodeId r = is_max ? b.reduce_max(x, {1}) : b.reduce_min(x, {1});
    b.output("loss", b.sum(b.mul(r, b.constant(tensor(DType::f64, {2}, {1, 10}))), {}));
    std::vector<std::string> wrt{"x"};
    // Row 0 ties three ways, row 1 two ways (at its max, or at its min).
    Tensor in =
        is_max ? tensor(DType::f64, {2, 3}, {4, 4, 4, 7, 1, 7}) : tensor(DType::f64, {2, 3}, {4, 4, 4, 1, 7, 1});
    Tensor grad = testing::run(with_gradients(g, "loss", wrt), {in})[1];
    testing::expect_tensor(grad, DType::f64, {2, 3}, {1.0 / 3, 1.0 / 3, 1.0 / 3, 5, 0, 5});
  }
}

TEST(EdgeRules, ACastThatChangesTheDtypeMatchesFiniteDifferences) {
  // loss(x) = sum(cast(cast(x, f32) * 3, f64)^2): the gradient is 18 x, up to
  // f32 rounding of x; central differences (whose steps are rounded to f32
  // too) agree within 1e-2.
  Graph g;
  Builder b(g);
  NodeId x = b.input("x", {3}, DType::f64);
  NodeId y = b.cast(b.mul(b.cast(x, DType::f32), b.scalar(3, DType::f32)), DType::f64);
  b.output("loss", b.sum(b.mul(y, y), {}));
  std::vector<std::string> wrt{"x"};
  Graph with = with_gradients(g, "loss", wrt);
  std::vector<double> at{0.5, -1.25, 2.0};
  Tensor grad = testing::run(with, {tensor(DType::f64, {3}, at)})[1];
  for (size_t i = 0; i < at.size(); ++i) {
    double h = 1e-3;
    std::vector<double> up = at, down = at;
    up[i] += h;
    down[i] -= h;
    double f_up = testing::run(g, {tensor(DType::f64, {3}, up)})[0].value(0);
    double f_down = testing::run(g, {tensor(DType::f64, {3}, down)})[0].value(0);
    EXPECT_NEAR(grad.value(static_cast<int64_t>(i)), (f_up - f_down) / (2 * h), 1e-2) << i;
    EXPECT_NEAR(grad.value(static_cast<int64_t>(i)), 18 * at[i], 1e-5) << i;
  }
  EXPECT_EQ(grad.dtype(), DType::f64);
}

}  // namespace
}  // namespace sx::graph
