// Kernels of the forward composites: softmax and log_softmax over rows, layer_norm and
// rms_norm over the last axis, gelu (both forms), in f32 and bf16. Each gives the bits of
// its decomposition (graph/prims/composite.cc) as the plan runs it: every node's formula
// from graph/prims/scalar.h in its order, operands in their order (a NaN's payload is the
// first operand's), each intermediate rounded to the node's dtype, each literal rounded
// to it as its cast rounds it, and each row's max and sum in row_reduce.h's order. gelu,
// a softmax's exp and division, and whole f32 rows of the softmaxes and norms run in
// registers on the plan's instruction set (composite_lanes.h, through the vector math
// kernels), the other transcendental functions on its vector kernels (vector_math.h):
// each gives the scalar formulas' bits.
// A row is computed a block of kBlock floats at a time, on the stack, so a run allocates
// nothing; threads take whole rows. A step of f32 may also write its output cast to bf16
// (make_composite_rounding_step), each row rounded by the cast kernel's rounding
// (TileKernels::narrow_bf16) a few rows at a time, while they are in the cache; where
// nothing else reads the output, it writes the cast alone, each thread computing its rows
// in a chunk of the plan's shared scratch.
#include "graph/composite.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "device/cpu/fusion/fusion_tiles.h"
#include "device/cpu/kernels.h"
#include "device/cpu/kernels/composite_rows.h"
#include "device/cpu/products/gemm.h"
#include "graph/prims/scalar.h"

namespace sx::device::cpu {
namespace {

using namespace composite_rows;
using graph::DType;
using graph::PrimId;
namespace scalar = graph::prims::scalar;

// The cast kernel's rounding of f32 to bf16 (TileKernels::narrow_bf16).
using RoundToBf16 = void (*)(const float* x, graph::Bf16* o, int64_t n);

// Floats of a chunk of rows whose cast is written at once: a few rows at a time, still in
// the L1 cache (a row's cast written right after the row is computed waits on its last
// stores: a softmax's takes a quarter longer).
constexpr int64_t kChunkFloats = 4096;

// What a step writes: its output (out[0]); or that and its output cast to bf16 (out[1]);
// or the cast alone (out[0]), each part (parallel_parts) computing a chunk of its rows'
// output at a time in its own chunk of `scratch`. A cast is written by steps of f32 only.
struct Writes {
  RoundToBf16 round = nullptr;       // null: no cast
  SharedScratch* scratch = nullptr;  // null: the output is written
  int64_t chunk_rows = 1;            // rows of a chunk
  int64_t scratch_chunk = 0;         // floats a part's chunk takes in scratch

