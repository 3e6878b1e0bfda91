// The builder's ops: argument checks and their messages, promotion and
// broadcasting inserted as explicit nodes, NumPy matmul.
#include "graph/errors.h"
#include "test_util.h"

namespace sx::graph {
namespace {

using testing::tensor;

std::string error_of(const std::function<void(Builder&)>& build) {
  Graph g;
  Builder b(g);
  try {
    build(b);
  } catch (const ShapeError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Builder, MatmulMismatchNamesBothShapes) {
  EXPECT_EQ(error_of([](Builder& b) {
              b.matmul(b.input("a", {2, 3}, DType::f32), b.input("b", {4, 5}, DType::f32));
            }),
            "matmul: cannot multiply [2, 3] by [4, 5]: inner dimensions 3 and 4 differ");
}

TEST(Builder, ErrorsBeginWithTheOpName) {
  EXPECT_EQ(error_of([](Builder& b) {
              b.add(b.input("a", {2, 3}, DType::f32), b.input("b", {4}, DType::f32));
            }),
            "add: cannot broadcast [2, 3] with [4]");
  EXPECT_EQ(error_of([](Builder& b) {
              b.reshape(b.input("a", {2, 3}, DType::f32), {4, 2});
            }),
            "reshape: cannot reshape [2, 3] (6 elements) into [4, 2] (8 elements)");
  EXPECT_EQ(error_of([](Builder& b) {
              b.reshape(b.input("a", {2, 3}, DType::f32), {4, -1});
            }),
            "reshape: cannot reshape [2, 3] (6 elements) into [4, -1]");
  EXPECT_EQ(error_of([](Builder& b) { b.exp(b.input("a", {2}, DType::i32)); }),
            "exp: needs floating-point operands, got i32");
  EXPECT_EQ(error_of([](Builder& b) { b.sum(b.input("a", {2}, DType::f32), {1}); }),
            "sum: axis 1 is out of range for rank 1");
  EXPECT_EQ(error_of([](Builder& b) {
              b.broadcast(b.input("a", {3}, DType::f32), {2, 4});
            }),
            "broadcast: cannot broadcast [3] to [2, 4]");
  EXPECT_EQ(error_of([](Builder& b) {
              b.transpose(b.input("a", {2, 3}, DType::f32), {0, 0});
            }),
            "transpose: [0, 0] is not a permutation of the axes of [2, 3]");
  EXPECT_EQ(error_of([](Builder& b) {
              b.concat({b.input("a", {2, 3}, DType::f32), b.input("b", {3, 3}, DType::f32)}, 1);
            }),
            "concat: cannot join f32[2, 3] and f32[3, 3] along axis 1");
  EXPECT_EQ(error_of([](Builder& b) { b.gather(b.input("a", {2}, DType::f32), b.input("i", {2}, DType::f32), 0); }),
            "gather: indices must be integers, got f32");
  EXPECT_EQ(error_of([](Builder& b) { b.op("one_hot", {b.input("i", {2}, DType::i32)}); }),
            "one_hot: attribute 'depth' is missing");
  EXPECT_EQ(error_of([](Builder& b) {
              b.op("iota", {}, {{"shape", std::vector<int64_t>{2}}, {"axis", 1.5}, {"dtype", DType::i32}});
            }),
            "iota: attribute 'axis' must be an integer");
  EXPECT_EQ(error_of([](Builder& b) {
              b.matmul(b.input("a", {2, 3}, DType::f32), b.input("b", {}, DType::f32));
            }),
            "matmul: needs operands of rank 1 or more, got [2, 3] and []");
  EXPECT_EQ(error_of([](Builder& b) {
              b.matmul(b.input("a", {2, 2, 3}, DType::f32), b.input("b", {3, 3, 4}, DType::f32));
            }),
            "matmul: cannot broadcast the batch dimensions of [2, 2, 3] and [3, 3, 4]");
  EXPECT_EQ(error_of([](Builder& b) { b.slice(b.input("a", {4}, DType::f32), {0}, {4}, {0}); }),
            "slice: axis 0 of [4]: start 0 stop 4 step 0 is not a slice of it (0 <= start <= stop <= 4, step >= 1)");
  EXPECT_EQ(error_of([](Builder& b) { b.random_normal(b.input("k", {2}, DType::i64), {3}); }),
            "random_normal: the key must be an integer scalar, got i64[2]");
}

TEST(Builder, BroadcastingInsertsBroadcastNodes) {
  Graph g;
  Builder b(g);
  NodeId x = b.input("x", {2, 3}, DType::f32);
  NodeId y = b.input("y", {3}, DType::f32);
  NodeId sum = b.add(x, y);
  EXPECT_EQ(b.shape(sum), (Shape{2, 3}));
  const Node& node = b.node(sum);
  EXPECT_EQ(node.inputs[0], x);
  EXPECT_EQ(b.node(node.inputs[1]).op_name(), "broadcast");
  EXPECT_EQ(b.shape(node.inputs[1]), (Shape{2, 3}));
}

TEST(Builder, PromotionInsertsCastsAndLiteralsStayNarrow) {
  Graph g;
  Builder b(g);
  NodeId x = b.input("x", {2}, DType::bf16);
  NodeId y = b.input("y", {2}, DType::f32);
  EXPECT_EQ(b.dtype(b.add(x, y)), DType::f32);
  EXPECT_EQ(b.dtype(b.mul(x, b.literal(2.0))), DType::bf16);
  NodeId n = b.input("n", {2}, DType::i32);
  EXPECT_EQ(b.dtype(b.add(n, b.literal_int(1))), DType::i32);
  EXPECT_EQ(b.dtype(b.add(n, b.literal(0.5))), DType::f32);
  EXPECT_EQ(b.dtype(b.add(n, y)), DType::f32);
}

// A tensor of a dtype of its own is strong even when made from literals only (issue 12
// item 6: 0.02 times a random tensor drawn from a literal key was f64).
TEST(Builder, WhatIsMadeFromLiteralsInAnotherDtypeIsStrong) {
  Graph g;
  Builder b(g);
  NodeId noise = b.random_normal(b.literal_int(1), {3}, DType::f32);
  EXPECT_FALSE(g.node(noise).weak);
  EXPECT_EQ(b.dtype(b.mul(b.literal(0.02), noise)), DType::f32);
  EXPECT_FALSE(g.node(b.op("lt", {b.literal(1.0), b.literal(2.0)})).weak);
  EXPECT_TRUE(g.node(b.add(b.literal(1.0), b.literal(2.0))).weak);
}

TEST(Builder, MatmulBroadcastsBatchAndTakesVectors) {
  Graph g;
  Builder b(g);
  NodeId a = b.input("a", {4, 1, 2, 3}, DType::f32);
  NodeId c = b.input("c", {5, 3, 6}, DType::f32);
  EXPECT_EQ(b.shape(b.matmul(a, c)), (Shape{4, 5, 2, 6}));
  NodeId v = b.input("v", {3}, DType::f32);
  EXPECT_EQ(b.shape(b.matmul(a, v)), (Shape{4, 1, 2}));
  EXPECT_EQ(b.shape(b.matmul(v, c)), (Shape{5, 6}));
  EXPECT_EQ(b.shape(b.matmul(v, v)), (Shape{}));
}

TEST(Builder, NamesAreUniqueAndOriginsAreKept) {
  Graph g;
  Builder b(g);
  NodeId x = b.input("x", {}, DType::f32);
  EXPECT_THROW(b.input("x", {}, DType::f32), GraphError);
  b.set_origin(42);
  NodeId y = b.neg(x);
  EXPECT_EQ(b.node(y).origin, 42u);
  b.output("y", y);
  EXPECT_THROW(b.output("y", y), GraphError);
  EXPECT_THROW(b.op("no_such_op", {x}), GraphError);
}

}  // namespace
}  // namespace sx::graph
