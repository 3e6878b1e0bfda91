// The kernels of cross_entropy over the last axis of logits of f32 or bf16, and of its
// gradient with respect to the logits. Each gives the bits of its decomposition
// (graph/prims/composite.cc) as the plan runs it: a checked one_hot of the targets, the
// log_softmax of the logits (by its kernel's formulas, composite_rows.h), their product
// summed over each row and then over the rows (row_reduce.h's order), divided by the row
// count (a literal of the logits' dtype) and negated, each node rounded to the dtype. The
// gradient is what autodiff builds walking back through it from the cotangent g: each
// row's one_hot times -g / rows, given to log_softmax's gradient. A target outside
// [0, classes) stops the run as the one_hot's check stops it, at the first one, before
// anything is written. A row's products with the one_hot are zeros and the target's where
// its log-probabilities are finite, and their sum is the target's; elsewhere (an infinity
// or a NaN, which a zero of the one_hot turns to NaN) the forward kernel sums them whole,
// each in its place, as the plan does. So with the gradient's row sum of its cotangent:
// zeros and one value where that is finite. Whole f32 rows (whole_row_lanes) without a NaN
// take a row's max, min and sum of exp, and the gradient's row, in one call in registers on
// the plan's instruction set (composite_lanes.h), the same operations in the same order.
// Threads take whole rows; the forward kernel keeps each row's value in the plan's
// scratch, summed in order after.
#include <cmath>

#include "device/cpu/kernels.h"
#include "device/cpu/kernels/composite_rows.h"
#include "device/cpu/products/gemm.h"
#include "graph/index_error.h"

