// After its first run, a cpu plan runs into buffers it was given without
// allocating: counted by replacing operator new in this test binary (every
// allocation of the program goes through it; the plan's arena, packing
// buffers and step inputs are made at compile time or on the first run).
#include <atomic>
#include <cstdlib>
#include <new>

#include "util.h"

namespace {
std::atomic<int64_t> allocations{0};
}  // namespace

// GCC sees the replaced delete's free() and, not knowing the replaced new
// is malloc, warns of a mismatch that is not there.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

// Every plain form of new and delete is replaced, so that none pairs one of
// ours with the library's (AddressSanitizer checks the pairs).
namespace {
void* counted_malloc(size_t n) noexcept {
  allocations.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(n == 0 ? 1 : n);
}
}  // namespace

void* operator new(size_t n) {
  if (void* p = counted_malloc(n)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t n) {
  if (void* p = counted_malloc(n)) return p;
  throw std::bad_alloc();
}
void* operator new(size_t n, const std::nothrow_t&) noexcept { return counted_malloc(n); }
void* operator new[](size_t n, const std::nothrow_t&) noexcept { return counted_malloc(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace sx::device::testing {
namespace {

using graph::Builder;
using graph::NodeId;

TEST(NoAllocation, ACpuPlanRunsIntoItsOutputsWithoutAllocating) {
  // A layer's forward and its loss: matmul (f32 and bf16), add, tanh,
  // softmax's reductions, a transpose, a reshape view.
  for (DType dtype : {DType::f32, DType::bf16}) {
    for (int cores : {1, 2}) {
      Graph graph;
      Builder b(graph);
      NodeId x = b.input("x", {64, 96}, dtype);
      NodeId w = b.input("w", {96, 128}, dtype);
      NodeId bias = b.input("bias", {128}, dtype);
      NodeId h = b.tanh(b.add(b.matmul(x, w), b.broadcast_to(bias, {64, 128})));
      NodeId e = b.exp(b.sub(h, b.broadcast_to(b.reduce_max(h, {1}, true), {64, 128})));
      NodeId p = b.div(e, b.broadcast_to(b.sum(e, {1}, true), {64, 128}));
      b.output("p", b.reshape(b.transpose(p, {1, 0}), {128 * 64}));
      b.output("loss", b.sum(b.mul(h, h), {0, 1}));
      std::mt19937 rng(2);
      std::vector<Tensor> inputs;
      for (const auto& in : graph.inputs) inputs.push_back(random_tensor(dtype, graph.node(in.node).shape, rng));
      auto plan = make_device("cpu", DeviceOptions{.cpu_cores = cores})->compile(graph);
      std::vector<Tensor> outputs{Tensor(dtype, {128 * 64}), Tensor(dtype, {})};
      plan->run_into(inputs, outputs);
      plan->run_into(inputs, outputs);
      int64_t before = allocations.load();
      for (int i = 0; i < 10; ++i) plan->run_into(inputs, outputs);
      EXPECT_EQ(allocations.load() - before, 0)
          << graph::dtype_name(dtype) << " on " << cores << " cores: allocations in 10 runs";
      std::vector<Tensor> want = plan->run(inputs);
      EXPECT_TRUE(same_bits(outputs[0], want[0]) && same_bits(outputs[1], want[1]));
    }
  }
}

TEST(NoAllocation, RunIntoRefusesBuffersOfTheWrongShape) {
  Graph graph;
  Builder b(graph);
  b.output("y", b.neg(b.input("x", {2}, DType::f32)));
  std::vector<Tensor> inputs{Tensor(DType::f32, {2})};
  for (const char* device : {"cpu", "reference"}) {
    auto plan = make_device(device)->compile(graph);
    std::vector<Tensor> wrong{Tensor(DType::f32, {3})};
    EXPECT_THROW(plan->run_into(inputs, wrong), DeviceError) << device;
    std::vector<Tensor> none;
    EXPECT_THROW(plan->run_into(inputs, none), DeviceError) << device;
  }
}

}  // namespace
}  // namespace sx::device::testing
