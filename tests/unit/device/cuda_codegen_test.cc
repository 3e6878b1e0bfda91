// The cuda device's generated kernels, without a GPU: the elementwise chains they fuse,
// their source, NVRTC's cubins of them for sm_80 and sm_90a, and the cache on disk.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>

#include "device/cuda/codegen.h"
#include "device/cuda/element_math.h"
#include "device/cuda/nvrtc.h"
#include "formula_cases.h"
#include "util.h"

namespace sx::device::testing {
namespace {

TEST(CudaCodegen, FusesAChainIntoOneKernel) {
  Graph g;
  graph::Builder b(g);
  graph::NodeId x = b.input("x", {1000}, DType::f32);
  graph::NodeId y = b.input("y", {1000}, DType::f32);
  graph::NodeId s = b.add(x, y);
  graph::NodeId shared = b.neg(s);  // read twice: ends its own kernel
  graph::NodeId z = b.mul(shared, b.sqrt(shared));
  b.output("z", b.lt(z, x));
  b.output("e", b.sum(shared, {0}));  // a reduction: reads it from memory
  std::vector<cuda::Fusion> fusions = cuda::find_fusions(g);
  ASSERT_EQ(fusions.size(), 2u);
  EXPECT_EQ(fusions[0].nodes, (std::vector<graph::NodeId>{s, shared}));
  EXPECT_EQ(fusions[0].operands, (std::vector<graph::NodeId>{x, y}));
  EXPECT_EQ(fusions[1].nodes.size(), 3u);  // sqrt, mul, lt
  EXPECT_EQ(fusions[1].operands, (std::vector<graph::NodeId>{shared, x}));
  EXPECT_FALSE(cuda::fusible(g, g.outputs[1].node));

  cuda::GeneratedKernel kernel = cuda::generate_kernel(g, fusions[1]);
  EXPECT_EQ(kernel.name.rfind("sx_fused_", 0), 0u);
  EXPECT_NE(kernel.source.find("sx::graph::prims::scalar::Sqrt"), std::string::npos) << kernel.source;
  EXPECT_NE(kernel.source.find("binary_element<sx::graph::prims::scalar::Lt, float, float, bool>"), std::string::npos)
      << kernel.source;
  EXPECT_NE(kernel.source.find("bool* __restrict__ out"), std::string::npos) << kernel.source;
  EXPECT_EQ(cuda::generate_kernel(g, fusions[1]).name, kernel.name);
  EXPECT_NE(cuda::generate_kernel(g, fusions[0]).name, kernel.name);
}

// A row reduction's host result, one row at a time as each GPU thread computes it.
Tensor host_rows(graph::PrimId prim, const Tensor& x) {
  int64_t length = x.shape().back();
  Tensor out(x.dtype(), {x.shape()[0]});
  graph::visit_dtype(x.dtype(), [&](auto types) {
    using S = typename decltype(types)::storage;
    using C = typename decltype(types)::compute;
    if constexpr (!std::is_same_v<C, bool>) {
      for (int64_t r = 0; r < out.numel(); ++r) {
        const S* row = x.data<S>() + r * length;
        out.data<S>()[r] =
            prim == graph::PrimId::sum ? cuda::row_sum<S, C>(row, length) : cuda::row_max<S, C>(row, length);
      }
    }
  });
  return out;
}

TEST(CudaCodegen, RowReductionsGiveTheReferenceBitsOnTheHost) {
  std::mt19937 rng(5);
  for (DType dtype : graph::kAllDTypes) {
    if (dtype == DType::boolean) continue;
    for (int64_t length : {0, 1, 37, 1000}) {
      Tensor x = random_tensor(dtype, {6, length}, rng);
      if (graph::is_float(dtype) && length > 2) {
        x.set_value(length + 2, std::numeric_limits<double>::quiet_NaN());  // row 1
        x.set_value(2 * length, -std::numeric_limits<double>::infinity());  // row 2's first
        x.set_value(3 * length + 1, dtype == DType::f64 ? 1e-310 : 1e-39);  // row 3: a subnormal
        x.set_value(4 * length, 1e4);  // row 4: a sum in bf16 steps would lose the small elements after it
      }
      for (graph::PrimId prim : {graph::PrimId::sum, graph::PrimId::reduce_max}) {
        Graph g;
        graph::Builder b(g);
        graph::NodeId in = b.input("x", {6, length}, dtype);
        b.output("y", b.op(graph::primitive(prim).name, {in}, {{"axes", std::vector<int64_t>{1}}}));
        SCOPED_TRACE(fmt::format("{} of {} rows of {}", graph::primitive(prim).name, graph::dtype_name(dtype), length));
        EXPECT_TRUE(cuda::row_reducible(g, g.outputs[0].node));
        EXPECT_EQ(compare_bits(host_rows(prim, x), run_on("reference", g, {x})[0]), "");
      }
    }
  }
}

// Every primitive and dtype of the generated kernels, each as a kernel of its own,
// compiled together per architecture.
TEST(CudaCodegen, EveryElementKernelCompilesForSm80AndSm90a) {
  std::string source;
  int kernels = 0;
  for (const graph::Primitive* prim : elementwise_primitives()) {
    for (DType dtype : graph::kAllDTypes) {
      // cast to a float, an integer and bool (the conversions convert tells apart), the
      // others to their operands' dtype
      constexpr DType kCastTo[] = {DType::f64, DType::u8, DType::boolean};
      for (DType to : prim->id == graph::PrimId::cast ? std::span<const DType>(kCastTo) : std::span(&dtype, 1)) {
        std::optional<FormulaCase> c = make_case(*prim, dtype, to);
        if (!c) continue;
        for (const cuda::Fusion& fusion : cuda::find_fusions(c->graph)) {
          source += cuda::generate_kernel(c->graph, fusion).source;
          ++kernels;
        }
      }
    }
  }
  EXPECT_NE(source.find("convert<uint8_t>(v0)"), std::string::npos);
  EXPECT_NE(source.find("v0 ? v1 : v2"), std::string::npos);
  EXPECT_NE(source.find("sx::device::cuda::gpu::Tanh, float, float"), std::string::npos);
  EXPECT_NE(source.find("sx::device::cuda::gpu::Sin, float, float"), std::string::npos);
  EXPECT_NE(source.find("sx::device::cuda::gpu::Cos, float, float"), std::string::npos);
  EXPECT_NE(source.find("sx::device::cuda::gpu::Exp, sx::graph::Bf16, float"), std::string::npos);
  EXPECT_GT(kernels, 90);
  for (const char* architecture : {"sm_80", "sm_90a"}) {
    std::vector<uint8_t> cubin = cuda::compile_cubin(source, architecture);
    EXPECT_GT(cubin.size(), 1000u) << architecture;
  }
}

TEST(CudaCodegen, NamesTheArchitectureOfAGpu) {
  EXPECT_EQ(cuda::gpu_architecture(9, 0), "sm_90a");
  EXPECT_EQ(cuda::gpu_architecture(8, 0), "sm_80");
  EXPECT_EQ(cuda::gpu_architecture(8, 9), "sm_89");
}

TEST(CudaCodegen, RefusesSourceThatDoesNotCompileWithNvrtcsLog) {
  try {
    cuda::compile_cubin("extern \"C\" __global__ void k() { undeclared(); }", "sm_80");
    FAIL() << "compiled";
  } catch (const DeviceError& e) {
    EXPECT_STREQ(e.code(), "E-DEVICE-009");
    EXPECT_NE(std::string(e.what()).find("undeclared"), std::string::npos) << e.what();
  }
}

// XDG_CACHE_HOME pointed at a fresh folder for the scope.
class CacheHome {
 public:
  CacheHome() : dir_(std::filesystem::temp_directory_path() / fmt::format("sx-kernels-{}", ::getpid())) {
    std::filesystem::remove_all(dir_);
    if (const char* old = std::getenv("XDG_CACHE_HOME")) old_ = old;
    setenv("XDG_CACHE_HOME", dir_.c_str(), 1);
  }
  ~CacheHome() {
    if (old_) setenv("XDG_CACHE_HOME", old_->c_str(), 1);
    else unsetenv("XDG_CACHE_HOME");
    std::filesystem::remove_all(dir_);
  }
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
  std::optional<std::string> old_;
};

TEST(CudaCodegen, CachesCubinsByTheirSourceArchitectureAndToolkit) {
  CacheHome home;
  EXPECT_EQ(cuda::kernel_cache_dir(), (home.dir() / "sexpgpu/kernels").string());
  const std::string source = "extern \"C\" __global__ void k(float* x) { x[threadIdx.x] += 1.0f; }\n";
  bool compiled = false;
  std::vector<uint8_t> first = cuda::cached_cubin(source, "sm_80", &compiled);
  EXPECT_TRUE(compiled);
  EXPECT_EQ(cuda::cached_cubin(source, "sm_80", &compiled), first);
  EXPECT_FALSE(compiled);
  cuda::cached_cubin(source, "sm_90a", &compiled);
  EXPECT_TRUE(compiled) << "another GPU's cubin was taken from the cache";
  cuda::cached_cubin(source + "\n", "sm_80", &compiled);
  EXPECT_TRUE(compiled);
  int files = 0;
  for ([[maybe_unused]] auto& entry : std::filesystem::directory_iterator(cuda::kernel_cache_dir())) ++files;
  EXPECT_EQ(files, 6);  // a cubin and its key for each of the three
}

}  // namespace
}  // namespace sx::device::testing
