// The cuda device's memory and programs. Without a GPU: the caching allocator over a fake
// raw memory, and the program a graph compiles to (its steps, its arena, its refusal of a
// primitive without a kernel). With one: buffers copied in and out through events, plans
// that give the reference's bits run after run, captured as a CUDA graph from the second
// run with the same buffers, allocating nothing after the first. A test that needs a GPU
// skips, saying why.
#include <algorithm>

#include "device/cuda/caching_allocator.h"
#include "device/cuda/cuda_device.h"
#include "device/cuda/cuda_plan.h"
#include "device/cuda/nvrtc.h"
#include "device/cuda/program.h"
#include "formula_cases.h"
#include "graph/index_error.h"
#include "util.h"

namespace sx::device::testing {
namespace {

using cuda::CachingAllocator;
using cuda::Place;

// Host memory standing for the GPU's, with a limit on what it gives.
class FakeRaw : public cuda::RawMemory {
 public:
  explicit FakeRaw(size_t limit) : limit_(limit) {}
  void* allocate(size_t bytes) override {
    if (held + bytes > limit_) return nullptr;
    held += bytes;
    ++calls;
    void* block = ::operator new(bytes);
    sizes_[block] = bytes;
    return block;
  }
  void release(void* block) override {
    held -= sizes_.at(block);
    sizes_.erase(block);
    ::operator delete(block);
  }
  size_t held = 0;
  int calls = 0;

