// The one shape formatter: every part writes shapes with graph::shape_str, in the
// spelling of whoever reads them (messages, the language, JSON). And size arithmetic:
// every size a shape rule computes is checked, so that one past int64 is refused by name
// rather than wrapped around to a small or negative size.
#include <limits>

#include "graph/errors.h"
#include "graph/passes.h"
#include "graph/verify.h"
#include "test_util.h"

namespace sx::graph {
namespace {

TEST(ShapeText, OneFormatterWithTheSeparatorOfItsReader) {
  EXPECT_EQ(shape_str({2, 3}), "[2, 3]");
  EXPECT_EQ(shape_str({}), "[]");
  EXPECT_EQ(shape_str({2, 3}, " "), "[2 3]");  // as the language writes it
  EXPECT_EQ(shape_str({2, 3}, ","), "[2,3]");  // compact JSON
  EXPECT_EQ(shape_str({7}, " "), "[7]");
  EXPECT_EQ(list_str({0, -1}), "[0, -1]");
}

constexpr int64_t kLargestSize = std::numeric_limits<int64_t>::max();

// What `build` throws: a ShapeError, its message.
std::string shape_error_of(const std::function<void()>& build) {
  try {
    build();
  } catch (const ShapeError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no ShapeError";
  return "";
}

// A graph builder's refusal of the op `build` adds to an empty graph.
std::string refusal_of(const std::function<void(Builder&)>& build) {
  Graph graph;
  Builder b(graph);
  return shape_error_of([&] { build(b); });
}

TEST(SizeArithmetic, ChecksSumsAndProducts) {
  EXPECT_EQ(checked_add(2, 3, "x"), 5);
  EXPECT_EQ(checked_add(kLargestSize - 1, 1, "x"), kLargestSize);
  EXPECT_EQ(checked_mul(int64_t{1} << 31, int64_t{1} << 31, "x"), int64_t{1} << 62);
  EXPECT_EQ(shape_error_of([] { checked_add(2, kLargestSize, "the length"); }),
            "the length is too large: 2 + 9223372036854775807 is more than a size can be (2^63 - 1)");
  EXPECT_EQ(shape_error_of([] { checked_mul(int64_t{1} << 32, int64_t{1} << 31, "the count"); }),
            "the count is too large: 4294967296 * 2147483648 is more than a size can be (2^63 - 1)");
}

TEST(SizeArithmetic, CountsElementsAndBytes) {
  EXPECT_EQ(checked_numel({2, 3}), 6);
  EXPECT_EQ(checked_numel({}), 1);
  EXPECT_EQ(checked_numel({0, 5}), 0);
  EXPECT_EQ(checked_bytes({2, 3}, 4), 24);
  EXPECT_EQ(checked_bytes({0, 5}, 8), 0);
  EXPECT_EQ(checked_bytes(Shape{int64_t{1} << 62}, 1), int64_t{1} << 62);
  EXPECT_EQ(shape_error_of([] { checked_numel({2, -3}); }), "the shape [2, -3] has a negative size");
  EXPECT_EQ(shape_error_of([] {
              checked_numel({int64_t{1} << 32, int64_t{1} << 32});
            }),
            "the shape [4294967296, 4294967296] has more elements than a tensor can hold (2^63)");
  // A size 0 does not excuse the others: their product is what the strides are made of.
  EXPECT_EQ(shape_error_of([] {
              checked_numel({0, int64_t{1} << 32, int64_t{1} << 32});
            }),
            "the shape [0, 4294967296, 4294967296] has more elements than a tensor can hold (2^63)");
  // The elements fit; their bytes do not.
  EXPECT_EQ(shape_error_of([] { checked_bytes(Shape{int64_t{1} << 61}, 8); }),
            "the shape [2305843009213693952] of 8-byte elements has more bytes than a tensor can hold (2^63)");
  EXPECT_EQ(shape_error_of([] {
              checked_bytes({0, int64_t{1} << 62}, 4);
            }),
            "the shape [0, 4611686018427387904] of 4-byte elements has more bytes than a tensor can hold (2^63)");
}

TEST(SizeArithmetic, ATensorIsNeverAllocatedWithAWrappedSize) {
  // 2^62 + 1 four-byte elements are 4 bytes, wrapped around 2^64.
  std::vector<uint8_t> four(4);
  EXPECT_THROW(Tensor(DType::f32, Shape{(int64_t{1} << 62) + 1}, four), ShapeError);
  EXPECT_THROW(Tensor(DType::f64, Shape{int64_t{1} << 61}), ShapeError);
}

TEST(SizeArithmetic, ShapeRulesRefuseSizesPastInt64) {
  EXPECT_EQ(refusal_of([](Builder& b) { b.pad(b.zeros({2}, DType::f32), {kLargestSize}, {0}); }),
            "pad: the padded length of axis 0 is too large: 2 + 9223372036854775807 is more than a size can be "
            "(2^63 - 1)");
  EXPECT_EQ(refusal_of([](Builder& b) { b.pad(b.zeros({3}, DType::f32), {0}, {0}, {int64_t{1} << 62}); }),
            "pad: the padded length of axis 0 is too large: 2 * 4611686018427387904 is more than a size can be "
            "(2^63 - 1)");
  EXPECT_EQ(refusal_of([](Builder& b) {
              NodeId x = b.zeros({int64_t{1} << 62, 0}, DType::u8);
              b.concat({x, x}, 0);
            }),
            "concat: the joined length of axis 0 is too large: 4611686018427387904 + 4611686018427387904 is more "
            "than a size can be (2^63 - 1)");
  EXPECT_EQ(refusal_of([](Builder& b) {
              b.reshape(b.zeros({0}, DType::f32), {int64_t{1} << 32, int64_t{1} << 32, -1});
            }),
            "reshape: the product of the sizes of [4294967296, 4294967296, -1] is too large: 4294967296 * "
            "4294967296 is more than a size can be (2^63 - 1)");
  EXPECT_EQ(refusal_of([](Builder& b) {
              b.reshape(b.zeros({0}, DType::f32), {int64_t{1} << 32, int64_t{1} << 32, 0});
            }),
            "reshape: the product of the sizes of [4294967296, 4294967296, 0] is too large: 4294967296 * 4294967296 "
            "is more than a size can be (2^63 - 1)");
  EXPECT_EQ(
      refusal_of([](Builder& b) {
        b.matmul(b.zeros({int64_t{1} << 32, 1, 0, 1}, DType::f32), b.zeros({1, int64_t{1} << 32, 1, 0}, DType::f32));
      }),
      "matmul: the shape [4294967296, 4294967296, 0, 1] has more elements than a tensor can hold (2^63)");
  EXPECT_EQ(refusal_of([](Builder& b) {
              b.broadcast(b.zeros({1, 0}, DType::f32), {kLargestSize, 2, 0});
            }),
            "broadcast: the shape [9223372036854775807, 2, 0] has more elements than a tensor can hold (2^63)");
  EXPECT_EQ(refusal_of([](Builder& b) { b.iota({int64_t{1} << 61}, 0, DType::i64); }),
            "iota: the shape [2305843009213693952] of 8-byte elements has more bytes than a tensor can hold (2^63)");
  EXPECT_EQ(refusal_of([](Builder& b) {
              b.one_hot(b.zeros({int64_t{1} << 32, 0}, DType::i32), int64_t{1} << 32);
            }),
            "one_hot: the shape [4294967296, 0, 4294967296] has more elements than a tensor can hold (2^63)");
}

TEST(SizeArithmetic, AStepOrInteriorAsLargeAsASizeCanBeTakesOneElement) {
  // The slice's length is rounded up without adding the step to it; kept as a step of 1,
  // no kernel multiplies the huge step by a stride.
  for (const char* device : {"reference", "cpu"}) {
    Graph graph;
    Builder b(graph);
    NodeId x = b.input("x", {2, 6}, DType::f32);
    NodeId sliced = b.slice(x, {0, 1}, {2, 6}, {kLargestSize, 2});
    EXPECT_EQ(list_str(b.node(sliced).attrs.get_ints("step")), "[1, 2]");
    b.output("y", sliced);
    NodeId padded = b.pad(b.reshape(x, {12, 1}), {0, 1}, {0, 0}, {0, kLargestSize});
    EXPECT_EQ(list_str(b.node(padded).attrs.get_ints("interior")), "[0, 0]");
    b.output("z", padded);
    std::vector<Tensor> out =
        testing::run_on(device, graph, {Tensor::from_doubles(DType::f32, {2, 6}, std::vector<double>(12, 1.0))});
    testing::expect_tensor(out[0], DType::f32, {1, 3}, {1, 1, 1});
    EXPECT_EQ(shape_str(out[1].shape()), "[12, 2]") << device;
  }
}

TEST(SizeArithmetic, GraphsFromOutsideAreCheckedToo) {
  // vmap's batch axis and a graph built elsewhere (JSON) meet the same rule.
  Graph graph;
  Builder b(graph);
  b.output("y", b.input("x", {int64_t{1} << 32, 0}, DType::f32));
  EXPECT_THROW(vmap(graph, std::vector<std::string>{"x"}, int64_t{1} << 32), ShapeError);
  graph.nodes[0].shape = {int64_t{1} << 62, 4};
  EXPECT_THROW(verify(graph), VerifyError);
  graph.nodes[0].shape = {-1};
  EXPECT_THROW(verify(graph), VerifyError);
}

}  // namespace
}  // namespace sx::graph
