// The cuda device, with a GPU and without one. Without: its element functions
// (device/cuda/element.h) give the reference kernels' bits on the host, for every
// primitive and dtype its kernels take, and the device is refused with the runtime's
// reason. With one: its kernels give the same bits on the GPU (cuda_memory_test.cc runs
// them in plans). A test for the other case skips, saying why.
#include <cuda_runtime_api.h>

#include "device/cuda/codegen.h"
#include "device/cuda/cuda_device.h"
#include "device/cuda/element.h"
#include "device/cuda/elementwise.h"
#include "device/cuda/transcendental.h"
#include "formula_cases.h"
#include "util.h"

namespace sx::device::testing {
namespace {

// The case's output as the element functions compute it on the host, one element at a
// time as each GPU thread does; nullopt when the kernels lack the primitive or dtype.
std::optional<Tensor> host_elements(graph::PrimId prim, const std::vector<Tensor>& inputs, DType out_dtype) {
  std::optional<Tensor> out;
  cuda::visit_generated_element(prim, [&](auto formula, auto shape, auto dtypes) {
    using F = decltype(formula);
    using ElementShape = decltype(shape);
    using DTypes = decltype(dtypes);
    graph::visit_dtype(inputs[0].dtype(), [&](auto types) {
      using S = typename decltype(types)::storage;
      using C = typename decltype(types)::compute;
      if constexpr (DTypes::template takes<C>) {
        Tensor t(out_dtype, inputs[0].shape());
        const S* a = inputs[0].data<S>();
        for (int64_t i = 0; i < t.numel(); ++i) {
          if constexpr (std::is_same_v<ElementShape, cuda::Unary>) {
            t.data<S>()[i] = cuda::unary_element<F, S, C>(a[i]);
          } else if constexpr (std::is_same_v<ElementShape, cuda::Binary>) {
            t.data<S>()[i] = cuda::binary_element<F, S, C, S>(a[i], inputs[1].data<S>()[i]);
          } else {
            t.data<bool>()[i] = cuda::binary_element<F, S, C, bool>(a[i], inputs[1].data<S>()[i]);
          }
        }
        out = std::move(t);
      }
    });
  });
  return out;
}

// Every case of a primitive the kernels compute, in each dtype it takes.
struct KernelCase {
  graph::PrimId prim;
  FormulaCase formula;
};
std::vector<KernelCase> kernel_cases() {
  std::vector<KernelCase> cases;
  for (const graph::Primitive* prim : elementwise_primitives()) {
    for (DType dtype : graph::kAllDTypes) {
      if (!cuda::has_elementwise_kernel(prim->id, dtype)) continue;
      std::optional<FormulaCase> c = make_case(*prim, dtype, dtype);
      if (c) cases.push_back({prim->id, std::move(*c)});
      else
        ADD_FAILURE() << "the kernels take " << prim->name << " of " << graph::dtype_name(dtype)
                      << ", which the primitive refuses";
    }
  }
  return cases;
}

// Each formula of the kernels, those shared with the reference (element.h's table:
// every dtype the primitive takes) and the generated kernels' transcendental functions
// (those dtypes they take), on the host. On a GPU the f32 transcendental functions give
// these bits too; the f64 ones and pow are libdevice's there (transcendental.h).
TEST(CudaElements, GiveTheReferenceBitsOnTheHost) {
  int primitives = 0, generated_only = 0;
  for (const graph::Primitive* prim : elementwise_primitives()) {
    if (!cuda::visit_generated_element(prim->id, [](auto, auto, auto) {})) continue;
    bool shared = cuda::visit_element(prim->id, [](auto, auto, auto) {});
    ++(shared ? primitives : generated_only);
    for (DType dtype : graph::kAllDTypes) {
      std::optional<FormulaCase> c = make_case(*prim, dtype, dtype);
      if (!c || (!shared && !cuda::has_generated_element(prim->id, dtype))) continue;
      SCOPED_TRACE(c->label);
      Tensor expected = run_on("reference", c->graph, c->inputs)[0];
      std::optional<Tensor> actual = host_elements(prim->id, c->inputs, expected.dtype());
      ASSERT_TRUE(actual) << "the primitive takes this dtype, the kernels do not";
      EXPECT_TRUE(cuda::has_elementwise_kernel(prim->id, dtype) || cuda::has_generated_element(prim->id, dtype));
      EXPECT_EQ(compare_bits(*actual, expected), "");
    }
  }
  EXPECT_GT(primitives, 0);
  EXPECT_EQ(generated_only, 8);  // exp, log, tanh, erf, logistic, sin, cos, pow
}

// The generated kernels' bf16 transcendental functions (computed in f32, rounded to
// nearest even) on every bf16 value: subnormals, infinities and NaNs among them.
TEST(CudaElements, Bf16TranscendentalFunctionsGiveTheReferenceBitsForEveryValue) {
  Tensor every(DType::bf16, {65536});
  for (int64_t i = 0; i < every.numel(); ++i) every.data<graph::Bf16>()[i].bits = static_cast<uint16_t>(i);
  for (graph::PrimId prim : {graph::PrimId::exp, graph::PrimId::log, graph::PrimId::tanh, graph::PrimId::erf,
                             graph::PrimId::logistic, graph::PrimId::sin, graph::PrimId::cos}) {
    SCOPED_TRACE(graph::primitive(prim).name);
    Graph g;
    graph::Builder b(g);
    b.output("y", b.op(graph::primitive(prim).name, {b.input("x", {65536}, DType::bf16)}));
    EXPECT_TRUE(cuda::fusible(g, g.outputs[0].node));
    std::optional<Tensor> actual = host_elements(prim, {every}, DType::bf16);
    ASSERT_TRUE(actual);
    EXPECT_EQ(compare_bits(*actual, run_on("reference", g, {every})[0]), "");
  }
}

// Device memory holding a tensor's bytes, freed at the end of the scope.
class GpuBytes {
 public:
  explicit GpuBytes(size_t size) : size_(size) { EXPECT_EQ(cudaMalloc(&data_, size_ ? size_ : 1), cudaSuccess); }
  explicit GpuBytes(const Tensor& t) : GpuBytes(t.bytes().size()) {
    EXPECT_EQ(cudaMemcpy(data_, t.bytes().data(), size_, cudaMemcpyHostToDevice), cudaSuccess);
  }
  GpuBytes(const GpuBytes&) = delete;
  GpuBytes& operator=(const GpuBytes&) = delete;
  ~GpuBytes() { cudaFree(data_); }
  void* data() const { return data_; }
  void copy_to(Tensor& t) const {
    EXPECT_EQ(cudaMemcpy(t.bytes().data(), data_, size_, cudaMemcpyDeviceToHost), cudaSuccess);
  }

