// A composite's gradient is one composite_gradient node per input (autodiff.h): the
// traced gradient holds those nodes and none of the decompositions' own, and expanded they
// give the bits of the decomposition differentiated where it stands, where the input is
// used once inside it (where it is used several times, its contributions inside are summed
// first). The gradients' finite differences are autodiff_test's, over composite_gradient's
// sample record too.
#include <random>

#include "graph/autodiff.h"
#include "graph/composite.h"
#include "graph/errors.h"
#include "graph/passes.h"
#include "samples/samples.h"
#include "test_util.h"

namespace sx::graph {
namespace {

using testing::tensor;

int count(const Graph& g, PrimId id) {
  int n = 0;
  for (const Node& node : g.nodes) n += node.op() == id ? 1 : 0;
  return n;
}

// A block of a transformer, on x [2, 4, 8]: layer_norm, gelu, attention of a node with
// itself (q, k and v are one node), a softmax, and cross_entropy's loss.
Graph transformer_block() {
  Graph g;
  Builder b(g);
  NodeId x = b.input("x", {2, 4, 8}, DType::f32);
  NodeId w = b.input("w", {8}, DType::f32), bias = b.input("bias", {8}, DType::f32);
  NodeId targets = b.input("targets", {2, 4}, DType::i32);
  NodeId normed = b.op("layer_norm", {x, w, bias}, {{"eps", 1e-5}, {"weight", int64_t{1}}, {"bias", int64_t{1}}});
  NodeId h = b.op("gelu", {normed}, {{"form", std::string("tanh")}});
  NodeId attended = b.op("attention", {h, h, h}, {{"causal", int64_t{1}}});
  NodeId logits = b.add(attended, b.op("softmax", {x}));
  b.output("loss", b.op("cross_entropy", {logits, targets}));
  return g;
}

TEST(CompositeGradient, ATracedGradientHoldsOneNodePerInputAndNoDecomposition) {
  const std::vector<std::string> wrt{"x", "w", "bias"};
  const Graph g = with_gradients(transformer_block(), "loss", wrt);
  // layer_norm's three inputs, gelu's, attention's three (one node), softmax's and the
  // logits of cross_entropy (not its integer targets).
  EXPECT_EQ(count(g, PrimId::composite_gradient), 3 + 1 + 3 + 1 + 1);
  for (PrimId inside : {PrimId::exp, PrimId::rsqrt, PrimId::tanh, PrimId::reduce_max, PrimId::one_hot}) {
    EXPECT_EQ(count(g, inside), 0) << primitive(inside).name;
  }
  // Expanded, attention's gradient holds its softmax's: a composite_gradient again.
  std::vector<ValueType> types(3, {{2, 4, 8}, DType::f32});
  types.push_back({{2, 4, 8}, DType::f32});
  const Graph attention = decomposition(primitive(PrimId::composite_gradient), types,
                                        gradient_attrs(primitive(PrimId::attention), 0, {{"causal", int64_t{1}}}));
  EXPECT_EQ(count(attention, PrimId::composite_gradient), 1);
  EXPECT_EQ(count(expand_composites(g), PrimId::composite_gradient), 0);
}

// On each device, the gradient nodes run by their kernels (reference: the decomposition
// alone) or expanded where they stand give the same bits.
TEST(CompositeGradient, TheNodesAndTheirExpansionGiveTheSameBitsOnEachDevice) {
  const std::vector<std::string> wrt{"x", "w", "bias"};
  const Graph g = with_gradients(transformer_block(), "loss", wrt);
  std::mt19937 rng(5);
  std::vector<Tensor> values;
  for (const NamedNode& in : g.inputs) {
    const Node& node = g.node(in.node);
    values.push_back(node.dtype == DType::i32
                         ? samples::draw({node.shape, DType::i32, samples::Domain::index(8)}, DType::f32, rng)
                         : samples::random_tensor(node.dtype, node.shape, rng));
  }
  for (std::string_view device : {"reference", "cpu"}) {
    SCOPED_TRACE(device);
    const std::vector<Tensor> as_nodes = testing::run_on(device, g, values);
    const std::vector<Tensor> expanded = testing::run_on(device, expand_composites(g), values);
    ASSERT_EQ(as_nodes.size(), 4u);
    for (size_t k = 0; k < as_nodes.size(); ++k) EXPECT_EQ(as_nodes[k], expanded[k]) << g.outputs[k].name;
  }
}

// The gradient for x of `g` (whose output "loss" reads input "x" [4, 16]), with its
// composites kept and with them expanded before differentiating, on `device`.
void expect_the_walk_in_place(const Graph& g, std::string_view device) {
  SCOPED_TRACE(device);
  std::mt19937 rng(7);
  const std::vector<Tensor> x{samples::random_tensor(DType::f32, {4, 16}, rng)};
  const std::vector<std::string> wrt{"x"};
  const Graph as_nodes = with_gradients(g, "loss", wrt), in_place = with_gradients(expand_composites(g), "loss", wrt);
  ASSERT_GT(count(as_nodes, PrimId::composite_gradient), 0);
  EXPECT_EQ(testing::run_on(device, as_nodes, x)[1], testing::run_on(device, in_place, x)[1]);
}

TEST(CompositeGradient, AnInputUsedOnceInsideHasTheBitsOfTheDecompositionDifferentiatedInPlace) {
  Graph softmax;  // x read by softmax once, and outside it too
  {
    Builder b(softmax);
    NodeId x = b.input("x", {4, 16}, DType::f32);
    NodeId weights = b.iota({4, 16}, 1, DType::f32);
    b.output("loss", b.add(b.sum(b.mul(b.op("softmax", {x}), weights), {}), b.sum(b.mul(x, x), {})));
  }
  Graph gelu;  // x read by gelu alone, five times inside it
  {
    Builder b(gelu);
    NodeId x = b.input("x", {4, 16}, DType::f32);
    b.output("loss", b.sum(b.op("gelu", {x}, {{"form", std::string("tanh")}}), {}));
  }
  for (const Graph* g : {&softmax, &gelu}) {
    expect_the_walk_in_place(*g, "reference");
    expect_the_walk_in_place(*g, "cpu");
  }
}

// A composite that reads one node twice: each input's gradient holds the other constant,
// expanded in place as its reference kernel (inputs apart) computes it, and they sum to
// the node's gradient.
TEST(CompositeGradient, EachInputOfOneNodeReadTwiceHasItsOwnGradient) {
  Graph g;
  Builder b(g);
  NodeId x = b.input("x", {8}, DType::f64);
  b.output("loss", b.sum(b.op("rms_norm", {x, x}, {{"eps", 1e-6}, {"weight", int64_t{1}}}), {}));
  const std::vector<std::string> wrt{"x"};
  const Graph as_nodes = with_gradients(g, "loss", wrt);
  EXPECT_EQ(count(as_nodes, PrimId::composite_gradient), 2);
  std::mt19937 rng(3);
  const std::vector<Tensor> values{samples::random_tensor(DType::f64, {8}, rng)};
  const Tensor by_kernels = testing::run(as_nodes, values)[1];
  EXPECT_EQ(by_kernels, testing::run(expand_composites(as_nodes), values)[1]);
  const std::vector<double> expected =
      testing::run(with_gradients(expand_composites(g), "loss", wrt), values)[1].to_doubles();
  testing::expect_tensor(by_kernels, DType::f64, {8}, expected, 1e-12);
}

TEST(CompositeGradient, AGradientsGradientNestsTheAttributes) {
  const Attrs softmax{{"axes", std::vector<int64_t>{-1}}};
  const Attrs first = gradient_attrs(primitive(PrimId::softmax), 0, softmax);
  EXPECT_EQ(first, (Attrs{{"of", std::string("softmax")}, {"input", int64_t{0}}, {"axes", std::vector<int64_t>{-1}}}));
  const Attrs second = gradient_attrs(primitive(PrimId::composite_gradient), 1, first);
  EXPECT_EQ(second, (Attrs{{"of", std::string("composite_gradient")},
                           {"input", int64_t{1}},
                           {"of.of", std::string("softmax")},
                           {"of.input", int64_t{0}},
                           {"axes", std::vector<int64_t>{-1}}}));
  EXPECT_EQ(&gradient_of(second), &primitive(PrimId::composite_gradient));
  EXPECT_EQ(differentiated_attrs(second), first);
  EXPECT_EQ(differentiated_attrs(first), softmax);
}

TEST(CompositeGradient, RefusesWhatIsNotAGradient) {
  Graph g;
  Builder b(g);
  NodeId x = b.input("x", {3}, DType::f32), wrong = b.input("wrong", {4}, DType::f32);
  NodeId ids = b.input("ids", {3}, DType::i32);
  auto message = [&](std::vector<NodeId> args, const Attrs& attrs) {
    try {
      b.op("composite_gradient", std::move(args), attrs);
    } catch (const ShapeError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const Attrs softmax = gradient_attrs(primitive(PrimId::softmax), 0, {{"axes", std::vector<int64_t>{0}}});
  EXPECT_EQ(message({x, wrong}, softmax), "composite_gradient: the value of softmax is f32[3], its cotangent f32[4]");
  EXPECT_EQ(message({x, x}, gradient_attrs(primitive(PrimId::softmax), 1, {{"axes", std::vector<int64_t>{0}}})),
            "composite_gradient: softmax has 1 inputs here, not an input 1");
  EXPECT_EQ(message({x}, softmax),
            "composite_gradient: takes the inputs of softmax and the cotangent of its value, got 1 inputs");
  EXPECT_EQ(message({ids, x}, gradient_attrs(primitive(PrimId::gelu), 0, {{"form", std::string("erf")}})),
            "composite_gradient: input 0 of gelu is i32, which has no gradient");
  EXPECT_EQ(message({x, x}, {{"of", std::string("adamw")}, {"input", int64_t{0}}}),
            "composite_gradient: `of` names a composite differentiated by its decomposition (softmax, layer_norm, "
            "...), not 'adamw'");
}

}  // namespace
}  // namespace sx::graph