  // Calls compute(row, y) for rows [begin, end) of part `part`, rows `length` elements
  // long of the output's `total`, y where it computes the row; writes the cast of each
  // chunk of rows after it.
  template <class S, class Compute>
  void rows(uint8_t* const* out, int part, int64_t begin, int64_t end, int64_t length, int64_t total,
            Compute compute) const {
    for (int64_t first = begin; first < end; first += chunk_rows) {
      const int64_t last = std::min(end, first + chunk_rows);
      S* y = scratch == nullptr ? reinterpret_cast<S*>(out[0]) + first * length
                                : reinterpret_cast<S*>(scratch->data.get()) + part * scratch_chunk;
      for (int64_t row = first; row < last; ++row) compute(row, y + (row - first) * length);
      if constexpr (std::is_same_v<S, float>) {
        if (round == nullptr) continue;
        const int64_t at = first * length;
        round(y, reinterpret_cast<graph::Bf16*>(out[scratch == nullptr ? 1 : 0]) + at,
              std::min(total, last * length) - at);
      }
    }
  }
};

// What a step of `threads` writes, its rows `length` floats long: the cast where `round`
// is given, not the output where !writes_output (scratch reserved for it).
Writes writes_for(const StepContext& c, RoundToBf16 round, bool writes_output, int threads, int64_t length) {
  Writes writes{.round = round, .chunk_rows = std::max<int64_t>(1, kChunkFloats / std::max<int64_t>(1, length))};
  if (round == nullptr || writes_output) return writes;
  constexpr int64_t kLineFloats = static_cast<int64_t>(kCacheLine / sizeof(float));
  writes.scratch = c.scratch;
  writes.scratch_chunk = (writes.chunk_rows * length + kLineFloats - 1) / kLineFloats * kLineFloats;
  c.scratch->reserve(static_cast<size_t>(threads * writes.scratch_chunk) * sizeof(float));
  return writes;
}

// (- x (+ m (log (sum (exp (- x m)))))), m = (reduce-max x), over each row.
template <class S>
void log_softmax_row(const S* x, S* y, int64_t n, const MathKernels* math, float* block) {
  const float shift = log_softmax_shift(x, n, math, block);
  for (int64_t i = 0; i < n; ++i) y[i] = S(static_cast<float>(x[i]) - shift);
}

template <class S>
MultiStep softmax_step(const Rows& r, const MathKernels* math, bool log, Writes writes) {
  return [r, math, log, writes](const uint8_t* const* in, uint8_t* const* out) {
    const S* x = reinterpret_cast<const S*>(in[0]);
    parallel_parts(r.rows, r.threads, [&](int part, int64_t begin, int64_t end) {
      Block storage;
      writes.rows<S>(out, part, begin, end, r.length, r.rows * r.length, [&](int64_t row, S* y) {
        if (log) log_softmax_row(x + row * r.length, y, r.length, math, storage.floats);
        else softmax_row(x + row * r.length, y, r.length, math, storage.floats);
      });
    });
  };
}

// layer_norm (centered) or rms_norm of a row: d = x - mean (layer) or x (rms), then
// d * rsqrt(mean(d * d) + eps), times the weight w and plus the bias b where given.
template <class S, bool Centered>
void norm_row(const S* x, const S* w, const S* b, S* y, int64_t n, NormConstants k, float* block) {
  const NormStatistics stats = norm_statistics<S, Centered>(x, n, k, block);
  for (int64_t i = 0; i < n; ++i) {
    float v = rounded<S>(stats.centered<S, Centered>(x[i]) * stats.inverse);
    if (w != nullptr) v = rounded<S>(v * static_cast<float>(w[i]));
    if (b != nullptr) v = v + static_cast<float>(b[i]);
    y[i] = S(v);
  }
}

template <class S, bool Centered>
MultiStep norm_step(const Rows& r, NormConstants k, int weight, int bias, const MathKernels* math, Writes writes) {
  const NormRowKernel whole_row = takes_whole_rows<S>(math, r.length) ? math->composite.norm_row[Centered] : nullptr;
  return [r, k, weight, bias, whole_row, writes](const uint8_t* const* in, uint8_t* const* out) {
    const S* x = reinterpret_cast<const S*>(in[0]);
    const S* w = weight > 0 ? reinterpret_cast<const S*>(in[weight]) : nullptr;
    const S* b = bias > 0 ? reinterpret_cast<const S*>(in[bias]) : nullptr;
    parallel_parts(r.rows, r.threads, [&](int part, int64_t begin, int64_t end) {
      Block storage;
      writes.rows<S>(out, part, begin, end, r.length, r.rows * r.length, [&](int64_t row, S* y) {
        if constexpr (std::is_same_v<S, float>) {
          if (whole_row != nullptr) {
            whole_row(x + row * r.length, w, b, y, r.length, k);
            return;
          }
        }
        norm_row<S, Centered>(x + row * r.length, w, b, y, r.length, k, storage.floats);
      });
    });
  };
}

// tanh: (* (* 0.5 x) (+ 1 (tanh (* 0.7978845608028654 (+ x (* (* (* 0.044715 x) x) x))))))
// erf:  (* (* 0.5 x) (+ 1 (erf (* x 0.7071067811865476))))
template <class S, bool Tanh>
void gelu_formula(const S* x, S* y, int64_t n, const GeluConstants& k, float* block) {
  for (int64_t i = 0; i < n; ++i) {
    const float v = static_cast<float>(x[i]);
    if constexpr (Tanh) {
      const float cube = rounded<S>(rounded<S>(rounded<S>(k.cubic * v) * v) * v);
      block[i] = rounded<S>(k.scale * rounded<S>(v + cube));
    } else {
      block[i] = rounded<S>(v * k.scale);
    }
  }
  if constexpr (Tanh) apply_fn<scalar::Tanh>(nullptr, MathFn::tanh, block, n);
  else apply_fn<scalar::Erf>(nullptr, MathFn::erf, block, n);
  for (int64_t i = 0; i < n; ++i) {
    const float one_plus = rounded<S>(k.one + rounded<S>(block[i]));
    y[i] = S(rounded<S>(k.half * static_cast<float>(x[i])) * one_plus);
  }
}

// gelu of a block of x, its members in registers where the instruction set has them.
template <class S, bool Tanh>
void gelu_block(const S* x, S* y, int64_t n, const GeluConstants& k, const MathKernels* math, float* block) {
  by_lanes(
      x, y, n, math, block,
      [&](const float* in, float* out, int64_t count) {
        math->composite.gelu[Tanh ? 0 : 1][kLanesBf16<S>](in, out, count, k);
      },
      [&](const S* in, S* out, int64_t count) { gelu_formula<S, Tanh>(in, out, count, k, block); });
}

template <class S, bool Tanh>
MultiStep gelu_step(int64_t n, int threads, GeluConstants k, const MathKernels* math, Writes writes) {
  return [n, threads, k, math, writes](const uint8_t* const* in, uint8_t* const* out) {
    const S* x = reinterpret_cast<const S*>(in[0]);
    parallel_parts((n + kBlock - 1) / kBlock, threads, [&](int part, int64_t begin, int64_t end) {
      Block storage;
      writes.rows<S>(out, part, begin, end, kBlock, n, [&](int64_t blk, S* y) {
        const int64_t at = blk * kBlock;
        gelu_block<S, Tanh>(x + at, y, std::min(kBlock, n - at), k, math, storage.floats);
      });
    });
  };
}

// Work per element in adds: a row of exps, of a norm's few operations.
constexpr int64_t kRowWork = kCostly, kNormWork = 4;

MultiStep make_softmax(const StepContext& c, const graph::Node& node, RoundToBf16 round, bool writes_output) {
  const graph::Node& x = c.graph.node(node.inputs[0]);
  const Rows r = rows_of(c, node, *softmax_row_length(x, node.attrs.get_ints("axes")), kRowWork);
  const bool log = node.op() == PrimId::log_softmax;
  const MathKernels* math = math_kernels_for(c.kernels.isa);
  const Writes writes = writes_for(c, round, writes_output, r.threads, r.length);
  return by_float_dtype(
      node.dtype, [&](auto types) { return softmax_step<typename decltype(types)::storage>(r, math, log, writes); });
}

template <bool Centered>
MultiStep make_norm(const StepContext& c, const graph::Node& node, RoundToBf16 round, bool writes_output) {
  const int64_t length = node.shape.back();
  const Rows r = rows_of(c, node, length, kNormWork);
  const NormConstants k{.length = literal_in(node.dtype, static_cast<double>(length)),
                        .eps = literal_in(node.dtype, node.attrs.get_double("eps"))};
  const int weight = node.attrs.get_int("weight") != 0 ? 1 : 0;
  const int bias = Centered && node.attrs.get_int("bias") != 0 ? weight + 1 : 0;
  const MathKernels* math = math_kernels_for(c.kernels.isa);
  const Writes writes = writes_for(c, round, writes_output, r.threads, r.length);
  return by_float_dtype(node.dtype, [&](auto types) {
    return norm_step<typename decltype(types)::storage, Centered>(r, k, weight, bias, math, writes);
  });
}

MultiStep make_gelu(const StepContext& c, const graph::Node& node, RoundToBf16 round, bool writes_output) {
  const int64_t n = graph::numel(node.shape);
  const int threads = threads_for(n * kCostly, c.cores);
  const bool tanh = node.attrs.get_string("form") == "tanh";
  const DType dtype = node.dtype;
  const GeluConstants k{.cubic = literal_in(dtype, 0.044715),
                        .scale = literal_in(dtype, tanh ? 0.7978845608028654 : 0.7071067811865476),
                        .one = literal_in(dtype, 1),
                        .half = literal_in(dtype, 0.5)};
  const MathKernels* math = math_kernels_for(c.kernels.isa);
  const Writes writes = writes_for(c, round, writes_output, threads, kBlock);
  return by_float_dtype(dtype, [&](auto types) {
    using S = typename decltype(types)::storage;
    return tanh ? gelu_step<S, true>(n, threads, k, math, writes) : gelu_step<S, false>(n, threads, k, math, writes);
  });
}

using MakeComposite = MultiStep (*)(const StepContext& c, const graph::Node& node, RoundToBf16 round,
                                    bool writes_output);

MakeComposite composite_maker(PrimId op) {
  switch (op) {
    case PrimId::softmax:
    case PrimId::log_softmax: return make_softmax;
    case PrimId::layer_norm: return make_norm<true>;
    case PrimId::rms_norm: return make_norm<false>;
    default: return make_gelu;
  }
}

// The step table's row: the composite's output alone.
Step make_composite(const StepContext& c, const graph::Node& node) {
  return [step = composite_maker(node.op())(c, node, nullptr, true)](const uint8_t* const* in, uint8_t* out) {
    step(in, &out);
  };
}

bool float_kernel_dtype(DType dtype) { return dtype == DType::f32 || dtype == DType::bf16; }

// The step table's row of a composite's gradient: its kernel (composite_gradient.cc),
// which runs_composite took.
Step make_gradient(const StepContext& c, const graph::Node& node) {
  if (graph::gradient_of(node.attrs).id == PrimId::cross_entropy) return make_cross_entropy_gradient_step(c, node);
  return make_composite_gradient_step(c, graph::gradient_of(node.attrs).id, graph::differentiated_attrs(node.attrs),
                                      static_cast<size_t>(node.attrs.get_int("input")), node.inputs);
}

}  // namespace

bool writes_rounded_cast(PrimId op) {
  return op == PrimId::softmax || op == PrimId::log_softmax || op == PrimId::layer_norm || op == PrimId::rms_norm ||
         op == PrimId::gelu;
}

bool runs_composite(const graph::Graph& graph, const graph::Node& node) {
  if (is_update(node.op())) return runs_update(node);
  if (node.op() == PrimId::attention) return runs_attention(graph, node);
  if (node.op() == PrimId::composite_gradient) {
    return runs_composite_gradient(graph, graph::gradient_of(node.attrs).id, graph::differentiated_attrs(node.attrs),
                                   static_cast<size_t>(node.attrs.get_int("input")), node.inputs);
  }
  if (!float_kernel_dtype(node.dtype) || node.inputs.empty()) return false;
  if (node.op() == PrimId::cross_entropy) return runs_cross_entropy(graph, node.inputs);
  const graph::Node& x = graph.node(node.inputs[0]);
  if (x.dtype != node.dtype || x.shape != node.shape) return false;
  switch (node.op()) {
    case PrimId::softmax:
    case PrimId::log_softmax: return softmax_row_length(x, node.attrs.get_ints("axes")).has_value();
    case PrimId::layer_norm:
    case PrimId::rms_norm:
      if (x.shape.empty()) return false;
      for (size_t k = 1; k < node.inputs.size(); ++k) {
        if (!fits_row(graph.node(node.inputs[k]), x)) return false;
      }
      return true;
    case PrimId::gelu: {
      const std::string& form = node.attrs.get_string("form");
      return form == "tanh" || form == "erf";
    }
    default: return false;
  }
}

MultiStep make_composite_rounding_step(const StepContext& context, const graph::Node& node, bool writes_output) {
  return composite_maker(node.op())(context, node, tile_kernels_for(context.kernels.isa).narrow_bf16, writes_output);
}

void add_composite_steps(StepTable& table) {
  for (PrimId op : {PrimId::softmax, PrimId::log_softmax, PrimId::layer_norm, PrimId::rms_norm, PrimId::gelu}) {
    table.set(op, make_composite);
  }
  table.set(PrimId::cross_entropy, make_cross_entropy_step);
  table.set(PrimId::composite_gradient, make_gradient);
  table.set(PrimId::attention, make_attention_step, absorbs_attention_operand);
}

}  // namespace sx::device::cpu
