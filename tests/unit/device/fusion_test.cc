// Elementwise fusion on the cpu device (device/cpu/fusion/fusion.h): chains of elementwise
// nodes give the reference device's bits on every instruction set the host runs, on
// 1 and 2 threads, with tiles cut short and operands read through broadcasts; the
// members read outside a chain are written, the others are not (the arena holds no
// room for them); a chain that a reduction reads from its middle is still computed
// before that reduction; and a sum, max or min over a chain's last axes ends the chain
// with the bits of the reduce step alone.
#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>

#include "device/cpu/isa.h"
#include "graph/builder.h"
#include "util.h"

namespace sx::device::testing {
namespace {

using graph::Builder;
using graph::NodeId;

std::vector<Tensor> run_cpu(const Graph& graph, const std::vector<Tensor>& inputs, cpu::Isa isa, int cores) {
  DeviceOptions options{.cpu_cores = cores, .cpu_isa = std::string(cpu::isa_name(isa))};
  return make_device("cpu", options)->compile(graph)->run_host(inputs);
}

// Every output of `graph` on every instruction set and on 1 and 2 threads has the
// reference device's bits.
void expect_reference_bits(const Graph& graph, const std::vector<Tensor>& inputs) {
  std::vector<Tensor> expected = run_on("reference", graph, inputs);
  for (cpu::Isa isa : cpu::host_isas()) {
    for (int cores : {1, 2}) {
      std::vector<Tensor> actual = run_cpu(graph, inputs, isa, cores);
      ASSERT_EQ(actual.size(), expected.size());
      for (size_t i = 0; i < actual.size(); ++i) {
        EXPECT_TRUE(same_bits(actual[i], expected[i]))
            << graph.outputs[i].name << " differs on " << cpu::isa_name(isa) << ", " << cores << " threads";
      }
    }
  }
}

Tensor random_of(DType dtype, const Shape& shape, uint32_t seed) {
  std::mt19937 rng(seed);
  return random_tensor(dtype, shape, rng);
}

// The tanh form of GELU, as lib/sexpgpu/ops.sx spells it, of x + bias: ten nodes with
// four scalar constants and a bias read through broadcasts. Its tanh is an output too.
Graph gelu_of_biased(DType dtype, const Shape& shape) {
  Graph graph;
  Builder b(graph);
  NodeId x = b.input("x", shape, dtype);
  NodeId bias = b.input("bias", {shape.back()}, dtype);
  auto constant = [&](double v) {
    return b.broadcast(b.cast(b.constant(Tensor::scalar(DType::f32, v)), dtype), shape);
  };
  NodeId h = b.add(x, b.broadcast(bias, shape));
  NodeId cube = b.mul(b.mul(h, h), h);
  NodeId inner = b.mul(constant(std::sqrt(2.0 / M_PI)), b.add(h, b.mul(constant(0.044715), cube)));
  NodeId t = b.tanh(inner);
  b.output("gelu", b.mul(b.mul(constant(0.5), h), b.add(constant(1.0), t)));
  b.output("tanh", t);
  return graph;
}

TEST(Fusion, AChainGivesTheReferenceBits) {
  // 3 x 1000: a tile is 512 elements, so tiles end inside rows and the last is short.
  for (DType dtype : {DType::f32, DType::bf16}) {
    SCOPED_TRACE(graph::dtype_name(dtype));
    Shape shape{3, 1000};
    Graph graph = gelu_of_biased(dtype, shape);
    expect_reference_bits(graph, {random_of(dtype, shape, 1), random_of(dtype, {1000}, 2)});
  }
}

TEST(Fusion, OnlyTheMembersReadOutsideAreWritten) {
  // y = ((x * 2 + 1) * x - 3) / 4 over 2^16 floats: one output, written where the
  // caller wants it, and no room for the rest: the arena is empty.
  const int64_t n = 1 << 16;
  Graph graph;
  Builder b(graph);
  NodeId x = b.input("x", {n}, DType::f32);
  auto constant = [&](double v) { return b.broadcast(b.constant(Tensor::scalar(DType::f32, v)), {n}); };
  NodeId y = b.div(b.sub(b.mul(b.add(b.mul(x, constant(2)), constant(1)), x), constant(3)), constant(4));
  b.output("y", y);
  auto plan = make_device("cpu", {.cpu_cores = 1})->compile(graph);
  EXPECT_EQ(plan->memory().arena_bytes, 0u);
  expect_reference_bits(graph, {random_of(DType::f32, {n}, 3)});
}

TEST(Fusion, AReductionOfAChainsMiddleSeesItComputed) {
  // e = exp(x - 1) is read by a reduction (a max: exact, where the cpu device's sums
  // differ from the reference's by rounding), whose result the rest of the chain
  // reads: the chain cannot run as one step after the reduction, nor before it.
  Shape shape{4, 700};
  Graph graph;
  Builder b(graph);
  NodeId x = b.input("x", shape, DType::f32);
  NodeId e = b.exp(b.sub(x, b.broadcast(b.constant(Tensor::scalar(DType::f32, 1.0)), shape)));
  NodeId total = b.reduce_max(e, {1});
  NodeId share = b.div(e, b.broadcast(b.reshape(total, {4, 1}), shape));
  b.output("y", b.add(share, b.mul(e, e)));
  expect_reference_bits(graph, {random_of(DType::f32, shape, 4)});
}

// A row's value (its max, exact, so the reference's bits) read back along the row on
// either side of each binary member that reads it where it lies, rather than spread.
TEST(Fusion, AValueARowReadOnEitherSideOfABinaryMember) {
  for (DType dtype : {DType::f32, DType::bf16}) {
    for (int64_t width : {128, 700}) {
      SCOPED_TRACE(fmt::format("{}, rows of {}", graph::dtype_name(dtype), width));
      const Shape shape{5, width};
      Graph graph;
      Builder b(graph);
      NodeId x = b.neg(b.input("x", shape, dtype));
      NodeId m = b.broadcast(b.reduce_max(x, {1}, true), shape);
      NodeId row_first = b.add(b.add(b.sub(m, x), b.div(m, x)), b.add(b.mul(m, x), b.add(m, x)));
      NodeId row_second = b.add(b.add(b.sub(x, m), b.div(x, m)), b.add(b.mul(x, m), b.add(x, m)));
      b.output("y", b.add(row_first, row_second));
      expect_reference_bits(graph, {random_of(dtype, shape, static_cast<uint32_t>(width))});
    }
  }
}

TEST(Fusion, ComparisonsAndWhereAndTheirBoolOutputs) {
  // A leaky relu and its mask: the comparison is a member, an output (bool) and cast
  // to f32 by another member; a bool input selects too.
  Shape shape{2, 600};
  Graph graph;
  Builder b(graph);
  NodeId x = b.input("x", shape, DType::f32);
  NodeId zero = b.broadcast(b.constant(Tensor::scalar(DType::f32, 0.0)), shape);
  NodeId positive = b.gt(x, zero);
  NodeId y = b.where(positive, x, b.mul(x, b.broadcast(b.constant(Tensor::scalar(DType::f32, 0.01)), shape)));
  NodeId keep = b.input("keep", shape, DType::boolean);  // a bool operand, read from memory
  NodeId z = b.where(keep, b.add(y, b.neg(b.abs(x))), x);
  b.output("y", b.add(z, b.cast(positive, DType::f32)));
  b.output("positive", positive);
  expect_reference_bits(graph, {random_of(DType::f32, shape, 5), random_of(DType::boolean, shape, 9)});
}

TEST(Fusion, ALaterChainRecomputesAnEarlierOnesCheapMembers) {
  // A forward (h = x * w, y = h * tanh(h)) and a gradient-like chain after a max of y,
  // which reads h and h + 1: it may compute them again from x and w instead.
  Shape shape{8, 300};
  Graph graph;
  Builder b(graph);
  NodeId x = b.input("x", shape, DType::f32);
  NodeId w = b.input("w", {300}, DType::f32);
  NodeId h = b.mul(x, b.broadcast(w, shape));
  NodeId y = b.mul(h, b.tanh(h));
  NodeId s = b.broadcast(b.reshape(b.reduce_max(y, {1}), {8, 1}), shape);
  NodeId one = b.broadcast(b.constant(Tensor::scalar(DType::f32, 1.0)), shape);
  b.output("y", y);
  b.output("g", b.mul(b.add(h, one), b.sub(s, h)));
  expect_reference_bits(graph, {random_of(DType::f32, shape, 6), random_of(DType::f32, {300}, 7)});
}

TEST(Fusion, MixedDtypesThroughCasts) {
  // bf16 in, f32 arithmetic, bf16 out: each member rounds to its own dtype.
  Shape shape{1030};
  Graph graph;
  Builder b(graph);
  NodeId x = b.input("x", shape, DType::bf16);
  NodeId wide = b.cast(x, DType::f32);
  NodeId z = b.mul(b.logistic(wide), wide);
  b.output("z", b.cast(b.add(z, wide), DType::bf16));
  expect_reference_bits(graph, {random_of(DType::bf16, shape, 8)});
}

// A reduction over the last axes of a chain: the chain's own value is an output too,
// so both can be checked. `reduce` builds the reduction of a node.
Graph chain_then(const Shape& shape, DType dtype, const std::function<NodeId(Builder&, NodeId)>& reduce) {
  Graph graph;
  Builder b(graph);
  NodeId x = b.input("x", shape, dtype);
  NodeId y = b.mul(b.tanh(x), b.add(x, b.broadcast(b.cast(b.constant(Tensor::scalar(DType::f32, 0.5)), dtype), shape)));
  b.output("y", y);
  b.output("r", reduce(b, y));
  return graph;
}

// The fused chain gives the reference's y, and its reduction the bits of the reduce
// step run alone over that y, on every instruction set and on 1 and 2 threads.
void expect_fused_reduction_bits(const Shape& shape, DType dtype,
                                 const std::function<NodeId(Builder&, NodeId)>& reduce) {
  Graph graph = chain_then(shape, dtype, reduce);
  std::vector<Tensor> inputs{random_of(dtype, shape, 10)};
  Tensor y = run_on("reference", graph, inputs)[0];
  Graph alone;
  Builder b(alone);
  b.output("r", reduce(b, b.input("y", shape, dtype)));
  for (cpu::Isa isa : cpu::host_isas()) {
    for (int cores : {1, 2}) {
      std::vector<Tensor> fused = run_cpu(graph, inputs, isa, cores);
      Tensor expected = run_cpu(alone, {y}, isa, cores)[0];
      EXPECT_TRUE(same_bits(fused[0], y)) << "y differs on " << cpu::isa_name(isa) << ", " << cores << " threads";
      EXPECT_TRUE(same_bits(fused[1], expected))
          << "the reduction differs on " << cpu::isa_name(isa) << ", " << cores << " threads";
    }
  }
}

TEST(Fusion, ARowReductionEndsAChainWithTheReduceStepsBits) {
  for (DType dtype : {DType::f32, DType::bf16}) {
    SCOPED_TRACE(graph::dtype_name(dtype));
    // Rows of 100 (five a tile, the last tile short), of 700 (one a tile), and of 6 x 50
    // over two axes with a size-1 axis between them, kept as size 1.
    expect_fused_reduction_bits({9, 100}, dtype, [](Builder& b, NodeId y) { return b.sum(y, {1}); });
    expect_fused_reduction_bits({3, 700}, dtype, [](Builder& b, NodeId y) { return b.sum(y, {1}, true); });
    expect_fused_reduction_bits({4, 6, 1, 50}, dtype, [](Builder& b, NodeId y) { return b.sum(y, {1, 2, 3}); });
    expect_fused_reduction_bits({9, 100}, dtype, [](Builder& b, NodeId y) { return b.reduce_max(y, {1}); });
    expect_fused_reduction_bits({5, 40}, dtype, [](Builder& b, NodeId y) { return b.reduce_min(y, {1}, true); });
    // Sums of rows longer than a tile takes, in pieces: rows of 5000 (the last piece's
    // length not a multiple of the 16 lanes), and a whole tensor's sum.
    expect_fused_reduction_bits({2, 5000}, dtype, [](Builder& b, NodeId y) { return b.sum(y, {1}); });
    expect_fused_reduction_bits({70, 80}, dtype, [](Builder& b, NodeId y) { return b.sum(y, {0, 1}); });
    // A reduction of the reduction: a step of its own.
    expect_fused_reduction_bits({9, 100}, dtype, [](Builder& b, NodeId y) { return b.sum(b.sum(y, {1}), {0}); });
  }
}

// A row shorter than a tile repeated along the last axis (a bias, a scale) is loaded
// into its tile once a part and run: two runs of one plan with other rows give each
// run's reference bits, with a short last tile, rows of 64 and 128, f32 and bf16, on
// 1 and 2 threads.
TEST(Fusion, ARepeatedRowIsLoadedOnceAPartAndRun) {
  for (DType dtype : {DType::f32, DType::bf16}) {
    for (int64_t width : {64, 128}) {
      const Shape shape{37, width};
      Graph graph;
      Builder b(graph);
      NodeId x = b.input("x", shape, dtype);
      NodeId scale = b.broadcast(b.input("scale", {width}, dtype), shape);
      NodeId bias = b.broadcast(b.input("bias", {1, width}, dtype), shape);
      b.output("y", b.tanh(b.add(b.mul(x, scale), bias)));
      std::mt19937 rng(static_cast<uint32_t>(width));
      std::vector<std::vector<Tensor>> runs;
      for (int run = 0; run < 2; ++run) {
        runs.push_back({random_tensor(dtype, shape, rng), random_tensor(dtype, {width}, rng),
                        random_tensor(dtype, {1, width}, rng)});
      }
      for (cpu::Isa isa : cpu::host_isas()) {
        for (int cores : {1, 2}) {
          DeviceOptions options{.cpu_cores = cores, .cpu_isa = std::string(cpu::isa_name(isa))};
          auto device = make_device("cpu", options);
          auto plan = device->compile(graph);
          for (const std::vector<Tensor>& inputs : runs) {
            EXPECT_TRUE(same_bits(plan->run_host(inputs)[0], run_on("reference", graph, inputs)[0]))
                << graph::dtype_name(dtype) << ", rows of " << width << ", " << cpu::isa_name(isa) << ", " << cores
                << " threads";
          }
        }
      }
    }
  }
}

TEST(Fusion, ALongChainSharesTilesAndKeepsEachValueUntilItsLastReader) {
  // Over fifty members whose tiles are reused as values die: x and a constant read at
  // the chain's end, a member read by one of the last, members multiplied by themselves,
  // a bf16 member written mid-chain (its tile kept, not the output's), and a sum of
  // the last member in rows of 5000 (taken in pieces) or of 600.
  for (DType dtype : {DType::f32, DType::bf16}) {
    for (Shape shape : {Shape{2, 5000}, Shape{3, 600}}) {
      SCOPED_TRACE(fmt::format("{} {}", graph::dtype_name(dtype), shape.back()));
      Graph graph;
      Builder b(graph);
      NodeId x = b.input("x", shape, dtype);
      NodeId third = b.broadcast(b.cast(b.constant(Tensor::scalar(DType::f32, 1.0 / 3)), dtype), shape);
      NodeId y = b.add(x, third), early = y;
      for (int i = 0; i < 38; ++i) {
        if (i == 5) early = y;
        y = i % 3 == 0 ? b.tanh(b.mul(y, y)) : i % 3 == 1 ? b.sub(y, x) : b.mul(y, b.add(x, third));
        if (i == 20) b.output("middle", b.cast(y, DType::bf16));
      }
      y = b.add(b.mul(y, third), b.mul(early, x));
      b.output("y", y);
      b.output("sums", b.sum(y, {1}));
      // The members with the reference's bits; the sums with the reduce step's alone.
      std::vector<Tensor> inputs{random_of(dtype, shape, 13)};
      std::vector<Tensor> expected = run_on("reference", graph, inputs);
      Graph alone;
      Builder a(alone);
      a.output("sums", a.sum(a.input("y", shape, dtype), {1}));
      for (cpu::Isa isa : cpu::host_isas()) {
        for (int cores : {1, 2}) {
          SCOPED_TRACE(fmt::format("{}, {} threads", cpu::isa_name(isa), cores));
          std::vector<Tensor> fused = run_cpu(graph, inputs, isa, cores);
          EXPECT_TRUE(same_bits(fused[0], expected[0])) << "middle";
          EXPECT_TRUE(same_bits(fused[1], expected[1])) << "y";
          EXPECT_TRUE(same_bits(fused[2], run_cpu(alone, {expected[1]}, isa, cores)[0])) << "sums";
        }
      }
    }
  }
}

TEST(Fusion, ALongChainOverLargeOperandsFetchedAheadKeepsItsBits) {
  // Two operands of more than 2^19 elements under a chain of over eight members: the
  // program fetches them tiles ahead of its reads (up to the end, which is no whole
  // tile), in tiles and in rows summed in pieces; the values are the reference's.
  const Shape shape{5, 131101};
  for (DType dtype : {DType::f32, DType::bf16}) {
    SCOPED_TRACE(graph::dtype_name(dtype));
    Graph graph;
    Builder b(graph);
    NodeId x = b.input("x", shape, dtype), z = b.input("z", shape, dtype);
    NodeId y = b.mul(x, z);
    for (int i = 0; i < 4; ++i) y = b.add(b.tanh(b.sub(y, x)), b.mul(y, z));
    b.output("y", y);
    b.output("sums", b.sum(b.mul(y, y), {1}));
    std::vector<Tensor> inputs{random_of(dtype, shape, 17), random_of(dtype, shape, 18)};
    std::vector<Tensor> expected = run_on("reference", graph, inputs);
    Graph alone;
    Builder a(alone);
    NodeId ya = a.input("y", shape, dtype);
    a.output("sums", a.sum(a.mul(ya, ya), {1}));
    for (cpu::Isa isa : cpu::host_isas()) {
      for (int cores : {1, 2}) {
        SCOPED_TRACE(fmt::format("{}, {} threads", cpu::isa_name(isa), cores));
        std::vector<Tensor> fused = run_cpu(graph, inputs, isa, cores);
        EXPECT_TRUE(same_bits(fused[0], expected[0])) << "y";
        EXPECT_TRUE(same_bits(fused[1], run_cpu(alone, {expected[0]}, isa, cores)[0])) << "sums";
      }
    }
  }
}

TEST(Fusion, AChainEndingInASumWritesOnlyTheSums) {
  // sum(x * x + x) over [64, 256]'s last axis, and over all of [64, 8192] (rows
  // longer than a tile): only the sums are written, where the caller wants them; the
  // arena is empty.
  for (auto [shape, axes] : {std::pair<Shape, std::vector<int64_t>>{{64, 256}, {1}}, {{64, 8192}, {0, 1}}}) {
    Graph graph;
    Builder b(graph);
    NodeId x = b.input("x", shape, DType::f32);
    NodeId s = b.sum(b.add(b.mul(x, x), x), axes);
    b.output("s", s);
    auto plan = make_device("cpu", {.cpu_cores = 1})->compile(graph);
    EXPECT_EQ(plan->memory().arena_bytes, 0u);
  }
}

// A softmax and a layer-norm as lib/sexpgpu/ops.sx spells them, over rows of `width`:
// built whole (`staged` false), or in three graphs whose inputs are the previous ones'
// outputs, each phase of rows a step of its own as before row phases merged.
struct RowPhases {
  std::vector<Graph> graphs;  // one, or the three stages
  std::vector<std::string> kept;
};

RowPhases softmax_and_layer_norm(const Shape& shape, DType dtype, bool staged) {
  const Shape rows{shape[0], 1};
  RowPhases phases;
  phases.graphs.resize(staged ? 3 : 1);
  auto stage = [&](int k) -> Graph& { return phases.graphs[staged ? static_cast<size_t>(k) : 0]; };
  // Stage 0: a product's scaled rows and their max, residual rows and their sum; 1: the
  // exponentials' sum and the variance's; 2: the softmax and the normalized rows. A
  // stage reads a value of an earlier one as an input of that name.
  std::map<std::string, NodeId> made[3];
  auto value = [&](int k, const std::string& name, const Shape& of) -> NodeId {
    for (int j = k; j >= 0; --j) {
      if (made[j].count(name) && (!staged || j == k)) return made[j][name];
    }
    Builder b(stage(k));
    return made[k][name] = b.input(name, of, dtype);
  };
  auto put = [&](int k, const std::string& name, NodeId id, bool output) {
    made[k][name] = id;
    if (staged || output) Builder(stage(k)).output(name, id);
  };
  auto scalar = [&](Builder& b, double v, const Shape& to) {
    return b.broadcast(b.constant(Tensor::scalar(dtype, v)), to);
  };
  {
    Builder b(stage(0));
    NodeId x = value(0, "x", shape);
    // The softmax's rows from a product, whose epilogue the merged phases become.
    NodeId product = b.matmul(value(0, "a", {shape[0], 64}), value(0, "w", {64, shape[1]}));
    NodeId scaled = b.mul(product, scalar(b, 0.125, shape));
    put(0, "scaled", scaled, false);
    put(0, "max", b.reduce_max(scaled, {1}, true), false);
    NodeId residual = b.add(x, b.broadcast(value(0, "gamma", {shape[1]}), shape));
    put(0, "residual", residual, false);
    put(0, "total", b.sum(residual, {1}, true), false);
  }
  {
    Builder b(stage(1));
    NodeId e = b.exp(b.sub(value(1, "scaled", shape), b.broadcast(value(1, "max", rows), shape)));
    put(1, "e", e, false);
    put(1, "e_sum", b.sum(e, {1}, true), false);
    // The mean: the total over a count a row (an operand of the rows' shape).
    NodeId mean = b.div(value(1, "total", rows), value(1, "count", rows));
    put(1, "mean", mean, false);
    NodeId centered = b.sub(value(1, "residual", shape), b.broadcast(mean, shape));
    put(1, "var_sum", b.sum(b.mul(centered, centered), {1}, true), false);
  }
  {
    Builder b(stage(2));
    put(2, "softmax", b.div(value(2, "e", shape), b.broadcast(value(2, "e_sum", rows), shape)), true);
    NodeId var = b.div(value(2, "var_sum", rows), scalar(b, static_cast<double>(shape[1]), rows));
    NodeId rstd = b.rsqrt(b.add(var, scalar(b, 1e-5, rows)));
    put(2, "rstd", rstd, true);  // a value a row, written
    NodeId centered = b.sub(value(2, "residual", shape), b.broadcast(value(2, "mean", rows), shape));
    NodeId gamma = b.broadcast(value(2, "gamma", {shape[1]}), shape);
    put(2, "normed", b.add(b.mul(b.mul(centered, b.broadcast(rstd, shape)), gamma), scalar(b, 0.25, shape)), true);
  }
  phases.kept = {"softmax", "rstd", "normed"};
  return phases;
}

// Softmax and layer-norm rows run as one step each, the softmax a product's epilogue:
// only the softmax, the row's rstd and the normed rows are written (the arena holds
// the product's result alone), with the bits of their phases run as steps of their own, on
// every instruction set and 1 and 2 threads, f32 and bf16, rows of 128 (four a tile,
// the last tile short) and of 700 (one a tile).
TEST(Fusion, RowPhasesRunAsOneStepWithTheBitsOfTheirStepsApart) {
  for (DType dtype : {DType::f32, DType::bf16}) {
    for (int64_t width : {128, 700}) {
      SCOPED_TRACE(fmt::format("{}, rows of {}", graph::dtype_name(dtype), width));
      const Shape shape{37, width};
      std::mt19937 rng(static_cast<uint32_t>(width));
      std::map<std::string, Tensor> values{{"x", random_tensor(dtype, shape, rng)},
                                           {"a", random_tensor(dtype, {shape[0], 64}, rng)},
                                           {"w", random_tensor(dtype, {64, width}, rng)},
                                           {"gamma", random_tensor(dtype, {width}, rng)},
                                           {"count", Tensor(dtype, {shape[0], 1})}};
      for (int64_t r = 0; r < shape[0]; ++r) {
        Tensor& count = values["count"];
        if (dtype == DType::f32) count.data<float>()[r] = static_cast<float>(width);
        else count.data<graph::Bf16>()[r] = graph::Bf16(static_cast<float>(width));
      }
      auto feed = [](const Graph& graph, const std::map<std::string, Tensor>& from) {
        std::vector<Tensor> inputs;
        for (const graph::NamedNode& input : graph.inputs) inputs.push_back(from.at(input.name));
        return inputs;
      };
      const RowPhases whole = softmax_and_layer_norm(shape, dtype, false);
      const RowPhases staged = softmax_and_layer_norm(shape, dtype, true);
      for (cpu::Isa isa : cpu::host_isas()) {
        for (int cores : {1, 2}) {
          DeviceOptions options{.cpu_cores = cores, .cpu_isa = std::string(cpu::isa_name(isa))};
          auto device = make_device("cpu", options);
          std::map<std::string, Tensor> expected = values;
          for (const Graph& graph : staged.graphs) {
            std::vector<Tensor> outs = device->compile(graph)->run_host(feed(graph, expected));
            for (size_t i = 0; i < outs.size(); ++i) expected[graph.outputs[i].name] = outs[i];
          }
          auto plan = device->compile(whole.graphs[0]);
          // The product's result alone (which its epilogue reads back a block at a time).
          const size_t product_bytes = static_cast<size_t>(shape[0] * width) * graph::dtype_size(dtype);
          EXPECT_LE(plan->memory().arena_bytes, (product_bytes + 63) / 64 * 64)
              << "values besides the outputs and the product were written";
          std::vector<Tensor> actual = plan->run_host(feed(whole.graphs[0], values));
          for (size_t i = 0; i < actual.size(); ++i) {
            const std::string& name = whole.graphs[0].outputs[i].name;
            EXPECT_TRUE(same_bits(actual[i], expected.at(name)))
                << name << " differs on " << cpu::isa_name(isa) << ", " << cores << " threads";
          }
        }
      }
    }
  }
}

// d, the widened bf16 product, is read by a member of the last phase (t) that comes
// before the root of the first (u, whose rows are summed): it joins neither phase's
// chain alone, but joins them once they merge, and the product becomes their epilogue:
// one step (the plan's profile says), where y has the bits of d made and written by a
// plan of its own, then read by another.
Graph phases_after_product(const Shape& shape, bool from_d) {
  Graph graph;
  Builder b(graph);
  NodeId x = b.input("x", shape, DType::f32);
  NodeId d = from_d ? b.input("d", shape, DType::f32) : NodeId{};
  if (!from_d) {
    NodeId a = b.input("a", {shape[0], 64}, DType::bf16);
    d = b.cast(b.matmul(a, b.input("w", {64, shape[1]}, DType::bf16)), DType::f32);
  }
  NodeId t = b.mul(d, b.broadcast(b.constant(Tensor::scalar(DType::f32, 2.0)), shape));
  NodeId u = b.neg(b.mul(d, x));
  b.output("y", b.add(t, b.broadcast(b.sum(u, {1}, true), shape)));
  return graph;
}

TEST(Fusion, ANodeReadByTwoPhasesJoinsThemMerged) {
  const Shape shape{37, 128};
  const Graph whole = phases_after_product(shape, false), after_d = phases_after_product(shape, true);
  Graph product;
  {
    Builder b(product);
    NodeId a = b.input("a", {shape[0], 64}, DType::bf16);
    b.output("d", b.cast(b.matmul(a, b.input("w", {64, shape[1]}, DType::bf16)), DType::f32));
  }
  const Tensor x = random_of(DType::f32, shape, 21), a = random_of(DType::bf16, {shape[0], 64}, 22),
               w = random_of(DType::bf16, {64, shape[1]}, 23);
  for (cpu::Isa isa : cpu::host_isas()) {
    for (int cores : {1, 2}) {
      DeviceOptions options{.cpu_cores = cores, .cpu_isa = std::string(cpu::isa_name(isa))};
      auto device = make_device("cpu", options);
      const Tensor d = device->compile(product)->run_host(std::vector<Tensor>{a, w})[0];
      const Tensor expected = device->compile(after_d)->run_host(std::vector<Tensor>{x, d})[0];
      setenv("SEXPGPU_CPU_PROFILE", "1", 1);
      ::testing::internal::CaptureStderr();
      Tensor y;
      {
        auto plan = device->compile(whole);
        y = plan->run_host(std::vector<Tensor>{x, a, w})[0];
      }
      const std::string profile = ::testing::internal::GetCapturedStderr();
      unsetenv("SEXPGPU_CPU_PROFILE");
      EXPECT_NE(profile.find("cpu plan profile: 1 runs"), std::string::npos) << profile;
      EXPECT_NE(profile.find("with fused 6 nodes (cast mul mul neg sum add)"), std::string::npos) << profile;
      EXPECT_TRUE(same_bits(y, expected)) << cpu::isa_name(isa) << ", " << cores << " threads";
    }
  }
}

TEST(Fusion, AReductionWaitsForNoReaderOfTheChain) {
  // y = x * x is read by a product that runs before the sum of y's rows: the sum does
  // not join y's step, which must run (and write y) before the product.
  Shape shape{16, 32};
  Graph graph;
  Builder b(graph);
  NodeId x = b.input("x", shape, DType::f32);
  NodeId y = b.mul(x, x);
  NodeId product = b.matmul(y, b.input("w", {32, 8}, DType::f32));
  b.output("p", product);
  b.output("m", b.reduce_max(y, {1}));
  std::vector<Tensor> inputs{random_of(DType::f32, shape, 11), random_of(DType::f32, {32, 8}, 12)};
  std::vector<Tensor> expected = run_on("reference", graph, inputs);
  for (int cores : {1, 2}) {
    std::vector<Tensor> actual = run_cpu(graph, inputs, cpu::host_isas().back(), cores);
    EXPECT_TRUE(same_bits(actual[1], expected[1]));  // a max: the reference's bits
    EXPECT_EQ(compare(actual[0], expected[0], false, 32), "");
  }
}

}  // namespace
}  // namespace sx::device::testing
