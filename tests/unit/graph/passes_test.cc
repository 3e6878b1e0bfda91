// The passes on small graphs: each result is verified (the passes run the
// verifier) and computes what the original did. Also the verifier's
// rejections, which name the node.
#include "graph/passes.h"

#include <cmath>
#include <limits>

#include "graph/autodiff.h"
#include "graph/errors.h"
#include "graph/primitive.h"
#include "graph/text.h"
#include "graph/verify.h"
#include "test_util.h"

namespace sx::graph {
namespace {

using testing::tensor;

size_t count_op(const Graph& g, std::string_view op) {
  size_t n = 0;
  for (const Node& node : g.nodes) n += node.op_name() == op;
  return n;
}

// Folds on the reference device, as runtime::compile folds on the device it compiles for.
std::vector<Tensor> on_reference(const Graph& constants) { return testing::run(constants); }

void expect_same_results(const Graph& a, const Graph& b, const std::vector<Tensor>& inputs) {
  std::vector<Tensor> ra = testing::run(a, inputs), rb = testing::run(b, inputs);
  ASSERT_EQ(ra.size(), rb.size());
  for (size_t i = 0; i < ra.size(); ++i) EXPECT_EQ(ra[i], rb[i]) << "output " << i;
}

TEST(Passes, ConstantFoldingEvaluatesConstantSubgraphs) {
  Graph g;
  Builder b(g);
  NodeId x = b.input("x", {2}, DType::f32);
  NodeId c = b.mul(b.constant(tensor(DType::f32, {2}, {1, 2})), b.literal(3.0));
  b.output("y", b.add(x, c));
  Graph folded = fold_constants(g, on_reference);
  Graph clean = eliminate_dead_code(folded);
  EXPECT_EQ(count_op(clean, "mul"), 0u);
  EXPECT_EQ(count_op(clean, "add"), 1u);
  expect_same_results(g, clean, {tensor(DType::f32, {2}, {10, 20})});
}

TEST(Passes, ConstantFoldingTakesItsValuesFromTheEvaluatorInOneCall) {
  Graph g;
  Builder b(g);
  NodeId x = b.input("x", {2}, DType::f32);
  NodeId c = b.exp(b.constant(tensor(DType::f32, {2}, {1, 2})));
  NodeId d = b.neg(c);
  b.output("y", b.add(x, c));
  b.output("z", b.mul(x, d));
  int calls = 0;
  auto evaluate = [&](const Graph& constants) {
    ++calls;
    EXPECT_TRUE(constants.inputs.empty());
    EXPECT_EQ(constants.outputs.size(), 2u);  // exp and neg: what the unfolded nodes read
    return std::vector<Tensor>{tensor(DType::f32, {2}, {7, 8}), tensor(DType::f32, {2}, {9, 10})};
  };
  Graph folded = eliminate_dead_code(fold_constants(g, evaluate));
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(count_op(folded, "exp"), 0u);
  EXPECT_EQ(count_op(folded, "neg"), 0u);
  testing::expect_tensor(testing::run(folded, {tensor(DType::f32, {2}, {1, 1})})[1], DType::f32, {2}, {9, 10});
  auto never = [&](const Graph&) -> std::vector<Tensor> { throw std::logic_error("nothing to fold"); };
  EXPECT_NO_THROW(fold_constants(folded, never));
}

TEST(Passes, ConstantFoldingLeavesLargeResults) {
  Graph g;
  Builder b(g);
  b.output("y", b.full({100, 100}, DType::f32, 1.0));
  EXPECT_EQ(count_op(fold_constants(g, on_reference), "broadcast"), 1u);
}

TEST(Passes, CseMergesEqualNodes) {
  Graph g;
  Builder b(g);
  NodeId x = b.input("x", {2}, DType::f32);
  NodeId e1 = b.exp(x), e2 = b.exp(x);
  NodeId one = b.scalar(1.0, DType::f32), one_again = b.scalar(1.0, DType::f32);
  b.output("y", b.add(b.add(e1, e2), b.add(one, one_again)));
  Graph merged = eliminate_dead_code(eliminate_common_subexpressions(g));
  EXPECT_EQ(count_op(merged, "exp"), 1u);
  EXPECT_EQ(count_op(merged, "constant"), 1u);
  expect_same_results(g, merged, {tensor(DType::f32, {2}, {0, 1})});
}

TEST(Passes, SimplifyRemovesIdentities) {
  Graph g;
  Builder b(g);
  NodeId x = b.input("x", {2, 3}, DType::f32);
  NodeId y = b.add(b.mul(x, b.literal(1.0)), b.literal(0.0));
  y = b.reshape(b.reshape(y, {3, 2}), {6});
  y = b.reshape(y, {2, 3});
  y = b.transpose(b.transpose(y, {1, 0}), {1, 0});
  y = b.neg(b.neg(y));
  y = b.stop_gradient(b.emit(primitive("cast"), {y}, {{"dtype", DType::f32}}));
  b.output("y", y);
  Graph s = optimize(g, on_reference);
  EXPECT_EQ(s.nodes.size(), 1u);  // only the input is left
  EXPECT_EQ(*s.find_output("y"), *s.find_input("x"));
  expect_same_results(g, s, {tensor(DType::f32, {2, 3}, {1, 2, 3, 4, 5, 6})});
}

// transpose(broadcast(w)) with the batch axes in place becomes broadcast(transpose(w)):
// the copy a batch of w^T would need is one of w^T; a transpose that moves a batch axis,
// or one of the broadcast's own size-1 axes within w, keeps its form or its values.
TEST(Passes, SimplifyMovesATransposeBeforeABroadcast) {
  Graph g;
  Builder b(g);
  NodeId w = b.input("w", {2, 3}, DType::f32);
  NodeId c = b.input("c", {1, 3}, DType::f32);
  b.output("wt", b.transpose(b.broadcast(w, {4, 2, 3}), {0, 2, 1}));
  b.output("same", b.transpose(b.broadcast(w, {4, 2, 3}), {0, 1, 2}));
  b.output("moved", b.transpose(b.broadcast(w, {4, 2, 3}), {1, 0, 2}));
  b.output("column", b.transpose(b.broadcast(c, {5, 2, 3}), {0, 2, 1}));
  Graph s = simplify(g);
  const Node& wt = s.node(*s.find_output("wt"));
  ASSERT_EQ(wt.op_name(), "broadcast");
  EXPECT_EQ(s.node(wt.inputs[0]).op_name(), "transpose");
  EXPECT_EQ(s.node(wt.inputs[0]).shape, (Shape{3, 2}));
  EXPECT_EQ(s.node(*s.find_output("same")).op_name(), "broadcast");
  EXPECT_EQ(s.node(*s.find_output("moved")).op_name(), "transpose");
  EXPECT_EQ(s.node(*s.find_output("column")).op_name(), "broadcast");
  expect_same_results(g, s, {tensor(DType::f32, {2, 3}, {1, 2, 3, 4, 5, 6}), tensor(DType::f32, {1, 3}, {7, 8, 9})});
}

// A broadcast of a broadcast (a batched model's broadcast weight) is one broadcast of the
// innermost input, with the same values.
TEST(Passes, SimplifyMergesABroadcastOfABroadcast) {
  Graph g;
  Builder b(g);
  NodeId bias = b.input("bias", {3}, DType::f32);
  NodeId column = b.input("column", {2, 1}, DType::f32);
  b.output("bias", b.broadcast(b.broadcast(bias, {2, 3}), {4, 1, 2, 3}));
  b.output("column", b.broadcast(b.broadcast(column, {1, 2, 3}), {5, 2, 3}));
  Graph s = eliminate_dead_code(simplify(g));
  for (const char* name : {"bias", "column"}) {
    const Node& out = s.node(*s.find_output(name));
    ASSERT_EQ(out.op_name(), "broadcast") << name;
    EXPECT_EQ(out.inputs[0], *s.find_input(name)) << name;
  }
  EXPECT_EQ(count_op(s, "broadcast"), 2u);
  expect_same_results(g, s, {tensor(DType::f32, {3}, {1, 2, 3}), tensor(DType::f32, {2, 1}, {4, 5})});
}

// x / c for c a power of two is x * (1 / c): the same bits for every x, subnormal results,
// infinities, NaN and signed zeros among them. Other divisors, and a reciprocal that is
// not a normal float, stay divisions.
TEST(Passes, SimplifyMultipliesByTheReciprocalOfAPowerOfTwo) {
  Graph g;
  Builder b(g);
  NodeId x = b.input("x", {8}, DType::f32);
  NodeId h = b.input("h", {8}, DType::bf16);
  b.output("eighth", b.div(x, b.literal(8.0)));
  b.output("minus_quarter", b.div(x, b.full({8}, DType::f32, -0.25)));
  b.output("bf16_half", b.div(h, b.literal(2.0)));
  b.output("three", b.div(x, b.literal(3.0)));
  b.output("huge", b.div(x, b.literal(0x1p127)));
  Graph s = optimize(g, on_reference);
  for (const char* name : {"eighth", "minus_quarter", "bf16_half"})
    EXPECT_EQ(s.node(*s.find_output(name)).op_name(), "mul") << name;
  for (const char* name : {"three", "huge"}) EXPECT_EQ(s.node(*s.find_output(name)).op_name(), "div") << name;
  const float tiny = 0x1p-140f, inf = std::numeric_limits<float>::infinity(), nan = std::nanf("7");
  const std::vector<double> values{1.0, -0.0, 0x1p-120, static_cast<double>(tiny), inf, -inf, 3.0e38, 1.75};
  Tensor xs = tensor(DType::f32, {8}, values);
  xs.data<float>()[7] = nan;
  expect_same_results(g, s, {xs, Tensor::from_doubles(DType::bf16, {8}, values)});
}

TEST(Passes, DeadCodeEliminationKeepsInputsAndWhatOutputsNeed) {
  Graph g;
  Builder b(g);
  NodeId x = b.input("x", {2}, DType::f32);
  b.input("unused", {2}, DType::f32);
  b.exp(x);
  b.output("y", b.neg(x));
  Graph d = eliminate_dead_code(g);
  EXPECT_EQ(d.nodes.size(), 3u);
  EXPECT_EQ(d.inputs.size(), 2u);
  EXPECT_EQ(count_op(d, "exp"), 0u);
}

TEST(Passes, OptimizeKeepsResultsOfATrainingLikeGraph) {
  Graph g;
  Builder b(g);
  NodeId w = b.input("w", {3, 2}, DType::f32);
  NodeId x = b.input("x", {4, 3}, DType::f32);
  NodeId h = b.tanh(b.add(b.matmul(x, w), b.mul(b.literal(0.0), b.literal(2.0))));
  b.output("loss", b.sum(b.mul(h, h), {}));
  std::vector<Tensor> in{tensor(DType::f32, {3, 2}, {1, 2, 3, 4, 5, 6}),
                         tensor(DType::f32, {4, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1})};
  expect_same_results(g, optimize(g, on_reference), in);
}

// A device that runs every forward composite keeps the ones whose intermediates nothing
// else computes; a differentiated one (its composite_gradient, which the device does not
// run, builds its decomposition again) is expanded, nested composites too, and CSE then
// finds each intermediate once. A device that runs the gradients too keeps them all.
TEST(Passes, ExpandSharedCompositesExpandsWhatTheGradientComputesAgain) {
  Graph g;
  Builder b(g);
  NodeId x = b.input("x", {2, 4, 8}, DType::f32);
  NodeId scores = b.input("scores", {4, 8}, DType::f32);
  NodeId shown = b.op("softmax", {scores});  // not differentiated: x alone is
  NodeId attended = b.op("attention", {x, x, x}, {{"causal", int64_t{1}}});
  NodeId normed = b.op("layer_norm", {attended}, {{"eps", 1e-5}, {"weight", int64_t{0}}, {"bias", int64_t{0}}});
  NodeId loss = b.sum(b.mul(normed, normed), {0, 1, 2});
  b.output("loss", loss);
  b.output("shown", shown);
  b.output("dx", gradients(b, loss, std::vector<NodeId>{x})[0]);
  const NodePredicate every = [](const Graph&, const Node&) { return true; };
  const NodePredicate forward_only = [](const Graph&, const Node& node) {
    return node.op() != PrimId::composite_gradient;
  };
  EXPECT_EQ(count_op(expand_shared_composites(g, every), "composite_gradient"), 4u);
  EXPECT_EQ(count_op(expand_shared_composites(g, every), "attention"), 1u);

  const Graph expanded = expand_shared_composites(g, forward_only);
  EXPECT_EQ(count_op(expanded, "attention") + count_op(expanded, "layer_norm"), 0u);
  EXPECT_EQ(count_op(expanded, "composite_gradient"), 0u);
  EXPECT_EQ(count_op(expanded, "softmax"), 1u);  // the one of `scores`
  // Its exponentials are those of the graph with every composite expanded, less the kept
  // softmax's: none twice.
  const Graph all = eliminate_common_subexpressions(expand_composites(g));
  EXPECT_EQ(count_op(eliminate_common_subexpressions(expanded), "exp") + 1, count_op(all, "exp"));
  std::vector<double> xs(64), ss(32);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = std::sin(0.7 * static_cast<double>(i));
  for (size_t i = 0; i < ss.size(); ++i) ss[i] = std::cos(0.3 * static_cast<double>(i));
  expect_same_results(expanded, expand_composites(g),
                      {tensor(DType::f32, {2, 4, 8}, xs), tensor(DType::f32, {4, 8}, ss)});

  // Without the gradient every composite stays one node.
  Graph forward;
  Builder f(forward);
  NodeId fx = f.input("x", {2, 4, 8}, DType::f32);
  f.output("y", f.op("layer_norm", {f.op("attention", {fx, fx, fx}, {{"causal", int64_t{0}}})},
                     {{"eps", 1e-5}, {"weight", int64_t{0}}, {"bias", int64_t{0}}}));
  const Graph kept = expand_shared_composites(forward, every);
  EXPECT_EQ(count_op(kept, "attention"), 1u);
  EXPECT_EQ(count_op(kept, "layer_norm"), 1u);
  EXPECT_EQ(count_op(kept, "softmax"), 0u);
  // A device that runs none of them gets every one expanded.
  EXPECT_EQ(count_op(expand_shared_composites(forward, [](const Graph&, const Node&) { return false; }), "attention"),
            0u);
}

TEST(Text, OneNodeALine) {
  Graph g;
  Builder b(g);
  NodeId x = b.input("x", {2, 3}, DType::f32);
  b.output("loss", b.sum(b.mul(x, b.literal(2.0)), {}));
  EXPECT_EQ(graph_to_text(g),
            "%0 = input \"x\" : f32[2, 3]\n"
            "%1 = constant 2 : f64[] weak\n"
            "%2 = cast %1 {dtype=f32} : f32[] weak\n"
            "%3 = broadcast %2 {shape=[2, 3]} : f32[2, 3] weak\n"
            "%4 = mul %0 %3 : f32[2, 3]\n"
            "%5 = sum %4 {axes=[0, 1] keepdims=0} : f32[]\n"
            "output \"loss\" = %5\n");
}

TEST(Verify, RejectsAndNamesTheNode) {
  Graph g;
  Builder b(g);
  NodeId x = b.input("x", {2}, DType::f32);
  NodeId y = b.exp(x);
  b.output("y", y);
  verify(g);
  Graph wrong_shape = g;
  wrong_shape.nodes[y].shape = {3};
  EXPECT_THROW(
      {
        try {
          verify(wrong_shape);
        } catch (const VerifyError& e) {
          EXPECT_STREQ(e.what(), "verify: node 1 (exp f32[3]): its rule gives f32[2]");
          throw;
        }
      },
      VerifyError);
  Graph out_of_order = g;
  out_of_order.nodes[y].inputs = {1};
  EXPECT_THROW(verify(out_of_order), VerifyError);
  Graph bad_output = g;
  bad_output.outputs[0].node = 9;
  EXPECT_THROW(verify(bad_output), VerifyError);
  Graph wrong_arity = g;
  wrong_arity.nodes[y].inputs = {};
  EXPECT_THROW(verify(wrong_arity), VerifyError);
}

}  // namespace
}  // namespace sx::graph
