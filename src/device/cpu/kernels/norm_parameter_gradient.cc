// Kernels of the gradients of layer_norm's weight and bias and of rms_norm's weight, given
// the cotangent g of the norm's value, in f32 and bf16. Through the decomposition
// y = n w + b, n = d inv (composite.cc's norm_row), the weight's gradient is the sum over
// the rows of g n and the bias's the sum over the rows of g: each term rounded to the
// dtype as its node is, the sum of each column in float from 0 in row order (reduce.cc's
// sum over the rows, one thread a column), rounded once. A norm of one column sums its
// rows as reduce.cc sums a contiguous row (row_sum's order); where the weight has x's
// shape (a single row of rank 1) there is no broadcast, so no sum: the terms themselves.
// A run of a weight's gradient computes each row's statistics (threads taking whole rows;
// whole f32 rows in one call on the plan's instruction set, composite_lanes.h)
// into the plan's shared scratch (outside a plan, the step's own), then the sums (threads
// taking blocks of columns): the bits do not depend on the thread count.
#include <algorithm>
#include <memory>
#include <span>

#include "device/cpu/kernels.h"
#include "device/cpu/kernels/composite_rows.h"
#include "device/cpu/products/gemm.h"

namespace sx::device::cpu::composite_rows {
namespace {

using graph::PrimId;

// What a norm parameter's gradient sums: g n (the weight's) or g (the bias's).
enum class Term { weighted, bias };

// The most columns a thread sums side by side (reduce.cc's block: a row's run of them).
constexpr int64_t kColumnBlock = 2048;

// Work per element in adds: a row's statistics and a term's few operations.
constexpr int64_t kParameterGradientWork = 6;

struct ParameterShape {
  int64_t rows = 0, columns = 0;
  bool summed = true;  // false: the weight has x's shape, and the terms are the gradient
  int threads = 1;
};

// The term at column i of a row of x and of its cotangent g, whose statistics are `stats`
// (a weight's): g n, n = d inv rounded as norm_row rounds it; or g (a bias's).
template <class S, bool Centered, Term T>
float term(const S* x, const S* g, const NormStatistics* stats, int64_t i) {
  if constexpr (T == Term::bias) {
    return static_cast<float>(g[i]);
  } else {
    return rounded<S>(static_cast<float>(g[i]) * rounded<S>(stats->centered<S, Centered>(x[i]) * stats->inverse));
  }
}

template <class S, bool Centered, Term T>
Step parameter_gradient_step(ParameterShape p, NormConstants k, int cotangent, SharedScratch* scratch,
                             const MathKernels* math) {
  const NormStatisticsKernel whole_row =
      takes_whole_rows<S>(math, p.columns) ? math->composite.norm_statistics[Centered] : nullptr;
  return [p, k, cotangent, scratch, whole_row](const uint8_t* const* in, uint8_t* out) {
    const S* x = reinterpret_cast<const S*>(in[0]);
    const S* g = reinterpret_cast<const S*>(in[cotangent]);
    S* dw = reinterpret_cast<S*>(out);
    const int64_t n = p.columns;
    NormStatistics* stats = nullptr;
    if constexpr (T == Term::weighted) {
      stats = reinterpret_cast<NormStatistics*>(scratch->data.get());
      parallel_for(p.rows, p.threads, [&](int64_t begin, int64_t end) {
        Block storage;
        for (int64_t row = begin; row < end; ++row) {
          if constexpr (std::is_same_v<S, float>) {
            if (whole_row != nullptr) {
              const NormRowStatistics lanes = whole_row(x + row * n, n, k);
              stats[row] = {.mean = lanes.mean, .shifted_square = lanes.shifted_square, .inverse = lanes.inverse};
              continue;
            }
          }
          stats[row] = norm_statistics<S, Centered>(x + row * n, n, k, storage.floats);
        }
      });
    }
    const auto row_term = [&](int64_t row, int64_t i) {
      return term<S, Centered, T>(x + row * n, g + row * n, T == Term::weighted ? stats + row : nullptr, i);
    };
    if (!p.summed) {
      for (int64_t i = 0; i < n; ++i) dw[i] = S(row_term(0, i));
      return;
    }
    if (n == 1) {
      Block storage;
      dw[0] = S(blocked_row_sum(p.rows, storage.floats, [&](int64_t at, int64_t count, float* into) {
        for (int64_t r = 0; r < count; ++r) into[r] = row_term(at + r, 0);
      }));
      return;
    }
    const int64_t block = std::min(kColumnBlock, ((n + p.threads - 1) / p.threads + 15) / 16 * 16);
    parallel_for((n + block - 1) / block, p.threads, [&](int64_t begin, int64_t end) {
      float sums[kColumnBlock];
      for (int64_t b = begin; b < end; ++b) {
        const int64_t first = b * block, width = std::min(block, n - first);
        std::fill_n(sums, width, 0.0f);
        for (int64_t row = 0; row < p.rows; ++row) {
          for (int64_t i = 0; i < width; ++i) sums[i] += row_term(row, first + i);
        }
        for (int64_t i = 0; i < width; ++i) dw[first + i] = S(sums[i]);
      }
    });
  };
}

}  // namespace

Step make_norm_parameter_gradient(const StepContext& c, PrimId forward, const graph::Attrs& attrs, size_t input,
                                  std::span<const graph::NodeId> inputs) {
  const graph::Node& x = c.graph.node(inputs[0]);
  const graph::Node& parameter = c.graph.node(inputs[input]);
  const bool centered = forward == PrimId::layer_norm;
  const bool bias = centered && attrs.get_int("bias") != 0 && input == (attrs.get_int("weight") != 0 ? 2u : 1u);
  ParameterShape p{.columns = x.shape.back(), .summed = parameter.shape != x.shape};
  p.rows = p.columns == 0 ? 0 : graph::numel(x.shape) / p.columns;
  p.threads = threads_for(graph::numel(x.shape) * kParameterGradientWork, c.cores);
  const NormConstants k{.length = literal_in(x.dtype, static_cast<double>(p.columns)),
                        .eps = literal_in(x.dtype, attrs.get_double("eps"))};
  SharedScratch* scratch = c.scratch;
  std::shared_ptr<SharedScratch> owned;
  if (!bias && scratch == nullptr) {
    owned = std::make_shared<SharedScratch>();
    scratch = owned.get();
  }
  if (!bias) scratch->reserve(static_cast<size_t>(std::max<int64_t>(1, p.rows)) * sizeof(NormStatistics));
  const auto cotangent = static_cast<int>(inputs.size() - 1);
  const MathKernels* math = math_kernels_for(c.kernels.isa);
  Step step = by_float_dtype(x.dtype, [&](auto types) -> Step {
    using S = typename decltype(types)::storage;
    if (bias) return parameter_gradient_step<S, true, Term::bias>(p, k, cotangent, scratch, math);
    if (centered) return parameter_gradient_step<S, true, Term::weighted>(p, k, cotangent, scratch, math);
    return parameter_gradient_step<S, false, Term::weighted>(p, k, cotangent, scratch, math);
  });
  if (owned == nullptr) return step;
  return [step = std::move(step), owned](const uint8_t* const* in, uint8_t* out) { step(in, out); };
}

}  // namespace sx::device::cpu::composite_rows
