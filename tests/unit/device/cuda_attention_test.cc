// The cuda device's attention kernel without a GPU: attention_math.h's functions, a query
// row at a time in the kernel's order of tiles, agree with the reference's decomposition
// up to rounding (attention_bound), masked, causal, fully masked rows and edge values
// included; the kernel's blocks, run on the host with std::threads, give those bits; a
// row's bits do not depend on the rows computed with it; which forms have the kernel; and
// NVRTC compiles it. On a GPU, the plan against the reference and the row
// alone, in 8 and in 64; skipped, saying why, where there is none.
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <bit>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <thread>

#include "attention_cases.h"
#include "cuda_attention_bound.h"
#include "device/cuda/attention_math.h"
#include "device/cuda/codegen.h"
#include "device/cuda/cuda_device.h"
#include "device/cuda/nvrtc.h"
#include "device/cuda/program.h"
#include "util.h"

namespace sx::device::testing {
namespace {

using graph::NodeId;

constexpr int64_t kTile = cuda::kAttentionKeyTile;

// The attention of `graph` on the host: attention_row for each query row, with the form
// and mask layout its kernel holds.
Tensor attention_on_host(const Graph& graph, const std::vector<Tensor>& inputs) {
  const graph::Node& node = attention_node(graph);
  const cuda::AttentionForm form = cuda::attention_form(graph, node);
  const cuda::AttentionMask mask = cuda::attention_mask(graph, node);
  const std::vector<float> q = floats_of(inputs[0]), k = floats_of(inputs[1]), v = floats_of(inputs[2]);
  const bool* mask_data = inputs.size() == 4 ? inputs[3].data<bool>() : nullptr;
  Tensor out(node.dtype, node.shape);
  graph::visit_dtype(node.dtype, [&](auto types) {
    using S = typename decltype(types)::storage;
    if constexpr (std::is_same_v<S, float> || std::is_same_v<S, graph::Bf16>) {
      for (int64_t e = 0; e < form.entries; ++e) {
        for (int64_t i = 0; i < form.queries; ++i) {
          const bool* mask_row =
              mask_data ? mask_data + cuda::mask_entry_offset(mask, e) + i * mask.query_stride : nullptr;
          cuda::attention_row<S>(form, mask, q.data() + (e * form.queries + i) * form.depth,
                                 k.data() + e * form.keys * form.depth, v.data() + e * form.keys * form.width, mask_row,
                                 i, out.data<S>() + (e * form.queries + i) * form.width);
        }
      }
    }
  });
  return out;
}

// A block's barrier on the host, and the value its ORing barrier collects.
struct HostBarrier {
  explicit HostBarrier(int threads) : barrier(threads) {}
  std::barrier<> barrier;
  std::atomic<int> any{0};
};

// A thread of a kernel's block on the host, for attention_blocks.
struct HostBlock {
  int64_t thread, threads, index, count;
  HostBarrier* shared;
  void sync() const { shared->barrier.arrive_and_wait(); }
  int sync_or(int value) const {
    sync();  // the last ORing barrier's reset is done
    if (value != 0) shared->any.store(1);
    sync();
    const int any = shared->any.load();
    sync();
    if (thread == 0) shared->any.store(0);
    return any;
  }
};

struct HostSizes {
  int64_t rows, depth, width;
};

// The kernel's blocks on the host: `blocks` blocks (one after another) of `threads`
// std::threads each, `rows` query rows a block.
Tensor blocks_on_host(const Graph& graph, const std::vector<Tensor>& inputs, int64_t rows, int threads, int blocks) {
  const graph::Node& node = attention_node(graph);
  const cuda::AttentionForm form = cuda::attention_form(graph, node);
  const cuda::AttentionMask mask = cuda::attention_mask(graph, node);
  Tensor out(node.dtype, node.shape);
  graph::visit_dtype(node.dtype, [&](auto types) {
    using S = typename decltype(types)::storage;
    if constexpr (std::is_same_v<S, float> || std::is_same_v<S, graph::Bf16>) {
      for (int b = 0; b < blocks; ++b) {
        const auto floats = [](int64_t n) { return std::vector<float>(static_cast<size_t>(n)); };
        std::vector<float> queries = floats(rows * form.depth);
        std::vector<float> keys_then_values = floats(kTile * std::max(form.depth + 1, form.width));
        std::vector<float> weights = floats(rows * kTile);
        std::vector<float> sums = floats(rows * form.width), largest = floats(rows), total = floats(rows);
        std::vector<float> tile_largest = floats(rows), factors = floats(rows);
        std::unique_ptr<bool[]> skips(new bool[static_cast<size_t>(rows)]);
        const cuda::AttentionTiles tiles = {queries.data(),      keys_then_values.data(), weights.data(),
                                            sums.data(),         largest.data(),          total.data(),
                                            tile_largest.data(), factors.data(),          skips.get()};
        HostBarrier barrier(threads);
        std::vector<std::thread> pool;
        for (int t = 0; t < threads; ++t) {
          pool.emplace_back([&, t] {
            HostBlock block{t, threads, b, blocks, &barrier};
            cuda::attention_blocks<S>(block, HostSizes{rows, form.depth, form.width}, tiles, inputs[0].data<S>(),
                                      inputs[1].data<S>(), inputs[2].data<S>(),
                                      inputs.size() == 4 ? inputs[3].data<bool>() : nullptr, out.data<S>(), form, mask);
          });
        }
        for (std::thread& thread : pool) thread.join();
      }
    }
  });
  return out;
}

// The cpu kernel's test's cases, and: causal rows whose visible keys are all masked (so
// the keys it hides count, each with the row's uniform weight), a mask over a batch axis
// and the keys, and edge values over keys of several tiles.
std::vector<AttentionCase> attention_kernel_cases() {
  std::vector<AttentionCase> all = attention_cases();
  all.push_back({{2}, 40, 70, 8, 8, true, {40, 70}});
  all.push_back({{3}, 70, 65, 1, 2, false, {3, 1, 65}});
  all.push_back({{}, 5, 97, 16, 8, false, {}, true});
  return all;
}

// `check` of each case's graph and inputs, in f32 and bf16, the case in the trace.
void for_each_case(uint32_t seed, const std::function<void(const Graph&, const std::vector<Tensor>&)>& check) {
  std::mt19937 random(seed);
  for (const AttentionCase& c : attention_kernel_cases()) {
    for (DType dtype : {DType::f32, DType::bf16}) {
      SCOPED_TRACE(describe(c, dtype));
      check(attention_graph(c, dtype), attention_inputs(c, dtype, random));
    }
  }
}

TEST(CudaAttention, TheKernelsArithmeticIsTheDecompositionsUpToRounding) {
  for_each_case(43, [](const Graph& graph, const std::vector<Tensor>& inputs) {
    ASSERT_TRUE(cuda::has_composite_kernel(graph, attention_node(graph)));
    EXPECT_EQ(compare_attention(graph, inputs, attention_on_host(graph, inputs), run_on("reference", graph, inputs)[0]),
              "");
  });
}

// The kernel's blocks, run on the host, give attention_row's bits: with its rows a block
// on 3 threads, 2 blocks taking the entries' blocks of rows in turns, and a row a block on
// 2 threads, 3 blocks.
TEST(CudaAttention, TheKernelsBlocksGiveTheRowsBitsOnTheHost) {
  for_each_case(47, [](const Graph& graph, const std::vector<Tensor>& inputs) {
    const Tensor rows = attention_on_host(graph, inputs);
    const int64_t block_rows = cuda::attention_rows_per_block(graph, attention_node(graph));
    EXPECT_EQ(compare(blocks_on_host(graph, inputs, block_rows, 3, 2), rows, true), "");
    EXPECT_EQ(compare(blocks_on_host(graph, inputs, 1, 2, 3), rows, true), "");
  });
}

// The bound is tight enough to see a column of v shifted by 1 (which shifts the column of
// the output by 1) where the decomposition is given the shifted values.
TEST(CudaAttention, TheBoundSeesAColumnOfValuesShifted) {
  std::mt19937 random(5);
  for (DType dtype : {DType::f32, DType::bf16}) {
    const AttentionCase c{{2}, 8, 40, 4, 8, false, {}};
    const Graph graph = attention_graph(c, dtype);
    const std::vector<Tensor> inputs = attention_inputs(c, dtype, random);
    std::vector<Tensor> shifted = inputs;
    for (int64_t j = 0; j < 2 * c.keys; ++j)
      shifted[2].set_value(j * c.width + 1, inputs[2].value(j * c.width + 1) + 1);
    EXPECT_NE(
        compare_attention(graph, inputs, attention_on_host(graph, inputs), run_on("reference", graph, shifted)[0]), "")
        << graph::dtype_name(dtype);
  }
}

// A row all of whose keys are masked gets the same weight for every key, as the
// decomposition's softmax of scores all -1e9 gives: the mean of v's column.
TEST(CudaAttention, AFullyMaskedRowIsTheMeanOfTheValues) {
  const AttentionCase c{{}, 2, 5, 3, 2, false, {2, 5}};
  const Graph graph = attention_graph(c, DType::f32);
  std::mt19937 random(9);
  std::vector<Tensor> inputs = attention_inputs(c, DType::f32, random);
  ASSERT_EQ(inputs[3].value(0) + inputs[3].value(4), 0);  // random_mask's first row: all masked
  const Tensor host = attention_on_host(graph, inputs);
  for (int64_t col = 0; col < c.width; ++col) {
    double mean = 0;
    for (int64_t j = 0; j < c.keys; ++j) mean += inputs[2].value(j * c.width + col) / c.keys;
    EXPECT_NEAR(host.value(col), mean, 1e-6 * (1 + std::fabs(mean)));
  }
}

// A tile the causal form hides, skipped where it changes nothing, gives the bits it
// gives scored: weights 0, the factor exactly 1, the sum as it was.
TEST(CudaAttention, AHiddenTileThatChangesNothingChangesNoBit) {
  cuda::AttentionRow row;
  float scores[3] = {0.5f, -2.0f, 3.0f};
  cuda::absorb_scores(row, scores, 3);
  const cuda::AttentionRow before = row;
  const float excluded = -1e9f;
  ASSERT_TRUE(cuda::hidden_tile_changes_nothing(row, excluded));
  float hidden[2] = {excluded, excluded};
  EXPECT_EQ(cuda::absorb_scores(row, hidden, 2), 1.0f);
  EXPECT_EQ(hidden[0], 0.0f);
  EXPECT_EQ(row.largest, before.largest);
  EXPECT_EQ(row.total, before.total);
  cuda::AttentionRow all_masked;
  float masked[2] = {excluded, excluded};
  cuda::absorb_scores(all_masked, masked, 2);
  EXPECT_FALSE(cuda::hidden_tile_changes_nothing(all_masked, excluded));
}

// The same query rows in graphs of 1, 8 and 64 queries and of 1 and 3 batch entries, each
// run by the kernel's blocks on the host (blocks of 1, 8 and 32 rows): the same bits for
// the rows they share.
TEST(CudaAttention, ARowsBitsDoNotDependOnTheRowsBesideIt) {
  std::mt19937 random(11);
  for (DType dtype : {DType::f32, DType::bf16}) {
    for (bool causal : {false, true}) {
      SCOPED_TRACE(fmt::format("{}{}", graph::dtype_name(dtype), causal ? " causal" : ""));
      const AttentionCase widest{{3}, 64, 70, 24, 16, causal, {}};
      const Graph widest_graph = attention_graph(widest, dtype);
      const std::vector<Tensor> all = attention_inputs(widest, dtype, random);
      ASSERT_EQ(cuda::attention_rows_per_block(widest_graph, attention_node(widest_graph)), 32);
      const Tensor whole = blocks_on_host(widest_graph, all, 32, 4, 2);
      for (int64_t entries : {1, 3}) {
        for (int64_t queries : {1, 8}) {
          const AttentionCase part{{entries}, queries, 70, 24, 16, causal, {}};
          const Graph part_graph = attention_graph(part, dtype);
          std::vector<Tensor> inputs = attention_inputs(part, dtype, random);
          // The first `queries` rows of each of the first `entries` entries, and their keys.
          for (int64_t i = 0; i < inputs[0].numel(); ++i) {
            const int64_t e = i / (queries * 24), rest = i % (queries * 24);
            inputs[0].set_value(i, all[0].value(e * 64 * 24 + rest));
          }
          for (size_t operand : {1, 2}) {
            for (int64_t i = 0; i < inputs[operand].numel(); ++i) inputs[operand].set_value(i, all[operand].value(i));
          }
          const int64_t block_rows = cuda::attention_rows_per_block(part_graph, attention_node(part_graph));
          EXPECT_EQ(block_rows, queries);
          const Tensor rows = blocks_on_host(part_graph, inputs, block_rows, 4, 2);
          for (int64_t i = 0; i < rows.numel(); ++i) {
            const int64_t e = i / (queries * 16), rest = i % (queries * 16);
            // The value's double holds its bits (f32 and bf16 widen exactly).
            ASSERT_EQ(std::bit_cast<uint64_t>(rows.value(i)), std::bit_cast<uint64_t>(whole.value(e * 64 * 16 + rest)))
                << entries << " entries, " << queries << " queries, element " << i;
          }
        }
      }
    }
  }
}

// f64, batch axes that broadcast and a head too wide for shared memory
// run as the decomposition.
TEST(CudaAttention, TheFormsWithoutTheKernelAreExpanded) {
  Graph g;
  graph::Builder b(g);
  const NodeId q = b.input("q", {2, 4, 8}, DType::f32), k = b.input("k", {2, 5, 8}, DType::f32);
  const NodeId v = b.input("v", {2, 5, 3}, DType::f32);
  const graph::Attrs plain = {{"causal", int64_t{0}}};
  const NodeId kernel = b.op("attention", {q, k, v}, plain);
  const NodeId f64 = b.op("attention", {b.cast(q, DType::f64), b.cast(k, DType::f64), b.cast(v, DType::f64)}, plain);
  const NodeId shared =
      b.op("attention", {q, b.input("k1", {1, 5, 8}, DType::f32), b.input("v1", {1, 5, 3}, DType::f32)}, plain);
  const NodeId wide_q = b.input("wq", {1, 2, 512}, DType::f32);
  const NodeId wide = b.op(
      "attention", {wide_q, b.input("wk", {1, 3, 512}, DType::f32), b.input("wv", {1, 3, 512}, DType::f32)}, plain);
  for (NodeId node : {kernel, f64, shared, wide}) b.output(fmt::format("y{}", node), node);
  EXPECT_TRUE(cuda::has_composite_kernel(g, g.node(kernel)));
  for (NodeId node : {f64, shared, wide}) EXPECT_FALSE(cuda::has_composite_kernel(g, g.node(node))) << node;
  EXPECT_TRUE(cuda::has_kernel(graph::PrimId::attention));
  // The kernel's attention stays; the others are their decompositions (a softmax each).
  size_t attentions = 0, softmaxes = 0;
  for (const graph::Node& node : cuda::with_composites_expanded(g).nodes) {
    attentions += node.op() == graph::PrimId::attention;
    softmaxes += node.op() == graph::PrimId::softmax;
  }
  EXPECT_EQ(attentions, 1u);
  EXPECT_EQ(softmaxes, 3u);
}

// Each form is one step of its generated kernel, launched with 256 threads per block of
// query rows, which NVRTC compiles for both architectures: f32 plain and causal, bf16
// masked and both.
TEST(CudaAttention, EachFormIsOneStepOfAKernelThatNvrtcCompiles) {
  Graph g;
  graph::Builder b(g);
  for (DType dtype : {DType::f32, DType::bf16}) {
    const NodeId q = b.input(fmt::format("q{}", graph::dtype_name(dtype)), {2, 3, 40, 64}, dtype);
    const NodeId k = b.input(fmt::format("k{}", graph::dtype_name(dtype)), {2, 3, 70, 64}, dtype);
    const NodeId v = b.input(fmt::format("v{}", graph::dtype_name(dtype)), {2, 3, 70, 128}, dtype);
    std::vector<NodeId> operands = {q, k, v};
    if (dtype == DType::bf16) operands.push_back(b.input("mask", {2, 1, 1, 70}, DType::boolean));
    for (int64_t causal : {0, 1}) {
      b.output(fmt::format("{} {}", graph::dtype_name(dtype), causal),
               b.op("attention", operands, {{"causal", causal}}));
    }
  }
  EXPECT_EQ(cuda::missing_kernels(g), std::vector<std::string>{});
  const cuda::Program program = cuda::plan_program(g);
  ASSERT_EQ(program.steps.size(), 4u);
  ASSERT_EQ(program.kernel_names.size(), 4u);
  for (const cuda::Step& step : program.steps) {
    EXPECT_TRUE(program.kernel_names[step.kernel].starts_with("sx_attention_"));
    EXPECT_EQ(step.kind, cuda::Step::Kind::fused);
    // 6 entries of 40 queries in blocks of 32 rows.
    EXPECT_EQ(step.n, 6 * 2 * cuda::kGeneratedKernelThreads);
  }
  for (const char* architecture : {"sm_80", "sm_90a"}) {
    EXPECT_GT(cuda::compile_cubin(program.source, architecture).size(), 1000u) << architecture;
  }
}

TEST(CudaAttention, IsTheDecompositionsUpToRoundingOnTheGpu) {
  if (std::string reason = gpu_unusable_reason(); !reason.empty()) GTEST_SKIP() << reason;
  for_each_case(23, [](const Graph& graph, const std::vector<Tensor>& inputs) {
    const Tensor gpu = run_on("cuda", graph, inputs)[0];
    // The GPU's arithmetic is the host's: the same bits.
    EXPECT_EQ(compare(gpu, attention_on_host(graph, inputs), true), "");
    EXPECT_EQ(compare_attention(graph, inputs, gpu, run_on("reference", graph, inputs)[0]), "");
  });
}

// A row alone, in 8 and in 64 rows (one batch entry and three): the same bits on the GPU.
TEST(CudaAttention, ARowsBitsDoNotDependOnTheRowsBesideItOnTheGpu) {
  if (std::string reason = gpu_unusable_reason(); !reason.empty()) GTEST_SKIP() << reason;
  std::mt19937 random(29);
  for (DType dtype : {DType::f32, DType::bf16}) {
    const AttentionCase widest{{3}, 64, 200, 64, 64, true, {}};
    const std::vector<Tensor> all = attention_inputs(widest, dtype, random);
    const Tensor whole = run_on("cuda", attention_graph(widest, dtype), all)[0];
    for (int64_t queries : {1, 8}) {
      const AttentionCase part{{1}, queries, 200, 64, 64, true, {}};
      std::vector<Tensor> inputs = attention_inputs(part, dtype, random);
      for (int64_t i = 0; i < inputs[0].numel(); ++i) inputs[0].set_value(i, all[0].value(i));
      for (size_t operand : {1, 2}) {
        for (int64_t i = 0; i < inputs[operand].numel(); ++i) inputs[operand].set_value(i, all[operand].value(i));
      }
      const Tensor rows = run_on("cuda", attention_graph(part, dtype), inputs)[0];
      for (int64_t i = 0; i < rows.numel(); ++i) ASSERT_EQ(rows.value(i), whole.value(i)) << queries << " rows";
    }
  }
}

}  // namespace
}  // namespace sx::device::testing
