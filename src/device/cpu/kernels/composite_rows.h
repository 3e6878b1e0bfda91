// What the composite kernels (composite.cc) and the kernels of their gradients
// (composite_gradient.cc, norm_parameter_gradient.cc) share: a row's values rounded as a node of its dtype stores
// them, its sums in row_sum's order a block at a time, its elementwise parts on the
// plan's instruction set, and how rows are split over the threads.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <type_traits>
#include <vector>

#include "device/cpu/kernels.h"
#include "device/cpu/kernels/row_reduce.h"
#include "device/cpu/kernels/vector_math.h"
#include "graph/prims/scalar.h"

namespace sx::device::cpu::composite_rows {

// Floats of a row that a thread holds at once (a multiple of LaneSums' lanes).
inline constexpr int64_t kBlock = 256;
static_assert(kBlock % LaneSums<float>::kLanes == 0);
static_assert(kRowLanes == LaneSums<float>::kLanes);

// A block of a row's floats, on the stack of the thread that takes the rows; zeroed (once
// a run), as GCC cannot tell that the vector kernels read only what was written before.
struct alignas(64) Block {
  float floats[kBlock] = {};
};

// v rounded to S, as a node of S's dtype stores it.
template <class S>
float rounded(float v) {
  if constexpr (std::is_same_v<S, float>) return v;
  else return static_cast<float>(S(v));
}

// A literal of the decomposition in `dtype`: the f64 constant as its cast converts it.
inline float literal_in(graph::DType dtype, double value) {
  return static_cast<float>(graph::Tensor::scalar(dtype, value).value(0));
}

// fn over y[0, n), the plan's vector kernel where the instruction set has one.
template <class F>
void apply_fn(const MathKernels* math, MathFn fn, float* y, int64_t n) {
  if (math != nullptr) {
    apply_math<F>(*math, fn, y, y, n);
    return;
  }
  for (int64_t i = 0; i < n; ++i) y[i] = F{}(y[i]);
}

// The sum (as row_sum<S, float> gives it) of a row of n values that fill(begin, count,
// block) writes a block at a time into `block`, each already rounded to S.
template <class Fill>
float blocked_row_sum(int64_t n, float* block, Fill fill) {
  if (n < 2 * LaneSums<float>::kLanes) {
    fill(int64_t{0}, n, block);
    float acc = 0;
    for (int64_t r = 0; r < n; ++r) acc += block[r];
    return acc;
  }
  LaneSums<float> sums;
  const int64_t full = n - n % LaneSums<float>::kLanes;
  for (int64_t begin = 0; begin < full; begin += kBlock) {
    const int64_t count = std::min(kBlock, full - begin);
    fill(begin, count, block);
    sums.add(block, count);
  }
  fill(full, n - full, block);
  return sums.finish(block, n - full);
}

// Calls body(begin, end) on each block of [0, n).
template <class Body>
void by_blocks(int64_t n, Body body) {
  for (int64_t begin = 0; begin < n; begin += kBlock) body(begin, std::min(n, begin + kBlock));
}

// The shape of a row kernel's work: `rows` rows of `length` contiguous elements.
struct Rows {
  int64_t rows = 0, length = 0;
  int threads = 1;
};

// The rows of `node`'s elements, `length` long, split over threads by
// `work_per_element` (in adds).
inline Rows rows_of(const StepContext& c, const graph::Node& node, int64_t length, int64_t work_per_element) {
  const int64_t count = graph::numel(node.shape);
  Rows r{.rows = length == 0 ? 0 : count / length, .length = length};
  r.threads = threads_for(count * work_per_element, c.cores);
  return r;
}

// y[i] = f(x[i]) for i < n: by `kernel` (on floats, over whole vectors, f's members in
// registers) where the instruction set has one, the rest by `formula` (the same bits); a
// bf16 row widened a block at a time. x may be y.
template <class S, class Kernel, class Formula>
void by_lanes(const S* x, S* y, int64_t n, const MathKernels* math, float* block, Kernel kernel, Formula formula) {
  if (math == nullptr) {
    formula(x, y, n);
    return;
  }
  if constexpr (std::is_same_v<S, float>) {
    const int64_t whole = n - n % math->width;
    kernel(x, y, whole);
    formula(x + whole, y + whole, n - whole);
  } else {
    by_blocks(n, [&](int64_t begin, int64_t end) {
      const int64_t whole = (end - begin) - (end - begin) % math->width;
      for (int64_t i = 0; i < whole; ++i) block[i] = static_cast<float>(x[begin + i]);
      kernel(block, block, whole);
      for (int64_t i = 0; i < whole; ++i) y[begin + i] = S(block[i]);
      formula(x + begin + whole, y + begin + whole, end - begin - whole);
    });
  }
}

// Whether rows of S, `length` long, take the instruction set's whole-row kernels
// (CompositeLanes' f32 rows): f32 rows that whole_row_lanes takes, where the set has them.
template <class S>
bool takes_whole_rows(const MathKernels* math, int64_t length) {
  return std::is_same_v<S, float> && math != nullptr && whole_row_lanes(length);
}

// Which of CompositeLanes' kernels a dtype takes.
template <class S>
constexpr size_t kLanesBf16 = std::is_same_v<S, float> ? 0 : 1;

// e = (exp (- x (reduce-max x))) of a softmax's row, into e; the row's sum of e (a
// node of S) after it.
template <class S>
float shifted_exp_row(const S* x, S* e, int64_t n, const MathKernels* math, float* block) {
  const float m = static_cast<float>(S(reduce_row<S, float>(ReduceKind::max, x, n)));
  by_lanes(
      x, e, n, math, block,
      [&](const float* in, float* out, int64_t count) {
        math->composite.shifted_exp[kLanesBf16<S>](in, out, count, m);
      },
      [&](const S* in, S* out, int64_t count) {
        for (int64_t i = 0; i < count; ++i) {
          out[i] = S(graph::prims::scalar::Exp{}(rounded<S>(static_cast<float>(in[i]) - m)));
        }
      });
  return static_cast<float>(S(row_sum<S, float>(e, n)));
}

// (/ e (sum e)), e = (exp (- x (reduce-max x))), of a softmax's row x into y (x may be y).
template <class S>
void softmax_row(const S* x, S* y, int64_t n, const MathKernels* math, float* block) {
  if constexpr (std::is_same_v<S, float>) {
    if (math != nullptr && whole_row_lanes(n) && math->composite.softmax_row(x, y, n)) return;
  }
  const float total = shifted_exp_row(x, y, n, math, block);
  by_lanes(
      y, y, n, math, block,
      [&](const float* in, float* out, int64_t count) {
        math->composite.divided[kLanesBf16<S>](in, out, count, total);
      },
      [&](const S* in, S* out, int64_t count) {
        for (int64_t i = 0; i < count; ++i) out[i] = S(static_cast<float>(in[i]) / total);
      });
}

// (+ m (log (sum (exp (- x m))))), m = (reduce-max x): what log_softmax subtracts from
// each element of a row, a node of S.
template <class S>
float log_softmax_shift(const S* x, int64_t n, const MathKernels* math, float* block) {
  const float m = static_cast<float>(S(reduce_row<S, float>(ReduceKind::max, x, n)));
  const float total = blocked_row_sum(n, block, [&](int64_t begin, int64_t count, float* into) {
    for (int64_t i = 0; i < count; ++i) into[i] = rounded<S>(static_cast<float>(x[begin + i]) - m);
    apply_fn<graph::prims::scalar::Exp>(math, MathFn::exp, into, count);
    for (int64_t i = 0; i < count; ++i) into[i] = rounded<S>(into[i]);
  });
  const float log_total = rounded<S>(graph::prims::scalar::Log{}(rounded<S>(total)));
  return rounded<S>(m + log_total);
}

// A norm's weight or bias: of x's dtype, one element per column of the last axis.
inline bool fits_row(const graph::Node& operand, const graph::Node& x) {
  return operand.dtype == x.dtype && !operand.shape.empty() && operand.shape.back() == x.shape.back() &&
         graph::numel(operand.shape) == x.shape.back();
}

// What a norm computes of a row before its elements: the mean (layer_norm's; rms_norm's
// 0), mean(d * d) + eps of d = x - mean (layer) or x (rms), and its rsqrt, each a node of S.
struct NormStatistics {
  float mean = 0, shifted_square = 0, inverse = 0;

