// Fused programs over whole rows that run in registers: the softmax of attention's
// scores, the layer-norms after a block's projections, and their gradients. The
// interpreter (fusion.cc) runs such a program a member at a time over a tile of rows,
// each member loading and storing its tile; here a row goes through a phase at a time,
// a vector at a time through every member of the phase, its reductions (sums, maxima)
// in lane registers. A phase ends at the reductions whose values the next reads: a
// softmax's max, then its exponentials' total, then the division. A member that a later
// phase reads is kept in a buffer of one row, in the first-level cache; the others never
// leave registers.
//
// Each member is the same operation on the same values as in the interpreter, and each
// row's sum adds in row_reduce.h's order (lane r % 16, then the same tree), so the bits
// are the interpreter's; a maximum is that of the lanes where the row has no NaN and the
// result is not zero, else row_reduce.h's (the same cases as there).
//
// A program is data, as fusion_chains.h's: its operands' count, which of them are values
// a row (or one value for every row), and its members, each a ChainOp and what it
// computes. Adding one adds a RowChainProgram and its place in kRowChainPrograms.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <tuple>
#include <utility>

#include "device/cpu/fusion/fusion_chains.h"
#include "device/cpu/kernels/row_reduce.h"

namespace sx::device::cpu {

// A member's value: an element of the row (tile), a value a row from values a row (row),
// or the row's sum or maximum of one of its elements' members or operands.
enum class RowKind : uint8_t { tile, row, sum, max };

struct RowChainOp {
  ChainOp op;
  RowKind kind = RowKind::tile;

