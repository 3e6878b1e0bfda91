// Kernels of the composites' gradients with respect to their input x, given the
// cotangent g of their value: softmax and log_softmax over rows, layer_norm and rms_norm
// over the last axis (with or without weight and bias), gelu (both forms), in f32 and
// bf16. Each gives the bits of what reverse-mode autodiff (graph/autodiff.cc) builds
// walking back through the composite's decomposition with cotangent g, as the plan runs
// it: every node's formula in its order, operands in their order, each intermediate
// rounded to the node's dtype, each literal as its cast rounds it, each row's max and
// sums in row_reduce.h's order. (Where two NaNs meet in one operation, whose sign the
// result takes is the compiler's choice, here as in the plan's loops.) The softmaxes
// recompute a row's max, exp and sum from x, the norms a row's statistics, as
// composite.cc does; the exp, the softmaxes' passes, gelu's gradient whole and whole f32
// rows of the norms run in registers on the plan's instruction set (composite_lanes.h),
// the norms' other rows in loops. A row
// is computed in the output's row and blocks of kBlock floats on the stack, so a run
// allocates nothing; threads take whole rows. (The gradients of the norms' weight and
// bias: norm_parameter_gradient.cc.)
#include <cmath>
#include <numbers>
#include <span>
#include <string>

#include "device/cpu/kernels.h"
#include "device/cpu/kernels/composite_rows.h"
#include "device/cpu/products/gemm.h"
#include "graph/prims/scalar.h"