 private:
  size_t size_;
  void* data_ = nullptr;
};

TEST(CudaKernels, GiveTheReferenceBitsOnTheGpu) {
  if (std::string reason = gpu_unusable_reason(); !reason.empty()) GTEST_SKIP() << reason;
  std::vector<KernelCase> cases = kernel_cases();
  ASSERT_FALSE(cases.empty());
  for (const KernelCase& k : cases) {
    SCOPED_TRACE(k.formula.label);
    const std::vector<Tensor>& inputs = k.formula.inputs;
    Tensor expected = run_on("reference", k.formula.graph, inputs)[0];
    GpuBytes a(inputs[0]);
    std::optional<GpuBytes> b;
    if (inputs.size() > 1) b.emplace(inputs[1]);
    GpuBytes out(expected.bytes().size());
    ASSERT_EQ(cuda::launch_elementwise(k.prim, inputs[0].dtype(), a.data(), b ? b->data() : nullptr, out.data(),
                                       expected.numel(), cudaStream_t{}),
              cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    Tensor actual(expected.dtype(), expected.shape());
    out.copy_to(actual);
    EXPECT_EQ(compare_bits(actual, expected), "");
  }
}

// The casts to and from bf16, which the generated kernels leave to nvcc's.
TEST(CudaKernels, CastToAndFromBf16GiveTheReferenceBitsOnTheGpu) {
  for (DType other : graph::kAllDTypes) {
    EXPECT_TRUE(cuda::has_cast_kernel(DType::bf16, other));
    EXPECT_TRUE(cuda::has_cast_kernel(other, DType::bf16));
    if (other != DType::bf16) {
      EXPECT_FALSE(cuda::has_cast_kernel(other, DType::f32));
    }
  }
  if (std::string reason = gpu_unusable_reason(); !reason.empty()) GTEST_SKIP() << reason;
  for (DType other : graph::kAllDTypes) {
    for (auto [from, to] : {std::pair{DType::bf16, other}, std::pair{other, DType::bf16}}) {
      std::optional<FormulaCase> c = make_case(graph::primitive(graph::PrimId::cast), from, to);
      ASSERT_TRUE(c);
      SCOPED_TRACE(c->label);
      Tensor expected = run_on("reference", c->graph, c->inputs)[0];
      GpuBytes x(c->inputs[0]);
      GpuBytes out(expected.bytes().size());
      ASSERT_EQ(cuda::launch_cast(from, to, x.data(), out.data(), expected.numel(), cudaStream_t{}), cudaSuccess);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      Tensor actual(expected.dtype(), expected.shape());
      out.copy_to(actual);
      EXPECT_EQ(compare_bits(actual, expected), "");
    }
  }
}

TEST(CudaDevice, IsRefusedWithTheRuntimesReasonWhereNoGpuAnswers) {
  std::string reason = gpu_unusable_reason();
  if (reason.empty()) GTEST_SKIP() << "a GPU answered";
  try {
    make_device("cuda");
    FAIL() << "made without a usable GPU";
  } catch (const DeviceError& e) {
    EXPECT_STREQ(e.code(), "E-DEVICE-006");
    EXPECT_EQ(e.what(), "the cuda device cannot run here: " + reason + "; use --device cpu");
  }
}

}  // namespace
}  // namespace sx::device::testing
