// An index outside its axis stops a run, on every device: gather's and scatter_add's
// indices and a checked one_hot's, below 0, at the axis's length and far past it, whatever
// their dtype, with the error naming the node's input, the index's place and the axis.
// No index is clamped or wrapped.
#include <limits>
#include <optional>

#include "graph/index_error.h"
#include "util.h"

namespace sx::device::testing {
namespace {

using graph::Builder;
using graph::IndexOutOfRange;
using graph::NodeId;

class IndexRange : public ::testing::TestWithParam<std::string> {
 protected:
  // The error of running `graph` on `inputs` on this test's device (2 threads on cpu);
  // nullopt when it runs.
  std::optional<IndexOutOfRange> error_of(const Graph& graph, const std::vector<Tensor>& inputs) {
    try {
      run_on(GetParam(), graph, inputs, 2);
    } catch (const IndexOutOfRange& e) {
      return e;
    }
    return std::nullopt;
  }
};

Tensor values_of(Shape shape, uint32_t seed) {
  std::mt19937 rng(seed);
  return random_tensor(DType::f32, std::move(shape), rng);
}

// A tensor of `dtype` holding `values`.
Tensor tensor_of(DType dtype, Shape shape, const std::vector<double>& values) {
  return Tensor::from_doubles(dtype, std::move(shape), values);
}

// The input x [3, 4] gathered along `axis` at the input `ids` (the inputs in that order).
Graph gather_graph(int64_t axis, DType dtype, Shape ids) {
  Graph g;
  Builder b(g);
  NodeId x = b.input("x", {3, 4}, DType::f32);
  b.output("y", b.gather(x, b.input("ids", std::move(ids), dtype), axis));
  return g;
}

TEST_P(IndexRange, GatherRefusesAnIndexBelowZeroAtTheLengthOrFarPast) {
  Tensor x = values_of({3, 4}, 1);
  struct Case {
    DType dtype;
    int64_t axis;
    double bad;
  };
  for (Case c : {Case{DType::i32, 0, -1}, Case{DType::i32, 0, 3}, Case{DType::i32, 1, 4},
                 Case{DType::i32, 1, std::numeric_limits<int32_t>::max()}, Case{DType::i32, 0, -2147483648.0},
                 Case{DType::i64, 0, -1}, Case{DType::i64, 1, 1e15}, Case{DType::u8, 0, 3}, Case{DType::u8, 1, 255},
                 Case{DType::u16, 1, 4}}) {
    SCOPED_TRACE(fmt::format("{} {} on axis {}", graph::dtype_name(c.dtype), c.bad, c.axis));
    const int64_t length = c.axis == 0 ? 3 : 4;
    // In range at both ends, then the bad index at [1, 0], then another bad one after it.
    Tensor ids = tensor_of(c.dtype, {2, 3}, {0, 1, static_cast<double>(length - 1), c.bad, 2, c.bad});
    auto e = error_of(gather_graph(c.axis, c.dtype, {2, 3}), {x, ids});
    ASSERT_TRUE(e.has_value());
    EXPECT_EQ(e->value(), static_cast<int64_t>(c.bad));
    EXPECT_EQ(e->length(), length);
    EXPECT_EQ(e->input(), std::optional<std::string>("ids"));
    EXPECT_EQ(e->position(), (std::vector<int64_t>{1, 0}));
    EXPECT_EQ(std::string(e->what()),
              fmt::format("gather: index {} at [1, 0] of input `ids` is outside its axis, 0 to {}",
                          static_cast<int64_t>(c.bad), length - 1));
  }
}

TEST_P(IndexRange, GatherInRangeAtBothEndsReadsTheRows) {
  Tensor x = tensor_of(DType::f32, {3, 4}, {0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23});
  Tensor y = run_on(GetParam(), gather_graph(0, DType::i64, {2}), {x, tensor_of(DType::i64, {2}, {2, 0})}, 2)[0];
  EXPECT_EQ(y.to_doubles(), (std::vector<double>{20, 21, 22, 23, 0, 1, 2, 3}));
}

// Over many rows, split across threads: the first index outside is named, wherever it is.
TEST_P(IndexRange, TheFirstIndexOutsideIsNamedInALargeGather) {
  const int64_t rows = 1000, count = 20000;
  Graph g;
  Builder b(g);
  NodeId x = b.input("x", {rows, 64}, DType::f32);
  b.output("y", b.gather(x, b.input("ids", {count}, DType::i32), 0));
  std::vector<double> values(count);
  for (int64_t i = 0; i < count; ++i) values[static_cast<size_t>(i)] = static_cast<double>(i % rows);
  values[count - 7] = rows;
  values[count - 1] = -1;
  auto e = error_of(g, {values_of({rows, 64}, 2), tensor_of(DType::i32, {count}, values)});
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->value(), rows);
  EXPECT_EQ(e->position(), (std::vector<int64_t>{count - 7}));
}

// An empty result reads nothing, and still refuses an index outside the axis it indexes.
TEST_P(IndexRange, AnEmptyGatherStillChecksItsIndices) {
  Graph g;
  Builder b(g);
  NodeId x = b.input("x", {3, 0}, DType::f32);
  b.output("y", b.gather(x, b.input("ids", {2}, DType::i32), 0));
  auto e = error_of(g, {Tensor(DType::f32, {3, 0}), tensor_of(DType::i32, {2}, {0, 3})});
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->position(), (std::vector<int64_t>{1}));
  EXPECT_FALSE(error_of(g, {Tensor(DType::f32, {3, 0}), tensor_of(DType::i32, {2}, {0, 2})}));
}

