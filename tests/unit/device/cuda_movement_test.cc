// The cuda device's movement kernels without a GPU: each movement primitive's copies
// (movement.h) done on the host, element by element as the GPU's threads do them, give
// the reference's bits.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>

#include "device/cuda/movement.h"
#include "device/cuda/program.h"
#include "util.h"

namespace sx::device::testing {
namespace {

// The node's result from its inputs by plan_movement's copies, on the host.
Tensor host_movement(const Graph& g, graph::NodeId id, const std::vector<Tensor>& inputs) {
  const graph::Node& node = g.node(id);
  cuda::Movement movement = cuda::plan_movement(g, id);
  EXPECT_EQ(movement.copies.size(), node.inputs.size());
  Tensor out(node.dtype, node.shape);
  size_t size = graph::dtype_size(node.dtype);
  uint8_t* to = out.bytes().data();
  if (movement.fills) {
    for (int64_t i = 0; i < out.numel(); ++i) std::memcpy(to + i * size, &movement.fill, size);
  }
  for (size_t k = 0; k < movement.copies.size(); ++k) {
    const uint8_t* from = inputs[k].bytes().data();
    for (int64_t i = 0; i < cuda::copy_length(movement.copies[k]); ++i) {
      int64_t src = 0, dst = 0;
      cuda::copy_places(movement.copies[k], i, &src, &dst);
      EXPECT_LT(src, inputs[k].numel());
      EXPECT_LT(dst, out.numel());
      std::memcpy(to + dst * size, from + src * size, size);
    }
  }
  return out;
}

struct MovementCase {
  const char* name;
  std::vector<Shape> inputs;
  std::function<graph::NodeId(graph::Builder&, const std::vector<graph::NodeId>&)> build;
};

const std::vector<MovementCase>& movement_cases() {
  using Ids = std::vector<graph::NodeId>;
  static const std::vector<MovementCase> cases = {
      {"reshape",
       {{2, 3, 4}},
       [](graph::Builder& b, const Ids& x) {
         return b.reshape(x[0], {4, 6});
       }},
      {"transpose",
       {{2, 3, 4}},
       [](graph::Builder& b, const Ids& x) {
         return b.transpose(x[0], {2, 0, 1});
       }},
      {"transpose of 1s",
       {{1, 5, 1}},
       [](graph::Builder& b, const Ids& x) {
         return b.transpose(x[0], {1, 2, 0});
       }},
      {"broadcast",
       {{3, 1}},
       [](graph::Builder& b, const Ids& x) {
         return b.broadcast_to(x[0], {2, 3, 4});
       }},
      {"broadcast of a scalar", {{}}, [](graph::Builder& b, const Ids& x) { return b.broadcast_to(x[0], {5}); }},
      {"slice",
       {{7, 9}},
       [](graph::Builder& b, const Ids& x) {
         return b.slice(x[0], {1, 2}, {6, 9}, {2, 3});
       }},
      {"empty slice",
       {{4, 3}},
       [](graph::Builder& b, const Ids& x) {
         return b.slice(x[0], {2, 0}, {2, 3});
       }},
      {"concat", {{2, 3}, {2, 1}, {2, 4}}, [](graph::Builder& b, const Ids& x) { return b.concat(x, 1); }},
      {"concat of the first axis", {{1, 3}, {2, 3}}, [](graph::Builder& b, const Ids& x) { return b.concat(x, 0); }},
      {"pad",
       {{3, 4}},
       [](graph::Builder& b, const Ids& x) {
         return b.pad(x[0], {1, 0}, {2, 3}, {0, 2}, 1.5);
       }},
      {"pad of an empty axis",
       {{0, 2}},
       [](graph::Builder& b, const Ids& x) {
         return b.pad(x[0], {1, 1}, {1, 0});
       }},
  };
  return cases;
}

TEST(CudaMovement, CopiesGiveTheReferenceBitsOnTheHost) {
  std::mt19937 rng(7);
  for (const MovementCase& c : movement_cases()) {
    for (DType dtype : graph::kAllDTypes) {
      SCOPED_TRACE(fmt::format("{} of {}", c.name, graph::dtype_name(dtype)));
      Graph g;
      graph::Builder b(g);
      std::vector<graph::NodeId> ids;
      std::vector<Tensor> values;
      for (size_t k = 0; k < c.inputs.size(); ++k) {
        ids.push_back(b.input(fmt::format("x{}", k), c.inputs[k], dtype));
        values.push_back(random_tensor(dtype, c.inputs[k], rng));
      }
      graph::NodeId moved = c.build(b, ids);
      b.output("y", moved);
      ASSERT_TRUE(cuda::movable(g, moved));
      EXPECT_EQ(compare_bits(host_movement(g, moved, values), run_on("reference", g, values)[0]), "");
    }
  }
}

TEST(CudaMovement, LeavesAValueOfTooManyAxesToOtherDevices) {
  Graph g;
  graph::Builder b(g);
  graph::NodeId x = b.input("x", Shape(cuda::kMostAxes + 1, 2), DType::f32);
  std::vector<int64_t> perm;
  for (int64_t d = cuda::kMostAxes; d >= 0; --d) perm.push_back(d);
  EXPECT_FALSE(cuda::movable(g, b.transpose(x, perm)));
  EXPECT_TRUE(cuda::movable(g, b.reshape(x, {2, -1})));
}

TEST(CudaMovement, IsAStepOfTheProgram) {
  Graph g;
  graph::Builder b(g);
  graph::NodeId x = b.input("x", {2, 3}, DType::f32);
  b.output("y", b.neg(b.transpose(x, {1, 0})));
  b.output("z", b.concat({x, x}, 0));
  EXPECT_TRUE(cuda::missing_kernels(g).empty());
  cuda::Program program = cuda::plan_program(g);
  std::vector<size_t> copies;
  for (const cuda::Step& step : program.steps) {
    if (step.kind == cuda::Step::Kind::movement) copies.push_back(step.movement.copies.size());
  }
  EXPECT_EQ(copies, (std::vector<size_t>{1, 2}));  // the transpose's, then the concat's of two
  EXPECT_TRUE(cuda::has_kernel(graph::PrimId::pad));
}

}  // namespace
}  // namespace sx::device::testing
