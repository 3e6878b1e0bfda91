// The cuda device's indexing kernels without a GPU: index_math.h's functions, one result
// element at a time as each GPU thread computes it, give the reference's bits; their
// index checks, met in any order, record the index the cpu device stops at, which the
// plan turns into the cpu device's error; and NVRTC compiles the generated kernels.
#include <gtest/gtest.h>

#include "device/cuda/codegen.h"
#include "device/cuda/index_math.h"
#include "device/cuda/nvrtc.h"
#include "device/cuda/program.h"
#include "formula_cases.h"
#include "graph/index_error.h"
#include "util.h"

namespace sx::device::testing {
namespace {

// A tensor (indices, or any) of `dtype` with these values.
Tensor indices_of(DType dtype, const Shape& shape, const std::vector<double>& values) {
  Tensor t(dtype, shape);
  for (size_t i = 0; i < values.size(); ++i) t.set_value(static_cast<int64_t>(i), values[i]);
  return t;
}

// The node's result on the host, by index_math.h's functions.
Tensor host_index(const Graph& g, graph::NodeId id, const std::vector<Tensor>& inputs) {
  const graph::Node& node = g.node(id);
  Tensor out(node.dtype, node.shape);
  graph::visit_dtype(node.dtype, [&](auto types) {
    using S = typename decltype(types)::storage;
    using C = typename decltype(types)::compute;
    auto with_indices = [&](const Tensor& indices, auto fn) {
      if (indices.dtype() == DType::i32) fn(indices.data<int32_t>());
      else if (indices.dtype() == DType::i64) fn(indices.data<int64_t>());
      else if (indices.dtype() == DType::u8) fn(indices.data<uint8_t>());
      else fn(indices.data<uint16_t>());
    };
    for (int64_t o = 0; o < out.numel(); ++o) {
      switch (node.op()) {
        case graph::PrimId::gather:
          with_indices(inputs[1], [&](const auto* indices) {
            out.data<S>()[o] = cuda::gather_element(inputs[0].data<S>(), indices, cuda::gather_geometry(g, id), o);
          });
          break;
        case graph::PrimId::scatter_add:
          if constexpr (!std::is_same_v<C, bool>) {
            with_indices(inputs[1], [&](const auto* indices) {
              out.data<S>()[o] = cuda::scatter_add_element<S, C>(inputs[0].data<S>(), indices, inputs[2].data<S>(),
                                                                 cuda::gather_geometry(g, id), o);
            });
          }
          break;
        case graph::PrimId::one_hot:
          with_indices(inputs[0], [&](const auto* indices) {
            out.data<S>()[o] = cuda::one_hot_element<S>(indices, node.attrs.get_int("depth"), o);
          });
          break;
        default: {
          auto axis = static_cast<size_t>(node.attrs.get_int("axis"));
          int64_t inner = graph::numel(Shape(node.shape.begin() + static_cast<int64_t>(axis) + 1, node.shape.end()));
          out.data<S>()[o] = cuda::iota_element<S, C>(node.shape[axis], inner, o);
        }
      }
    }
  });
  return out;
}

TEST(CudaIndex, GiveTheReferenceBitsOnTheHost) {
  std::mt19937 rng(3);
  int cases = 0;
  for (DType dtype : {DType::f32, DType::f64, DType::bf16, DType::i32, DType::i64, DType::u8}) {
    for (DType index : {DType::i32, DType::i64, DType::u8, DType::u16}) {
      SCOPED_TRACE(fmt::format("{} by {} indices", graph::dtype_name(dtype), graph::dtype_name(index)));
      Graph g;
      graph::Builder b(g);
      Tensor x = random_tensor(dtype, {2, 5, 3}, rng);
      Tensor rows = indices_of(index, {2, 3}, {4, 0, 4, 1, 4, 2});  // repeated: scatter_add's order
      Tensor updates = random_tensor(dtype, {2, 2, 3, 3}, rng);
      Tensor labels = indices_of(index, {4}, {0, 3, 6, 2});  // 6: beyond one_hot's depth
      graph::NodeId xi = b.input("x", {2, 5, 3}, dtype), ri = b.input("rows", {2, 3}, index);
      graph::NodeId ui = b.input("updates", {2, 2, 3, 3}, dtype), li = b.input("labels", {4}, index);
      graph::NodeId pi = b.input("pick", {3}, index);
      std::vector<Tensor> inputs = {x, rows, updates, labels, indices_of(index, {3}, {1, 0, 1})};
      std::vector<graph::NodeId> nodes = {b.gather(xi, ri, 1), b.gather(xi, pi, 0), b.scatter_add(xi, ri, ui, 1),
                                          b.one_hot(li, 5, dtype), b.iota({3, 4, 2}, 1, dtype)};
      for (graph::NodeId node : nodes) b.output(fmt::format("y{}", node), node);
      std::vector<Tensor> expected;
      try {
        expected = run_on("reference", g, inputs);
      } catch (const std::exception& e) {
        ADD_FAILURE() << e.what();
        continue;
      }
      for (size_t k = 0; k < nodes.size(); ++k) {
        SCOPED_TRACE(g.node(nodes[k]).op_name());
        ASSERT_TRUE(cuda::indexable(g, nodes[k]));
        std::vector<Tensor> operands;
        for (graph::NodeId in : g.node(nodes[k]).inputs) {
          for (size_t i = 0; i < g.inputs.size(); ++i) {
            if (g.inputs[i].node == in) operands.push_back(inputs[i]);
          }
        }
        EXPECT_EQ(compare_bits(host_index(g, nodes[k], operands), expected[k]), "");
        ++cases;
      }
    }
  }
  EXPECT_EQ(cases, 120);
}

// bf16's scatter_add rounds after each addition, as the reference does: 256 + 1 is 256
// in bf16, so three ones added to 256 one by one leave it, where a sum kept in float
// would give 259, rounded to 260. Infinities, NaN and signed zeros keep their bits too.
TEST(CudaIndex, ScatterAddOfBf16RoundsAfterEachAddition) {
  Graph g;
  graph::Builder b(g);
  graph::NodeId x = b.input("x", {4}, DType::bf16), ids = b.input("ids", {7}, DType::i32);
  graph::NodeId updates = b.input("updates", {7}, DType::bf16);
  graph::NodeId y = b.scatter_add(x, ids, updates, 0);
  b.output("y", y);
  std::vector<Tensor> inputs = {indices_of(DType::bf16, {4}, {256, -0.0, 1, 3}),
                                indices_of(DType::i32, {7}, {0, 0, 1, 0, 2, 2, 3}),
                                indices_of(DType::bf16, {7}, {1, 1, -0.0, 1, INFINITY, -INFINITY, NAN})};
  Tensor expected = run_on("reference", g, inputs)[0];
  EXPECT_EQ(expected.value(0), 256.0);
  EXPECT_EQ(compare_bits(host_index(g, y, inputs), expected), "");
}

// The fault the kernels of `g` record on `inputs`: every index check of every node, as
// the GPU's threads meet them, in an order of `rng`'s.
cuda::IndexFault host_fault(const Graph& g, const std::vector<Tensor>& inputs, std::mt19937& rng) {
  struct Check {
    graph::NodeId node;
    const Tensor* indices;
    int64_t j, length;
  };
  std::vector<Check> checks;
  for (graph::NodeId id = 0; id < g.nodes.size(); ++id) {
    std::optional<cuda::IndexCheck> check = cuda::index_check(g, id);
    if (!check) continue;
    graph::NodeId indices = g.node(id).inputs[check->operand];
    for (size_t i = 0; i < g.inputs.size(); ++i) {
      if (g.inputs[i].node != indices) continue;
      for (int64_t j = 0; j < check->count; ++j) checks.push_back({id, &inputs[i], j, check->length});
    }
  }
  std::shuffle(checks.begin(), checks.end(), rng);
  cuda::IndexFault fault{};
  for (const Check& c : checks) {
    graph::visit_index_dtype(c.indices->dtype(), [&](auto zero) {
      using I = decltype(zero);
      cuda::check_index(&fault, static_cast<uint32_t>(c.node), c.indices->data<I>(), c.j, c.length);
    });
  }
  return fault;
}

TEST(CudaIndex, RecordTheIndexTheCpuDeviceStopsAt) {
  std::mt19937 rng(5);
  int faults = 0;
  for (DType index : {DType::i32, DType::i64, DType::u8, DType::u16}) {
    bool is_signed = index == DType::i32 || index == DType::i64;
    // Each case's ids (gathered along x's rows, scattered into them) and labels (a
    // checked one_hot of depth 5): in range, one outside, several outside in both.
    struct Case {
      std::vector<double> ids, labels;
    };
    std::vector<Case> cases = {{{0, 4, 2, 4, 1, 3}, {0, 4, 2}},
                               {{0, 4, 2, 5, 1, 3}, {0, 4, 2}},
                               {{0, 4, 2, 4, 1, 3}, {0, 9, 2}},
                               {{7, 4, 250, 4, is_signed ? -1.0 : 6.0, 3}, {0, 9, 200}},
                               {{0, 4, 2, 4, 1, is_signed ? -3.0 : 255.0}, {5, 5, 5}}};
    for (const Case& c : cases) {
      SCOPED_TRACE(fmt::format("{} ids {} labels {}", graph::dtype_name(index), fmt::join(c.ids, " "),
                               fmt::join(c.labels, " ")));
      Graph g;
      graph::Builder b(g);
      graph::NodeId x = b.input("x", {5, 3}, DType::f32), ids = b.input("ids", {2, 3}, index);
      graph::NodeId labels = b.input("labels", {3}, index);
      graph::NodeId rows = b.gather(x, ids, 0);
      b.output("one_hot", b.one_hot(labels, 5, DType::f32, true));
      b.output("scattered", b.scatter_add(x, ids, rows, 0));
      std::vector<Tensor> inputs = {random_tensor(DType::f32, {5, 3}, rng), Tensor::from_doubles(index, {2, 3}, c.ids),
                                    Tensor::from_doubles(index, {3}, c.labels)};
      std::optional<std::string> expected;
      try {
        run_on("cpu", g, inputs, 1);
      } catch (const graph::IndexOutOfRange& e) {
        expected = e.what();
      }
      for (int order = 0; order < 3; ++order) {
        cuda::IndexFault fault = host_fault(g, inputs, rng);
        ASSERT_EQ(fault.recorded != 0, expected.has_value());
        if (expected) {
          EXPECT_EQ(cuda::index_fault_error(g, fault).what(), *expected);
        }
      }
      faults += expected.has_value();
    }
  }
  EXPECT_EQ(faults, 16);
}

TEST(CudaIndex, TurnAFaultIntoTheCpuDevicesError) {
  Graph g;
  graph::Builder b(g);
  graph::NodeId x = b.input("x", {4, 3}, DType::f32), ids = b.input("ids", {2, 3}, DType::i64);
  graph::NodeId y = b.gather(x, ids, 0);
  b.output("y", y);
  graph::NodeId unchecked = b.one_hot(ids, 4);
  b.output("z", unchecked);
  auto fault_at = [](graph::NodeId node, int64_t position, int64_t value) {
    unsigned long long rank = cuda::fault_rank(static_cast<uint32_t>(node), position);
    return cuda::IndexFault{.first = rank, .recorded = rank, .value = value, .lock = 0};
  };
  graph::IndexOutOfRange error = cuda::index_fault_error(g, fault_at(y, 4, -7));
  EXPECT_STREQ(error.what(), "gather: index -7 at [1, 1] of input `ids` is outside its axis, 0 to 3");
  EXPECT_EQ(error.input(), "ids");
  EXPECT_EQ(error.position(), (std::vector<int64_t>{1, 1}));
  // A fault at no index, which only corrupted memory gives: the GPU failing.
  for (cuda::IndexFault bad : {fault_at(y, 6, 9), fault_at(unchecked, 0, 9), fault_at(1000, 0, 9)}) {
    try {
      cuda::index_fault_error(g, bad);
      ADD_FAILURE() << "no error";
    } catch (const DeviceError& e) {
      EXPECT_EQ(e.code(), "E-DEVICE-008") << e.what();
    }
  }
}

TEST(CudaIndex, PlanAStepThatChecksIndicesEvenForAnEmptyResult) {
  Graph g;
  graph::Builder b(g);
  graph::NodeId x = b.input("x", {4, 0}, DType::f32), ids = b.input("ids", {5}, DType::i32);
  graph::NodeId empty = b.gather(x, ids, 0);
  b.output("empty", empty);
  graph::NodeId hot = b.one_hot(ids, 4, DType::f32, true);
  b.output("hot", hot);
  b.output("loose", b.one_hot(ids, 4));
  cuda::Program program = cuda::plan_program(g);
  ASSERT_EQ(program.steps.size(), 3u);
  EXPECT_TRUE(program.steps[0].checks_indices);
  EXPECT_EQ(program.steps[0].n, 0);
  EXPECT_EQ(program.steps[0].checked_indices, 5);
  EXPECT_EQ(program.steps[0].node, empty);
  EXPECT_TRUE(program.steps[1].checks_indices);
  EXPECT_EQ(program.steps[1].node, hot);
  EXPECT_FALSE(program.steps[2].checks_indices);
}

TEST(CudaIndex, KernelsCompileForSm80AndSm90a) {
  Graph g;
  graph::Builder b(g);
  graph::NodeId x = b.input("x", {50, 8}, DType::f32), ids = b.input("ids", {2, 6}, DType::i32);
  graph::NodeId rows = b.gather(x, ids, 0);
  graph::NodeId half = b.input("half", {50, 8}, DType::bf16);
  graph::NodeId half_rows = b.gather(half, ids, 0);
  std::vector<graph::NodeId> nodes = {rows,
                                      b.scatter_add(x, ids, rows, 0),
                                      b.one_hot(ids, 50, DType::f32, true),
                                      b.iota({4, 6}, 1, DType::i64),
                                      half_rows,
                                      b.scatter_add(half, ids, half_rows, 0),
                                      b.one_hot(ids, 50, DType::bf16),
                                      b.iota({4, 6}, 1, DType::bf16)};
  std::string source;
  for (graph::NodeId node : nodes) source += cuda::generate_index_kernel(g, node).source;
  EXPECT_NE(source.find("GatherGeometry{12, 50, 8}"), std::string::npos) << source;
  EXPECT_NE(source.find("check_index(fault, node, operand1, j, 50)"), std::string::npos) << source;
  EXPECT_NE(source.find("check_index(fault, node, operand0, j, 50)"), std::string::npos) << source;
  EXPECT_NE(source.find("scatter_add_element<sx::graph::Bf16, float>"), std::string::npos) << source;
  for (const char* architecture : {"sm_80", "sm_90a"}) {
    EXPECT_GT(cuda::compile_cubin(source, architecture).size(), 1000u) << architecture;
  }
}

}  // namespace
}  // namespace sx::device::testing
