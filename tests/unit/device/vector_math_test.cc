// The vector kernels of exp, log, tanh, erf, logistic, sin and cos give the scalar
// instance's bits (graph/prims/lane_math.h) on every instruction set this processor
// runs, and the cpu device gives the reference device's bits for those primitives
// under each instruction set, in f32 and bf16, over whole vectors and tails. An
// instruction set the processor lacks is skipped, and the test says so; scripts/test
// runs these again as other processors (processor_chosen_tests).
#include "device/cpu/kernels/vector_math.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "device/cpu/isa.h"
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

}  // namespace
}  // namespace sx::device::testing
