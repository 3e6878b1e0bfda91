// The cuda device's sorted scatter_add (scatter_add.h): on the host, its slots sorted
// stably as CUB sorts them and its runs added as each GPU thread adds them give the
// reference's bits, on indices with many repeats and with indices outside the axis; the
// plan places its scratch in the arena (and leaves a scatter_add too large for the
// sort's 32-bit slots to the scanning kernel); on a GPU, a large table scattered into
// gives the reference's bits, run by run and replayed, and an index outside stops the
// run as on the cpu device.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <numeric>

#include "device/cuda/codegen.h"
#include "device/cuda/cuda_device.h"
#include "device/cuda/cuda_plan.h"
#include "device/cuda/index_math.h"
#include "device/cuda/program.h"
#include "device/cuda/scatter_add.h"
#include "formula_cases.h"
#include "graph/index_error.h"
#include "util.h"

namespace sx::device::testing {
namespace {

// Values of `dtype` over many binades, where the order of additions shows in f32's bits.
Tensor spread_values(DType dtype, const Shape& shape, std::mt19937& rng) {
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  std::uniform_int_distribution<int> exponent(-12, 12);
  Tensor t(dtype, shape);
  bool is_float = dtype == DType::f32 || dtype == DType::f64 || dtype == DType::bf16;
  for (int64_t i = 0; i < t.numel(); ++i) {
    t.set_value(i, is_float ? std::ldexp(unit(rng), exponent(rng)) : std::floor(unit(rng) * 100));
  }
  return t;
}

// scatter_add node `id` of `g` on the host as the sorted kernels compute it: the slots,
// a stable sort of them (as CUB's radix sort is), the runs; with `reversed`, each slot's
// positions backwards instead, an order the kernels must not use.
Tensor sorted_scatter(const Graph& g, graph::NodeId id, const Tensor& x, const Tensor& indices, const Tensor& updates,
                      bool reversed = false) {
  cuda::GatherGeometry geometry = cuda::gather_geometry(g, id);
  std::vector<uint32_t> slots(static_cast<size_t>(geometry.count));
  graph::visit_index_dtype(indices.dtype(), [&](auto zero) {
    using I = decltype(zero);
    for (size_t k = 0; k < slots.size(); ++k) slots[k] = cuda::scatter_slot(indices.data<I>()[k], geometry.length);
  });
  std::vector<uint32_t> positions(slots.size());
  std::iota(positions.begin(), positions.end(), 0u);
  std::stable_sort(positions.begin(), positions.end(), [&](uint32_t a, uint32_t b) {
    return reversed ? (slots[a] != slots[b] ? slots[a] < slots[b] : a > b) : slots[a] < slots[b];
  });
  std::vector<uint32_t> sorted_slots;
  for (uint32_t k : positions) sorted_slots.push_back(slots[k]);
  Tensor out = x;
  int64_t runs = x.numel() / (geometry.length * geometry.inner) * geometry.count * geometry.inner;
  graph::visit_dtype(x.dtype(), [&](auto types) {
    using S = typename decltype(types)::storage;
    using C = typename decltype(types)::compute;
    if constexpr (!std::is_same_v<C, bool>) {
      for (int64_t t = 0; t < runs; ++t) {
        cuda::scatter_add_run<S, C>(out.data<S>(), sorted_slots.data(), positions.data(), updates.data<S>(), geometry,
                                    t);
      }
    }
  });
  return out;
}

// A scatter_add of updates into x [outer, length, inner] along axis 1 at `ids`.
struct Scatter {
  Graph g;
  graph::NodeId node = 0;
  Scatter(DType dtype, DType index, int64_t outer, int64_t length, int64_t inner, int64_t count) {
    graph::Builder b(g);
    graph::NodeId x = b.input("x", {outer, length, inner}, dtype), ids = b.input("ids", {count}, index);
    graph::NodeId updates = b.input("updates", {outer, count, inner}, dtype);
    node = b.scatter_add(x, ids, updates, 1);
    b.output("y", node);
  }
};

// `count` indices among `distinct` places of an axis of `length`: many repeats.
Tensor repeated_ids(DType index, int64_t count, int64_t distinct, int64_t length, std::mt19937& rng) {
  std::uniform_int_distribution<int64_t> pick(0, distinct - 1);
  std::vector<double> ids;
  for (int64_t k = 0; k < count; ++k) ids.push_back(static_cast<double>(pick(rng) * (length / distinct)));
  return Tensor::from_doubles(index, {count}, ids);
}

TEST(CudaSortedScatter, AddsEachSlotsUpdatesInTheReferencesOrder) {
  std::mt19937 rng(11);
  for (DType dtype : {DType::f32, DType::f64, DType::bf16, DType::i32, DType::u8}) {
    for (DType index : {DType::i32, DType::i64, DType::u8, DType::u16}) {
      SCOPED_TRACE(fmt::format("{} by {} indices", graph::dtype_name(dtype), graph::dtype_name(index)));
      Scatter s(dtype, index, 3, 40, 5, 90);
      std::vector<Tensor> inputs = {spread_values(dtype, {3, 40, 5}, rng), repeated_ids(index, 90, 7, 40, rng),
                                    spread_values(dtype, {3, 90, 5}, rng)};
      Tensor expected = run_on("reference", s.g, inputs)[0];
      EXPECT_EQ(compare_bits(sorted_scatter(s.g, s.node, inputs[0], inputs[1], inputs[2]), expected), "");
      if (dtype == DType::f32) {
        // The order shows in these bits: the test tells a wrong order from the right one.
        EXPECT_NE(compare_bits(sorted_scatter(s.g, s.node, inputs[0], inputs[1], inputs[2], true), expected), "");
      }
    }
  }
}

TEST(CudaSortedScatter, AddsNothingForAnIndexOutsideItsAxis) {
  std::mt19937 rng(12);
  for (DType index : {DType::i32, DType::i64, DType::u8}) {
    SCOPED_TRACE(graph::dtype_name(index));
    Scatter s(DType::f32, index, 2, 6, 3, 8);
    bool is_signed = index != DType::u8;
    Tensor ids = Tensor::from_doubles(index, {8}, std::vector<double>{5, 6, 0, 5, is_signed ? -1.0 : 255.0, 2, 5, 200});
    std::vector<Tensor> inputs = {spread_values(DType::f32, {2, 6, 3}, rng), ids,
                                  spread_values(DType::f32, {2, 8, 3}, rng)};
    // The scanning kernel's elements, which add nothing for such an index either.
    Tensor expected(DType::f32, {2, 6, 3});
    graph::visit_index_dtype(index, [&](auto zero) {
      using I = decltype(zero);
      for (int64_t t = 0; t < expected.numel(); ++t) {
        expected.data<float>()[t] = cuda::scatter_add_element<float, float>(
            inputs[0].data<float>(), ids.data<I>(), inputs[2].data<float>(), cuda::gather_geometry(s.g, s.node), t);
      }
    });
    EXPECT_EQ(compare_bits(sorted_scatter(s.g, s.node, inputs[0], ids, inputs[2]), expected), "");
  }
  EXPECT_EQ(cuda::scatter_slot(int32_t{-1}, 6), 6u);
  EXPECT_EQ(cuda::scatter_slot(int64_t{6}, 6), 6u);
  EXPECT_EQ(cuda::scatter_slot(int64_t{0}, 6), 0u);
}

TEST(CudaSortedScatter, PlansItsScratchInTheArena) {
  Scatter s(DType::bf16, DType::i64, 1, 50257, 16, 300);
  std::vector<std::pair<int64_t, int>> asked;
  cuda::Program program = cuda::plan_program(s.g, [&](int64_t count, int key_bits) {
    asked.emplace_back(count, key_bits);
    return size_t{5000};
  });
  EXPECT_EQ(asked, (std::vector<std::pair<int64_t, int>>{{300, 16}}));  // slots up to 50257 < 2^16
  ASSERT_EQ(program.steps.size(), 1u);
  const cuda::Step& step = program.steps[0];
  EXPECT_EQ(step.kind, cuda::Step::Kind::scatter_add);
  EXPECT_TRUE(step.checks_indices);
  EXPECT_EQ(step.checked_indices, 300);
  EXPECT_EQ(step.node, s.node);
  EXPECT_EQ(step.scatter.outer, 1);
  EXPECT_EQ(step.scatter.index_dtype, DType::i64);
  EXPECT_EQ(step.scatter.sort_bytes, 5000u);
  cuda::ScatterScratch scratch = cuda::scatter_scratch(300, 5000);
  EXPECT_EQ(scratch.positions, 1280u);  // 300 slots of 4 bytes, 256-aligned
  EXPECT_EQ(scratch.sort, 4 * 1280u);
  EXPECT_EQ(scratch.bytes, 4 * 1280u + 5120u);
  // The result's bytes and the scratch's, both written at the step, apart.
  size_t out_end = step.out + 50257 * 16 * 2, scratch_end = step.scratch + scratch.bytes;
  EXPECT_TRUE(out_end <= step.scratch || scratch_end <= step.out) << step.out << " " << step.scratch;
  EXPECT_GE(program.arena.size, std::max(out_end, scratch_end));
  // Along an axis too long for 32-bit slots: the scanning kernel.
  Scatter long_axis(DType::f32, DType::i64, 1, int64_t{1} << 31, 0, 3);
  cuda::Program scanning = cuda::plan_program(long_axis.g);
  ASSERT_EQ(scanning.steps.size(), 1u);
  EXPECT_EQ(scanning.steps[0].kind, cuda::Step::Kind::fused);
  EXPECT_TRUE(scanning.steps[0].checks_indices);
  EXPECT_EQ(scanning.kernel_names.size(), 1u);
  EXPECT_TRUE(cuda::sorts_scatter(std::numeric_limits<int32_t>::max(), std::numeric_limits<int32_t>::max() - 1));
  EXPECT_FALSE(cuda::sorts_scatter(int64_t{1} << 31, 10));
  EXPECT_EQ(cuda::slot_bits(1), 1);
  EXPECT_EQ(cuda::slot_bits(65535), 16);
  EXPECT_EQ(cuda::slot_bits(65536), 17);
}

TEST(CudaSortedScatter, GivesTheReferenceBitsOnALargeTableOnTheGpu) {
  std::mt19937 rng(13);
  Scatter f32(DType::f32, DType::i32, 1, 20000, 64, 4096), bf16(DType::bf16, DType::i64, 2, 3000, 24, 2000);
  EXPECT_EQ(cuda::missing_kernels(f32.g), std::vector<std::string>{});
  if (std::string reason = gpu_unusable_reason(); !reason.empty()) GTEST_SKIP() << reason;
  for (Scatter* s : {&f32, &bf16}) {
    const graph::Node& node = s->g.node(s->node);
    const Shape& x = s->g.node(node.inputs[0]).shape;
    const Shape& updates = s->g.node(node.inputs[2]).shape;
    DType index = s->g.node(node.inputs[1]).dtype;
    SCOPED_TRACE(graph::dtype_name(node.dtype));
    // A few indices repeated hundreds of times, the others once or twice.
    Tensor ids = repeated_ids(index, updates[1], 10, x[1], rng);
    for (int64_t k = 0; k < updates[1]; k += 3) ids.set_value(k, static_cast<double>(rng() % x[1]));
    std::vector<Tensor> inputs = {spread_values(node.dtype, x, rng), ids, spread_values(node.dtype, updates, rng)};
    Tensor expected = run_on("reference", s->g, inputs)[0];
    // Run by run, then captured and replayed, with no allocation after the first run.
    std::unique_ptr<Device> device = make_device("cuda");
    std::unique_ptr<Plan> plan = device->compile(s->g);
    std::vector<Buffer> in;
    for (const Tensor& t : inputs) in.push_back(device->upload(t));
    Buffer out = device->allocate(plan->output_types()[0]);
    std::vector<const Buffer*> in_ptrs = {&in[0], &in[1], &in[2]};
    std::vector<Buffer*> out_ptrs = {&out};
    size_t allocations = 0;
    auto& memory = static_cast<CudaDevice&>(*device).device_memory();
    for (int run = 0; run < 3; ++run) {
      plan->run(in_ptrs, out_ptrs);
      EXPECT_EQ(compare_bits(device->download(out), expected), "") << run;
      if (run == 0) allocations = memory.raw_allocations();
    }
    EXPECT_EQ(memory.raw_allocations(), allocations) << "a run after the first allocated";
    EXPECT_EQ(static_cast<cuda::CudaPlan&>(*plan).replays(), 2);
  }
}

TEST(CudaSortedScatter, StopsAtAnIndexOutsideItsAxisAsTheCpuDeviceDoes) {
  Scatter s(DType::f32, DType::i32, 2, 10, 4, 6);
  std::mt19937 rng(14);
  std::vector<Tensor> inputs = {spread_values(DType::f32, {2, 10, 4}, rng),
                                Tensor::from_doubles(DType::i32, {6}, std::vector<double>{3, 3, 12, 0, -2, 9}),
                                spread_values(DType::f32, {2, 6, 4}, rng)};
  std::string expected;
  try {
    run_on("cpu", s.g, inputs);
  } catch (const graph::IndexOutOfRange& e) {
    expected = e.what();
  }
  ASSERT_EQ(expected, "scatter_add: index 12 at [2] of input `ids` is outside its axis, 0 to 9");
  if (std::string reason = gpu_unusable_reason(); !reason.empty()) GTEST_SKIP() << reason;
  try {
    run_on("cuda", s.g, inputs);
    ADD_FAILURE() << "no error";
  } catch (const graph::IndexOutOfRange& e) {
    EXPECT_EQ(e.what(), expected);
  }
}

}  // namespace
}  // namespace sx::device::testing
