// The accuracy of our f32 exp, log, tanh, erf, logistic, sin and cos (the scalar
// instance of graph/prims/lane_math.h, exp_f32 and the others, which the reference
// kernels run and every vector instance matches bit for bit): every 97th bit pattern of f32 and the values
// where functions go wrong (zeros, infinities, NaN, subnormals, the edges of the
// range, large arguments), against the double-precision std:: functions. The bounds
// asserted are those docs/tensors.md states.
#include "graph/prims/lane_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace sx::graph::lane_math {
namespace {

using L = std::numeric_limits<float>;

struct Function {
  std::string name;
  float (*f32)(float);
  double (*f64)(double);
  double max_ulp;
};

const std::vector<Function>& functions() {
  static const std::vector<Function> list{
      {"exp", &exp_f32, [](double x) { return std::exp(x); }, 1.0},
      {"log", &log_f32, [](double x) { return std::log(x); }, 1.0},
      {"tanh", &tanh_f32, [](double x) { return std::tanh(x); }, 1.5},
      {"logistic", &logistic_f32, [](double x) { return 1 / (1 + std::exp(-x)); }, 1.5},
      {"erf", &erf_f32, [](double x) { return std::erf(x); }, 1.5},
      {"sin", &sin_f32, [](double x) { return std::sin(x); }, 2.0},
      {"cos", &cos_f32, [](double x) { return std::cos(x); }, 2.0},
  };
  return list;
}

float from_bits(uint32_t bits) {
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

// The error of `got` in units in the last place of the f32 nearest `exact`; infinite
// when they disagree on NaN or on infinity.
double ulp_error(float got, double exact) {
  if (std::isnan(exact) || std::isnan(got)) return std::isnan(exact) && std::isnan(got) ? 0 : INFINITY;
  auto rounded = static_cast<float>(exact);
  if (std::isinf(rounded) || std::isinf(got)) return got == rounded ? 0 : INFINITY;
  double ulp = std::fabs(exact) < L::min() ? std::ldexp(1.0, -149) : std::ldexp(1.0, std::ilogb(exact) - 23);
  return std::fabs(got - exact) / ulp;
}

// The values of f32 where the functions' edges are.
std::vector<float> edge_values() {
  constexpr float inf = L::infinity(), nan = L::quiet_NaN(), sub = L::denorm_min(), low = L::min(), high = L::max();
  const float largest_subnormal = from_bits(0x007fffff);
  std::vector<float> v{0.0f, -0.0f, inf, -inf, nan, -nan, sub, -sub, low, -low, high, -high, largest_subnormal};
  for (float x :
       {1.0f,         -1.0f,       0.5f,        88.7228317f, 88.7228394f, 89.0f,       -87.3365479f, -103.972076f,
        -103.972084f, -104.0f,     0.625f,      0.921875f,   3.9375f,     9.01f,       9.1f,         -9.1f,
        0.785398185f, 1.57079637f, 3.14159274f, 131071.992f, 131072.0f,   131072.016f, 1e6f,         1e10f,
        1e20f,        1e30f,       -1e38f,      6.5e6f,      8388608.0f,  16777216.0f}) {
    v.push_back(x);
  }
  for (float x : std::vector<float>(v)) v.push_back(std::nextafter(x, 0.0f));
  return v;
}

void check_accuracy(const Function& fn) {
  double worst = 0;
  float worst_at = 0;
  auto check = [&](float x) {
    double error = ulp_error(fn.f32(x), fn.f64(x));
    if (error > worst || std::isnan(error)) worst = error, worst_at = x;
  };
  for (uint64_t bits = 0; bits < (uint64_t{1} << 32); bits += 97) check(from_bits(static_cast<uint32_t>(bits)));
  for (float x : edge_values()) check(x);
  std::printf("%s: largest error %.3f ulp, at %a\n", fn.name.c_str(), worst, static_cast<double>(worst_at));
  EXPECT_LE(worst, fn.max_ulp) << fn.name << ": " << worst << " ulp at " << worst_at << " (" << std::hexfloat
                               << worst_at << ")";
}

TEST(LaneMath, ExpWithinItsBound) { check_accuracy(functions()[0]); }
TEST(LaneMath, LogWithinItsBound) { check_accuracy(functions()[1]); }
TEST(LaneMath, TanhWithinItsBound) { check_accuracy(functions()[2]); }
TEST(LaneMath, LogisticWithinItsBound) { check_accuracy(functions()[3]); }
TEST(LaneMath, ErfWithinItsBound) { check_accuracy(functions()[4]); }
TEST(LaneMath, SinWithinItsBound) { check_accuracy(functions()[5]); }
TEST(LaneMath, CosWithinItsBound) { check_accuracy(functions()[6]); }

// What IEEE 754 and C give at the edges, exactly (signed zeros by their bits).
TEST(LaneMath, SpecialValuesFollowIeee) {
  constexpr float inf = L::infinity();
  struct Expect {
    float (*f)(float);
    float x, want;
  };
  const Expect cases[] = {
      {&exp_f32, -inf, 0.0f},       {&exp_f32, inf, inf},         {&exp_f32, 0.0f, 1.0f},
      {&exp_f32, -0.0f, 1.0f},      {&exp_f32, 88.7228394f, inf}, {&exp_f32, -104.0f, 0.0f},
      {&log_f32, 0.0f, -inf},       {&log_f32, -0.0f, -inf},      {&log_f32, inf, inf},
      {&log_f32, 1.0f, 0.0f},       {&tanh_f32, inf, 1.0f},       {&tanh_f32, -inf, -1.0f},
      {&tanh_f32, 0.0f, 0.0f},      {&tanh_f32, -0.0f, -0.0f},    {&tanh_f32, 9.02f, 1.0f},
      {&logistic_f32, inf, 1.0f},   {&logistic_f32, -inf, 0.0f},  {&logistic_f32, 0.0f, 0.5f},
      {&logistic_f32, -0.0f, 0.5f}, {&erf_f32, inf, 1.0f},        {&erf_f32, -inf, -1.0f},
      {&erf_f32, 0.0f, 0.0f},       {&erf_f32, -0.0f, -0.0f},     {&erf_f32, 4.0f, 1.0f},
      {&sin_f32, 0.0f, 0.0f},       {&sin_f32, -0.0f, -0.0f},     {&cos_f32, 0.0f, 1.0f},
      {&cos_f32, -0.0f, 1.0f},
  };
  for (const Expect& c : cases) {
    float got = c.f(c.x);
    EXPECT_EQ(std::memcmp(&got, &c.want, sizeof got), 0) << "at " << c.x << ": got " << got << ", want " << c.want;
  }
  for (const Function& fn : functions()) {
    EXPECT_TRUE(std::isnan(fn.f32(L::quiet_NaN()))) << fn.name << "(NaN)";
  }
  for (float x : {-1.0f, -L::denorm_min(), -inf}) EXPECT_TRUE(std::isnan(log_f32(x))) << "log(" << x << ")";
  for (float x : {inf, -inf}) {
    EXPECT_TRUE(std::isnan(sin_f32(x))) << "sin(" << x << ")";
    EXPECT_TRUE(std::isnan(cos_f32(x))) << "cos(" << x << ")";
  }
}

}  // namespace
}  // namespace sx::graph::lane_math
