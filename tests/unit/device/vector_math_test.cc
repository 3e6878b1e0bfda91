// The vector kernels of exp, log, tanh, erf, logistic, sin and cos give the scalar
// instance's bits (graph/prims/lane_math.h) on every instruction set this processor
// runs, and the cpu device gives the reference device's bits for those primitives
// under each instruction set, in f32 and bf16, over whole vectors and tails; their
// rounding to bf16 (the composite kernels') gives graph::Bf16's bits. An
// instruction set the processor lacks is skipped, and the test says so; scripts/test
// runs these again as other processors (processor_chosen_tests).
#include "device/cpu/kernels/vector_math.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "device/cpu/isa.h"
#include "graph/tensor.h"
#include "util.h"

namespace sx::device::testing {
namespace {

using cpu::Isa;
using cpu::MathFn;
using L = std::numeric_limits<float>;

constexpr const char* kNames[] = {"exp", "log", "tanh", "erf", "logistic", "sin", "cos"};
float (*const kScalar[])(float) = {&graph::lane_math::exp_f32,      &graph::lane_math::log_f32,
                                   &graph::lane_math::tanh_f32,     &graph::lane_math::erf_f32,
                                   &graph::lane_math::logistic_f32, &graph::lane_math::sin_f32,
                                   &graph::lane_math::cos_f32};

// Every `step`th bit pattern of f32 (all signs and exponents, NaNs among them), then
// the edges: zeros, infinities, subnormals, range limits, large arguments.
std::vector<float> inputs(uint64_t step) {
  std::vector<float> v;
  for (uint64_t bits = 0; bits < (uint64_t{1} << 32); bits += step) {
    auto b = static_cast<uint32_t>(bits);
    float x;
    std::memcpy(&x, &b, sizeof x);
    v.push_back(x);
  }
  for (float x : {0.0f, -0.0f, L::infinity(), -L::infinity(), L::quiet_NaN(), L::denorm_min(), -L::min(), L::max(),
                  88.7228394f, -103.972084f, 0.625f, 9.1f, 0.921875f, 3.9375f, 131072.016f, 1e30f}) {
    v.push_back(x);
  }
  return v;
}

std::string which_skipped() {
  std::vector<Isa> host = cpu::host_isas();
  std::string skipped;
  for (Isa isa : {Isa::avx2, Isa::avx512}) {
    if (std::find(host.begin(), host.end(), isa) == host.end()) skipped += fmt::format(" {}", cpu::isa_name(isa));
  }
  return skipped;
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

TEST(VectorMath, EveryInstructionSetGivesTheScalarBits) {
  std::vector<float> x = inputs(9973);
  for (Isa isa : cpu::host_isas()) {
    const cpu::MathKernels* kernels = cpu::math_kernels_for(isa);
    if (kernels == nullptr) continue;
    SCOPED_TRACE(cpu::isa_name(isa));
    int64_t whole = static_cast<int64_t>(x.size()) / kernels->width * kernels->width;
    std::vector<float> y(x.size());
    for (int f = 0; f < cpu::kMathFnCount; ++f) {
      kernels->fn[f](x.data(), y.data(), whole);
      int mismatches = 0;
      for (int64_t i = 0; i < whole && mismatches < 5; ++i) {
        float want = kScalar[f](x[static_cast<size_t>(i)]);
        if (!same_bits(y[static_cast<size_t>(i)], want)) {
          ++mismatches;
          ADD_FAILURE() << kNames[f] << "(" << std::hexfloat << x[static_cast<size_t>(i)] << "): got "
                        << y[static_cast<size_t>(i)] << ", the scalar instance gives " << want;
        }
      }
    }
  }
  if (std::string skipped = which_skipped(); !skipped.empty()) {
    std::printf("skipped (this processor lacks them):%s\n", skipped.c_str());
  }
}

TEST(VectorMath, CpuGivesTheReferenceBitsOnEveryInstructionSet) {
  std::vector<float> values = inputs(99991);
  auto n = static_cast<int64_t>(values.size());  // not a multiple of 16: the tails run too
  for (graph::DType dtype : {graph::DType::f32, graph::DType::bf16}) {
    Tensor x(dtype, {n});
    for (int64_t i = 0; i < n; ++i) x.set_value(i, values[static_cast<size_t>(i)]);
    // f32 bit for bit (set_value goes through double, which would quiet a signaling NaN)
    if (dtype == graph::DType::f32) std::memcpy(x.data<float>(), values.data(), values.size() * sizeof(float));
    for (const char* name : kNames) {
      Graph g;
      graph::Builder b(g);
      b.output("y", b.op(name, {b.input("x", {n}, dtype)}));
      Tensor expected = run_on("reference", g, {x})[0];
      for (Isa isa : cpu::host_isas()) {
        for (int cores : {1, 0}) {
          auto device =
              make_device("cpu", DeviceOptions{.cpu_cores = cores, .cpu_isa = std::string(cpu::isa_name(isa))});
          Tensor actual = device->compile(g)->run_host(std::vector<Tensor>{x})[0];
          EXPECT_TRUE(testing::same_bits(actual, expected))
              << name << " " << graph::dtype_name(dtype) << " on " << cpu::isa_name(isa) << ", " << cores << " cores";
        }
      }
    }
  }
}

TEST(VectorMath, ARoundingToBf16IsBf16sOnEveryInstructionSet) {
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

}  // namespace
}  // namespace sx::device::testing