 private:
  size_t limit_;
  std::map<void*, size_t> sizes_;
};

struct Allocator {
  explicit Allocator(size_t limit = size_t{1} << 30) : raw(new FakeRaw(limit)), cache(std::unique_ptr<FakeRaw>(raw)) {}
  FakeRaw* raw;
  CachingAllocator cache;
};

TEST(CudaCachingAllocator, ServesARepeatedRequestFromItsCache) {
  Allocator a;
  void* first = a.cache.allocate(1000);
  EXPECT_EQ(a.raw->held, 1024u);  // rounded up to granules
  a.cache.free(first);
  EXPECT_EQ(a.cache.bytes_cached(), 1024u);
  EXPECT_EQ(a.cache.allocate(1000), first);
  void* second = a.cache.allocate(2000);  // the cache is empty again
  EXPECT_NE(second, first);
  a.cache.free(second);
  a.cache.free(first);
  EXPECT_EQ(a.cache.allocate(900), first);  // the best fit of the two
  EXPECT_EQ(a.raw->calls, 2);
  EXPECT_EQ(a.cache.raw_allocations(), 2u);
}

TEST(CudaCachingAllocator, ReusesABlockOnlyForRequestsOfAtLeastHalfItsSize) {
  Allocator a;
  void* big = a.cache.allocate(8192);
  a.cache.free(big);
  void* small = a.cache.allocate(512);
  EXPECT_NE(small, big);
  EXPECT_EQ(a.cache.allocate(4096), big);
  EXPECT_EQ(a.cache.bytes_in_use(), 8192u + 512u);
  EXPECT_EQ(a.cache.raw_allocations(), 2u);
}

TEST(CudaCachingAllocator, GivesItsCacheBackWhenTheRawMemoryRunsOut) {
  Allocator a(4096);
  a.cache.free(a.cache.allocate(3072));
  void* block = a.cache.allocate(4096);  // too big for the cached 3072, too big beside it
  ASSERT_NE(block, nullptr);
  EXPECT_EQ(a.cache.bytes_cached(), 0u);
  EXPECT_EQ(a.cache.allocate(512), nullptr);
  a.cache.free(block);
  a.cache.release_cached();
  EXPECT_EQ(a.raw->held, 0u);
}

// A failed runtime call is E-DEVICE-008 with the runtime's name and words for the status
// (which the runtime gives without a GPU).
TEST(CudaErrors, AFailedCallIsTheGpuFailingWithTheRuntimesReason) {
  EXPECT_NO_THROW(cuda::check(cudaSuccess, "copying"));
  try {
    cuda::check(cudaErrorIllegalAddress, "running step 3");
    FAIL() << "no error";
  } catch (const DeviceError& e) {
    EXPECT_STREQ(e.code(), "E-DEVICE-008");
    EXPECT_NE(std::string(e.what()).find("the GPU failed running step 3"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cudaErrorIllegalAddress"), std::string::npos) << e.what();
  }
}

// Every kind of step: fused chains, row reductions, a bf16 kernel of nvcc's, and an
// output that is an input.
Graph steps_graph() {
  Graph g;
  graph::Builder b(g);
  graph::NodeId x = b.input("x", {4, 250}, DType::f32);
  graph::NodeId y = b.input("y", {4, 250}, DType::f32);
  graph::NodeId xb = b.input("xb", {4, 250}, DType::bf16);
  graph::NodeId a = b.neg(b.add(x, y));
  graph::NodeId total = b.sum(a, {1});
  graph::NodeId top = b.op("reduce_max", {b.mul(a, a)}, {{"axes", std::vector<int64_t>{1}}});
  b.output("c", b.lt(total, top));
  b.output("b", b.neg(xb));
  b.output("y", y);
  return g;
}

TEST(CudaProgram, PlansFusedChainsRowReductionsAndAnArena) {
  Graph g = steps_graph();
  cuda::Program program = cuda::plan_program(g);
  using Kind = cuda::Step::Kind;
  ASSERT_EQ(program.steps.size(), 6u);
  std::vector<Kind> kinds;
  for (const cuda::Step& step : program.steps) kinds.push_back(step.kind);
  EXPECT_EQ(kinds, (std::vector<Kind>{Kind::fused, Kind::row, Kind::fused, Kind::row, Kind::fused, Kind::elementwise}));
  const std::vector<cuda::Step>& steps = program.steps;
  EXPECT_EQ(steps[0].operands, (std::vector<Place>{{Place::Kind::input, 0}, {Place::Kind::input, 1}}));
  EXPECT_EQ(steps[0].n, 1000);
  EXPECT_EQ(steps[1].operands, (std::vector<Place>{{Place::Kind::arena, steps[0].out}}));
  EXPECT_EQ(steps[1].n, 4);
  EXPECT_EQ(steps[1].length, 250);
  EXPECT_EQ(steps[4].operands,
            (std::vector<Place>{{Place::Kind::arena, steps[1].out}, {Place::Kind::arena, steps[3].out}}));
  EXPECT_EQ(steps[5].prim, graph::PrimId::neg);
  EXPECT_EQ(steps[5].dtype, DType::bf16);
  EXPECT_EQ(steps[5].operands, (std::vector<Place>{{Place::Kind::input, 2}}));
  EXPECT_EQ(program.kernel_names.size(), 5u);
  // a (4000 bytes) is alive while mul(a, a) is written beside it; the row sums of 16
  // bytes fit in 256-byte places.
  EXPECT_NE(steps[2].out, steps[0].out);
  EXPECT_GE(program.arena.size, program.arena.live_peak);
  EXPECT_LE(program.arena.size, 4096u * 3 + 256u * 3);
  ASSERT_EQ(program.stages.size(), 1u);
  EXPECT_EQ(program.stages[0].from, (Place{Place::Kind::input, 1}));
  EXPECT_EQ(program.stages[0].bytes, 4000u);
  ASSERT_EQ(program.outputs.size(), 3u);
  EXPECT_EQ(program.outputs[0], steps[4].out);
  EXPECT_EQ(program.outputs[1], steps[5].out);
  EXPECT_EQ(program.outputs[2], program.stages[0].to);
  // Its generated kernels are one program for NVRTC.
  EXPECT_GT(cuda::compile_cubin(program.source, "sm_90a").size(), 1000u);
}

TEST(CudaProgram, UploadsConstantsOnce) {
  Graph g;
  graph::Builder b(g);
  std::mt19937 rng(1);
  graph::NodeId w = b.constant(random_tensor(DType::f32, {8}, rng));
  b.output("y", b.mul(b.input("x", {8}, DType::f32), w));
  cuda::Program program = cuda::plan_program(g);
  ASSERT_EQ(program.constants, std::vector<graph::NodeId>{w});
  EXPECT_EQ(program.steps[0].operands[1], (Place{Place::Kind::constant, 0}));
}

TEST(CudaProgram, CastsToAndFromBf16ByNvccsKernels) {
  Graph g;
  graph::Builder b(g);
  graph::NodeId x = b.input("x", {8}, DType::f32);
  b.output("y", b.cast(b.mul(b.cast(x, DType::bf16), b.cast(x, DType::bf16)), DType::f32));
  EXPECT_TRUE(cuda::missing_kernels(g).empty());
  std::vector<std::pair<DType, DType>> casts;
  for (const cuda::Step& step : cuda::plan_program(g).steps) {
    if (step.kind == cuda::Step::Kind::elementwise && step.prim == graph::PrimId::cast) {
      casts.emplace_back(step.dtype, step.cast_to);
    }
  }
  using Cast = std::pair<DType, DType>;
  EXPECT_EQ(casts,
            (std::vector<Cast>{{DType::f32, DType::bf16}, {DType::f32, DType::bf16}, {DType::bf16, DType::f32}}));
}

// bf16 reductions over the last axis and over another, transcendental functions (two
// fused, beside nvcc's bf16 abs) and a where of bf16.
Graph bf16_graph() {
  Graph g;
  graph::Builder b(g);
  graph::NodeId x = b.input("x", {6, 40}, DType::bf16);
  graph::NodeId e = b.exp(b.tanh(x));
  b.output("rows", b.sum(e, {1}));
  b.output("columns", b.sum(x, {0}));
  b.output("top", b.op("reduce_max", {x}, {{"axes", std::vector<int64_t>{1}}}));
  b.output("least", b.op("argmin", {x}, {{"axes", std::vector<int64_t>{0}}}));
  b.output("chosen", b.where(b.lt(x, e), b.log(b.abs(x)), e));
  return g;
}

// bf16 values of every kind: ordinary ones, ties, subnormals, infinities, NaN, and a
// large one that a sum in bf16 steps would swallow the others beside.
Tensor bf16_values(std::mt19937& rng) {
  Tensor x = random_tensor(DType::bf16, {6, 40}, rng);
  const double specials[] = {1e-39,
                             -1e-39,
                             std::numeric_limits<double>::infinity(),
                             -std::numeric_limits<double>::infinity(),
                             std::numeric_limits<double>::quiet_NaN(),
                             1e4};
  for (size_t k = 0; k < std::size(specials); ++k) x.set_value(static_cast<int64_t>(41 * k + 3), specials[k]);
  x.set_value(100, x.value(101));  // a tie
  return x;
}

TEST(CudaProgram, RunsBf16ReductionsAndTranscendentalFunctionsByGeneratedKernels) {
  Graph g = bf16_graph();
  EXPECT_EQ(cuda::missing_kernels(g), std::vector<std::string>{});
  cuda::Program program = cuda::plan_program(g);
  int generated = 0, nvcc = 0;
  for (const cuda::Step& step : program.steps) {
    (step.kind == cuda::Step::Kind::elementwise ? nvcc : generated) += 1;
  }
  EXPECT_EQ(nvcc, 2);       // abs and lt
  EXPECT_EQ(generated, 6);  // exp(tanh), two sums, reduce_max, argmin, log and where
  EXPECT_NE(program.source.find("row_sum<sx::graph::Bf16, float>"), std::string::npos) << program.source;
  EXPECT_GT(cuda::compile_cubin(program.source, "sm_80").size(), 1000u);
}

// The primitives, composites aside, that the cuda device has no kernel for in any dtype.
std::vector<std::string> primitives_without_a_kernel() {
  std::vector<std::string> names;
  for (const graph::Primitive* p : graph::all_primitives()) {
    if (!p->composite() && !cuda::has_kernel(p->id)) names.emplace_back(p->name);
  }
  return names;
}

TEST(CudaProgram, HasAKernelForEveryPrimitiveButTheCompositesAndStopGradient) {
  EXPECT_EQ(primitives_without_a_kernel(), std::vector<std::string>{"stop_gradient"});
}

TEST(CudaProgram, RefusesAGraphNamingEveryPrimitiveWithoutAKernel) {
  Graph g;
  graph::Builder b(g);
  graph::NodeId x = b.input("x", {4, 4}, DType::bf16);
  b.output("y", b.stop_gradient(b.sum(b.matmul(x, x), {0})));
  // Of more axes than a movement kernel walks.
  graph::NodeId many = b.input("t", {1, 1, 1, 1, 1, 1, 1, 1, 2}, DType::bf16);
  b.output("z", b.transpose(many, {8, 7, 6, 5, 4, 3, 2, 1, 0}));
  b.output("e", b.exp(b.input("h", {4}, DType::bf16)));
  EXPECT_EQ(cuda::missing_kernels(g), (std::vector<std::string>{"stop_gradient (bf16)", "transpose (bf16)"}));
  try {
    cuda::plan_program(g);
    FAIL() << "planned";
  } catch (const DeviceError& e) {
    EXPECT_STREQ(e.code(), "E-DEVICE-007");
    EXPECT_EQ(std::string(e.what()),
              "the cuda device has no kernel for stop_gradient (bf16), transpose (bf16): the graph runs on cpu and "
              "reference; use --device cpu");
  }
  EXPECT_TRUE(cuda::has_kernel(graph::PrimId::add));
  EXPECT_TRUE(cuda::has_kernel(graph::PrimId::matmul));
  EXPECT_TRUE(cuda::has_kernel(graph::PrimId::attention));  // in the forms its kernel takes
}

// The cuda device, or a skip saying why there is none.
#define MAKE_CUDA_DEVICE(device)                                                           \
  if (std::string reason = gpu_unusable_reason(); !reason.empty()) GTEST_SKIP() << reason; \
  std::unique_ptr<Device> device = make_device("cuda")

TEST(CudaDeviceMemory, CopiesInAndOutThroughEvents) {
  MAKE_CUDA_DEVICE(device);
  std::mt19937 rng(2);
  Tensor value = random_tensor(DType::bf16, {3, 1000}, rng);
  Buffer buffer = device->allocate({value.shape(), value.dtype()});
  Event in = device->upload_into(buffer, value.bytes());
  Tensor back(value.dtype(), value.shape());
  Event out = device->download_into(buffer, back.bytes());
  out.wait();
  EXPECT_TRUE(in.done());
  EXPECT_TRUE(same_bits(back, value));
  EXPECT_THROW(device->upload_into(buffer, std::span<const uint8_t>(value.bytes().data(), 3)), DeviceError);
  Buffer host = make_device("cpu")->upload(value);
  EXPECT_THROW(device->download(host), DeviceError);
}

TEST(CudaPlanRuns, GiveTheReferenceBitsAndReplayACapturedGraph) {
  MAKE_CUDA_DEVICE(device);
  auto& cuda_device = static_cast<CudaDevice&>(*device);
  Graph g = steps_graph();
  std::mt19937 rng(3);
  std::vector<Tensor> inputs = {random_tensor(DType::f32, {4, 250}, rng), random_tensor(DType::f32, {4, 250}, rng),
                                random_tensor(DType::bf16, {4, 250}, rng)};
  std::vector<Tensor> expected = run_on("reference", g, inputs);
  std::unique_ptr<Plan> plan = device->compile(g);
  std::vector<Buffer> in;
  for (const Tensor& t : inputs) in.push_back(device->upload(t));
  std::vector<Buffer> out;
  for (const graph::ValueType& type : plan->output_types()) out.push_back(device->allocate(type));
  std::vector<const Buffer*> in_ptrs = {&in[0], &in[1], &in[2]};
  std::vector<Buffer*> out_ptrs = {&out[0], &out[1], &out[2]};
  size_t allocations = 0;
  for (int run = 0; run < 4; ++run) {
    plan->run(in_ptrs, out_ptrs);
    for (size_t k = 0; k < out.size(); ++k) EXPECT_EQ(compare_bits(device->download(out[k]), expected[k]), "") << run;
    if (run == 0) allocations = cuda_device.device_memory().raw_allocations();
  }
  EXPECT_EQ(cuda_device.device_memory().raw_allocations(), allocations) << "a run after the first allocated";
  EXPECT_EQ(static_cast<cuda::CudaPlan&>(*plan).replays(), 3);
}

TEST(CudaPlanRuns, GiveTheReferenceBitsOfBf16ReductionsAndTranscendentalFunctions) {
  MAKE_CUDA_DEVICE(device);
  Graph g = bf16_graph();
  std::mt19937 rng(8);
  std::vector<Tensor> inputs = {bf16_values(rng)};
  std::vector<Tensor> expected = run_on("reference", g, inputs);
  std::vector<Tensor> actual = run_on("cuda", g, inputs);
  for (size_t k = 0; k < expected.size(); ++k) {
    EXPECT_EQ(compare_bits(actual[k], expected[k]), "") << g.outputs[k].name;
  }
}

TEST(CudaPlanRuns, WriteAnOutputOverAnInput) {
  MAKE_CUDA_DEVICE(device);
  Graph g;
  graph::Builder b(g);
  graph::NodeId p = b.input("p", {64}, DType::f32);
  graph::NodeId q = b.input("q", {64}, DType::f32);
  b.output("p", b.sub(p, q));
  b.output("q", p);
  std::mt19937 rng(4);
  std::vector<Tensor> inputs = {random_tensor(DType::f32, {64}, rng), random_tensor(DType::f32, {64}, rng)};
  std::vector<Tensor> expected = run_on("reference", g, inputs);
  std::unique_ptr<Plan> plan = device->compile(g);
  std::vector<Buffer> state;
  for (const Tensor& t : inputs) state.push_back(device->upload(t));
  std::vector<const Buffer*> in = {&state[0], &state[1]};
  std::vector<Buffer*> out = {&state[0], &state[1]};
  plan->run(in, out);
  EXPECT_EQ(compare_bits(device->download(state[0]), expected[0]), "");
  EXPECT_EQ(compare_bits(device->download(state[1]), expected[1]), "");
}

TEST(CudaPlanRuns, StopAtAnIndexOutsideItsAxisWithTheCpuDevicesError) {
  MAKE_CUDA_DEVICE(device);
  Graph g;
  graph::Builder b(g);
  graph::NodeId x = b.input("x", {5, 3}, DType::f32), ids = b.input("ids", {2, 2}, DType::i32);
  b.output("y", b.gather(x, ids, 0));
  std::mt19937 rng(6);
  Tensor values = random_tensor(DType::f32, {5, 3}, rng);
  Tensor good = Tensor::from_doubles(DType::i32, {2, 2}, std::vector<double>{4, 0, 1, 2});
  Tensor bad = Tensor::from_doubles(DType::i32, {2, 2}, std::vector<double>{4, 7, 1, -1});
  std::string expected;
  try {
    run_on("cpu", g, {values, bad});
  } catch (const graph::IndexOutOfRange& e) {
    expected = e.what();
  }
  ASSERT_EQ(expected, "gather: index 7 at [0, 1] of input `ids` is outside its axis, 0 to 4");
  std::unique_ptr<Plan> plan = device->compile(g);
  Buffer in_x = device->upload(values), in_ids = device->upload(bad);
  Buffer out = device->allocate(plan->output_types()[0]);
  std::vector<const Buffer*> in = {&in_x, &in_ids};
  std::vector<Buffer*> outs = {&out};
  // Run by run, then captured and replayed: a bad run's error, a good run's result after it.
  for (int run = 0; run < 4; ++run) {
    SCOPED_TRACE(run);
    device->upload_into(in_ids, run % 2 == 0 ? bad.bytes() : good.bytes()).wait();
    plan->run(in, outs);
    if (run % 2 == 0) {
      try {
        device->download(out);
        ADD_FAILURE() << "no error";
      } catch (const graph::IndexOutOfRange& e) {
        EXPECT_EQ(e.what(), expected);
      }
    } else {
      EXPECT_EQ(compare_bits(device->download(out), run_on("cpu", g, {values, good})[0]), "");
    }
  }
  // Raised by synchronize too, once.
  device->upload_into(in_ids, bad.bytes()).wait();
  plan->run(in, outs);
  EXPECT_THROW(device->synchronize(), graph::IndexOutOfRange);
  EXPECT_NO_THROW(device->synchronize());
}

TEST(CudaProgram, PlansBatchedProducts) {
  Graph g;
  graph::Builder b(g);
  b.output("c", b.matmul(b.input("a", {3, 5, 768}, DType::bf16), b.input("b", {3, 768, 64}, DType::bf16)));
  cuda::Program program = cuda::plan_program(g);
  ASSERT_EQ(program.steps.size(), 1u);
  const cuda::Step& step = program.steps[0];
  EXPECT_EQ(step.kind, cuda::Step::Kind::product);
  EXPECT_EQ(step.batch, 3);
  EXPECT_EQ(step.n, 5);
  EXPECT_EQ(step.length, 768);
  EXPECT_EQ(step.columns, 64);
  EXPECT_EQ(step.dtype, DType::bf16);
}

// A row of a product has the same bits alone, among 8 and among 64 rows: the pinned
// algorithm is rebuilt for each M; and it is the reference's product within f32's
// rounding (TF32 is off).
TEST(CudaPlanRuns, ComputeARowOfAProductTheSameWhateverTheRowsBesideIt) {
  MAKE_CUDA_DEVICE(device);
  std::mt19937 rng(6);
  for (DType dtype : {DType::f32, DType::bf16}) {
    SCOPED_TRACE(graph::dtype_name(dtype));
    Tensor weights = random_tensor(dtype, {768, 2304}, rng);
    Tensor rows = random_tensor(dtype, {64, 768}, rng);
    std::optional<Tensor> first_row;
    for (int64_t m : {1, 8, 64}) {
      Graph g;
      graph::Builder b(g);
      b.output("c", b.matmul(b.input("a", {m, 768}, dtype), b.input("w", {768, 2304}, dtype)));
      Tensor a(dtype, {m, 768}, rows.bytes().first(static_cast<size_t>(m * 768) * graph::dtype_size(dtype)));
      Tensor c = device->compile(g)->run_host(std::vector<Tensor>{a, weights})[0];
      Tensor row(dtype, {1, 2304}, c.bytes().first(2304 * graph::dtype_size(dtype)));
      if (!first_row) first_row = row;
      EXPECT_TRUE(same_bits(row, *first_row)) << "M " << m;
      if (m == 8 && dtype == DType::f32) {
        Tensor expected = run_on("reference", g, {a, weights})[0];
        for (int64_t i = 0; i < c.numel(); ++i) {
          ASSERT_NEAR(c.data<float>()[i], expected.data<float>()[i], 1e-4 * (1 + std::fabs(expected.data<float>()[i])));
        }
      }
    }
  }
}

TEST(CudaPlanRuns, RefuseAGraphWithAPrimitiveWithoutAKernel) {
  MAKE_CUDA_DEVICE(device);
  Graph g;
  graph::Builder b(g);
  b.output("y", b.stop_gradient(b.input("x", {2}, DType::bf16)));
  try {
    device->compile(g);
    FAIL() << "compiled";
  } catch (const DeviceError& e) {
    EXPECT_STREQ(e.code(), "E-DEVICE-007");
  }
  EXPECT_EQ(device->fallback_primitives(), primitives_without_a_kernel());
}

}  // namespace
}  // namespace sx::device::testing