  // d of an element x.
  template <class S, bool Centered>
  float centered(S x) const {
    if constexpr (Centered) return rounded<S>(static_cast<float>(x) - mean);
    else return static_cast<float>(x);
  }
};

template <class S, bool Centered>
NormStatistics norm_statistics(const S* x, int64_t n, NormConstants k, float* block) {
  NormStatistics stats;
  if constexpr (Centered) stats.mean = rounded<S>(rounded<S>(row_sum<S, float>(x, n)) / k.length);
  const float squares = blocked_row_sum(n, block, [&](int64_t begin, int64_t count, float* into) {
    for (int64_t i = 0; i < count; ++i) {
      const float d = stats.centered<S, Centered>(x[begin + i]);
      into[i] = rounded<S>(d * d);
    }
  });
  const float mean_square = rounded<S>(rounded<S>(squares) / k.length);
  stats.shifted_square = rounded<S>(mean_square + k.eps);
  stats.inverse = rounded<S>(graph::prims::scalar::Rsqrt{}(stats.shifted_square));
  return stats;
}

// The step of the gradient of norm `forward`'s (layer_norm's or rms_norm's) input `input`
// (1 or 2: its weight or bias, one runs_composite_gradient takes) given the cotangent of
// its value: in[] the norm's inputs, then the cotangent; out, of the weight's or bias's
// dtype and shape (norm_parameter_gradient.cc).
Step make_norm_parameter_gradient(const StepContext& c, graph::PrimId forward, const graph::Attrs& attrs, size_t input,
                                  std::span<const graph::NodeId> inputs);

// f32 or bf16: fn(ElementTypes) for the dtype.
template <class Fn>
auto by_float_dtype(graph::DType dtype, Fn fn) {
  if (dtype == graph::DType::bf16) return fn(graph::ElementTypes<graph::Bf16, float>{});
  return fn(graph::ElementTypes<float, float>{});
}

// The rows of a softmax: the elements of its reduced axes (a negative one counted from the
// end; none outside x), where they are contiguous (no kept axis longer than 1 comes after
// a reduced one longer than 1); else nothing.
inline std::optional<int64_t> softmax_row_length(const graph::Node& x, const std::vector<int64_t>& axes) {
  const auto rank = static_cast<int64_t>(x.shape.size());
  std::vector<bool> reduced(x.shape.size(), false);
  for (int64_t a : axes) {
    if (a < -rank || a >= rank) return std::nullopt;
    reduced[static_cast<size_t>(a < 0 ? a + rank : a)] = true;
  }
  int64_t length = 1;
  bool in_row = false;
  for (size_t d = 0; d < x.shape.size(); ++d) {
    if (x.shape[d] == 1) continue;
    if (reduced[d]) {
      in_row = true;
      length *= x.shape[d];
    } else if (in_row) {
      return std::nullopt;
    }
  }
  return length;
}

}  // namespace sx::device::cpu::composite_rows
