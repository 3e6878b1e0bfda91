// select_outputs and take_at: the graph a served model runs under --output and --at.
#include <gtest/gtest.h>

#include "graph/builder.h"
#include "graph/errors.h"
#include "graph/passes.h"
#include "test_util.h"

namespace sx::graph {
namespace {

using testing::tensor;

// x [1 3 2] -> logits = x @ w [1 3 4], aux = tanh(x) [1 3 2]; a scalar `loss` output.
Graph two_heads() {
  Graph g;
  Builder b(g);
  NodeId x = b.input("inputs", {1, 3, 2}, DType::f32);
  NodeId w = b.input("w", {2, 4}, DType::f32);
  b.output("logits", b.matmul(x, w));
  b.output("aux", b.tanh(x));
  return g;
}

std::vector<Tensor> two_heads_inputs() {
  return {tensor(DType::f32, {1, 3, 2}, {1, 2, 3, 4, 5, 6}), tensor(DType::f32, {2, 4}, {1, 0, 2, 1, 0, 1, 1, -1})};
}

TEST(SelectOutputs, KeepsTheNamedInTheirOrderAndDropsTheRest) {
  Graph g = two_heads();
  std::vector<std::string> names{"aux"};
  Graph only = select_outputs(g, names);
  ASSERT_EQ(only.outputs.size(), 1u);
  EXPECT_EQ(only.outputs[0].name, "aux");
  EXPECT_EQ(only.inputs.size(), 2u);  // every input stays: a caller passes them all
  for (const Node& node : only.nodes) EXPECT_NE(node.op_name(), "matmul");
  EXPECT_EQ(testing::run(only, two_heads_inputs())[0], testing::run(g, two_heads_inputs())[1]);
  std::vector<std::string> both{"aux", "logits"};
  EXPECT_EQ(select_outputs(g, both).outputs[1].name, "logits");
}

TEST(SelectOutputs, AnUnknownNameIsRefusedNamingTheOutputs) {
  std::vector<std::string> names{"logit"};
  try {
    select_outputs(two_heads(), names);
    FAIL() << "no error";
  } catch (const GraphError& e) {
    EXPECT_NE(std::string(e.what()).find("`logit`"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("`logits`, `aux`"), std::string::npos) << e.what();
  }
}

TEST(TakeAt, EachOutputAtThatPlaceOfItsSecondAxis) {
  Graph g = two_heads();
  Graph at = take_at(g);
  ASSERT_EQ(at.inputs.back().name, "at");
  EXPECT_EQ(at.node(at.outputs[0].node).shape, (Shape{1, 1, 4}));
  EXPECT_EQ(at.node(at.outputs[1].node).shape, (Shape{1, 1, 2}));
  std::vector<Tensor> whole = testing::run(g, two_heads_inputs());
  for (int32_t place = 0; place < 3; ++place) {
    std::vector<Tensor> inputs = two_heads_inputs();
    inputs.push_back(tensor(DType::i32, {1}, {static_cast<double>(place)}));
    std::vector<Tensor> taken = testing::run(at, inputs);
    for (size_t o = 0; o < 2; ++o) {
      int64_t width = whole[o].shape()[2];
      for (int64_t j = 0; j < width; ++j) {
        EXPECT_EQ(taken[o].value(j), whole[o].value(place * width + j)) << "output " << o << " at " << place;
      }
    }
  }
}

TEST(TakeAt, OutputsWithoutOneSecondAxisAreRefused) {
  Graph g;
  Builder b(g);
  NodeId x = b.input("inputs", {1, 3}, DType::f32);
  b.output("row", x);
  b.output("sum", b.sum(x, {1}));
  EXPECT_THROW(take_at(g), GraphError);
  Graph h;
  Builder c(h);
  NodeId y = c.input("inputs", {1, 3, 2}, DType::f32);
  c.output("a", y);
  c.output("b", c.transpose(y, {0, 2, 1}));
  EXPECT_THROW(take_at(h), GraphError);
}

}  // namespace
}  // namespace sx::graph
