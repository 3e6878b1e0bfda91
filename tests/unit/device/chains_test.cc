// The fused programs that run in registers (device/cpu/fusion/fusion_chains.h) give, member
// for member, the bits of their members computed one at a time by the scalar formulas
// (the interpreter's and the reference's), on every instruction set this processor
// runs, over values that include NaNs, infinities, zeros, subnormals and values whose
// bf16 rounding ties. tests/unit/runtime/chains_test.cc checks that the library's own
// GELU and its gradient are these programs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "device/cpu/fusion/fusion_chains.h"
#include "device/cpu/isa.h"
#include "device/cpu/kernels/vector_math.h"
#include "graph/tensor.h"

namespace sx::device::testing {
namespace {

using cpu::ChainOp;
using cpu::Isa;
using graph::PrimId;
using L = std::numeric_limits<float>;

float member(const ChainOp& op, const std::vector<float>& r) {
  const float a = r[static_cast<size_t>(op.a)], b = op.b >= 0 ? r[static_cast<size_t>(op.b)] : 0.0f;
  float value = 0;
  switch (op.prim) {
    case PrimId::add: value = a + b; break;
    case PrimId::sub: value = a - b; break;
    case PrimId::mul: value = a * b; break;
    case PrimId::div: value = a / b; break;
    case PrimId::sqrt: value = std::sqrt(a); break;
    case PrimId::cast: value = a; break;
    case PrimId::tanh: value = graph::lane_math::tanh_f32(a); break;
    case PrimId::exp: value = graph::lane_math::exp_f32(a); break;
    default: ADD_FAILURE() << "a chain member the test does not know"; break;
  }
  return op.to_bf16 ? static_cast<float>(graph::Bf16(value)) : value;
}

// n values of operand k: mostly of the size activations have, some at the edges.
std::vector<float> operand(size_t k, int64_t n) {
  std::mt19937 random(static_cast<uint32_t>(17 + k));
  std::normal_distribution<float> normal(0.0f, 2.0f);
  const float edges[] = {L::quiet_NaN(),  L::infinity(), -L::infinity(), 0.0f,        -0.0f,
                         L::denorm_min(), -L::min(),     L::max(),       1.00390625f, 1.01171875f,
                         -3.0078125f,     1e-30f,        -1e30f,         9.5f,        -0.044715f};
  std::vector<float> v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i) v[i] = i % 7 == k % 7 ? edges[(i / 7 + k) % std::size(edges)] : normal(random);
  return v;
}

bool same(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0 || (std::isnan(a) && std::isnan(b)); }

template <auto Program>
void check_chain(size_t index, const cpu::MathKernels& kernels) {
  constexpr int64_t n = 4096;
  const auto loads = static_cast<size_t>(Program.loads), members = Program.ops.size();
  std::vector<std::vector<float>> values;
  for (size_t k = 0; k < loads; ++k) values.push_back(operand(k, n));
  std::vector<const float*> load_pointers;
  for (const auto& v : values) load_pointers.push_back(v.data());
  // Every member written, then only the last and one before it: the others' stores are skipped.
  for (bool all : {true, false}) {
    std::vector<std::vector<float>> got(members, std::vector<float>(n, -7.0f));
    std::vector<float*> member_pointers(members, nullptr);
    for (size_t m = 0; m < members; ++m) {
      if (all || m + 1 == members || m == members / 2) member_pointers[m] = got[m].data();
    }
    kernels.chains[index](load_pointers.data(), member_pointers.data(), n);
    int mismatches = 0;
    for (int64_t i = 0; i < n && mismatches < 5; ++i) {
      std::vector<float> r;
      for (size_t k = 0; k < loads; ++k) r.push_back(values[k][static_cast<size_t>(i)]);
      for (size_t m = 0; m < members; ++m) {
        r.push_back(member(Program.ops[m], r));
        const float want = member_pointers[m] ? r.back() : -7.0f;
        if (!same(got[m][static_cast<size_t>(i)], want)) {
          ++mismatches;
          ADD_FAILURE() << "chain " << index << ", member " << m << ", element " << i << ": got " << std::hexfloat
                        << got[m][static_cast<size_t>(i)] << ", one member at a time gives " << want;
        }
      }
    }
  }
}

TEST(FusionChains, EveryChainGivesItsMembersBitsOnEveryInstructionSet) {
  int checked = 0;
  for (Isa isa : cpu::host_isas()) {
    const cpu::MathKernels* kernels = cpu::math_kernels_for(isa);
    if (kernels == nullptr) continue;  // scalar: programs run by the interpreter
    SCOPED_TRACE(cpu::isa_name(isa));
    [&]<size_t... I>(std::index_sequence<I...>) { (check_chain<std::get<I>(cpu::kChainPrograms)>(I, *kernels), ...); }
    (std::make_index_sequence<cpu::kChainCount>{});
    ++checked;
  }
  if (checked < 2) std::printf("checked %d vector instruction sets: this processor lacks the others\n", checked);
}

TEST(FusionChains, ARoundingToBf16IsBf16sOnEveryInstructionSet) {
  // Every 4099th bit pattern, then values whose low half is a tie (even and odd), one
  // past and one short of it, and NaNs whose payload lies in the low half alone.
  std::vector<uint32_t> patterns;
  for (uint64_t bits = 0; bits < (uint64_t{1} << 32); bits += 4099) patterns.push_back(static_cast<uint32_t>(bits));
  for (uint32_t high : {0x3f80u, 0x3f81u, 0xc07fu, 0x7f7fu, 0x0000u, 0x8001u, 0x7f80u, 0xff80u}) {
    for (uint32_t low : {0x8000u, 0x7fffu, 0x8001u, 0x0001u, 0xffffu}) patterns.push_back(high << 16 | low);
  }
  patterns.resize(patterns.size() / 16 * 16);
  std::vector<float> x(patterns.size()), y(patterns.size());
  std::memcpy(x.data(), patterns.data(), x.size() * sizeof(float));
  for (Isa isa : cpu::host_isas()) {
    const cpu::MathKernels* kernels = cpu::math_kernels_for(isa);
    if (kernels == nullptr) continue;
    SCOPED_TRACE(cpu::isa_name(isa));
    kernels->round_to_bf16(x.data(), y.data(), static_cast<int64_t>(x.size()));
    int mismatches = 0;
    for (size_t i = 0; i < x.size() && mismatches < 5; ++i) {
      const float want = static_cast<float>(graph::Bf16(x[i]));
      if (std::memcmp(&y[i], &want, sizeof want) != 0) {
        ++mismatches;
        ADD_FAILURE() << std::hex << "0x" << patterns[i] << ": got " << std::hexfloat << y[i] << ", Bf16 gives "
                      << want;
      }
    }
  }
}

TEST(FusionChains, AChainIsFoundByItsOperandsAndMembersAlone) {
  const auto& gelu = cpu::chains::kGelu;
  EXPECT_EQ(cpu::find_chain(gelu.loads, gelu.ops), 0);
  EXPECT_EQ(cpu::find_chain(gelu.loads + 1, gelu.ops), -1);
  std::vector<ChainOp> other(gelu.ops.begin(), gelu.ops.end());
  other[3].b = 7;  // a member that reads another source
  EXPECT_EQ(cpu::find_chain(gelu.loads, other), -1);
  other = {gelu.ops.begin(), gelu.ops.end() - 1};
  EXPECT_EQ(cpu::find_chain(gelu.loads, other), -1);
}

}  // namespace
}  // namespace sx::device::testing
