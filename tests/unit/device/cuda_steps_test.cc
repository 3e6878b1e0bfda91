// The cuda device's kernels in a plan on a GPU, against the reference: the moves, the
// reductions over any axes, the indexing and random primitives (also of bf16) and the generated
// kernels' transcendental functions, where, and cast. Without a GPU, only that the
// graph has a cuda kernel for each, then skipped, saying why (the host tests check the
// kernels' arithmetic).
#include <gtest/gtest.h>

#include "device/cuda/cuda_device.h"
#include "device/cuda/program.h"
#include "formula_cases.h"
#include "util.h"

namespace sx::device::testing {
namespace {

TEST(CudaSteps, GiveTheReferenceBitsOnTheGpu) {
  Graph g;
  graph::Builder b(g);
  graph::NodeId x = b.input("x", {4, 6}, DType::f32);
  graph::NodeId ids = b.input("ids", {5}, DType::i32);
  graph::NodeId key = b.input("key", {}, DType::i64);
  std::vector<graph::NodeId> exact = {
      b.transpose(x, {1, 0}),
      b.pad(x, {1, 0}, {0, 2}, {1, 0}, -1.0),
      b.concat({x, b.neg(x)}, 1),
      b.slice(x, {1, 0}, {4, 6}, {2, 3}),
      b.broadcast_to(b.reshape(x, {4, 1, 6}), {4, 3, 6}),
      b.sum(x, {0}),
      b.op("argmax", {x}, {{"axes", std::vector<int64_t>{1}}}),
      b.op("reduce_min", {x}, {{"axes", std::vector<int64_t>{0, 1}}}),
      b.iota({3, 5}, 1, DType::i64),
      b.random_bernoulli(key, 0.25, {100}),
      b.tanh(b.exp(x)),
      b.log(b.abs(x)),
      b.op("erf", {x}),
      b.op("logistic", {x}),
      b.where(b.lt(x, b.neg(x)), x, b.neg(x)),
      b.cast(x, DType::i32),
  };
  for (DType dtype : {DType::f32, DType::bf16}) {
    graph::NodeId table = dtype == DType::f32 ? x : b.cast(x, dtype);
    graph::NodeId rows = b.gather(table, ids, 0);
    for (graph::NodeId node :
         {rows, b.scatter_add(table, ids, b.mul(rows, rows), 0), b.one_hot(ids, 6, dtype), b.iota({3, 5}, 1, dtype),
          b.random_uniform(key, {100}, dtype), b.random_normal(key, {100}, dtype)}) {
      exact.push_back(node);
    }
  }
  graph::NodeId x64 = b.cast(x, DType::f64);
  std::vector<graph::NodeId> libdevice = {b.exp(x64), b.op("cos", {x64}), b.op("pow", {b.abs(x64), x64})};
  for (graph::NodeId node : exact) b.output(fmt::format("exact{}", node), node);
  for (graph::NodeId node : libdevice) b.output(fmt::format("libdevice{}", node), node);
  std::mt19937 rng(5);
  Tensor ids_value(DType::i32, {5});
  for (int i = 0; i < 5; ++i) ids_value.data<int32_t>()[i] = (i * 3) % 4;  // repeated rows
  std::vector<Tensor> inputs = {random_tensor(DType::f32, {4, 6}, rng), ids_value, Tensor::scalar(DType::i64, 99)};
  std::vector<Tensor> expected = run_on("reference", g, inputs);
  EXPECT_EQ(cuda::missing_kernels(g), std::vector<std::string>{});
  if (std::string reason = gpu_unusable_reason(); !reason.empty()) GTEST_SKIP() << reason;
  std::vector<Tensor> actual = run_on("cuda", g, inputs);
  for (size_t k = 0; k < exact.size(); ++k) {
    SCOPED_TRACE(g.node(exact[k]).op_name());
    EXPECT_EQ(compare_bits(actual[k], expected[k]), "");
  }
  for (size_t k = exact.size(); k < expected.size(); ++k) {
    EXPECT_EQ(compare(actual[k], expected[k], false), "") << "libdevice's f64 functions, within one rounding";
  }
}

}  // namespace
}  // namespace sx::device::testing