namespace sx::device::cpu {
namespace {

using namespace composite_rows;
using graph::DType;

// The rows of logits `x` (the classes its last axis) and the row count as a literal of
// its dtype, by which the mean divides.
struct CrossEntropyShape {
  Rows rows;
  float count = 1;
};

// Work per element in adds: a row's exp and a few operations.
constexpr int64_t kCrossEntropyWork = kCostly + 4;

CrossEntropyShape shape_of(const StepContext& c, const graph::Node& x) {
  const CrossEntropyShape shape{
      .rows = rows_of(c, x, x.shape.back(), kCrossEntropyWork),
      .count = literal_in(x.dtype, static_cast<double>(graph::numel(x.shape) / x.shape.back()))};
  return shape;
}

// A row of f32 as floats; of bf16 nothing (no whole-row kernel takes it).
template <class S>
const float* as_floats(const S* x) {
  if constexpr (std::is_same_v<S, float>) return x;
  else return nullptr;
}

// The sum over a row of its log-probabilities times its one_hot (1 at `target`, else 0),
// a node of S. `statistics`: the instruction set's kernel of a whole f32 row's max, min
// and sum of exp, where it takes the row.
template <class S>
float picked_log_probability(const S* x, int64_t n, int64_t target, const MathKernels* math,
                             LogSoftmaxStatisticsKernel statistics, float* block) {
  float shift = 0, least = 0;
  if (LogSoftmaxStatistics stats; statistics != nullptr && statistics(as_floats(x), n, stats)) {
    shift = stats.max + graph::prims::scalar::Log{}(stats.total);
    least = stats.min;
  } else {
    shift = log_softmax_shift(x, n, math, block);
    least = static_cast<float>(S(reduce_row<S, float>(ReduceKind::min, x, n)));
  }
  const auto log_probability = [&](float v) { return rounded<S>(v - shift); };
  // Where every log-probability is finite (the least is: they rise with x), the products
  // are zeros and the target's, which the sum's +0 start and each zero added leave as it is.
  if (std::isfinite(shift) && std::isfinite(log_probability(least))) {
    const float picked = log_probability(static_cast<float>(x[target]));
    return picked == 0 ? 0.0f : picked;
  }
  return rounded<S>(blocked_row_sum(n, block, [&](int64_t begin, int64_t count, float* into) {
    for (int64_t i = 0; i < count; ++i) into[i] = rounded<S>(log_probability(static_cast<float>(x[begin + i])) * 0.0f);
    if (target >= begin && target < begin + count) {
      into[target - begin] = rounded<S>(log_probability(static_cast<float>(x[target])) * 1.0f);
    }
  }));
}

// in: logits, targets; out: the scalar loss.
template <class S, class Index>
Step cross_entropy_step(CrossEntropyShape shape, const MathKernels* math, SharedScratch* scratch) {
  const LogSoftmaxStatisticsKernel statistics =
      takes_whole_rows<S>(math, shape.rows.length) ? math->composite.log_softmax_statistics : nullptr;
  return [shape, math, statistics, scratch](const uint8_t* const* in, uint8_t* out) {
    const Rows& r = shape.rows;
    const S* x = reinterpret_cast<const S*>(in[0]);
    const Index* targets = reinterpret_cast<const Index*>(in[1]);
    graph::check_indices(targets, r.rows, r.length, 1);
    float* picked = reinterpret_cast<float*>(scratch->data.get());
    parallel_for(r.rows, r.threads, [&](int64_t begin, int64_t end) {
      Block storage;
      for (int64_t row = begin; row < end; ++row) {
        picked[row] = picked_log_probability(x + row * r.length, r.length, static_cast<int64_t>(targets[row]), math,
                                             statistics, storage.floats);
      }
    });
    const float total = rounded<S>(row_sum<float, float>(picked, r.rows));
    *reinterpret_cast<S*>(out) = S(-rounded<S>(total / shape.count));
  };
}

// A row of the gradient: log_softmax's gradient (g + (sum(-g) / s) e, e = exp(x - max x),
// s = sum e) of the cotangent g = c * one_hot, c the cotangent of each picked value. dx
// holds e before the gradient. `whole_row`: the instruction set's kernel of a whole f32
// row, where it takes the row and c is finite.
template <class S>
void gradient_row(const S* x, S* dx, int64_t n, int64_t target, const PickedCotangent& c, const MathKernels* math,
                  CrossEntropyGradientRowKernel whole_row, float* block) {
  if constexpr (std::is_same_v<S, float>) {
    if (whole_row != nullptr && whole_row(x, dx, n, target, c)) return;
  }
  const float total = shifted_exp_row(x, dx, n, math, block);
  float minus_g = c.minus_sum;
  if (!std::isfinite(c.picked)) {
    minus_g = rounded<S>(blocked_row_sum(n, block, [&](int64_t at, int64_t count, float* into) {
      for (int64_t i = 0; i < count; ++i) into[i] = -(at + i == target ? c.picked : c.elsewhere);
    }));
  }
  const float through_total = rounded<S>(minus_g / total);
  const float e_target = static_cast<float>(dx[target]);
  for (int64_t i = 0; i < n; ++i) dx[i] = S(c.elsewhere + rounded<S>(through_total * static_cast<float>(dx[i])));
  dx[target] = S(c.picked + rounded<S>(through_total * e_target));
}

// in: logits, targets, the loss's cotangent; out: the logits' gradient.
template <class S, class Index>
Step cross_entropy_gradient_step(CrossEntropyShape shape, const MathKernels* math) {
  const CrossEntropyGradientRowKernel whole_row =
      takes_whole_rows<S>(math, shape.rows.length) ? math->composite.cross_entropy_gradient_row : nullptr;
  return [shape, math, whole_row](const uint8_t* const* in, uint8_t* out) {
    const Rows& r = shape.rows;
    const S* x = reinterpret_cast<const S*>(in[0]);
    const Index* targets = reinterpret_cast<const Index*>(in[1]);
    graph::check_indices(targets, r.rows, r.length, 1);
    // (neg g) / rows, the cotangent of each row's picked value; elsewhere a zero of its
    // sign, or its NaN. Where it is finite the row's sum of -g is zeros and -c, which the
    // sum's +0 start and each zero added leave as they are (a zero c gives +0); else each
    // row sums them.
    const float picked = rounded<S>(-static_cast<float>(*reinterpret_cast<const S*>(in[2])) / shape.count);
    const PickedCotangent c{
        .picked = picked, .elsewhere = rounded<S>(picked * 0.0f), .minus_sum = picked == 0 ? 0.0f : -picked};
    const CrossEntropyGradientRowKernel finite_row = std::isfinite(picked) ? whole_row : nullptr;
    S* dx = reinterpret_cast<S*>(out);
    parallel_for(r.rows, r.threads, [&](int64_t begin, int64_t end) {
      Block storage;
      for (int64_t row = begin; row < end; ++row) {
        gradient_row(x + row * r.length, dx + row * r.length, r.length, static_cast<int64_t>(targets[row]), c, math,
                     finite_row, storage.floats);
      }
    });
  };
}

// fn(ElementTypes, Index{}) for the logits' float dtype and the targets' index dtype.
template <class Fn>
Step by_dtypes(const graph::Graph& graph, const graph::Node& node, Fn fn) {
  const graph::Node& x = graph.node(node.inputs[0]);
  return by_float_dtype(x.dtype, [&](auto types) {
    return graph::visit_index_dtype(graph.node(node.inputs[1]).dtype, [&](auto index) { return fn(types, index); });
  });
}

}  // namespace

bool runs_cross_entropy(const graph::Graph& graph, std::span<const graph::NodeId> inputs) {
  if (inputs.size() != 2 && inputs.size() != 3) return false;
  const graph::Node& x = graph.node(inputs[0]);
  const graph::Node& targets = graph.node(inputs[1]);
  if ((x.dtype != DType::f32 && x.dtype != DType::bf16) || x.shape.empty() || graph::numel(x.shape) == 0) {
    return false;
  }
  const bool index = targets.dtype == DType::i32 || targets.dtype == DType::i64 || targets.dtype == DType::u8 ||
                     targets.dtype == DType::u16;
  if (!index || targets.shape != graph::Shape(x.shape.begin(), x.shape.end() - 1)) return false;
  if (inputs.size() == 2) return true;
  const graph::Node& cotangent = graph.node(inputs[2]);
  return cotangent.dtype == x.dtype && cotangent.shape.empty();
}

Step make_cross_entropy_step(const StepContext& c, const graph::Node& node) {
  const CrossEntropyShape shape = shape_of(c, c.graph.node(node.inputs[0]));
  c.scratch->reserve(static_cast<size_t>(shape.rows.rows) * sizeof(float));
  const MathKernels* math = math_kernels_for(c.kernels.isa);
  return by_dtypes(c.graph, node, [&](auto types, auto index) {
    return cross_entropy_step<typename decltype(types)::storage, decltype(index)>(shape, math, c.scratch);
  });
}

Step make_cross_entropy_gradient_step(const StepContext& c, const graph::Node& node) {
  const CrossEntropyShape shape = shape_of(c, c.graph.node(node.inputs[0]));
  const MathKernels* math = math_kernels_for(c.kernels.isa);
  return by_dtypes(c.graph, node, [&](auto types, auto index) {
    return cross_entropy_gradient_step<typename decltype(types)::storage, decltype(index)>(shape, math);
  });
}

}  // namespace sx::device::cpu