TEST_P(IndexRange, ScatterAddRefusesAnIndexOutside) {
  Graph g;
  Builder b(g);
  NodeId x = b.input("x", {3, 2}, DType::f32), ids = b.input("ids", {4}, DType::i64);
  b.output("y", b.scatter_add(x, ids, b.input("u", {4, 2}, DType::f32), 0));
  Tensor values = values_of({3, 2}, 3), updates = values_of({4, 2}, 4);
  for (double bad : {-1.0, 3.0, 2147483647.0}) {
    auto e = error_of(g, {values, tensor_of(DType::i64, {4}, {0, 2, bad, 1}), updates});
    ASSERT_TRUE(e.has_value()) << bad;
    EXPECT_EQ(std::string(e->what()),
              fmt::format("scatter_add: index {} at [2] of input `ids` is outside its axis, 0 to 2", bad));
  }
}

// one_hot gives an index outside its depth a row of zeros, unless it is checked.
TEST_P(IndexRange, CheckedOneHotRefusesAnIndexOutsideItsDepth) {
  for (bool checked : {false, true}) {
    Graph g;
    Builder b(g);
    b.output("y", b.one_hot(b.input("ids", {2, 2}, DType::i32), 3, DType::f32, checked));
    for (double bad : {-1.0, 3.0, 2147483647.0}) {
      Tensor ids = tensor_of(DType::i32, {2, 2}, {0, 2, 1, bad});
      auto e = error_of(g, {ids});
      EXPECT_EQ(e.has_value(), checked) << bad;
      if (!checked) {
        Tensor y = run_on(GetParam(), g, {ids})[0];
        EXPECT_EQ(y.to_doubles(), (std::vector<double>{1, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0}));
        continue;
      }
      ASSERT_TRUE(e.has_value());
      EXPECT_EQ(std::string(e->what()),
                fmt::format("one_hot: index {} at [1, 1] of input `ids` is outside its axis, 0 to 2", bad));
    }
  }
  // Depth 0: an empty result, and every index outside it.
  Graph g;
  Builder b(g);
  b.output("y", b.one_hot(b.input("ids", {1}, DType::i32), 0, DType::f32, true));
  auto e = error_of(g, {tensor_of(DType::i32, {1}, {0})});
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(std::string(e->what()), "one_hot: index 0 at [0] of input `ids` is outside its axis, which is empty");
}

// Indices that are an input reshaped (or cast) name the input, at the index's place in
// it; computed ones name the node's indices, and the node's origin.
TEST_P(IndexRange, IndicesAreNamedByTheInputTheyAreElseAsTheNodesOwn) {
  Tensor x = values_of({3, 4}, 5);
  Tensor ids = tensor_of(DType::i64, {2, 3}, {0, 1, 2, 2, 1, 5});
  {
    Graph g;
    Builder b(g);
    NodeId flat = b.cast(b.reshape(b.input("ids", {2, 3}, DType::i64), {6}), DType::i32);
    NodeId table = b.input("x", {3, 4}, DType::f32);
    b.output("y", b.gather(table, flat, 0));
    auto e = error_of(g, {ids, x});
    ASSERT_TRUE(e.has_value());
    EXPECT_EQ(e->input(), std::optional<std::string>("ids"));
    EXPECT_EQ(e->position(), (std::vector<int64_t>{1, 2}));
  }
  Graph g;
  Builder b(g);
  b.set_origin(7);
  NodeId shifted = b.add(b.input("ids", {2, 3}, DType::i64), b.scalar(1.0, DType::i64));
  NodeId table = b.input("x", {3, 4}, DType::f32);
  b.output("y", b.gather(table, shifted, 0));
  auto e = error_of(g, {ids, x});
  ASSERT_TRUE(e.has_value());
  EXPECT_FALSE(e->input().has_value());
  EXPECT_EQ(e->origin(), 7u);
  EXPECT_EQ(std::string(e->what()), "gather: index 3 at [0, 2] of its indices is outside its axis, 0 to 2");
}

INSTANTIATE_TEST_SUITE_P(Devices, IndexRange, ::testing::Values("reference", "cpu"));

}  // namespace
}  // namespace sx::device::testing