  friend constexpr bool operator==(const RowChainOp&, const RowChainOp&) = default;
};

template <size_t N>
struct RowChainProgram {
  int loads = 0;  // operands: slots [0, loads)
  // Bit k: operand k is a value a row, or one value for all that a value a row reads
  // (an operand a member of the elements reads is loaded a vector at a time).
  uint32_t row_loads = 0;
  std::array<RowChainOp, N> ops{};
};

// A row program's kernel over `rows` rows of `length` elements (a multiple of 16, at
// least 32): loads[k] is operand k's tile (row r's element i at r * length + i) or its
// rows' values (row r's at r); members[m] is where member m is written, likewise, or
// null; `buffers` holds kRowChainBuffers rows.
using RowChainKernel = void (*)(const float* const* loads, float* const* members, int64_t rows, int64_t length,
                                float* buffers);
inline constexpr int kRowChainBuffers = 4;
inline constexpr size_t kMaxRowChainSlots = 48;
inline constexpr int kMaxRowChainPhases = 6;

// When each slot's value is there, and where members a later phase reads are kept. A
// member of the elements is computed in the phase of its latest source: 0 for an
// operand, a member's own, and for a value a row, the phase after its reduction's.
struct RowChainLayout {
  bool valid = true;
  int phases = 1;  // vector loops over a row
  std::array<bool, kMaxRowChainSlots> is_row{};
  std::array<int, kMaxRowChainSlots> phase{};   // an element's phase; a row value's first phase
  std::array<int, kMaxRowChainSlots> buffer{};  // a member's row buffer, or -1
  int buffers = 0;
  std::array<std::array<bool, kMaxRowChainPhases>, kMaxRowChainSlots> read_in{};  // by a loop's member
};

constexpr RowChainLayout row_chain_layout(int loads, uint32_t row_loads, std::span<const RowChainOp> ops) {
  RowChainLayout layout;
  const auto slots = static_cast<size_t>(loads) + ops.size();
  if (slots > kMaxRowChainSlots || loads > 32) return RowChainLayout{.valid = false};
  for (int k = 0; k < loads; ++k) layout.is_row[static_cast<size_t>(k)] = ((row_loads >> k) & 1u) != 0;
  int last_loop = 0;
  for (size_t m = 0; m < ops.size(); ++m) {
    const RowChainOp& op = ops[m];
    const size_t slot = static_cast<size_t>(loads) + m;
    int phase = 0;
    bool any_row = false, any_element = false;
    for (int source : {int{op.op.a}, int{op.op.b}, int{op.op.c}}) {
      if (source < 0) continue;
      if (static_cast<size_t>(source) >= slot) return RowChainLayout{.valid = false};
      phase = std::max(phase, layout.phase[static_cast<size_t>(source)]);
      (layout.is_row[static_cast<size_t>(source)] ? any_row : any_element) = true;
    }
    switch (op.kind) {
      case RowKind::tile:
        layout.phase[slot] = phase;
        last_loop = std::max(last_loop, phase);
        break;
      case RowKind::row:
        if (any_element) return RowChainLayout{.valid = false};
        layout.is_row[slot] = true;
        layout.phase[slot] = phase;
        break;
      case RowKind::sum:
      case RowKind::max:
        if (any_row || op.op.b >= 0) return RowChainLayout{.valid = false};
        layout.is_row[slot] = true;
        layout.phase[slot] = phase + 1;
        last_loop = std::max(last_loop, phase);
        break;
    }
  }
  layout.phases = last_loop + 1;
  if (layout.phases >= kMaxRowChainPhases) return RowChainLayout{.valid = false};
  layout.buffer.fill(-1);
  for (size_t m = 0; m < ops.size(); ++m) {
    const RowChainOp& op = ops[m];
    const size_t slot = static_cast<size_t>(loads) + m;
    if (op.kind == RowKind::row) continue;
    // The loop that reads the sources: an element's own phase, a reduction's source's.
    const int loop = op.kind == RowKind::tile ? layout.phase[slot] : layout.phase[slot] - 1;
    for (int source : {int{op.op.a}, int{op.op.b}, int{op.op.c}}) {
      if (source < 0) continue;
      const auto from = static_cast<size_t>(source);
      layout.read_in[from][static_cast<size_t>(loop)] = true;
      const bool element_member = from >= static_cast<size_t>(loads) && !layout.is_row[from];
      // Kept for a later phase, or for a maximum that row_reduce.h takes again.
      if (element_member && layout.buffer[from] < 0 && (layout.phase[from] < loop || op.kind == RowKind::max))
        layout.buffer[from] = layout.buffers++;
    }
    // A maximum of an operand keeps its row too: a member of its phase may lie over it.
    if (op.kind == RowKind::max && static_cast<size_t>(op.op.a) < static_cast<size_t>(loads)) {
      layout.buffer[slot] = layout.buffers++;
    }
  }
  if (layout.buffers > kRowChainBuffers) return RowChainLayout{.valid = false};
  return layout;
}

namespace row_chains {
using graph::PrimId;
constexpr RowChainOp tile(PrimId prim, int a, int b = -1, int c = -1) {
  return {{prim, static_cast<int8_t>(a), static_cast<int8_t>(b), false, static_cast<int8_t>(c)}, RowKind::tile};
}
constexpr RowChainOp row(PrimId prim, int a, int b = -1) {
  return {{prim, static_cast<int8_t>(a), static_cast<int8_t>(b), false, -1}, RowKind::row};
}
// A cast whose value is rounded to bf16: a bf16 program's result.
constexpr RowChainOp to_bf16(int a) { return {{PrimId::cast, static_cast<int8_t>(a), -1, true, -1}, RowKind::tile}; }
constexpr RowChainOp sum(int a) { return {{PrimId::add, static_cast<int8_t>(a), -1, false, -1}, RowKind::sum}; }
constexpr RowChainOp max(int a) { return {{PrimId::add, static_cast<int8_t>(a), -1, false, -1}, RowKind::max}; }
constexpr PrimId add = PrimId::add, sub = PrimId::sub, mul = PrimId::mul, div = PrimId::div, exp = PrimId::exp,
                 neg = PrimId::neg, rsqrt = PrimId::rsqrt, where = PrimId::where, cast = PrimId::cast;

// sexpgpu/nn's attention weights after the query-key product: operands the product, its
// scale (`scale`: times 1 / sqrt(head), exact where the head is 4^k, else divided by
// sqrt(head)), the causal mask and the masked score; members the scaled and masked
// scores, their max, the shifted scores, their exponentials, the total and the weights.
constexpr RowChainProgram<7> softmax(PrimId scale) {
  return {
      4, 0, {tile(scale, 0, 1), tile(where, 2, 4, 3), max(5), tile(sub, 5, 6), tile(exp, 7), sum(8), tile(div, 8, 9)}};
}
// Its gradient after the product that gives the weights' gradient: operands the
// exponentials, their total, that product, the mask, the zero of masked scores and the
// scale.
constexpr RowChainProgram<10> softmax_gradient(PrimId scale) {
  return {6,
          0b10,
          {tile(div, 0, 1), tile(div, 2, 1), tile(mul, 2, 6), tile(div, 8, 1), tile(neg, 9), sum(10), tile(add, 7, 11),
           tile(mul, 12, 0), tile(where, 3, 13, 4), tile(scale, 14, 5)}};
}
// The same after a bf16 product (the bf16 policy): the scores widened first, the weights
// rounded to bf16 last.
constexpr RowChainProgram<9> softmax_bf16(PrimId scale) {
  return {4,
          0,
          {tile(cast, 0), tile(scale, 4, 1), tile(where, 2, 5, 3), max(6), tile(sub, 6, 7), tile(exp, 8), sum(9),
           tile(div, 9, 10), to_bf16(11)}};
}
constexpr RowChainProgram<12> softmax_gradient_bf16(PrimId scale) {
  return {6,
          0b10,
          {tile(div, 0, 1), tile(cast, 2), tile(div, 7, 1), tile(mul, 7, 6), tile(div, 9, 1), tile(neg, 10), sum(11),
           tile(add, 8, 12), tile(mul, 13, 0), tile(where, 3, 14, 4), tile(scale, 15, 5), to_bf16(16)}};
}
inline constexpr RowChainProgram<7> kSoftmax = softmax(mul), kSoftmaxDivided = softmax(div);
inline constexpr RowChainProgram<9> kSoftmaxBf16 = softmax_bf16(mul), kSoftmaxBf16Divided = softmax_bf16(div);
inline constexpr RowChainProgram<12> kSoftmaxGradientBf16 = softmax_gradient_bf16(mul),
                                     kSoftmaxGradientBf16Divided = softmax_gradient_bf16(div);
inline constexpr RowChainProgram<10> kSoftmaxGradient = softmax_gradient(mul),
                                     kSoftmaxGradientDivided = softmax_gradient(div);
// sexpgpu/ops's normalize with a weight and a bias, after a projection's bias and the
// residual add: operands the product, its bias, the residual, 1 / the row's length
// (the row's length where the mean divides by it: `dividing`, below),
// epsilon, the weight and the bias; members the sum, the mean, the centred row, its
// squares, their sum, the variance, plus epsilon, its reciprocal root, the normalized
// row, scaled, shifted.
inline constexpr RowChainProgram<13> kLayerNorm{
    7,
    0b11000,
    {tile(add, 0, 1), tile(add, 2, 7), sum(8), row(mul, 9, 3), tile(sub, 8, 10), tile(mul, 11, 11), sum(12),
     row(mul, 13, 3), row(add, 14, 4), row(rsqrt, 15), tile(mul, 11, 16), tile(mul, 17, 5), tile(add, 18, 6)}};
// The same after the first block's attention, whose residual is the embeddings' sum.
inline constexpr RowChainProgram<14> kLayerNormOfThree{
    8,
    0b110000,
    {tile(add, 0, 1), tile(add, 2, 3), tile(add, 8, 9), sum(10), row(mul, 11, 4), tile(sub, 10, 12), tile(mul, 13, 13),
     sum(14), row(mul, 15, 4), row(add, 16, 5), row(rsqrt, 17), tile(mul, 13, 18), tile(mul, 19, 6), tile(add, 20, 7)}};
// The three after bf16 products: the product widened first, the result rounded to bf16.
inline constexpr RowChainProgram<15> kLayerNormBf16{
    7,
    0b11000,
    {tile(cast, 0), tile(add, 7, 1), tile(add, 2, 8), sum(9), row(mul, 10, 3), tile(sub, 9, 11), tile(mul, 12, 12),
     sum(13), row(mul, 14, 3), row(add, 15, 4), row(rsqrt, 16), tile(mul, 12, 17), tile(mul, 18, 5), tile(add, 19, 6),
     to_bf16(20)}};
inline constexpr RowChainProgram<16> kLayerNormOfThreeBf16{
    8,
    0b110000,
    {tile(add, 0, 1), tile(cast, 2), tile(add, 9, 3), tile(add, 8, 10), sum(11), row(mul, 12, 4), tile(sub, 11, 13),
     tile(mul, 14, 14), sum(15), row(mul, 16, 4), row(add, 17, 5), row(rsqrt, 18), tile(mul, 14, 19), tile(mul, 20, 6),
     tile(add, 21, 7), to_bf16(22)}};
inline constexpr RowChainProgram<13> kLayerNormOfTwoBf16{
    6,
    0b1100,
    {tile(add, 0, 1), sum(6), row(mul, 7, 2), tile(sub, 6, 8), tile(mul, 9, 9), sum(10), row(mul, 11, 2),
     row(add, 12, 3), row(rsqrt, 13), tile(mul, 9, 14), tile(mul, 15, 4), tile(add, 16, 5), to_bf16(17)}};
// The same after the embeddings: operands the two embeddings summed, then as above.
inline constexpr RowChainProgram<12> kLayerNormOfTwo{
    6,
    0b1100,
    {tile(add, 0, 1), sum(6), row(mul, 7, 2), tile(sub, 6, 8), tile(mul, 9, 9), sum(10), row(mul, 11, 2),
     row(add, 12, 3), row(rsqrt, 13), tile(mul, 9, 14), tile(mul, 15, 4), tile(add, 16, 5)}};
// The layer-norm's gradient by its input, as its composite_gradient expands in a stack of
// blocks (the residuals' two gradients summed first), where the forward's input is
// recomputed from a projection's bias and a residual (OfSum), in a lone block
// (WithResidual), or with the residual's gradient added elsewhere (Alone): operands the
// forward's rows and values a row (mean, reciprocal root, variance plus epsilon), the
// gradient flowing back and the weight (their product the first member the sums read),
// 1 / the row's length, in autodiff's order. The layer-norm's own two contributions are
// summed, then added to the residual's gradient.
inline constexpr RowChainProgram<18> kLayerNormGradient{
    10,
    0x3ca,
    {tile(sub, 0, 1), tile(add, 2, 3), tile(mul, 4, 5), tile(mul, 12, 6), tile(mul, 12, 10), sum(14), row(mul, 7, 6),
     row(div, 16, 8), row(mul, 15, 17), row(mul, 18, 9), tile(mul, 19, 10), tile(add, 13, 20), tile(add, 21, 20),
     tile(neg, 22), sum(23), row(mul, 24, 9), tile(add, 22, 25), tile(add, 11, 26)}};
inline constexpr RowChainProgram<18> kLayerNormGradientOfSum{
    10,
    0x1e4,
    {tile(add, 0, 1), tile(sub, 10, 2), tile(mul, 3, 4), tile(mul, 12, 5), tile(mul, 12, 11), sum(14), row(mul, 6, 5),
     row(div, 16, 7), row(mul, 15, 17), row(mul, 18, 8), tile(mul, 19, 11), tile(add, 13, 20), tile(add, 21, 20),
     tile(neg, 22), sum(23), row(mul, 24, 8), tile(add, 22, 25), tile(add, 9, 26)}};
inline constexpr RowChainProgram<16> kLayerNormGradientAlone{
    8,
    0xf2,
    {tile(sub, 0, 1), tile(mul, 2, 3), tile(mul, 9, 4), tile(mul, 9, 8), sum(11), row(mul, 5, 4), row(div, 13, 6),
     row(mul, 12, 14), row(mul, 15, 7), tile(mul, 16, 8), tile(add, 10, 17), tile(add, 18, 17), tile(neg, 19), sum(20),
     row(mul, 21, 7), tile(add, 19, 22)}};
inline constexpr RowChainProgram<17> kLayerNormGradientWithResidual{
    9,
    0xf2,
    {tile(sub, 0, 1), tile(mul, 2, 3), tile(mul, 10, 4), tile(mul, 10, 9), sum(12), row(mul, 5, 4), row(div, 14, 6),
     row(mul, 13, 15), row(mul, 16, 7), tile(mul, 17, 9), tile(add, 11, 18), tile(add, 19, 18), tile(neg, 20), sum(21),
     row(mul, 22, 7), tile(add, 20, 23), tile(add, 8, 24)}};

// `program` with its operand `operand` widened from bf16 by a member placed at `at`,
// which the members read in the operand's place: a gradient after a bf16 product.
template <size_t N>
constexpr RowChainProgram<N + 1> widening(const RowChainProgram<N>& program, int at, int operand) {
  RowChainProgram<N + 1> widened{program.loads, program.row_loads, {}};
  const int cast_slot = program.loads + at;
  auto moved = [&](int8_t source) {
    if (source == operand) return static_cast<int8_t>(cast_slot);
    return static_cast<int8_t>(source >= cast_slot ? source + 1 : source);
  };
  for (size_t m = 0, to = 0; m < N; ++m, ++to) {
    if (static_cast<int>(m) == at) widened.ops[to++] = tile(cast, operand);
    RowChainOp op = program.ops[m];
    op.op.a = moved(op.op.a);
    op.op.b = op.op.b < 0 ? op.op.b : moved(op.op.b);
    op.op.c = op.op.c < 0 ? op.op.c : moved(op.op.c);
    widened.ops[to] = op;
  }
  return widened;
}
inline constexpr RowChainProgram<19> kLayerNormGradientBf16 = widening(kLayerNormGradient, 2, 4);
inline constexpr RowChainProgram<19> kLayerNormGradientOfSumBf16 = widening(kLayerNormGradientOfSum, 2, 3);
inline constexpr RowChainProgram<17> kLayerNormGradientAloneBf16 = widening(kLayerNormGradientAlone, 1, 2);
inline constexpr RowChainProgram<18> kLayerNormGradientWithResidualBf16 =
    widening(kLayerNormGradientWithResidual, 1, 2);

// `program` with each value a row that it multiplies by operand `length` divided by that
// operand instead: a layer-norm over rows whose length has no exact reciprocal in f32
// (768, say), where the library's mean divides by the length.
template <size_t N>
constexpr RowChainProgram<N> dividing(const RowChainProgram<N>& program, int length) {
  RowChainProgram<N> divided = program;
  int changed = 0;
  for (RowChainOp& op : divided.ops) {
    if (op.kind == RowKind::row && op.op.prim == mul && op.op.b == length) {
      op.op.prim = div;
      ++changed;
    }
  }
  if (changed == 0) throw "dividing: the program multiplies nothing by that operand";  // not a constant then
  return divided;
}
inline constexpr RowChainProgram<13> kLayerNormDivided = dividing(kLayerNorm, 3);
inline constexpr RowChainProgram<14> kLayerNormOfThreeDivided = dividing(kLayerNormOfThree, 4);
inline constexpr RowChainProgram<12> kLayerNormOfTwoDivided = dividing(kLayerNormOfTwo, 2);
inline constexpr RowChainProgram<15> kLayerNormBf16Divided = dividing(kLayerNormBf16, 3);
inline constexpr RowChainProgram<16> kLayerNormOfThreeBf16Divided = dividing(kLayerNormOfThreeBf16, 4);
inline constexpr RowChainProgram<13> kLayerNormOfTwoBf16Divided = dividing(kLayerNormOfTwoBf16, 2);
inline constexpr RowChainProgram<18> kLayerNormGradientDivided = dividing(kLayerNormGradient, 9);
inline constexpr RowChainProgram<18> kLayerNormGradientOfSumDivided = dividing(kLayerNormGradientOfSum, 8);
inline constexpr RowChainProgram<16> kLayerNormGradientAloneDivided = dividing(kLayerNormGradientAlone, 7);
inline constexpr RowChainProgram<17> kLayerNormGradientWithResidualDivided =
    dividing(kLayerNormGradientWithResidual, 7);
inline constexpr RowChainProgram<19> kLayerNormGradientBf16Divided = dividing(kLayerNormGradientBf16, 9);
inline constexpr RowChainProgram<19> kLayerNormGradientOfSumBf16Divided = dividing(kLayerNormGradientOfSumBf16, 8);
inline constexpr RowChainProgram<17> kLayerNormGradientAloneBf16Divided = dividing(kLayerNormGradientAloneBf16, 7);
inline constexpr RowChainProgram<18> kLayerNormGradientWithResidualBf16Divided =
    dividing(kLayerNormGradientWithResidualBf16, 7);
}  // namespace row_chains

inline constexpr auto kRowChainPrograms = std::tuple{row_chains::kSoftmax,
                                                     row_chains::kSoftmaxDivided,
                                                     row_chains::kSoftmaxGradient,
                                                     row_chains::kSoftmaxGradientDivided,
                                                     row_chains::kSoftmaxBf16,
                                                     row_chains::kSoftmaxBf16Divided,
                                                     row_chains::kSoftmaxGradientBf16,
                                                     row_chains::kSoftmaxGradientBf16Divided,
                                                     row_chains::kLayerNorm,
                                                     row_chains::kLayerNormOfThree,
                                                     row_chains::kLayerNormOfTwo,
                                                     row_chains::kLayerNormBf16,
                                                     row_chains::kLayerNormOfThreeBf16,
                                                     row_chains::kLayerNormOfTwoBf16,
                                                     row_chains::kLayerNormGradient,
                                                     row_chains::kLayerNormGradientOfSum,
                                                     row_chains::kLayerNormGradientAlone,
                                                     row_chains::kLayerNormGradientWithResidual,
                                                     row_chains::kLayerNormGradientBf16,
                                                     row_chains::kLayerNormGradientOfSumBf16,
                                                     row_chains::kLayerNormGradientAloneBf16,
                                                     row_chains::kLayerNormGradientWithResidualBf16,
                                                     row_chains::kLayerNormDivided,
                                                     row_chains::kLayerNormOfThreeDivided,
                                                     row_chains::kLayerNormOfTwoDivided,
                                                     row_chains::kLayerNormBf16Divided,
                                                     row_chains::kLayerNormOfThreeBf16Divided,
                                                     row_chains::kLayerNormOfTwoBf16Divided,
                                                     row_chains::kLayerNormGradientDivided,
                                                     row_chains::kLayerNormGradientOfSumDivided,
                                                     row_chains::kLayerNormGradientAloneDivided,
                                                     row_chains::kLayerNormGradientWithResidualDivided,
                                                     row_chains::kLayerNormGradientBf16Divided,
                                                     row_chains::kLayerNormGradientOfSumBf16Divided,
                                                     row_chains::kLayerNormGradientAloneBf16Divided,
                                                     row_chains::kLayerNormGradientWithResidualBf16Divided};
inline constexpr size_t kRowChainCount = std::tuple_size_v<decltype(kRowChainPrograms)>;
static_assert(std::apply([](const auto&... p) { return (row_chain_layout(p.loads, p.row_loads, p.ops).valid && ...); },
                         kRowChainPrograms));

// The index in kRowChainPrograms of the program with these operands and members, or -1.
inline int find_row_chain(int loads, uint32_t row_loads, std::span<const RowChainOp> ops) {
  return find_program(kRowChainPrograms, [&](const auto& program) {
    return program.loads == loads && program.row_loads == row_loads &&
           std::equal(ops.begin(), ops.end(), program.ops.begin(), program.ops.end());
  });
}

// The rest is templates over V (graph/prims/lane_math.h's contract), instantiated by
// the vector math files of each instruction set (vector_math.h).

template <class V>
float first_lane(typename V::f x) {
  alignas(64) float lanes[V::width];
  V::store(lanes, x);
  return lanes[0];
}

// One row's phase Q: first the row values it is the first to read, then (Q below the
// loops' count) a loop over the row's vectors.
template <class V, auto Program, int Q>
void run_row_phase(const float* const* loads, float* const* members, int64_t r, int64_t length, float* buffers,
                   typename V::f* reg) {
  using F = typename V::f;
  static constexpr RowChainLayout kLayout = row_chain_layout(Program.loads, Program.row_loads, Program.ops);
  constexpr int kLoads = Program.loads;
  constexpr size_t kOps = Program.ops.size();
  // A sum's 16 lanes in vectors: lane l of element r % 16 (AVX2: two of 8).
  constexpr int kAccs = static_cast<int>(LaneSums<float>::kLanes) / V::width;
  static_assert(kAccs * V::width == LaneSums<float>::kLanes);
  const int64_t at = r * length;
  auto each_op = [&]<class Fn>(Fn&& fn) {
    [&]<size_t... M>(std::index_sequence<M...>) { (fn(std::integral_constant<size_t, M>{}), ...); }
    (std::make_index_sequence<kOps>{});
  };
  each_op([&](auto m) {
    constexpr size_t M = decltype(m)::value, S = kLoads + M;
    if constexpr (Program.ops[M].kind == RowKind::row && kLayout.phase[S] == Q) {
      reg[S] = chain_step<V, Program.ops[M].op>(reg);
      if (members[M]) members[M][r] = first_lane<V>(reg[S]);
    }
  });
  if constexpr (Q < kLayout.phases) {
    F sums[kOps][kAccs], best[kOps], unordered[kOps];
    each_op([&](auto m) {
      constexpr size_t M = decltype(m)::value, S = kLoads + M;
      if constexpr (Program.ops[M].kind == RowKind::sum && kLayout.phase[S] == Q + 1) {
        for (int u = 0; u < kAccs; ++u) sums[M][u] = V::splat(0.0f);
      } else if constexpr (Program.ops[M].kind == RowKind::max && kLayout.phase[S] == Q + 1) {
        best[M] = V::splat(-std::numeric_limits<float>::infinity());
        unordered[M] = V::splat(0.0f);
      }
    });
    auto vector = [&]<int U>(int64_t j, std::integral_constant<int, U>) {
      [&]<size_t... K>(std::index_sequence<K...>) {
        ((!kLayout.is_row[K] && kLayout.read_in[K][Q] ? void(reg[K] = V::load(loads[K] + at + j)) : void()), ...);
      }
      (std::make_index_sequence<static_cast<size_t>(kLoads)>{});
      each_op([&](auto m) {
        constexpr size_t M = decltype(m)::value, S = kLoads + M;
        constexpr RowChainOp op = Program.ops[M];
        if constexpr (op.kind == RowKind::tile && kLayout.phase[S] < Q && kLayout.read_in[S][Q]) {
          reg[S] = V::load(buffers + kLayout.buffer[S] * length + j);
        } else if constexpr (op.kind == RowKind::tile && kLayout.phase[S] == Q) {
          reg[S] = chain_step<V, op.op>(reg);
          if (members[M]) V::store(members[M] + at + j, reg[S]);
          if constexpr (kLayout.buffer[S] >= 0) V::store(buffers + kLayout.buffer[S] * length + j, reg[S]);
        } else if constexpr (op.kind == RowKind::sum && kLayout.phase[S] == Q + 1) {
          sums[M][U] = V::add(sums[M][U], reg[op.op.a]);
        } else if constexpr (op.kind == RowKind::max && kLayout.phase[S] == Q + 1) {
          const F v = reg[op.op.a];
          best[M] = V::select(V::gt(v, best[M]), v, best[M]);
          unordered[M] = V::select(V::is_nan(v), V::splat(1.0f), unordered[M]);
          if constexpr (kLayout.buffer[S] >= 0) V::store(buffers + kLayout.buffer[S] * length + j, v);
        }
      });
    };
    for (int64_t j = 0; j < length; j += kAccs * V::width) {
      [&]<int... U>(std::integer_sequence<int, U...>) {
        (vector(j + U * V::width, std::integral_constant<int, U>{}), ...);
      }
      (std::make_integer_sequence<int, kAccs>{});
    }
    each_op([&](auto m) {
      constexpr size_t M = decltype(m)::value, S = kLoads + M;
      constexpr RowChainOp op = Program.ops[M];
      if constexpr ((op.kind == RowKind::sum || op.kind == RowKind::max) && kLayout.phase[S] == Q + 1) {
        alignas(64) float lanes[LaneSums<float>::kLanes];
        float value;
        if constexpr (op.kind == RowKind::sum) {
          for (int u = 0; u < kAccs; ++u) V::store(lanes + u * V::width, sums[M][u]);
          LaneSums<float> lane_sums;
          std::memcpy(static_cast<void*>(lane_sums.lanes), lanes, sizeof lanes);
          value = lane_sums.finish(static_cast<const float*>(nullptr), 0);
        } else {
          // Without NaNs any order of the comparisons finds the same maximum: a tree.
          V::store(lanes, best[M]);
          for (int width = V::width / 2; width > 0; width /= 2) {
            for (int l = 0; l < width; ++l) lanes[l] = lanes[l + width] > lanes[l] ? lanes[l + width] : lanes[l];
          }
          value = lanes[0];
          if (V::any(V::gt(unordered[M], V::splat(0.0f))) || value == 0.0f) {
            constexpr int kRow = kLayout.buffer[S] >= 0 ? kLayout.buffer[S] : kLayout.buffer[op.op.a];
            value = reduce_row<float, float>(ReduceKind::max, buffers + kRow * length, length);
          }
        }
        reg[S] = V::splat(value);
        if (members[M]) members[M][r] = value;
      }
    });
  }
}

template <class V, auto Program>
void run_row_chain(const float* const* loads, float* const* members, int64_t rows, int64_t length, float* buffers) {
  static constexpr RowChainLayout kLayout = row_chain_layout(Program.loads, Program.row_loads, Program.ops);
  constexpr size_t kLoads = static_cast<size_t>(Program.loads), kSlots = kLoads + Program.ops.size();
  for (int64_t r = 0; r < rows; ++r) {
    typename V::f reg[kSlots];
    [&]<size_t... K>(std::index_sequence<K...>) {
      ((kLayout.is_row[K] ? void(reg[K] = V::splat(loads[K][r])) : void()), ...);
    }
    (std::make_index_sequence<kLoads>{});
    [&]<int... Q>(std::integer_sequence<int, Q...>) {
      (run_row_phase<V, Program, Q>(loads, members, r, length, buffers, reg), ...);
    }
    (std::make_integer_sequence<int, kLayout.phases + 1>{});
  }
}

template <class V>
std::array<RowChainKernel, kRowChainCount> make_row_chain_kernels() {
  return [&]<size_t... I>(std::index_sequence<I...>) {
    return std::array<RowChainKernel, kRowChainCount>{&run_row_chain<V, std::get<I>(kRowChainPrograms)>...};
  }
  (std::make_index_sequence<kRowChainCount>{});
}

}  // namespace sx::device::cpu
