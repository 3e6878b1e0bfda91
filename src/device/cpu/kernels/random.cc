// Random kernels: random_normal, random_uniform and random_bernoulli as parallel
// loops over the output. Element i's value depends only on the key and i (Philox is
// counter-based), so threads take contiguous ranges and compute the same bits as the
// reference kernel, through the same conversions (graph/prims/random_draw.h). The
// Philox blocks come a vector of counters at a time from the instruction set's kernel
// (vector_math.h), and one at a time for the elements after the last whole vector;
// so do random_normal's f32 values (lane_math's normal), from those words.
#include <algorithm>

#include "device/cpu/kernels.h"
#include "device/cpu/kernels/vector_math.h"
#include "device/cpu/products/gemm.h"
#include "graph/prims/common.h"
#include "graph/prims/random_draw.h"

namespace sx::device::cpu {
namespace {

using graph::DType;
using graph::PhiloxCounter;
using graph::PhiloxKey;
using graph::PrimId;
using graph::prims::convert;

// Work per element, in units of an add: ten Philox rounds, and Box-Muller's log,
// cos and sqrt besides for normal.
constexpr int64_t kPhiloxCost = 16, kNormalCost = 64;

// Philox blocks a vector kernel writes at a time: 16 KiB of words, in L1.
constexpr int64_t kBlock = 1024;

// Calls whole(start, count, words) for runs of elements whose Philox blocks the vector
// kernel wrote (words[w][j]: word w of element start + j's block; count a multiple of
// the kernels' width), and one(i, r) for the others, r element i's block.
template <class Whole, class One>
void for_each_block(const MathKernels* kernels, PhiloxKey key, int64_t begin, int64_t end, Whole whole, One one) {
  if (kernels == nullptr) {
    for (int64_t i = begin; i < end; ++i) one(i, graph::prims::philox_block(i, key));
    return;
  }
  alignas(64) uint32_t words[4][kBlock];
  uint32_t* const rows[4] = {words[0], words[1], words[2], words[3]};
  for (int64_t start = begin; start < end;) {
    // A block never crosses a multiple of 2^32: its counters share their high word.
    int64_t count = std::min({kBlock, end - start, (int64_t{1} << 32) - (start & 0xffffffff)});
    int64_t vectors = count - count % kernels->width;
    kernels->philox(static_cast<uint64_t>(start), vectors, key, rows);
    whole(start, vectors, rows);
    for (int64_t j = vectors; j < count; ++j) one(start + j, graph::prims::philox_block(start + j, key));
    start += count;
  }
}

// The key input's value: an integer scalar of any integer dtype.
int64_t read_key(DType dtype, const uint8_t* bytes) {
  return graph::visit_dtype(dtype, [&](auto types) {
    using S = typename decltype(types)::storage;
    using C = typename decltype(types)::compute;
    return static_cast<int64_t>(static_cast<C>(*reinterpret_cast<const S*>(bytes)));
  });
}

// out[i] = value_of(r) for element i's block r, stored as Tensor::set_value stores it.
// With `normal_kernel`, the values of whole vectors of blocks come from it instead
// (lane_math's normal, which value_of computes one element at a time).
template <class ValueOf>
Step draw(const StepContext& c, const graph::Node& node, int64_t cost, ValueOf value_of, bool normal_kernel = false) {
  int64_t n = graph::numel(node.shape);
  int threads = threads_for(n * cost, c.cores);
  DType key_dtype = c.graph.node(node.inputs[0]).dtype;
  const MathKernels* kernels = math_kernels_for(c.kernels.isa);
  return graph::visit_dtype(node.dtype, [&](auto types) -> Step {
    using S = typename decltype(types)::storage;
    using C = typename decltype(types)::compute;
    return [n, threads, key_dtype, kernels, value_of, normal_kernel](const uint8_t* const* in, uint8_t* out) {
      PhiloxKey key = graph::prims::philox_key(read_key(key_dtype, in[0]));
      S* o = reinterpret_cast<S*>(out);
      auto one = [&](int64_t i, const PhiloxCounter& r) { o[i] = S(convert<C>(value_of(r))); };
      auto whole = [&](int64_t start, int64_t count, const uint32_t* const* words) {
        if (!normal_kernel) {
          for (int64_t j = 0; j < count; ++j)
            one(start + j, PhiloxCounter{words[0][j], words[1][j], words[2][j], words[3][j]});
          return;
        }
        alignas(64) float values[kBlock];
        kernels->normal(words[0], words[1], values, count);
        for (int64_t j = 0; j < count; ++j) o[start + j] = S(convert<C>(static_cast<double>(values[j])));
      };
      parallel_for(n, threads,
                   [&](int64_t begin, int64_t end) { for_each_block(kernels, key, begin, end, whole, one); });
    };
  });
}

Step normal_step(const StepContext& c, const graph::Node& node) {
  DType dtype = node.dtype;
  return draw(
      c, node, kNormalCost, [dtype](const PhiloxCounter& r) { return graph::prims::normal_from(dtype, r); },
      dtype != DType::f64);
}

Step uniform_step(const StepContext& c, const graph::Node& node) {
  DType dtype = node.dtype;
  return draw(c, node, kPhiloxCost, [dtype](const PhiloxCounter& r) { return graph::prims::uniform_in(dtype, r); });
}

Step bernoulli_step(const StepContext& c, const graph::Node& node) {
  double p = node.attrs.get_double("p");
  return draw(c, node, kPhiloxCost,
              [p](const PhiloxCounter& r) { return graph::prims::bernoulli_from(r, p) ? 1.0 : 0.0; });
}

}  // namespace

void add_random_steps(StepTable& table) {
  table.set(PrimId::random_normal, normal_step);
  table.set(PrimId::random_uniform, uniform_step);
  table.set(PrimId::random_bernoulli, bernoulli_step);
}

}  // namespace sx::device::cpu