namespace sx::device::cpu {
namespace {

using namespace composite_rows;
using graph::DType;
using graph::PrimId;

// The blocks a thread holds while it computes a row: a sum's terms, and a bf16 row's e
// and g widened to floats.
struct RowBlocks {
  Block terms, e, g;
};

// out[i] = f(e[i], g[i]) for i < n: by the instruction set's kernel of CompositeLanes'
// `pass` (on floats, over whole vectors, given total and shift) where it has one, a bf16
// row widened a block at a time; the rest by formula(from, to) over [from, n) (the same
// bits). out may be e.
template <class S, class Out, class Formula>
void pairs_by_lanes(const S* e, const S* g, Out* out, int64_t n, const MathKernels* math, RowBlocks& blocks,
                    RowGradientKernels CompositeLanes::*pass, float total, float shift, Formula formula) {
  const int64_t whole = math == nullptr ? 0 : n - n % math->width;
  const auto kernel = [&](const float* e_floats, const float* g_floats, float* out_floats, int64_t count) {
    (math->composite.*pass)[kLanesBf16<S>](e_floats, g_floats, out_floats, count, total, shift);
  };
  if constexpr (std::is_same_v<S, float> && std::is_same_v<Out, float>) {
    if (whole > 0) kernel(e, g, out, whole);
  } else {
    by_blocks(whole, [&](int64_t begin, int64_t end) {
      for (int64_t i = 0; i < end - begin; ++i) {
        blocks.e.floats[i] = static_cast<float>(e[begin + i]);
        blocks.g.floats[i] = static_cast<float>(g[begin + i]);
      }
      kernel(blocks.e.floats, blocks.g.floats, blocks.e.floats, end - begin);
      for (int64_t i = 0; i < end - begin; ++i) out[begin + i] = Out(blocks.e.floats[i]);
    });
  }
  formula(whole, n);
}

// softmax: y = e / s, e = exp(x - max x), s = sum e; the gradient
// (g / s + sum(-((g y) / s))) e, each row's sum after its e.
template <class S>
void softmax_gradient_row(const S* x, const S* g, S* dx, int64_t n, const MathKernels* math, RowBlocks& blocks) {
  const float total = shifted_exp_row(x, dx, n, math, blocks.e.floats);
  const float through_total =
      rounded<S>(blocked_row_sum(n, blocks.terms.floats, [&](int64_t at, int64_t count, float* into) {
        pairs_by_lanes(dx + at, g + at, into, count, math, blocks, &CompositeLanes::softmax_terms, total, 0,
                       [&](int64_t from, int64_t to) {
                         for (int64_t i = from; i < to; ++i) {
                           const float y = rounded<S>(static_cast<float>(dx[at + i]) / total);
                           into[i] = -rounded<S>(rounded<S>(static_cast<float>(g[at + i]) * y) / total);
                         }
                       });
      }));
  pairs_by_lanes(dx, g, dx, n, math, blocks, &CompositeLanes::softmax_gradient, total, through_total,
                 [&](int64_t from, int64_t to) {
                   for (int64_t i = from; i < to; ++i) {
                     const float through_e = rounded<S>(rounded<S>(static_cast<float>(g[i]) / total) + through_total);
                     dx[i] = S(through_e * static_cast<float>(dx[i]));
                   }
                 });
}

// log_softmax: y = x - (m + log s), the shift m = max x held constant; the gradient
// g + (sum(-g) / s) e.
template <class S>
void log_softmax_gradient_row(const S* x, const S* g, S* dx, int64_t n, const MathKernels* math, RowBlocks& blocks) {
  const float total = shifted_exp_row(x, dx, n, math, blocks.e.floats);
  const float minus_g = rounded<S>(blocked_row_sum(n, blocks.terms.floats, [&](int64_t at, int64_t count, float* into) {
    for (int64_t i = 0; i < count; ++i) into[i] = -static_cast<float>(g[at + i]);
  }));
  const float through_total = rounded<S>(minus_g / total);
  pairs_by_lanes(dx, g, dx, n, math, blocks, &CompositeLanes::log_softmax_gradient, total, through_total,
                 [&](int64_t from, int64_t to) {
                   for (int64_t i = from; i < to; ++i) {
                     dx[i] = S(static_cast<float>(g[i]) + rounded<S>(through_total * static_cast<float>(dx[i])));
                   }
                 });
}

template <class S>
Step softmax_gradient_step(const Rows& r, const MathKernels* math, bool log) {
  return [r, math, log](const uint8_t* const* in, uint8_t* out) {
    const S* x = reinterpret_cast<const S*>(in[0]);
    const S* g = reinterpret_cast<const S*>(in[1]);
    S* dx = reinterpret_cast<S*>(out);
    SoftmaxGradientRowKernel whole_row = nullptr;
    if (math != nullptr && whole_row_lanes(r.length)) {
      whole_row = log ? math->composite.log_softmax_gradient_row : math->composite.softmax_gradient_row;
    }
    parallel_for(r.rows, r.threads, [&](int64_t begin, int64_t end) {
      RowBlocks blocks;
      for (int64_t row = begin; row < end; ++row) {
        const int64_t at = row * r.length;
        if constexpr (std::is_same_v<S, float>) {
          if (whole_row != nullptr && whole_row(x + at, g + at, dx + at, r.length)) continue;
        }
        if (log) log_softmax_gradient_row(x + at, g + at, dx + at, r.length, math, blocks);
        else softmax_gradient_row(x + at, g + at, dx + at, r.length, math, blocks);
      }
    });
  };
}

// layer_norm (centered) or rms_norm: y = (d inv) w + b, inv = rsqrt(v), v = mean(d d) +
// eps, d = x - mean x (layer) or x (rms). With a = g w (g without a weight), d's
// cotangent is (a inv + c d) + c d, c = sum(a d) ((-0.5 inv) / v) / length (through inv
// and d d); x's is that, plus sum(-that) / length through the mean (layer).
template <class S, bool Centered>
void norm_gradient_row(const S* x, const S* w, const S* g, S* dx, int64_t n, NormConstants k, float* block) {
  const NormStatistics stats = norm_statistics<S, Centered>(x, n, k, block);
  const auto cotangent = [&](int64_t i) {
    return w == nullptr ? static_cast<float>(g[i]) : rounded<S>(static_cast<float>(g[i]) * static_cast<float>(w[i]));
  };
  const float through_inverse = rounded<S>(blocked_row_sum(n, block, [&](int64_t at, int64_t count, float* into) {
    for (int64_t i = 0; i < count; ++i) {
      into[i] = rounded<S>(cotangent(at + i) * stats.centered<S, Centered>(x[at + i]));
    }
  }));
  const float slope = rounded<S>(rounded<S>(k.minus_half * stats.inverse) / stats.shifted_square);
  const float through_squares = rounded<S>(rounded<S>(through_inverse * slope) / k.length);
  const auto through_d = [&](int64_t i) {
    const float d = stats.centered<S, Centered>(x[i]);
    const float by_d = rounded<S>(through_squares * d);
    return rounded<S>(rounded<S>(rounded<S>(cotangent(i) * stats.inverse) + by_d) + by_d);
  };
  if constexpr (!Centered) {
    for (int64_t i = 0; i < n; ++i) dx[i] = S(through_d(i));
  } else {
    const float minus_total = rounded<S>(blocked_row_sum(n, block, [&](int64_t at, int64_t count, float* into) {
      for (int64_t i = 0; i < count; ++i) {
        const float value = through_d(at + i);
        dx[at + i] = S(value);
        into[i] = -value;
      }
    }));
    const float through_mean = rounded<S>(minus_total / k.length);
    for (int64_t i = 0; i < n; ++i) dx[i] = S(static_cast<float>(dx[i]) + through_mean);
  }
}

template <class S, bool Centered>
Step norm_gradient_step(const Rows& r, NormConstants k, int weight, int cotangent, const MathKernels* math) {
  const NormGradientRowKernel whole_row =
      takes_whole_rows<S>(math, r.length) ? math->composite.norm_gradient_row[Centered] : nullptr;
  return [r, k, weight, cotangent, whole_row](const uint8_t* const* in, uint8_t* out) {
    const S* x = reinterpret_cast<const S*>(in[0]);
    const S* w = weight > 0 ? reinterpret_cast<const S*>(in[weight]) : nullptr;
    const S* g = reinterpret_cast<const S*>(in[cotangent]);
    S* dx = reinterpret_cast<S*>(out);
    parallel_for(r.rows, r.threads, [&](int64_t begin, int64_t end) {
      Block storage;
      for (int64_t row = begin; row < end; ++row) {
        const int64_t at = row * r.length;
        if constexpr (std::is_same_v<S, float>) {
          if (whole_row != nullptr) {
            whole_row(x + at, w, g + at, dx + at, r.length, k);
            continue;
          }
        }
        norm_gradient_row<S, Centered>(x + at, w, g + at, dx + at, r.length, k, storage.floats);
      }
    });
  };
}

// The scalar formulas of graph/prims/scalar.h, which gelu_gradient takes on one float.
struct ScalarFunctions {
  static float tanh(float x) { return graph::prims::scalar::Tanh{}(x); }
  static float erf(float x) { return graph::prims::scalar::Erf{}(x); }
  static float exp(float x) { return graph::prims::scalar::Exp{}(x); }
};

// dx = gelu's gradient at x times g over n floats: whole vectors in registers where the
// instruction set has them, the rest one float at a time (the same bits).
template <bool Tanh, bool Bf16>
void gelu_gradient_floats(const float* x, const float* g, float* dx, int64_t n, const GeluGradientConstants& k,
                          const MathKernels* math) {
  const int64_t whole = math == nullptr ? 0 : n - n % math->width;
  if (whole > 0) math->composite.gelu_gradient[Tanh ? 0 : 1][Bf16](x, g, dx, whole, k);
  for (int64_t i = whole; i < n; ++i) {
    dx[i] = gelu_gradient<graph::lane_math::ScalarLanes, ScalarFunctions, Tanh, Bf16>(x[i], g[i], k);
  }
}

// A block of gelu's gradient: of f32 in place; of bf16 widened into floats on the stack.
template <class S, bool Tanh>
void gelu_gradient_block(const S* x, const S* g, S* dx, int64_t n, const GeluGradientConstants& k,
                         const MathKernels* math, float* x_floats, float* g_floats) {
  if constexpr (std::is_same_v<S, float>) {
    gelu_gradient_floats<Tanh, false>(x, g, dx, n, k, math);
  } else {
    for (int64_t i = 0; i < n; ++i) {
      x_floats[i] = static_cast<float>(x[i]);
      g_floats[i] = static_cast<float>(g[i]);
    }
    gelu_gradient_floats<Tanh, true>(x_floats, g_floats, x_floats, n, k, math);
    for (int64_t i = 0; i < n; ++i) dx[i] = S(x_floats[i]);
  }
}

template <class S, bool Tanh>
Step gelu_gradient_step(int64_t n, int threads, GeluGradientConstants k, const MathKernels* math) {
  return [n, threads, k, math](const uint8_t* const* in, uint8_t* out) {
    const S* x = reinterpret_cast<const S*>(in[0]);
    const S* g = reinterpret_cast<const S*>(in[1]);
    S* dx = reinterpret_cast<S*>(out);
    parallel_for((n + kBlock - 1) / kBlock, threads, [&](int64_t begin, int64_t end) {
      Block x_floats, g_floats;
      for (int64_t blk = begin; blk < end; ++blk) {
        const int64_t at = blk * kBlock;
        gelu_gradient_block<S, Tanh>(x + at, g + at, dx + at, std::min(kBlock, n - at), k, math, x_floats.floats,
                                     g_floats.floats);
      }
    });
  };
}

// Work per element in adds: a row's exp and a few operations; gelu's gradient's one
// transcendental function and a score of operations; a norm's gradient's dozen.
constexpr int64_t kRowGradientWork = kCostly + 8, kGeluGradientWork = 2 * kCostly, kNormGradientWork = 12;

Step make_softmax_gradient(const StepContext& c, bool log, const graph::Attrs& attrs, const graph::Node& x) {
  const Rows r = rows_of(c, x, *softmax_row_length(x, attrs.get_ints("axes")), kRowGradientWork);
  const MathKernels* math = math_kernels_for(c.kernels.isa);
  return by_float_dtype(
      x.dtype, [&](auto types) { return softmax_gradient_step<typename decltype(types)::storage>(r, math, log); });
}

Step make_gelu_gradient(const StepContext& c, const graph::Attrs& attrs, const graph::Node& x) {
  const int64_t n = graph::numel(x.shape);
  const int threads = threads_for(n * kGeluGradientWork, c.cores);
  const bool tanh = attrs.get_string("form") == "tanh";
  const DType dtype = x.dtype;
  const GeluGradientConstants k{.gelu = {.cubic = literal_in(dtype, 0.044715),
                                         .scale = literal_in(dtype, tanh ? 0.7978845608028654 : 0.7071067811865476),
                                         .one = literal_in(dtype, 1),
                                         .half = literal_in(dtype, 0.5)},
                                // erf's gradient rule's literal (graph/prims/unary.cc), computed as it computes it
                                .two_over_root_pi = literal_in(dtype, 2.0 / std::sqrt(std::numbers::pi))};
  const MathKernels* math = math_kernels_for(c.kernels.isa);
  return by_float_dtype(dtype, [&](auto types) {
    using S = typename decltype(types)::storage;
    return tanh ? gelu_gradient_step<S, true>(n, threads, k, math) : gelu_gradient_step<S, false>(n, threads, k, math);
  });
}

template <bool Centered>
Step make_norm_gradient(const StepContext& c, const graph::Attrs& attrs, const graph::Node& x) {
  const int64_t length = x.shape.back();
  const Rows r = rows_of(c, x, length, kNormGradientWork);
  const NormConstants k{.length = literal_in(x.dtype, static_cast<double>(length)),
                        .eps = literal_in(x.dtype, attrs.get_double("eps")),
                        .minus_half = literal_in(x.dtype, -0.5)};
  const int weight = attrs.get_int("weight") != 0 ? 1 : 0;
  const int bias = Centered && attrs.get_int("bias") != 0 ? 1 : 0;
  const MathKernels* math = math_kernels_for(c.kernels.isa);
  return by_float_dtype(x.dtype, [&](auto types) {
    return norm_gradient_step<typename decltype(types)::storage, Centered>(r, k, weight, 1 + weight + bias, math);
  });
}

}  // namespace

bool runs_composite_gradient(const graph::Graph& graph, PrimId forward, const graph::Attrs& attrs, size_t input,
                             std::span<const graph::NodeId> inputs) {
  if (forward == PrimId::cross_entropy) return input == 0 && inputs.size() == 3 && runs_cross_entropy(graph, inputs);
  if (inputs.size() < 2 || input + 1 >= inputs.size()) return false;
  const graph::Node& x = graph.node(inputs[0]);
  const graph::Node& cotangent = graph.node(inputs.back());
  if ((x.dtype != DType::f32 && x.dtype != DType::bf16) || cotangent.dtype != x.dtype || cotangent.shape != x.shape) {
    return false;
  }
  switch (forward) {
    case PrimId::softmax:
    case PrimId::log_softmax:
      return inputs.size() == 2 && attrs.has("axes") && softmax_row_length(x, attrs.get_ints("axes")).has_value();
    case PrimId::layer_norm:
    case PrimId::rms_norm: {
      const bool centered = forward == PrimId::layer_norm;
      if (x.shape.empty() || !attrs.has("eps") || !attrs.has("weight") || (centered && !attrs.has("bias"))) {
        return false;
      }
      const size_t operands = (attrs.get_int("weight") != 0 ? 1 : 0) + (centered && attrs.get_int("bias") != 0 ? 1 : 0);
      if (inputs.size() != 2 + operands || input > operands) return false;
      for (size_t k = 1; k + 1 < inputs.size(); ++k) {
        if (!fits_row(graph.node(inputs[k]), x)) return false;
      }
      return true;
    }
    case PrimId::gelu: {
      if (inputs.size() != 2 || !attrs.has("form")) return false;
      const std::string& form = attrs.get_string("form");
      return form == "tanh" || form == "erf";
    }
    default: return false;
  }
}

Step make_composite_gradient_step(const StepContext& context, PrimId forward, const graph::Attrs& attrs, size_t input,
                                  std::span<const graph::NodeId> inputs) {
  if (input > 0) return make_norm_parameter_gradient(context, forward, attrs, input, inputs);
  const graph::Node& x = context.graph.node(inputs[0]);
  switch (forward) {
    case PrimId::gelu: return make_gelu_gradient(context, attrs, x);
    case PrimId::layer_norm: return make_norm_gradient<true>(context, attrs, x);
    case PrimId::rms_norm: return make_norm_gradient<false>(context, attrs, x);
    default: return make_softmax_gradient(context, forward == PrimId::log_softmax, attrs, x);
  }
}

}  // namespace sx::device::cpu
