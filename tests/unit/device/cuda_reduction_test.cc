// The cuda device's reductions over any axes without a GPU: reduction.h's functions,
// one result element at a time as each GPU thread computes it, give the reference's
// bits; and NVRTC compiles their generated kernels.
#include <gtest/gtest.h>

#include "device/cuda/codegen.h"
#include "device/cuda/nvrtc.h"
#include "device/cuda/reduction.h"
#include "util.h"

namespace sx::device::testing {
namespace {

// The reduction node's result on the host, by reduction.h's functions.
Tensor host_reduction(const Graph& g, graph::NodeId id, const Tensor& x) {
  const graph::Node& node = g.node(id);
  cuda::ReductionAxes axes = cuda::reduction_axes(g, id);
  Tensor out(node.dtype, node.shape);
  int64_t count = out.numel() == 0 ? 0 : x.numel() / out.numel();
  graph::visit_dtype(x.dtype(), [&](auto types) {
    using S = typename decltype(types)::storage;
    using C = typename decltype(types)::compute;
    if constexpr (!std::is_same_v<C, bool>) {
      const S* in = x.data<S>();
      for (int64_t o = 0; o < out.numel(); ++o) {
        switch (node.op()) {
          case graph::PrimId::sum: out.data<S>()[o] = cuda::reduce_sum<S, C>(in, axes, o, count); break;
          case graph::PrimId::reduce_max:
            out.data<S>()[o] = cuda::reduce_extremum<S, C, S, true, false>(in, axes, o, count);
            break;
          case graph::PrimId::reduce_min:
            out.data<S>()[o] = cuda::reduce_extremum<S, C, S, false, false>(in, axes, o, count);
            break;
          case graph::PrimId::argmax:
            out.data<int64_t>()[o] = cuda::reduce_extremum<S, C, int64_t, true, true>(in, axes, o, count);
            break;
          default: out.data<int64_t>()[o] = cuda::reduce_extremum<S, C, int64_t, false, true>(in, axes, o, count);
        }
      }
    }
  });
  return out;
}

constexpr graph::PrimId kReductions[] = {graph::PrimId::sum, graph::PrimId::reduce_max, graph::PrimId::reduce_min,
                                         graph::PrimId::argmax, graph::PrimId::argmin};

TEST(CudaReductions, GiveTheReferenceBitsOnTheHost) {
  std::mt19937 rng(11);
  struct Case {
    Shape shape;
    std::vector<int64_t> axes;
    int64_t keepdims;
  };
  const Case cases[] = {
      {{4, 5, 6}, {0}, 0}, {{4, 5, 6}, {1}, 1}, {{4, 5, 6}, {0, 2}, 0}, {{4, 5, 6}, {0, 1, 2}, 0}, {{3, 0, 2}, {1}, 0},
      {{7}, {0}, 1},       {{}, {}, 0}};
  for (const Case& c : cases) {
    for (DType dtype : graph::kAllDTypes) {
      if (dtype == DType::boolean) continue;
      Tensor x = random_tensor(dtype, c.shape, rng);
      if (graph::is_float(dtype) && x.numel() > 20) {
        x.set_value(7, std::numeric_limits<double>::quiet_NaN());
        x.set_value(3, x.value(9));  // a tie
        x.set_value(11, -std::numeric_limits<double>::infinity());
        x.set_value(13, dtype == DType::f64 ? 1e-310 : 1e-39);  // a subnormal
        x.set_value(21, 1e4);                                   // a sum in bf16 steps would lose the others beside it
      }
      for (graph::PrimId prim : kReductions) {
        Graph g;
        graph::Builder b(g);
        graph::NodeId in = b.input("x", c.shape, dtype);
        graph::NodeId y = b.op(graph::primitive(prim).name, {in}, {{"axes", c.axes}, {"keepdims", c.keepdims}});
        b.output("y", y);
        SCOPED_TRACE(fmt::format("{} of {}{} over {}", graph::primitive(prim).name, graph::dtype_name(dtype),
                                 graph::shape_str(c.shape), graph::list_str(c.axes)));
        EXPECT_TRUE(cuda::reducible(g, y));
        EXPECT_EQ(compare_bits(host_reduction(g, y, x), run_on("reference", g, {x})[0]), "");
      }
    }
  }
}

TEST(CudaReductions, KernelsCompileForSm80AndSm90a) {
  std::string source;
  for (graph::PrimId prim : kReductions) {
    for (DType dtype : {DType::f32, DType::f64, DType::i32, DType::u8, DType::bf16}) {
      Graph g;
      graph::Builder b(g);
      graph::NodeId in = b.input("x", {4, 5, 6}, dtype);
      graph::NodeId y = b.op(graph::primitive(prim).name, {in}, {{"axes", std::vector<int64_t>{0, 2}}});
      source += cuda::generate_reduction(g, y).source;
    }
  }
  EXPECT_NE(source.find("reduce_extremum<float, float, int64_t, true, true>"), std::string::npos) << source;
  EXPECT_NE(source.find("{1, {5}, {6}, 2, {4, 6}, {30, 1}}"), std::string::npos) << source;
  EXPECT_NE(source.find("reduce_sum<sx::graph::Bf16, float>"), std::string::npos) << source;
  for (const char* architecture : {"sm_80", "sm_90a"}) {
    EXPECT_GT(cuda::compile_cubin(source, architecture).size(), 1000u) << architecture;
  }
}

}  // namespace
}  // namespace sx::device::testing
