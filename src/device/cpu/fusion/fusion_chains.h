// Fused programs that run in registers: a few chains of elementwise members that the
// models we ship run on every step (GELU and its gradient, in f32 and bf16, and the
// AdamW update of each parameter), compiled
// ahead of time, one vector at a time through all members. The interpreter (fusion.cc)
// loads and stores every member's tile in the first-level cache: about 4 cycles per
// vector per member on a Zen 4, where the operation itself takes one. A program whose
// members, operands and roundings are those of a chain here runs by the chain's
// kernel instead; any other runs by the interpreter. Each member is the same
// operation on the same values (the lane_math kernels for tanh and exp, each result
// rounded to bf16 where the interpreter rounds it), so the bits are the same.
//
// A chain is data: its operands' count and its members, each a primitive with its
// sources (slots: the operands first, then the members in order, as FusedProgram
// numbers them). Adding one adds a ChainProgram and its place in kChainPrograms.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <tuple>
#include <utility>

#include "graph/primitive.h"
#include "graph/prims/lane_math.h"

namespace sx::device::cpu {

struct ChainOp {
  graph::PrimId prim = graph::PrimId::add;
  int8_t a = 0, b = -1;  // source slots; b is -1 for a unary member
  bool to_bf16 = false;  // its value rounded to bf16 (a member of dtype bf16)
  int8_t c = -1;         // a where's third source (a the condition, b and c the choices)

