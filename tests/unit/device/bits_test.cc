// The cpu device's bits: a row's result does not depend on the other rows
// of its batch (one row alone, inside 8 rows and inside 64 give the same
// bits) for matmul in f32 and bf16 and for a softmax and a layer-norm built
// from primitives; the same inputs give the same bits run after run; and 1
// and 2 threads give the same bits.
#include <bit>
#include <functional>
#include <limits>

#include "device/cpu/isa.h"
#include "util.h"

namespace sx::device::testing {
namespace {

using graph::Builder;
using graph::NodeId;

// The graph of f applied to x[rows, width] (and the extra inputs).
using RowFn = std::function<NodeId(Builder&, NodeId x, const std::vector<NodeId>& extra)>;

struct RowGraph {
  RowFn f;
  std::vector<Tensor> extra;  // inputs after x
};

Tensor run_rows(const RowGraph& g, const Tensor& x, int cores, std::vector<int64_t> shape = {}) {
  Graph graph;
  Builder b(graph);
  if (shape.empty()) shape = x.shape();
  NodeId in = b.input("x", shape, x.dtype());
  std::vector<NodeId> extra;
  for (size_t i = 0; i < g.extra.size(); ++i) {
    extra.push_back(b.input(fmt::format("e{}", i), g.extra[i].shape(), g.extra[i].dtype()));
  }
  b.output("y", g.f(b, in, extra));
  std::vector<Tensor> inputs{Tensor(x.dtype(), shape, std::vector<uint8_t>(x.bytes().begin(), x.bytes().end()))};
  inputs.insert(inputs.end(), g.extra.begin(), g.extra.end());
  Tensor y = run_on("cpu", graph, inputs, cores)[0];
  int64_t rows = x.shape()[0];
  return Tensor(y.dtype(), {rows, y.numel() / rows}, std::vector<uint8_t>(y.bytes().begin(), y.bytes().end()));
}

Tensor first_rows(const Tensor& x, int64_t rows) {
  size_t row_bytes = x.bytes().size() / static_cast<size_t>(x.shape()[0]);
  Shape shape = x.shape();
  shape[0] = rows;
  return Tensor(x.dtype(), shape,
                std::vector<uint8_t>(x.bytes().begin(), x.bytes().begin() + static_cast<int64_t>(row_bytes) * rows));
}

Tensor row(const Tensor& x, int64_t r) {
  size_t row_bytes = x.bytes().size() / static_cast<size_t>(x.shape()[0]);
  Shape shape = x.shape();
  shape[0] = 1;
  auto begin = x.bytes().begin() + static_cast<int64_t>(row_bytes) * r;
  return Tensor(x.dtype(), shape, std::vector<uint8_t>(begin, begin + static_cast<int64_t>(row_bytes)));
}

// Row r of f(x[64 rows]) equals row r of f(x[:8]) and f(x[r]) alone, bit for
// bit, for 1 thread and all cores; and the 64-row result is the same on 1
// thread, 2 threads and all cores, and on a second run.
void expect_rows_independent(const RowGraph& g, const Tensor& x64) {
  Tensor full = run_rows(g, x64, 1);
  EXPECT_TRUE(same_bits(run_rows(g, x64, 1), full)) << "a second run differs";
  EXPECT_TRUE(same_bits(run_rows(g, x64, 2), full)) << "2 threads differ from 1";
  EXPECT_TRUE(same_bits(run_rows(g, x64, 0), full)) << "all cores differ from 1";
  for (int cores : {1, 0}) {
    Tensor eight = run_rows(g, first_rows(x64, 8), cores);
    for (int64_t r : {0, 3, 7}) {
      EXPECT_TRUE(same_bits(row(eight, r), row(full, r))) << "row " << r << " of 8 differs, cores " << cores;
    }
    for (int64_t r : {0, 5, 63}) {
      EXPECT_TRUE(same_bits(run_rows(g, row(x64, r), cores), row(full, r)))
          << "row " << r << " alone differs, cores " << cores;
    }
  }
}

RowGraph matmul_by(const Tensor& w) {
  return {[](Builder& b, NodeId x, const std::vector<NodeId>& e) { return b.matmul(x, e[0]); }, {w}};
}

class RowIndependence : public ::testing::TestWithParam<DType> {};

TEST_P(RowIndependence, Matmul) {
  DType t = GetParam();
  std::mt19937 rng(1);
  for (auto [k, n] : {std::pair<int64_t, int64_t>{512, 128}, {128, 512}, {4096, 64}, {64, 1000}}) {
    SCOPED_TRACE(fmt::format("k {} n {}", k, n));
    expect_rows_independent(matmul_by(random_tensor(t, {k, n}, rng)), random_tensor(t, {64, k}, rng));
  }
}

TEST_P(RowIndependence, MatmulByConstantWeights) {
  // Constant weights are packed at compile time: another kernel layout.
  DType t = GetParam();
  std::mt19937 rng(7);
  for (auto [k, n] : {std::pair<int64_t, int64_t>{128, 512}, {512, 128}, {64, 1000}}) {
    SCOPED_TRACE(fmt::format("k {} n {}", k, n));
    Tensor w = random_tensor(t, {k, n}, rng);
    RowGraph g{[w](Builder& b, NodeId x, const std::vector<NodeId>&) { return b.matmul(x, b.constant(w)); }, {}};
    expect_rows_independent(g, random_tensor(t, {64, k}, rng));
  }
}

TEST_P(RowIndependence, BatchedMatmul) {
  // [rows, 1, k] @ [k, n]: the op broadcasts the weights over the rows.
  DType t = GetParam();
  std::mt19937 rng(2);
  Tensor w = random_tensor(t, {256, 96}, rng), x = random_tensor(t, {64, 256}, rng);
  RowGraph g{[](Builder& b, NodeId rows, const std::vector<NodeId>& e) {
               return b.matmul(b.reshape(rows, {b.shape(rows)[0], 1, 256}), e[0]);
             },
             {w}};
  expect_rows_independent(g, x);
}

TEST_P(RowIndependence, Softmax) {
  DType t = GetParam();
  std::mt19937 rng(3);
  RowGraph g{[](Builder& b, NodeId x, const std::vector<NodeId>&) {
               NodeId e = b.exp(b.sub(x, b.reduce_max(x, {1}, true)));
               return b.div(e, b.sum(e, {1}, true));
             },
             {}};
  expect_rows_independent(g, random_tensor(t, {64, 1000}, rng));
}

TEST_P(RowIndependence, LayerNorm) {
  DType t = GetParam();
  std::mt19937 rng(4);
  int64_t d = 768;
  RowGraph g{[d](Builder& b, NodeId x, const std::vector<NodeId>& e) {
               NodeId width = b.scalar(static_cast<double>(d), b.dtype(x));
               NodeId centered = b.sub(x, b.div(b.sum(x, {1}, true), width));
               NodeId var = b.div(b.sum(b.mul(centered, centered), {1}, true), width);
               NodeId normed = b.mul(centered, b.rsqrt(b.add(var, b.literal(1e-5))));
               return b.add(b.mul(normed, e[0]), e[1]);
             },
             {random_tensor(t, {d}, rng), random_tensor(t, {d}, rng)}};
  expect_rows_independent(g, random_tensor(t, {64, d}, rng));
}

INSTANTIATE_TEST_SUITE_P(FloatDTypes, RowIndependence, ::testing::Values(DType::f32, DType::bf16),
                         [](const ::testing::TestParamInfo<DType>& p) {
                           return std::string(graph::dtype_name(p.param));
                         });

TEST(Threads, LargeMatmulSameBitsOnOneAndTwoThreads) {
  std::mt19937 rng(5);
  for (DType t : {DType::f32, DType::bf16}) {
    for (auto [m, k, n] : {std::tuple<int64_t, int64_t, int64_t>{512, 512, 512}, {1, 128, 512}, {8, 8192, 256}}) {
      SCOPED_TRACE(fmt::format("{} {}x{}x{}", graph::dtype_name(t), m, k, n));
      Graph graph;
      Builder b(graph);
      NodeId a = b.input("a", {m, k}, t);
      NodeId w = b.input("b", {k, n}, t);
      b.output("y", b.matmul(a, w));
      std::vector<Tensor> inputs{random_tensor(t, {m, k}, rng), random_tensor(t, {k, n}, rng)};
      Tensor one = run_on("cpu", graph, inputs, 1)[0];
      EXPECT_TRUE(same_bits(run_on("cpu", graph, inputs, 2)[0], one));
      EXPECT_EQ(compare(one, run_on("reference", graph, inputs)[0], false, static_cast<double>(k)), "");
    }
  }
}

TEST(Threads, CoresMustNotBeNegative) {
  try {
    make_device("cpu", DeviceOptions{.cpu_cores = -1});
    FAIL() << "no error";
  } catch (const DeviceError& e) {
    EXPECT_STREQ(e.what(), "cpu: --cpu-cores must be 0 (all) or more, got -1");
  }
}

TEST(Plan, ChecksItsInputs) {
  Graph g;
  Builder b(g);
  b.output("y", b.neg(b.input("x", {2}, DType::f32)));
  auto on = make_device("cpu");
  auto plan = on->compile(g);
  std::vector<Tensor> wrong{Tensor(DType::f32, {3})};
  EXPECT_THROW(plan->run_host(wrong), DeviceError);
}

TEST(Plan, OutputsNamedTwiceAndInputsPassedThrough) {
  Graph g;
  Builder b(g);
  NodeId x = b.input("x", {2, 3}, DType::f32);
  NodeId y = b.reshape(x, {3, 2});
  b.output("a", y);
  b.output("b", x);
  b.output("c", b.neg(y));
  std::mt19937 rng(6);
  std::vector<Tensor> inputs{random_tensor(DType::f32, {2, 3}, rng)};
  std::vector<Tensor> got = run_on("cpu", g, inputs), want = run_on("reference", g, inputs);
  ASSERT_EQ(got.size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_TRUE(same_bits(got[i], want[i])) << i;
}

// Reductions over axes that columns follow (a bias's gradient, a sum over a middle
// axis) take each column's values in the reference's order, whatever block of columns
// a thread takes: the reference's bits on 1 and 2 threads, with runs of columns
// longer than a block and shorter than a vector.
TEST(Plan, ColumnReductionsKeepTheReferencesBits) {
  struct Case {
    Shape shape;
    std::vector<int64_t> axes;
  };
  const Case cases[] = {{{1000, 2500}, {0}}, {{3, 200, 37}, {1}}, {{2, 50, 4100}, {1}}, {{4, 30, 5}, {0, 1}}};
  std::mt19937 rng(21);
  for (const Case& c : cases) {
    Tensor x = random_tensor(DType::f32, c.shape, rng);
    for (const char* op : {"sum", "reduce_max", "argmin"}) {
      Graph graph;
      Builder b(graph);
      NodeId in = b.input("x", c.shape, DType::f32);
      b.output("y", b.op(op, {in}, {{"axes", c.axes}, {"keepdims", int64_t{0}}}));
      Tensor want = run_on("reference", graph, {x})[0];
      for (int cores : {1, 2}) {
        EXPECT_TRUE(same_bits(run_on("cpu", graph, {x}, cores)[0], want))
            << op << " of " << graph::shape_str(c.shape) << " on " << cores << " threads";
      }
    }
  }
}

// Copies move every element where the reference does, whichever way they walk: transposes
// that swap the last two axes or carry the source's rows elsewhere (moved by blocks, whose
// edges fall inside the rows and columns here), a slice and a concat, on 1 and 2 threads
// (whose parts split a panel of rows where 2 threads run).
TEST(Plan, CopiesMoveEveryElementWhereTheReferenceDoes) {
  struct Case {
    Shape shape;
    std::vector<int64_t> perm;
  };
  const Case cases[] = {{{300, 257}, {1, 0}},           {{3, 37, 50}, {0, 2, 1}},       {{4, 70, 5, 65}, {0, 2, 3, 1}},
                        {{4, 5, 65, 70}, {0, 3, 1, 2}}, {{8, 70, 3, 64}, {0, 2, 1, 3}}, {{5, 1, 33}, {2, 1, 0}}};
  std::mt19937 rng(23);
  for (const Case& c : cases) {
    Graph graph;
    Builder b(graph);
    NodeId x = b.input("x", c.shape, DType::f32);
    b.output("y", b.transpose(x, c.perm));
    std::vector<Tensor> inputs{random_tensor(DType::f32, c.shape, rng)};
    Tensor want = run_on("reference", graph, inputs)[0];
    for (int cores : {1, 2})
      EXPECT_TRUE(same_bits(run_on("cpu", graph, inputs, cores)[0], want))
          << "transpose of " << graph::shape_str(c.shape) << " on " << cores << " threads";
  }
  Graph graph;
  Builder b(graph);
  NodeId x = b.input("x", {6, 300, 90}, DType::f32);
  NodeId part = b.op("slice", {x},
                     {{"start", std::vector<int64_t>{1, 3, 30}},
                      {"stop", std::vector<int64_t>{6, 300, 90}},
                      {"step", std::vector<int64_t>{2, 1, 1}}});
  b.output("y", b.op("concat", {part, b.transpose(part, {0, 1, 2})}, {{"axis", int64_t{2}}}));
  std::vector<Tensor> inputs{random_tensor(DType::f32, {6, 300, 90}, rng)};
  Tensor want = run_on("reference", graph, inputs)[0];
  for (int cores : {1, 2}) EXPECT_TRUE(same_bits(run_on("cpu", graph, inputs, cores)[0], want)) << cores << " threads";
}

// one_hot sets the reference's bytes: a one where each index points, none for indices
// outside [0, depth), in float, bf16 and integer results, from i32 and i64 indices, on
// 1 and 2 threads (whose parts split the rows).
TEST(Plan, OneHotSetsTheReferencesBytes) {
  std::mt19937 rng(24);
  std::uniform_int_distribution<int32_t> index(-3, 300);
  for (DType from : {DType::i32, DType::i64}) {
    Tensor indices(from, {4, 70});
    for (int64_t i = 0; i < indices.numel(); ++i) indices.set_value(i, index(rng));
    for (DType to : {DType::f32, DType::bf16, DType::i32}) {
      Graph graph;
      Builder b(graph);
      NodeId in = b.input("i", {4, 70}, from);
      b.output("y", b.op("one_hot", {in}, {{"depth", int64_t{290}}, {"dtype", to}}));
      Tensor want = run_on("reference", graph, {indices})[0];
      for (int cores : {1, 2}) {
        EXPECT_TRUE(same_bits(run_on("cpu", graph, {indices}, cores)[0], want))
            << graph::dtype_name(from) << " to " << graph::dtype_name(to) << " on " << cores << " threads";
      }
    }
  }
}

// A row's max and min have the reference's bits where the order decides them: a
// NaN's payload (the first NaN), a zero's sign (the first of -0 and +0 when the
// extreme is a zero), besides plain rows of every length around the 16 lanes the
// fast path takes, infinities, and f32 and bf16.
TEST(Plan, RowExtremesKeepTheReferencesBitsWhereOrderDecides) {
  const float nan_a = std::bit_cast<float>(0x7fc00001u), nan_b = std::bit_cast<float>(0xffc00002u);
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<std::vector<float>> rows;
  std::mt19937 rng(14);
  std::normal_distribution<float> normal;
  for (int64_t n : {1, 15, 16, 17, 33, 64, 100}) {
    std::vector<float> row(static_cast<size_t>(n));
    for (float& v : row) v = normal(rng);
    rows.push_back(row);
    std::vector<float> with_nans = row;
    with_nans[static_cast<size_t>(n / 2)] = nan_a;
    with_nans.back() = nan_b;
    rows.push_back(with_nans);
    std::vector<float> zeros(static_cast<size_t>(n), -0.0f);
    zeros[static_cast<size_t>(n / 3)] = 0.0f;
    for (size_t i = static_cast<size_t>(n / 2); i < zeros.size(); i += 2) zeros[i] = -1.0f;
    rows.push_back(zeros);
    for (float& v : zeros) v = v == 0.0f ? std::copysign(0.0f, -std::copysign(1.0f, v)) : 1.0f;
    rows.push_back(zeros);
    // Zeros of both signs in different lanes of 16: the reference keeps the first.
    for (float sign : {1.0f, -1.0f}) {
      std::vector<float> lanes(static_cast<size_t>(n), -sign);
      if (n > 1) lanes[1] = std::copysign(0.0f, sign);
      if (n > 16) lanes[16] = std::copysign(0.0f, -sign);
      rows.push_back(lanes);
    }
    std::vector<float> infinite(static_cast<size_t>(n), -inf);
    infinite[0] = inf;
    rows.push_back(infinite);
  }
  for (DType t : {DType::f32, DType::bf16}) {
    for (const std::vector<float>& row : rows) {
      auto n = static_cast<int64_t>(row.size());
      std::vector<double> values(row.begin(), row.end());
      Tensor x = Tensor::from_doubles(t, {2, n}, [&] {
        std::vector<double> both = values;
        both.insert(both.end(), values.rbegin(), values.rend());
        return both;
      }());
      Graph g;
      Builder b(g);
      NodeId in = b.input("x", {2, n}, t);
      b.output("max", b.reduce_max(in, {1}));
      b.output("min", b.reduce_min(in, {1}));
      std::vector<Tensor> want = run_on("reference", g, {x});
      for (cpu::Isa isa : cpu::host_isas()) {
        auto on = make_device("cpu", DeviceOptions{.cpu_cores = 1, .cpu_isa = std::string(cpu::isa_name(isa))});
        std::vector<Tensor> got = on->compile(g)->run_host(std::vector<Tensor>{x});
        for (size_t i = 0; i < 2; ++i) {
          EXPECT_TRUE(same_bits(got[i], want[i])) << g.outputs[i].name << " of a row of " << n << " "
                                                  << graph::dtype_name(t) << " on " << cpu::isa_name(isa);
        }
      }
    }
  }
}

}  // namespace
}  // namespace sx::device::testing
