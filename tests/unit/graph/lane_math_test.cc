// The accuracy of our f32 exp, log, tanh, erf, logistic, sin and cos (the scalar
// instance of graph/prims/lane_math.h, exp_f32 and the others, which the reference
// kernels run and every vector instance matches bit for bit): every 97th bit pattern of f32 and the values
// where functions go wrong (zeros, infinities, NaN, subnormals, the edges of the
// range, large arguments), against the double-precision std:: functions. The bounds
// asserted are those docs/tensors.md states.
#include "graph/prims/lane_math.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "graph/prims/pio2_reduction.h"

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

// An independent statement of sin's and cos's exact reduction of a large argument: the
// same product of a's significand and 2/pi's bits, in one 128-bit multiplication.
__extension__ typedef unsigned __int128 uint128;  // GCC's and clang's; ISO C++ has none

void reduce_in_128_bits(float a, float* r, int32_t* q) {
  // a = m 2^e, m an integer of 24 bits; a 2/pi = sum of m 2^(e - i) over the bits b_i of
  // 2/pi (i from 1). The terms with i <= e - 2 are multiples of 4, whole turns: skip them
  // and take the next 96 bits.
  int exponent = 0;
  const auto m = static_cast<uint64_t>(std::ldexp(std::frexp(a, &exponent), 24));
  const int e = exponent - 24, first = std::max(e - 1, 1), word = (first - 1) / 32, bit = (first - 1) % 32;
  const uint32_t* two_over_pi = kTwoOverPiBits;
  uint128 window = 0;
  for (int k = 0; k < 4; ++k) window = (window << 32) | two_over_pi[word + k];
  if (bit > 0) window = (window << bit) | (two_over_pi[word + 4] >> (32 - bit));
  uint128 product = m * (window >> 32);  // a 2/pi modulo 4, scaled by 2^shift
  int shift = first + 95 - e;
  int32_t quadrant = int32_t(product >> shift) & 3;
  // The fraction's top 64 bits, taken as signed: a fraction of a half or more is the
  // next quadrant less the rest.
  auto fraction = static_cast<int64_t>(static_cast<uint64_t>((product << (128 - shift)) >> 64));
  if (fraction < 0) quadrant = (quadrant + 1) & 3;
  *r = static_cast<float>(static_cast<double>(fraction) * 0x1.921fb54442d18p-64);  // times pi/2 / 2^64
  *q = quadrant;
}

// pio2_reduction.h's reduction in 64-bit limbs (the host's and the cuda kernels') gives
// the 128-bit one's bits over every exponent it takes.
TEST(LaneMath, LargeArgumentsReduceAsIn128Bits) {
  uint32_t large;
  std::memcpy(&large, &kSinCosLarge, sizeof large);
  std::vector<uint32_t> cases = {large + 1, 0x7f7fffff, 0x4b800000, 0x5a000000, 0x7f000000};
  for (uint32_t bits = large + 1; bits < 0x7f7fffff; bits += 977) cases.push_back(bits);
  int differ = 0;
  for (uint32_t bits : cases) {
    float a, r, r128;
    std::memcpy(&a, &bits, sizeof a);
    int32_t q, q128;
    reduce_pio2_large(a, &r, &q);
    reduce_in_128_bits(a, &r128, &q128);
    if (std::memcmp(&r, &r128, sizeof r) != 0 || q != q128) {
      if (++differ <= 5)
        ADD_FAILURE() << a << ": " << r << " in quadrant " << q << ", in 128 bits " << r128 << " in " << q128;
    }
  }
  EXPECT_EQ(differ, 0) << "of " << cases.size();
  EXPECT_GT(cases.size(), 900000u);
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

// random_normal's draw (normal): the same Box-Muller in double from the same two
// 24-bit uniforms, within a stated distance (f32's log and cos, and 2 pi u2 rounded
// to f32, each a few ulps); and the draws of a million words distributed as a
// standard normal (their moments, and the largest gap between their distribution
// function and Phi: the Kolmogorov-Smirnov statistic, under 1.63 / sqrt(n) at the
// 1% level).
TEST(LaneMath, NormalIsBoxMullerOfItsWordsAndDistributedNormally) {
  constexpr int kDraws = 1 << 20;
  std::mt19937 rng(5);
  std::vector<double> draws;
  double most = 0, largest = 0;
  for (int d = 0; d < kDraws; ++d) {
    auto w0 = static_cast<int32_t>(rng()), w1 = static_cast<int32_t>(rng());
    double u1 = ((static_cast<uint32_t>(w0) >> 8) + 1) * 0x1p-24, u2 = (static_cast<uint32_t>(w1) >> 8) * 0x1p-24;
    double exact = std::sqrt(-2 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
    float got = normal_f32(w0, w1);
    most = std::max(most, std::abs(got - exact));
    largest = std::max(largest, std::abs(static_cast<double>(got)));
    draws.push_back(got);
  }
  EXPECT_LE(most, 2.5e-6) << "farthest from Box-Muller in double";
  EXPECT_LE(largest, 5.7686) << "sqrt(48 ln 2) bounds every draw";
  double mean = 0, square = 0;
  for (double v : draws) mean += v / kDraws, square += v * v / kDraws;
  EXPECT_NEAR(mean, 0.0, 0.003);
  EXPECT_NEAR(square, 1.0, 0.003);
  std::sort(draws.begin(), draws.end());
  double gap = 0;
  for (size_t i = 0; i < draws.size(); ++i) {
    double phi = 0.5 * std::erfc(-draws[i] / std::sqrt(2.0));
    gap = std::max({gap, std::abs(phi - static_cast<double>(i) / kDraws), std::abs(phi - (i + 1.0) / kDraws)});
  }
  EXPECT_LT(gap, 1.63 / std::sqrt(double{kDraws}));
  std::printf("normal: %.3g from Box-Muller in double at most, KS statistic %.3g\n", most, gap);
  // u1 = 1 (w0's top 24 bits all set) is a radius of +0, so a draw of +0, not -0.
  float zero = normal_f32(-1, 0);
  EXPECT_EQ(zero, 0.0f);
  EXPECT_FALSE(std::signbit(zero));
}

}  // namespace
}  // namespace sx::graph::lane_math
