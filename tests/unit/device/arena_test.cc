// Memory planning: the arena planner places buffers so that no two alive at
// the same step share a byte, at aligned offsets, near the least possible
// size; and the cpu plan of a gradient reuses memory through it, and gives
// the same results as the reference with its arena's leftover bytes in
// every buffer (the arena starts filled with 0xff).
#include "device/arena.h"

#include <optional>

#include "device/cpu/isa.h"
#include "graph/autodiff.h"
#include "util.h"

namespace sx::device::testing {
namespace {

using graph::Builder;
using graph::NodeId;

void expect_valid(std::span<const BufferLife> lives, const ArenaPlan& plan) {
  ASSERT_EQ(plan.offsets.size(), lives.size());
  EXPECT_GE(plan.size, plan.live_peak);
  for (size_t i = 0; i < lives.size(); ++i) {
    EXPECT_EQ(plan.offsets[i] % 64, 0u);
    EXPECT_LE(plan.offsets[i] + lives[i].bytes, plan.size);
    for (size_t j = i + 1; j < lives.size(); ++j) {
      bool same_time = !(lives[i].last < lives[j].first || lives[j].last < lives[i].first);
      bool same_bytes = plan.offsets[i] < plan.offsets[j] + lives[j].bytes &&
                        plan.offsets[j] < plan.offsets[i] + lives[i].bytes && lives[i].bytes > 0 && lives[j].bytes > 0;
      EXPECT_FALSE(same_time && same_bytes) << "buffers " << i << " and " << j << " overlap";
    }
  }
}

TEST(PlanArena, AChainNeedsTwoBuffers) {
  std::vector<BufferLife> lives;
  for (int64_t step = 0; step < 10; ++step) lives.push_back({.bytes = 1000, .first = step, .last = step + 1});
  ArenaPlan plan = plan_arena(lives);
  expect_valid(lives, plan);
  EXPECT_EQ(plan.size, 2048u);
  EXPECT_EQ(plan.live_peak, 2048u);
}

TEST(PlanArena, RandomLifetimesNeverOverlapAndStayNearTheLiveBytes) {
  std::mt19937 rng(4);
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<BufferLife> lives;
    for (int i = 0; i < 60; ++i) {
      int64_t first = rng() % 100;
      lives.push_back({.bytes = 1 + rng() % 5000, .first = first, .last = first + static_cast<int64_t>(rng() % 20)});
    }
    ArenaPlan plan = plan_arena(lives);
    expect_valid(lives, plan);
    EXPECT_LE(plan.size, 2 * plan.live_peak);
  }
}

TEST(CpuArena, AGradientReusesMemoryAndAgreesWithTheReference) {
  // loss = sum(tanh(tanh(x @ w1) @ w2)^2) and its gradients by w1 and w2.
  Graph graph;
  Builder b(graph);
  NodeId x = b.input("x", {64, 128}, DType::f32);
  NodeId w1 = b.input("w1", {128, 256}, DType::f32);
  NodeId w2 = b.input("w2", {256, 128}, DType::f32);
  NodeId h = b.tanh(b.matmul(x, w1));
  NodeId y = b.tanh(b.matmul(h, w2));
  NodeId loss = b.sum(b.mul(y, y), {0, 1});
  std::vector<NodeId> wrt{w1, w2};
  std::vector<NodeId> grads = graph::gradients(b, loss, wrt);
  b.output("loss", loss);
  b.output("dw1", grads[0]);
  b.output("dw2", grads[1]);
  std::mt19937 rng(8);
  std::vector<Tensor> inputs;
  for (const auto& in : graph.inputs) inputs.push_back(random_tensor(DType::f32, graph.node(in.node).shape, rng));
  auto on = make_device("cpu", DeviceOptions{.cpu_cores = 1});
  auto plan = on->compile(graph);
  std::vector<Tensor> got = plan->run_host(inputs), want = run_on("reference", graph, inputs);
  // The gradients chain two products of 256 terms and a sum over the batch: held to the
  // bound of a sum four times that long.
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(compare(got[i], want[i], false, 4 * 256), "") << i;
  // A second run over the arena's leftovers gives the same bits.
  std::vector<Tensor> again = plan->run_host(inputs);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(same_bits(again[i], got[i])) << i;
  size_t all = 0;
  for (const graph::Node& node : graph.nodes) {
    std::string_view op = node.op_name();
    if (op != "input" && op != "constant" && op != "reshape")
      all += graph::numel(node.shape) * graph::dtype_size(node.dtype);
  }
  PlanMemory memory = plan->memory();
  EXPECT_GE(memory.arena_bytes, memory.live_peak_bytes);
  EXPECT_LE(memory.arena_bytes, memory.live_peak_bytes * 5 / 4) << "the arena is far above the bytes alive";
  EXPECT_LT(memory.arena_bytes, all / 2) << "buffers were not reused: " << memory.arena_bytes << " of " << all;
}

// Elementwise steps read a broadcast operand through the broadcast's input with zero
// strides: a bias, a row of scales, a column, a scalar and a mask (as attention's) are
// never repeated in memory, and the results keep the reference's bits on 1 and 2 threads.
TEST(CpuArena, ElementwiseStepsReadBroadcastsWithoutCopies) {
  const int64_t rows = 256, cols = 300;
  for (DType t : {DType::f32, DType::bf16, DType::i32}) {
    SCOPED_TRACE(graph::dtype_name(t));
    Graph graph;
    Builder b(graph);
    NodeId x = b.input("x", {2, rows, cols}, t);
    NodeId bias = b.input("bias", {cols}, t);
    NodeId scale = b.input("scale", {rows, 1}, t);
    NodeId mask = b.input("mask", {rows, cols}, DType::boolean);
    NodeId shape_of_x = b.add(x, b.broadcast(bias, {2, rows, cols}));
    NodeId scaled = b.mul(b.broadcast(scale, {2, rows, cols}), shape_of_x);
    NodeId floor = b.broadcast(b.scalar(-3.0, t), {2, rows, cols});
    NodeId kept = b.where(b.broadcast(mask, {2, rows, cols}), scaled, floor);
    b.output("y", b.lt(kept, b.broadcast(bias, {2, rows, cols})));
    b.output("z", kept);
    std::mt19937 rng(9);
    std::vector<Tensor> inputs;
    for (const auto& in : graph.inputs) {
      const graph::Node& node = graph.node(in.node);
      inputs.push_back(random_tensor(node.dtype, node.shape, rng));
    }
    std::vector<Tensor> want = run_on("reference", graph, inputs);
    for (int cores : {1, 2}) {
      auto on = make_device("cpu", DeviceOptions{.cpu_cores = cores});
      auto plan = on->compile(graph);
      std::vector<Tensor> got = plan->run_host(inputs);
      for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(same_bits(got[i], want[i])) << i << " on " << cores;
      // The most alive at once is two tensors of x's size (the scaled one and the
      // where's) and the bool output; a [2, 256, 300] broadcast (there are five) of any
      // operand would add a third.
      const size_t full = 2 * rows * cols * graph::dtype_size(t), bools = 2 * rows * cols;
      EXPECT_LE(plan->memory().live_peak_bytes, 2 * full + bools) << "a broadcast was materialized";
    }
  }
}

// A product reads a transposed operand through its input's strides: attention's scores,
// q and k split into heads, need the scores' bytes alone, with the transposes' bits.
TEST(CpuArena, ProductsReadTransposesWithoutCopies) {
  for (DType t : {DType::f32, DType::bf16}) {
    SCOPED_TRACE(graph::dtype_name(t));
    Graph graph;
    Builder b(graph);
    NodeId q = b.input("q", {8, 64, 4, 16}, t);
    NodeId k = b.input("k", {8, 64, 4, 16}, t);
    b.output("scores", b.matmul(b.transpose(q, {0, 2, 1, 3}), b.transpose(k, {0, 2, 3, 1})));
    std::mt19937 rng(10);
    std::vector<Tensor> inputs{random_tensor(t, {8, 64, 4, 16}, rng), random_tensor(t, {8, 64, 4, 16}, rng)};
    // The same product of the transposes copied out first, by a plan of their own.
    Graph transposes, product;
    Builder tb(transposes), pb(product);
    NodeId tq = tb.input("q", {8, 64, 4, 16}, t);
    NodeId tk = tb.input("k", {8, 64, 4, 16}, t);
    tb.output("qt", tb.transpose(tq, {0, 2, 1, 3}));
    tb.output("kt", tb.transpose(tk, {0, 2, 3, 1}));
    NodeId qt = pb.input("qt", {8, 4, 64, 16}, t);  // inputs in this order: not as arguments of one call
    NodeId kt = pb.input("kt", {8, 4, 16, 64}, t);
    pb.output("scores", pb.matmul(qt, kt));
    for (int cores : {1, 2}) {
      auto on = make_device("cpu", DeviceOptions{.cpu_cores = cores});
      auto plan = on->compile(graph);
      Tensor got = plan->run_host(inputs)[0];
      EXPECT_TRUE(same_bits(got, on->compile(product)->run_host(on->compile(transposes)->run_host(inputs))[0]))
          << "on " << cores;
      EXPECT_EQ(compare(got, run_on("reference", graph, inputs)[0], false, 16), "");
      // The product is written where the caller wants it: nothing else is alive.
      EXPECT_EQ(plan->memory().live_peak_bytes, 0u) << "a transpose was copied";
    }
  }
}

// Heads cut from a packed q, k and v (a slice of the last axis, reshaped into heads and
// transposed, as sexpgpu/nn's attention cuts them) are read where the packed tensor
// lies: attention's scores and its mix of the values need their own bytes and the
// scores', with the bits of the product of the slices copied out first.
TEST(CpuArena, ProductsReadHeadsCutFromAPackedTensorWithoutCopies) {
  const int64_t batch = 3, seq = 40, heads = 4, head_dim = 16, dim = heads * head_dim;
  const Shape packed_shape{batch, seq, 3 * dim};
  // A head cut, read in place, or copied out first by an exact multiply by 1 (which the
  // product cannot read through).
  auto part = [&](Builder& b, NodeId packed, int64_t i, std::vector<int64_t> perm, bool copied) {
    NodeId cut = b.op("slice", {packed},
                      {{"start", std::vector<int64_t>{0, 0, i * dim}},
                       {"stop", std::vector<int64_t>{batch, seq, (i + 1) * dim}},
                       {"step", std::vector<int64_t>{1, 1, 1}}});
    if (copied) cut = b.mul(cut, b.literal(1.0));
    return b.transpose(b.reshape(cut, {batch, seq, heads, head_dim}), std::move(perm));
  };
  for (DType t : {DType::f32, DType::bf16}) {
    SCOPED_TRACE(graph::dtype_name(t));
    auto attention = [&](bool copied) {
      Graph graph;
      Builder b(graph);
      NodeId packed = b.input("packed", packed_shape, t);
      NodeId scores = b.matmul(part(b, packed, 0, {0, 2, 1, 3}, copied), part(b, packed, 1, {0, 2, 3, 1}, copied));
      b.output("mixed", b.matmul(scores, part(b, packed, 2, {0, 2, 1, 3}, copied)));
      return graph;
    };
    const Graph in_place = attention(false), copied = attention(true);
    std::mt19937 rng(12);
    std::vector<Tensor> inputs{random_tensor(t, packed_shape, rng)};
    for (int cores : {1, 2}) {
      auto on = make_device("cpu", DeviceOptions{.cpu_cores = cores});
      auto plan = on->compile(in_place);
      Tensor got = plan->run_host(inputs)[0];
      EXPECT_TRUE(same_bits(got, on->compile(copied)->run_host(inputs)[0])) << "on " << cores;
      EXPECT_EQ(compare(got, run_on("reference", in_place, inputs)[0], false, 2 * seq), "");
      // Alive at once: the scores alone (the result is written where the caller wants it).
      const size_t scores = static_cast<size_t>(batch * heads * seq * seq) * graph::dtype_size(t);
      EXPECT_LE(plan->memory().live_peak_bytes, scores + 64) << "a head was copied";
    }
  }
}

// A concat of heads merged back (reshapes of transposes, as a gradient of attention's
// cut gives them) copies each part once, from the heads: the bytes of the concat of the
// parts copied out first, and nothing alive but the result.
TEST(CpuArena, AConcatReadsHeadsMergedBackWithoutCopies) {
  const int64_t batch = 3, seq = 70, heads = 4, head_dim = 16, dim = heads * head_dim;
  const Shape heads_shape{batch, heads, seq, head_dim}, keys_shape{batch, heads, head_dim, seq};
  for (DType t : {DType::f32, DType::bf16}) {
    SCOPED_TRACE(graph::dtype_name(t));
    // Rows of heads merged back, or copied out first by an exact multiply by 1.
    auto merged = [&](bool copied) {
      Graph graph;
      Builder b(graph);
      NodeId q = b.input("q", heads_shape, t), k = b.input("k", keys_shape, t), v = b.input("v", heads_shape, t);
      auto merge = [&](NodeId x, std::vector<int64_t> perm) {
        NodeId rows = b.transpose(x, std::move(perm));
        if (copied) rows = b.mul(rows, b.literal(1.0));
        return b.reshape(rows, {batch, seq, dim});
      };
      b.output("qkv", b.op("concat", {merge(q, {0, 2, 1, 3}), merge(k, {0, 3, 1, 2}), merge(v, {0, 2, 1, 3})},
                           {{"axis", int64_t{2}}}));
      return graph;
    };
    const Graph in_place = merged(false), copied = merged(true);
    std::mt19937 rng(13);
    std::vector<Tensor> inputs{random_tensor(t, heads_shape, rng), random_tensor(t, keys_shape, rng),
                               random_tensor(t, heads_shape, rng)};
    for (int cores : {1, 2}) {
      auto on = make_device("cpu", DeviceOptions{.cpu_cores = cores});
      auto plan = on->compile(in_place);
      Tensor got = plan->run_host(inputs)[0];
      EXPECT_TRUE(same_bits(got, on->compile(copied)->run_host(inputs)[0])) << "on " << cores;
      EXPECT_TRUE(same_bits(got, run_on("reference", in_place, inputs)[0])) << "on " << cores;
      EXPECT_EQ(plan->memory().live_peak_bytes, 0u) << "a part was copied twice";
    }
  }
}

// A gradient's product by transposed weights, x @ broadcast(transpose(w)), reads w
// through both nodes: the bits of the product by the transpose copied out first, and
// no room in the arena for the transpose or the broadcast.
TEST(CpuArena, ProductsReadBroadcastTransposedWeightsWithoutCopies) {
  for (DType t : {DType::f32, DType::bf16}) {
    SCOPED_TRACE(graph::dtype_name(t));
    const Shape x_shape{2, 70, 37}, w_shape{45, 37};
    Graph graph;
    Builder b(graph);
    NodeId x = b.input("x", x_shape, t);
    NodeId w = b.input("w", w_shape, t);
    b.output("y", b.matmul(x, b.broadcast(b.transpose(w, {1, 0}), {2, 37, 45})));
    std::mt19937 rng(11);
    std::vector<Tensor> inputs{random_tensor(t, x_shape, rng), random_tensor(t, w_shape, rng)};
    Graph transpose, product;
    Builder tb(transpose), pb(product);
    tb.output("wt", tb.transpose(tb.input("w", w_shape, t), {1, 0}));
    NodeId px = pb.input("x", x_shape, t);  // inputs in this order: not as arguments of one call
    NodeId wt = pb.input("wt", {37, 45}, t);
    pb.output("y", pb.matmul(px, pb.broadcast(wt, {2, 37, 45})));
    for (cpu::Isa isa : cpu::host_isas()) {
      for (int cores : {1, 2}) {
        auto on = make_device("cpu", DeviceOptions{.cpu_cores = cores, .cpu_isa = std::string(cpu::isa_name(isa))});
        auto plan = on->compile(graph);
        Tensor got = plan->run_host(inputs)[0];
        std::vector<Tensor> copied{inputs[0], on->compile(transpose)->run_host(std::vector<Tensor>{inputs[1]})[0]};
        EXPECT_TRUE(same_bits(got, on->compile(product)->run_host(copied)[0])) << cpu::isa_name(isa) << " on " << cores;
        // The product is written where the caller wants it: nothing else is alive.
        EXPECT_EQ(plan->memory().live_peak_bytes, 0u) << "a weight was copied";
      }
    }
  }
}

// A weight's gradient over a batch, sum over the batch of transpose(x) @ dy, is one
// product over the batch's rows on cpu (graph::merge_batch_sums): within a sum's
// tolerance of the reference, the same bits on every instruction set and thread
// count, and the batch's products never in the arena (unless they are an output too,
// which leaves the sum's bits as they are). bf16 keeps the graph's form: each entry's
// product is rounded to bf16 before the sum.
TEST(CpuArena, AWeightGradientOverABatchIsOneProduct) {
  const Shape x_shape{4, 30, 20}, dy_shape{4, 30, 50};
  for (DType t : {DType::f32, DType::bf16}) {
    std::optional<std::vector<uint8_t>> first;  // dw's bytes: the same in every case of a dtype
    for (bool keepdims : {false, true}) {
      for (bool products_out : {false, true}) {
        SCOPED_TRACE(fmt::format("{} keepdims {} products out {}", graph::dtype_name(t), keepdims, products_out));
        Graph graph;
        Builder b(graph);
        NodeId x = b.input("x", x_shape, t);
        NodeId dy = b.input("dy", dy_shape, t);
        NodeId products = b.matmul(b.transpose(x, {0, 2, 1}), dy);
        b.output("dw", b.sum(products, {0}, keepdims));
        if (products_out) b.output("products", products);
        std::mt19937 rng(12);
        std::vector<Tensor> inputs{random_tensor(t, x_shape, rng), random_tensor(t, dy_shape, rng)};
        std::vector<Tensor> expected = run_on("reference", graph, inputs);
        for (cpu::Isa isa : cpu::host_isas()) {
          for (int cores : {1, 2}) {
            auto on = make_device("cpu", DeviceOptions{.cpu_cores = cores, .cpu_isa = std::string(cpu::isa_name(isa))});
            auto plan = on->compile(graph);
            std::vector<Tensor> got = plan->run_host(inputs);
            EXPECT_EQ(compare(got[0], expected[0], false, 4 * 30), "") << cpu::isa_name(isa) << " on " << cores;
            std::vector<uint8_t> bytes(got[0].bytes().begin(), got[0].bytes().end());
            if (!first) first = bytes;
            EXPECT_EQ(bytes, *first) << cpu::isa_name(isa) << " on " << cores;
            if (products_out || t != DType::f32) continue;
            // The gradient is written where the caller wants it: nothing else is alive.
            EXPECT_EQ(plan->memory().live_peak_bytes, 0u) << "the products were kept";
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace sx::device::testing
