// The fused row programs that run in registers (device/cpu/fusion/fusion_row_chains.h) give,
// member for member, the bits of their members computed one at a time, each row's sums
// and maxima by row_reduce.h (the interpreter's and the reduce step's), on every
// instruction set this processor runs: over rows of activations' sizes and rows with
// NaNs, infinities, zeros of both signs, a maximum of zero, rows all masked and rows
// all equal; a bf16 program's result rounded as graph::Bf16 rounds.
// tests/unit/runtime/chains_test.cc checks that the library's softmax, layer-norms and
// their gradients are these programs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "device/cpu/fusion/fusion_row_chains.h"
#include "device/cpu/isa.h"
#include "device/cpu/kernels/row_reduce.h"
#include "device/cpu/kernels/vector_math.h"
#include "graph/tensor.h"

namespace sx::device::testing {
namespace {

using cpu::Isa;
using cpu::RowChainOp;
using cpu::RowKind;
using graph::PrimId;
using L = std::numeric_limits<float>;

float unrounded(const RowChainOp& row_op, float a, float b, float c) {
  switch (row_op.op.prim) {
    case PrimId::add: return a + b;
    case PrimId::sub: return a - b;
    case PrimId::mul: return a * b;
    case PrimId::div: return a / b;
    case PrimId::neg: return -a;
    case PrimId::rsqrt: return 1.0f / std::sqrt(a);
    case PrimId::exp: return graph::lane_math::exp_f32(a);
    case PrimId::where: return a != 0.0f ? b : c;
    case PrimId::cast: return a;
    default: ADD_FAILURE() << "a row chain member the test does not know"; return 0.0f;
  }
}

float element(const RowChainOp& row_op, float a, float b, float c) {
  const float value = unrounded(row_op, a, b, c);
  return row_op.op.to_bf16 ? static_cast<float>(graph::Bf16(value)) : value;
}

bool same(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0 || (std::isnan(a) && std::isnan(b)); }

// Row r of operand k: activations' sizes, and in some rows values at the edges. A mask
// (an operand the program reads as a where's condition) is 0 or 1 with some rows all 0.
std::vector<float> operand_row(size_t k, int64_t r, int64_t length, bool mask, std::mt19937& random) {
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> v(static_cast<size_t>(length));
  if (mask) {
    for (int64_t i = 0; i < length; ++i) v[static_cast<size_t>(i)] = r % 5 == 4 || i > length - 1 - r % 4 ? 0.0f : 1.0f;
    return v;
  }
  for (auto& x : v) x = normal(random);
  const float edges[] = {L::quiet_NaN(), L::infinity(), -L::infinity(), -0.0f, 0.0f, L::denorm_min(), -1e9f, L::max()};
  switch ((r + static_cast<int64_t>(k)) % 9) {
    case 1: v[static_cast<size_t>((r * 13) % length)] = edges[static_cast<size_t>(r / 9 + k) % std::size(edges)]; break;
    case 2: std::fill(v.begin(), v.end(), r % 2 ? -0.0f : 0.0f); break;  // a maximum of zero
    case 3: std::fill(v.begin(), v.end(), -2.5f); break;
    case 4:
      for (auto& x : v) x = -std::abs(x);
      v[static_cast<size_t>(length - 1)] = 0.0f;  // the maximum a zero at the end
      break;
    case 5:  // zeros of both signs the maximum: the first in the row's order wins
      for (auto& x : v) x = -1.0f - std::abs(x);
      v[3] = -0.0f;
      v[20] = 0.0f;
      break;
    default: break;
  }
  return v;
}

template <auto Program>
void check_row_chain(size_t index, const cpu::MathKernels& kernels, int64_t length) {
  constexpr int64_t rows = 37;
  const auto loads = static_cast<size_t>(Program.loads), members = Program.ops.size();
  std::mt19937 random(static_cast<uint32_t>(index * 101 + static_cast<size_t>(length)));
  auto is_row_load = [&](size_t k) { return ((Program.row_loads >> k) & 1u) != 0; };
  auto is_mask = [&](size_t k) {
    for (const RowChainOp& op : Program.ops)
      if (op.op.prim == PrimId::where && static_cast<size_t>(op.op.a) == k) return true;
    return false;
  };
  // Operands: a tile is rows x length, values a row one a row.
  std::vector<std::vector<float>> values(loads);
  for (size_t k = 0; k < loads; ++k) {
    for (int64_t r = 0; r < rows; ++r) {
      if (is_row_load(k)) {
        const float value = r % 4 == 3 ? 1.0f / static_cast<float>(length) : 0.5f + static_cast<float>(r % 3);
        values[k].push_back(r % 8 == 6 ? -1e9f : value);
      } else {
        auto row = operand_row(k, r, length, is_mask(k), random);
        values[k].insert(values[k].end(), row.begin(), row.end());
      }
    }
  }
  std::vector<const float*> load_pointers;
  for (const auto& v : values) load_pointers.push_back(v.data());
  auto is_row_member = [&](size_t m) { return Program.ops[m].kind != RowKind::tile; };
  for (bool all : {true, false}) {
    std::vector<std::vector<float>> got(members);
    std::vector<float*> member_pointers(members, nullptr);
    for (size_t m = 0; m < members; ++m) {
      got[m].assign(static_cast<size_t>(is_row_member(m) ? rows : rows * length), -7.0f);
      if (all || m + 1 == members || m % 3 == 1) member_pointers[m] = got[m].data();
    }
    std::vector<float> buffers(static_cast<size_t>(cpu::kRowChainBuffers * length));
    kernels.row_chains[index](load_pointers.data(), member_pointers.data(), rows, length, buffers.data());
    int mismatches = 0;
    for (int64_t r = 0; r < rows && mismatches < 5; ++r) {
      // Each slot's row (a value a row: one element), member by member.
      std::vector<std::vector<float>> slot;
      for (size_t k = 0; k < loads; ++k) {
        if (is_row_load(k)) slot.push_back({values[k][static_cast<size_t>(r)]});
        else slot.emplace_back(values[k].begin() + r * length, values[k].begin() + (r + 1) * length);
      }
      for (size_t m = 0; m < members; ++m) {
        const RowChainOp& op = Program.ops[m];
        auto at = [&](int source, int64_t i) {
          if (source < 0) return 0.0f;
          const auto& from = slot[static_cast<size_t>(source)];
          return from.size() == 1 ? from[0] : from[static_cast<size_t>(i)];
        };
        std::vector<float> result;
        if (op.kind == RowKind::sum) {
          result = {
              cpu::reduce_row<float, float>(cpu::ReduceKind::sum, slot[static_cast<size_t>(op.op.a)].data(), length)};
        } else if (op.kind == RowKind::max) {
          result = {
              cpu::reduce_row<float, float>(cpu::ReduceKind::max, slot[static_cast<size_t>(op.op.a)].data(), length)};
        } else {
          const int64_t n = op.kind == RowKind::row ? 1 : length;
          for (int64_t i = 0; i < n; ++i) result.push_back(element(op, at(op.op.a, i), at(op.op.b, i), at(op.op.c, i)));
        }
        slot.push_back(result);
        const auto n = static_cast<int64_t>(result.size());
        for (int64_t i = 0; i < n; ++i) {
          const float want = member_pointers[m] ? result[static_cast<size_t>(i)] : -7.0f;
          const float have = got[m][static_cast<size_t>(r * n + i)];
          if (!same(have, want)) {
            ++mismatches;
            ADD_FAILURE() << "row chain " << index << ", length " << length << ", member " << m << ", row " << r
                          << ", element " << i << ": got " << std::hexfloat << have << ", one member at a time gives "
                          << want;
            break;
          }
        }
      }
    }
  }
}

TEST(FusionRowChains, EveryRowChainGivesItsMembersBitsOnEveryInstructionSet) {
  int checked = 0;
  for (Isa isa : cpu::host_isas()) {
    const cpu::MathKernels* kernels = cpu::math_kernels_for(isa);
    if (kernels == nullptr) continue;  // scalar: programs run by the interpreter
    SCOPED_TRACE(cpu::isa_name(isa));
    for (int64_t length : {32, 128, 272}) {
      [&]<size_t... I>(std::index_sequence<I...>) {
        (check_row_chain<std::get<I>(cpu::kRowChainPrograms)>(I, *kernels, length), ...);
      }
      (std::make_index_sequence<cpu::kRowChainCount>{});
    }
    ++checked;
  }
  if (checked < 2) std::printf("checked %d vector instruction sets: this processor lacks the others\n", checked);
}

TEST(FusionRowChains, ARowChainIsFoundByItsOperandsKindsAndMembersAlone) {
  const auto& softmax = cpu::row_chains::kSoftmax;
  EXPECT_EQ(cpu::find_row_chain(softmax.loads, softmax.row_loads, softmax.ops), 0);
  EXPECT_EQ(cpu::find_row_chain(softmax.loads, softmax.row_loads | 2u, softmax.ops), -1);  // the scale a row
  std::vector<RowChainOp> other(softmax.ops.begin(), softmax.ops.end());
  other[2].kind = RowKind::sum;  // a total where the program takes the maximum
  EXPECT_EQ(cpu::find_row_chain(softmax.loads, softmax.row_loads, other), -1);
}

TEST(FusionRowChains, PhasesEndAtTheReductionsTheirMembersRead) {
  const auto& softmax = cpu::row_chains::kSoftmax;
  const cpu::RowChainLayout layout = cpu::row_chain_layout(softmax.loads, softmax.row_loads, softmax.ops);
  ASSERT_TRUE(layout.valid);
  EXPECT_EQ(layout.phases, 3);  // scores to their max, exponentials to their total, the division
  EXPECT_EQ(layout.phase[4 + 6], 2);
  EXPECT_GE(layout.buffer[4 + 1], 0);  // the masked scores: the max's row, and the next phase's
  EXPECT_GE(layout.buffer[4 + 4], 0);  // the exponentials, which the division reads
  EXPECT_EQ(layout.buffer[4 + 3], -1);
  // A value a row computed from an element's member is no program.
  std::vector<RowChainOp> bad(softmax.ops.begin(), softmax.ops.end());
  bad[3].kind = RowKind::row;
  EXPECT_FALSE(cpu::row_chain_layout(softmax.loads, softmax.row_loads, bad).valid);
}

}  // namespace
}  // namespace sx::device::testing