  friend constexpr bool operator==(const ChainOp&, const ChainOp&) = default;
};

template <size_t N>
struct ChainProgram {
  int loads = 0;  // operands: slots [0, loads)
  std::array<ChainOp, N> ops{};
};

// A chain's kernel: for i < n (a multiple of the vector width), members[m][i] =
// member m of loads[0..][i], for each m whose pointer is not null.
using ChainKernel = void (*)(const float* const* loads, float* const* members, int64_t n);

namespace chains {
using graph::PrimId;
constexpr ChainOp op(PrimId prim, int a, int b = -1, bool to_bf16 = false) {
  return {prim, static_cast<int8_t>(a), static_cast<int8_t>(b), to_bf16};
}
constexpr PrimId add = PrimId::add, sub = PrimId::sub, mul = PrimId::mul, div = PrimId::div, sqrt = PrimId::sqrt,
                 cast = PrimId::cast, tanh = PrimId::tanh;

// sexpgpu/ops's gelu after a product and its bias: operands the product, the bias and
// the constants 0.044715, 0.7978845608, 1 and 0.5.
inline constexpr ChainProgram<10> kGelu{6,
                                        {op(add, 0, 1), op(mul, 2, 6), op(mul, 7, 6), op(mul, 8, 6), op(add, 6, 9),
                                         op(mul, 3, 10), op(tanh, 11), op(add, 4, 12), op(mul, 5, 6), op(mul, 14, 13)}};
// The same on a bf16 product, its result rounded to bf16.
inline constexpr ChainProgram<12> kGeluBf16{
    6,
    {op(cast, 0), op(add, 6, 1), op(mul, 2, 7), op(mul, 8, 7), op(mul, 9, 7), op(add, 7, 10), op(mul, 3, 11),
     op(tanh, 12), op(add, 4, 13), op(mul, 5, 7), op(mul, 15, 14), op(cast, 16, -1, true)}};
// gelu's gradient, on the product that gives the gradient of its result: operands the
// product, then what the forward pass kept and the constants.
inline constexpr ChainProgram<21> kGeluGradient{
    8, {op(add, 0, 1),   op(mul, 2, 8),   op(mul, 9, 8),  op(add, 3, 4),  op(mul, 5, 8),   op(mul, 6, 11),
        op(mul, 6, 12),  op(mul, 13, 5),  op(mul, 4, 4),  op(sub, 3, 16), op(mul, 14, 17), op(mul, 18, 7),
        op(mul, 19, 8),  op(mul, 19, 10), op(mul, 20, 8), op(mul, 20, 9), op(mul, 22, 2),  op(add, 15, 19),
        op(add, 25, 21), op(add, 26, 23), op(add, 27, 24)}};
inline constexpr ChainProgram<23> kGeluGradientBf16{
    8, {op(cast, 0),     op(add, 8, 1),   op(mul, 2, 9),   op(mul, 10, 9),  op(add, 3, 4),  op(mul, 5, 9),
        op(cast, 6),     op(mul, 14, 12), op(mul, 14, 13), op(mul, 15, 5),  op(mul, 4, 4),  op(sub, 3, 18),
        op(mul, 16, 19), op(mul, 20, 7),  op(mul, 21, 9),  op(mul, 21, 11), op(mul, 22, 9), op(mul, 22, 10),
        op(mul, 24, 2),  op(add, 17, 21), op(add, 27, 23), op(add, 28, 25), op(add, 29, 26)}};
// The training step's AdamW update of one parameter with clipped gradients
// (train/optimizer.h): operands the gradient, the parameter, the moments and the
// step's scalars; members the clipped gradient, both moments, the decayed parameter
// and its update.
inline constexpr ChainProgram<15> kAdamW{
    13,
    {op(mul, 0, 1), op(mul, 2, 3), op(mul, 4, 5), op(mul, 6, 13), op(add, 15, 16), op(mul, 7, 8), op(mul, 9, 13),
     op(mul, 19, 13), op(add, 18, 20), op(sqrt, 21), op(div, 22, 10), op(add, 23, 11), op(mul, 12, 17), op(div, 25, 24),
     op(add, 14, 26)}};
// The same for a parameter without weight decay (a :weight-decay 0.0 group).
inline constexpr ChainProgram<14> kAdamWWithoutDecay{
    12,
    {op(mul, 0, 1), op(mul, 2, 3), op(mul, 4, 12), op(add, 13, 14), op(mul, 5, 6), op(mul, 7, 12), op(mul, 17, 12),
     op(add, 16, 18), op(sqrt, 19), op(div, 20, 8), op(add, 21, 9), op(mul, 10, 15), op(div, 23, 22), op(add, 11, 24)}};
}  // namespace chains

inline constexpr auto kChainPrograms =
    std::tuple{chains::kGelu,  chains::kGeluBf16,         chains::kGeluGradient, chains::kGeluGradientBf16,
               chains::kAdamW, chains::kAdamWWithoutDecay};
inline constexpr size_t kChainCount = std::tuple_size_v<decltype(kChainPrograms)>;
// The most members a chain has (FusedProgram keeps a pointer per member on its stack).
inline constexpr size_t kMaxChainMembers = 32;
static_assert(std::apply([](const auto&... p) { return ((p.ops.size() <= kMaxChainMembers) && ...); }, kChainPrograms));

// The index of the first of `programs` (a tuple) that `matches`, or -1.
template <class Programs, class Matches>
int find_program(const Programs& programs, Matches matches) {
  int found = -1;
  std::apply(
      [&](const auto&... program) {
        int index = 0;
        ((found < 0 && matches(program) ? found = index : 0, ++index), ...);
      },
      programs);
  return found;
}

// The index in kChainPrograms of the chain with these operands and members, or -1.
inline int find_chain(int loads, std::span<const ChainOp> ops) {
  return find_program(kChainPrograms, [&](const auto& program) {
    return program.loads == loads && std::equal(ops.begin(), ops.end(), program.ops.begin(), program.ops.end());
  });
}

// The rest is templates over V (graph/prims/lane_math.h's contract), instantiated by
// the vector math files of each instruction set (vector_math.h).

// x rounded to bf16 and widened back, as graph::Bf16 rounds: to nearest even, a NaN
// kept quiet.
template <class V>
typename V::f round_to_bf16(typename V::f x) {
  using I = typename V::i;
  const I bits = V::bits(x);
  const I odd = V::iand(V::template sar<16>(bits), V::splat_i(1));
  const I high = V::splat_i(static_cast<int32_t>(0xffff0000u));
  const I rounded = V::iand(V::iadd(bits, V::iadd(V::splat_i(0x7fff), odd)), high);
  const I quiet = V::ior(V::iand(bits, high), V::splat_i(0x400000));
  return V::select(V::is_nan(x), V::from_bits(quiet), V::from_bits(rounded));
}

template <class V, ChainOp Op>
typename V::f chain_step(const typename V::f* r) {
  using graph::PrimId;
  typename V::f value;
  if constexpr (Op.prim == PrimId::add) value = V::add(r[Op.a], r[Op.b]);
  else if constexpr (Op.prim == PrimId::sub) value = V::sub(r[Op.a], r[Op.b]);
  else if constexpr (Op.prim == PrimId::mul) value = V::mul(r[Op.a], r[Op.b]);
  else if constexpr (Op.prim == PrimId::div) value = V::div(r[Op.a], r[Op.b]);
  else if constexpr (Op.prim == PrimId::sqrt) value = V::sqrt(r[Op.a]);
  else if constexpr (Op.prim == PrimId::rsqrt) value = V::div(V::splat(1.0f), V::sqrt(r[Op.a]));
  else if constexpr (Op.prim == PrimId::neg)
    value = V::from_bits(V::ixor(V::bits(r[Op.a]), V::splat_i(static_cast<int32_t>(0x80000000u))));
  else if constexpr (Op.prim == PrimId::where)  // a != 0 ? b : c, a NaN counting as true
    value = V::select(V::eq(r[Op.a], V::splat(0.0f)), r[Op.c], r[Op.b]);
  else if constexpr (Op.prim == PrimId::cast) value = r[Op.a];
  else if constexpr (Op.prim == PrimId::tanh) value = graph::lane_math::tanh<V>(r[Op.a]);
  else if constexpr (Op.prim == PrimId::exp) value = graph::lane_math::exp<V>(r[Op.a]);
  else static_assert(Op.prim == PrimId::add, "a chain member of a primitive chain_step does not compute");
  if constexpr (Op.to_bf16) value = round_to_bf16<V>(value);
  return value;
}

template <class V, auto Program>
[[gnu::flatten]] void run_chain(const float* const* loads, float* const* members, int64_t n) {
  constexpr size_t kLoads = static_cast<size_t>(Program.loads), kMembers = Program.ops.size();
  for (int64_t i = 0; i < n; i += V::width) {
    typename V::f r[kLoads + kMembers];
    [&]<size_t... K>(std::index_sequence<K...>) { ((r[K] = V::load(loads[K] + i)), ...); }
    (std::make_index_sequence<kLoads>{});
    [&]<size_t... M>(std::index_sequence<M...>) {
      ((r[kLoads + M] = chain_step<V, Program.ops[M]>(r),
        members[M] ? V::store(members[M] + i, r[kLoads + M]) : void()),
       ...);
    }
    (std::make_index_sequence<kMembers>{});
  }
}

template <class V>
std::array<ChainKernel, kChainCount> make_chain_kernels() {
  return [&]<size_t... I>(std::index_sequence<I...>) {
    return std::array<ChainKernel, kChainCount>{&run_chain<V, std::get<I>(kChainPrograms)>...};
  }
  (std::make_index_sequence<kChainCount>{});
}

}  // namespace sx::device::cpu
