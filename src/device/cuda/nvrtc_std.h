// The little of the C++ standard library that graph/prims/scalar.h, lane_math.h and
// philox.h and graph/bf16.h use, for the kernels NVRTC compiles (codegen.h): NVRTC has
// no standard headers, so this one stands for <array>, <bit>, <cmath>, <cstdint>,
// <cstring>, <limits> and <type_traits> there. The math functions are the CUDA device library's (libdevice):
// correctly rounded where the reference's are too (fabs, sqrt, fma, the comparisons);
// the f64 transcendental functions and pow are within libdevice's bounds, which
// transcendental.h gives.
#ifndef SX_NVRTC_STD_H
#define SX_NVRTC_STD_H

typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;

namespace std {

using ::int16_t;
using ::int32_t;
using ::int64_t;
using ::int8_t;
using ::uint16_t;
using ::uint32_t;
using ::uint64_t;
using ::uint8_t;
typedef unsigned long size_t;

template <class T, size_t N>
struct array {
  T elements[N];
  T& operator[](size_t i) { return elements[i]; }
  const T& operator[](size_t i) const { return elements[i]; }
};

template <class To, class From>
__device__ constexpr To bit_cast(const From& from) {
  return __builtin_bit_cast(To, from);
}

template <class T, class U>
inline constexpr bool is_same_v = false;
template <class T>
inline constexpr bool is_same_v<T, T> = true;

template <class T>
inline constexpr bool is_integral_v =
    is_same_v<T, bool> || is_same_v<T, char> || is_same_v<T, signed char> || is_same_v<T, unsigned char> ||
    is_same_v<T, short> || is_same_v<T, unsigned short> || is_same_v<T, int> || is_same_v<T, unsigned int> ||
    is_same_v<T, long> || is_same_v<T, unsigned long> || is_same_v<T, long long> || is_same_v<T, unsigned long long>;
template <class T>
inline constexpr bool is_floating_point_v = is_same_v<T, float> || is_same_v<T, double>;
template <class T>
inline constexpr bool is_signed_v = is_floating_point_v<T> || (is_integral_v<T> && T(-1) < T(0));
template <class T>
inline constexpr bool is_unsigned_v = is_integral_v<T> && !is_signed_v<T>;

template <class T>
struct numeric_limits {
  // Integers: two's complement, as every type the kernels take.
  static constexpr T min() { return is_signed_v<T> ? T(T(1) << (sizeof(T) * 8 - 1)) : T(0); }
  static constexpr T max() { return T(~min()); }
  static constexpr T lowest() { return min(); }
};
template <>
struct numeric_limits<bool> {
  static constexpr bool min() { return false; }
  static constexpr bool max() { return true; }
  static constexpr bool lowest() { return false; }
};
template <>
struct numeric_limits<float> {
  static constexpr float min() { return 1.17549435e-38f; }
  static constexpr float max() { return 3.40282347e+38f; }
  static constexpr float lowest() { return -max(); }
  static constexpr float epsilon() { return 1.19209290e-07f; }
  static constexpr float infinity() { return __builtin_bit_cast(float, 0x7f800000u); }
  static constexpr float quiet_NaN() { return __builtin_bit_cast(float, 0x7fc00000u); }
};
template <>
struct numeric_limits<double> {
  static constexpr double min() { return 2.2250738585072014e-308; }
  static constexpr double max() { return 1.7976931348623157e+308; }
  static constexpr double lowest() { return -max(); }
  static constexpr double epsilon() { return 2.220446049250313e-16; }
  static constexpr double infinity() { return __builtin_bit_cast(double, 0x7ff0000000000000ull); }
  static constexpr double quiet_NaN() { return __builtin_bit_cast(double, 0x7ff8000000000000ull); }
};

#define SX_NVRTC_MATH(name, f32, f64)                        \
  __device__ inline float name(float x) { return ::f32(x); } \
  __device__ inline double name(double x) { return ::f64(x); }
SX_NVRTC_MATH(fabs, fabsf, fabs)
SX_NVRTC_MATH(sqrt, sqrtf, sqrt)
SX_NVRTC_MATH(exp, expf, exp)
SX_NVRTC_MATH(log, logf, log)
SX_NVRTC_MATH(sin, sinf, sin)
SX_NVRTC_MATH(cos, cosf, cos)
SX_NVRTC_MATH(tanh, tanhf, tanh)
SX_NVRTC_MATH(erf, erff, erf)
#undef SX_NVRTC_MATH
__device__ inline float fma(float a, float b, float c) { return ::fmaf(a, b, c); }
__device__ inline double fma(double a, double b, double c) { return ::fma(a, b, c); }
__device__ inline float pow(float a, float b) { return ::powf(a, b); }
__device__ inline double pow(double a, double b) { return ::pow(a, b); }
__device__ inline bool isnan(float x) { return x != x; }
__device__ inline bool isnan(double x) { return x != x; }
using ::memcpy;

}  // namespace std

#endif
