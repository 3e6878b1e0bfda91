// bf16_products, the bf16 policy a server applies: every f32 product runs on
// bf16 operands and is cast back, so the outputs keep their dtypes; the
// results are the f32 graph's within what bf16 operands and a bf16 result
// allow; reference and cpu agree bit for bit (a product of two bf16 values is
// exact in f32, so the cpu's fused multiply-add and the reference's multiply
// then add round the same sums, in the same order over k); and a graph
// without an f32 product is unchanged.
#include <cmath>
#include <random>

#include "device/device.h"
#include "graph/json.h"
#include "graph/passes.h"
#include "graph/primitive.h"
#include "test_util.h"

namespace sx::graph {
namespace {

Tensor uniform(DType dtype, Shape shape, std::mt19937& rng) {
  std::uniform_real_distribution<double> dist(-1, 1);
  std::vector<double> values(static_cast<size_t>(numel(shape)));
  for (double& v : values) v = dist(rng);
  return Tensor::from_doubles(dtype, std::move(shape), values);
}

// x [4, 32] @ w, x3 [2, 4, 32] @ w (a broadcast weight), tanh of the first @ v,
// and an f64 product, which the policy leaves alone.
struct Layers {
  Graph graph;
  std::vector<Tensor> inputs;
};

Layers layers() {
  Layers m;
  Builder b(m.graph);
  std::mt19937 rng(9);
  auto input = [&](std::string name, Shape shape, DType dtype = DType::f32) {
    m.inputs.push_back(uniform(dtype, shape, rng));
    return b.input(std::move(name), std::move(shape), dtype);
  };
  NodeId x = input("x", {4, 32}), x3 = input("x3", {2, 4, 32}), w = input("w", {32, 8}), v = input("v", {8, 5});
  NodeId d = input("d", {3, 6}, DType::f64), e = input("e", {6, 2}, DType::f64);
  NodeId y = b.matmul(x, w);
  b.output("y", y);
  b.output("y3", b.matmul(x3, w));
  b.output("z", b.matmul(b.tanh(y), v));
  b.output("f64", b.matmul(d, e));
  return m;
}

TEST(Bf16Products, ProductsRunOnBf16AndOutputsKeepTheirDtypes) {
  Layers m = layers();
  Graph policy = bf16_products(m.graph);
  ASSERT_EQ(policy.outputs.size(), m.graph.outputs.size());
  for (size_t o = 0; o < policy.outputs.size(); ++o) {
    EXPECT_EQ(policy.outputs[o].name, m.graph.outputs[o].name);
    EXPECT_EQ(policy.node(policy.outputs[o].node).dtype, m.graph.node(m.graph.outputs[o].node).dtype);
    EXPECT_EQ(policy.node(policy.outputs[o].node).shape, m.graph.node(m.graph.outputs[o].node).shape);
  }
  int bf16_products = 0, f64_products = 0, f32_products = 0;
  for (const Node& node : policy.nodes) {
    if (node.op() != PrimId::matmul) continue;
    bf16_products += node.dtype == DType::bf16 ? 1 : 0;
    f64_products += node.dtype == DType::f64 ? 1 : 0;
    f32_products += node.dtype == DType::f32 ? 1 : 0;
  }
  EXPECT_EQ(bf16_products, 3);
  EXPECT_EQ(f64_products, 1);
  EXPECT_EQ(f32_products, 0);
  // The broadcast weight is cast once, before it is spread, and w once for both products.
  int casts_to_bf16 = 0;
  for (const Node& node : policy.nodes) {
    if (node.op() == PrimId::cast && node.dtype == DType::bf16) {
      ++casts_to_bf16;
      EXPECT_LE(numel(node.shape), 32 * 8) << describe_node(policy, static_cast<NodeId>(&node - policy.nodes.data()));
    }
  }
  EXPECT_EQ(casts_to_bf16, 5);  // x, x3, w, tanh(y), v
}

// "under :bf16 the parameter stays an f32 master weight read without a cast down": the
// products that read a :numerics :high weight (here `w`, also through the broadcast that
// spreads it over x3's batch) stay f32; the others run on bf16.
TEST(Bf16Products, AHighWeightIsNeverCastDown) {
  Layers m = layers();
  std::vector<std::string> high{"w"};
  Graph policy = bf16_products(m.graph, high);
  int bf16_products = 0, f32_products = 0;
  for (const Node& node : policy.nodes) {
    if (node.op() != PrimId::matmul) continue;
    bf16_products += node.dtype == DType::bf16 ? 1 : 0;
    f32_products += node.dtype == DType::f32 ? 1 : 0;
  }
  EXPECT_EQ(f32_products, 2);   // x @ w, x3 @ w
  EXPECT_EQ(bf16_products, 1);  // tanh(y) @ v
  std::vector<Tensor> exact = testing::run_on("reference", m.graph, m.inputs),
                      mixed = testing::run_on("reference", policy, m.inputs);
  EXPECT_EQ(exact[0], mixed[0]);
  EXPECT_EQ(exact[1], mixed[1]);
  EXPECT_NE(exact[2], mixed[2]);
}

TEST(Bf16Products, CloseToF32WithinWhatBf16Allows) {
  Layers m = layers();
  std::vector<Tensor> f32 = testing::run(m.graph, m.inputs), bf16 = testing::run(bf16_products(m.graph), m.inputs);
  // For y = x @ w: rounding each operand to bf16 moves each product by at most
  // 2u of its size (u = 2^-8, bf16's unit roundoff), and the result's rounding
  // moves it by u of its size; the f32 sums add a little more.
  const double u = std::ldexp(1.0, -8);
  Graph bound;
  Builder b(bound);
  NodeId x = b.abs(b.cast(b.input("x", {4, 32}, DType::f32), DType::f64));
  NodeId w = b.abs(b.cast(b.input("w", {32, 8}, DType::f32), DType::f64));
  b.output("bound", b.matmul(x, w));
  std::vector<Tensor> bound_inputs{m.inputs[0], m.inputs[2]};
  Tensor magnitude = testing::run(bound, bound_inputs)[0];
  for (int64_t i = 0; i < f32[0].numel(); ++i) {
    double want = f32[0].value(i), got = bf16[0].value(i);
    EXPECT_LE(std::fabs(got - want), 2.1 * u * magnitude.value(i) + u * std::fabs(want)) << "y element " << i;
  }
  // The other outputs, loosely: within a few bf16 roundings.
  for (size_t o = 1; o < f32.size(); ++o) {
    for (int64_t i = 0; i < f32[o].numel(); ++i) {
      EXPECT_NEAR(bf16[o].value(i), f32[o].value(i), 16 * u * (1 + std::fabs(f32[o].value(i))))
          << m.graph.outputs[o].name << " element " << i;
    }
  }
}

TEST(Bf16Products, ReferenceAndCpuAgreeBitForBit) {
  Layers m = layers();
  // And products large enough for the cpu's packed kernels, with a broadcast
  // weight and a single row.
  Builder b(m.graph);
  std::mt19937 rng(4);
  NodeId big = b.input("big", {64, 256}, DType::f32), rows = b.input("rows", {2, 1, 256}, DType::f32);
  NodeId wide = b.input("wide", {256, 96}, DType::f32);
  for (Shape shape : {Shape{64, 256}, Shape{2, 1, 256}, Shape{256, 96}})
    m.inputs.push_back(uniform(DType::f32, shape, rng));
  b.output("big", b.matmul(big, wide));
  b.output("rows", b.matmul(rows, wide));
  Graph policy = bf16_products(m.graph);
  std::vector<Tensor> reference = testing::run_on("reference", policy, m.inputs),
                      cpu = testing::run_on("cpu", policy, m.inputs);
  for (size_t o = 0; o < reference.size(); ++o) {
    if (policy.outputs[o].name == "f64") continue;  // not a bf16 product
    EXPECT_EQ(cpu[o], reference[o]) << policy.outputs[o].name;
  }
}

TEST(Bf16Products, AGraphWithoutAnF32ProductIsUnchanged) {
  Graph g;
  Builder b(g);
  NodeId x = b.input("x", {3, 4}, DType::f32);
  b.output("y", b.sum(b.tanh(b.mul(x, x)), {1}));
  b.output("i", b.matmul(b.input("i", {2, 2}, DType::i32), b.input("j", {2, 2}, DType::i32)));
  EXPECT_EQ(graph_to_json_text(bf16_products(g)), graph_to_json_text(g));
}

// A weight's gradient over a batch (sum over the batch of transpose(x) @ dy) is one bf16
// product over the batch's rows, rounded once; every cast reads a matrix where it lies
// (an input), never a transpose or a broadcast of one; and a transposed and a
// broadcast weight are each cast once.
TEST(Bf16Products, AWeightGradientIsOneProductAndCastsReadTheMatrices) {
  Graph g;
  Builder b(g);
  std::mt19937 rng(14);
  NodeId x = b.input("x", {3, 10, 6}, DType::f32), dy = b.input("dy", {3, 10, 4}, DType::f32);
  NodeId w = b.input("w", {6, 4}, DType::f32);  // dx = dy @ w^T
  b.output("dw", b.sum(b.matmul(b.transpose(x, {0, 2, 1}), dy), {0}));
  b.output("dx", b.matmul(dy, b.broadcast(b.transpose(w, {1, 0}), {3, 4, 6})));
  std::vector<Tensor> inputs{uniform(DType::f32, {3, 10, 6}, rng), uniform(DType::f32, {3, 10, 4}, rng),
                             uniform(DType::f32, {6, 4}, rng)};
  Graph policy = bf16_products(g);
  // The nodes the outputs read (the batch's products the merge replaced stay, unread).
  std::vector<bool> live(policy.nodes.size(), false);
  for (const NamedNode& out : policy.outputs) live[out.node] = true;
  for (size_t id = policy.nodes.size(); id-- > 0;) {
    if (!live[id]) continue;
    for (NodeId in : policy.nodes[id].inputs) live[in] = true;
  }
  int products = 0, casts_down = 0;
  for (NodeId id = 0; id < policy.nodes.size(); ++id) {
    const Node& node = policy.nodes[id];
    if (!live[id]) continue;
    if (node.op() == PrimId::matmul) {
      ++products;
      EXPECT_EQ(node.dtype, DType::bf16);
      EXPECT_NE(node.shape, (Shape{3, 6, 4})) << "dw's batch of products is still computed";
    }
    if (node.op() == PrimId::cast && node.dtype == DType::bf16) {
      ++casts_down;
      EXPECT_EQ(policy.node(node.inputs[0]).op(), PrimId::input)
          << "a cast of a " << policy.node(node.inputs[0]).op_name();
    }
  }
  EXPECT_EQ(products, 2);    // dw's and dx's
  EXPECT_EQ(casts_down, 3);  // x, dy and w, each once
  std::vector<Tensor> f32 = testing::run(g, inputs), bf16 = testing::run(policy, inputs);
  for (size_t o = 0; o < f32.size(); ++o) {
    for (int64_t i = 0; i < f32[o].numel(); ++i) {
      EXPECT_NEAR(bf16[o].value(i), f32[o].value(i), 0.05 * (1 + std::fabs(f32[o].value(i))))
          << g.outputs[o].name << " element " << i;
    }
  }
}

// Heads cut from one product (attention's q, k and v: slices of a packed tensor,
// reshaped and transposed) are cast once, the packed tensor, and sliced in bf16, so a
// product reads them where the packed tensor lies; the values are those of each slice
// cast alone.
TEST(Bf16Products, SlicesOfOneTensorAreCastOnce) {
  Graph g;
  Builder b(g);
  std::mt19937 rng(15);
  NodeId x = b.input("x", {2, 6, 8}, DType::f32), w = b.input("w", {8, 24}, DType::f32);
  NodeId packed = b.matmul(x, b.broadcast(w, {2, 8, 24}));
  auto part = [&](int64_t i, std::vector<int64_t> perm) {
    NodeId cut = b.op("slice", {packed},
                      {{"start", std::vector<int64_t>{0, 0, 8 * i}},
                       {"stop", std::vector<int64_t>{2, 6, 8 * (i + 1)}},
                       {"step", std::vector<int64_t>{1, 1, 1}}});
    return b.transpose(b.reshape(cut, {2, 6, 2, 4}), std::move(perm));
  };
  NodeId scores = b.matmul(part(0, {0, 2, 1, 3}), part(1, {0, 2, 3, 1}));
  b.output("mixed", b.matmul(scores, part(2, {0, 2, 1, 3})));
  std::vector<Tensor> inputs{uniform(DType::f32, {2, 6, 8}, rng), uniform(DType::f32, {8, 24}, rng)};
  Graph policy = bf16_products(g);
  int casts_of_slices = 0, casts_of_packed = 0;
  for (const Node& node : policy.nodes) {
    if (node.op() != PrimId::cast || node.dtype != DType::bf16) continue;
    const Node& from = policy.node(node.inputs[0]);
    if (from.op() == PrimId::slice) ++casts_of_slices;
    if (from.op() == PrimId::cast && from.shape == Shape{2, 6, 24}) ++casts_of_packed;
  }
  EXPECT_EQ(casts_of_slices, 0);
  EXPECT_EQ(casts_of_packed, 1);
  // The same values as each slice cast alone: a cast is a function of each element.
  Graph sliced_then_cast;
  {
    Builder c(sliced_then_cast);
    NodeId cx = c.input("x", {2, 6, 8}, DType::f32), cw = c.input("w", {8, 24}, DType::f32);
    NodeId cp = c.cast(c.matmul(c.cast(cx, DType::bf16), c.broadcast(c.cast(cw, DType::bf16), {2, 8, 24})), DType::f32);
    auto cut = [&](int64_t i, std::vector<int64_t> perm) {
      NodeId piece = c.op("slice", {cp},
                          {{"start", std::vector<int64_t>{0, 0, 8 * i}},
                           {"stop", std::vector<int64_t>{2, 6, 8 * (i + 1)}},
                           {"step", std::vector<int64_t>{1, 1, 1}}});
      return c.transpose(c.reshape(c.cast(piece, DType::bf16), {2, 6, 2, 4}), std::move(perm));
    };
    NodeId s = c.cast(c.matmul(cut(0, {0, 2, 1, 3}), cut(1, {0, 2, 3, 1})), DType::f32);
    c.output("mixed", c.cast(c.matmul(c.cast(s, DType::bf16), cut(2, {0, 2, 1, 3})), DType::f32));
  }
  const Tensor got = testing::run(policy, inputs)[0], want = testing::run(sliced_then_cast, inputs)[0];
  ASSERT_EQ(got.numel(), want.numel());
  for (int64_t i = 0; i < got.numel(); ++i) EXPECT_EQ(got.value(i), want.value(i)) << "element " << i;
}

// keep_inputs_in_bf16: an f32 input read only by casts to bf16 becomes bf16 and the
// outputs keep their bits; one read otherwise too, one not read, and one not named stay f32.
TEST(KeepInputsInBf16, OnlyInputsReadSolelyAsBf16AreRetypedAndTheOutputsKeepTheirBits) {
  Graph g;
  Builder b(g);
  NodeId w = b.input("w", {4, 3}, DType::f32), v = b.input("v", {4, 3}, DType::f32);
  NodeId unread = b.input("unread", {2}, DType::f32), other = b.input("other", {3}, DType::f32);
  NodeId x = b.input("x", {2, 4}, DType::bf16);
  b.output("y", b.matmul(x, b.cast(w, DType::bf16)));
  b.output("z", b.add(b.cast(w, DType::bf16), b.cast(v, DType::bf16)));
  b.output("v", v);
  b.output("o", b.cast(other, DType::bf16));
  std::mt19937 rng(3);
  std::vector<Tensor> inputs{uniform(DType::f32, {4, 3}, rng), uniform(DType::f32, {4, 3}, rng),
                             uniform(DType::f32, {2}, rng), uniform(DType::f32, {3}, rng),
                             uniform(DType::bf16, {2, 4}, rng)};
  std::vector<Tensor> before = testing::run_on("reference", g, inputs);

  std::vector<NodeId> candidates{w, v, unread};
  EXPECT_EQ(keep_inputs_in_bf16(g, candidates), std::vector<NodeId>{w});
  EXPECT_EQ(g.nodes[w].dtype, DType::bf16);
  EXPECT_EQ(g.nodes[v].dtype, DType::f32);
  EXPECT_EQ(g.nodes[unread].dtype, DType::f32);
  EXPECT_EQ(g.nodes[other].dtype, DType::f32);
  inputs[0] = Tensor::from_doubles(DType::bf16, {4, 3}, inputs[0].to_doubles());
  std::vector<Tensor> after = testing::run_on("reference", g, inputs);
  for (size_t o = 0; o < before.size(); ++o) EXPECT_EQ(after[o], before[o]) << g.outputs[o].name;
}

TEST(KeepInputsInBf16, ANodeThatIsNotAnF32InputIsNoCandidate) {
  Graph g;
  Builder b(g);
  NodeId x = b.input("x", {2}, DType::bf16);
  NodeId y = b.neg(b.input("y", {2}, DType::f32));
  b.output("a", b.cast(x, DType::bf16));
  b.output("b", b.cast(y, DType::bf16));
  std::vector<NodeId> candidates{x, y};
  EXPECT_TRUE(keep_inputs_in_bf16(g, candidates).empty());
  EXPECT_EQ(g.nodes[y].dtype, DType::f32);
}

}  // namespace
}  // namespace sx::graph
