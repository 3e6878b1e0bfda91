// The scalar instance of lane_math.h as functions, and the exact argument reduction
// of sin and cos for large arguments, which the vector kernels call for their large
// lanes: built for every processor.
#include "graph/prims/lane_math.h"

#include "graph/prims/pio2_reduction.h"

namespace sx::graph::lane_math {

// GCC's flatten inlines the template into each version, so that the FMA version's
// std::fma is the instruction (clang refuses flatten on clones; its inliner decides there).
#if defined(__clang__)
#define SX_SCALAR_MATH_VERSIONS __attribute__((target_clones("fma", "default")))
#else
#define SX_SCALAR_MATH_VERSIONS __attribute__((flatten, target_clones("fma", "default")))
#endif
#define SX_SCALAR_MATH(name) \
  SX_SCALAR_MATH_VERSIONS float name##_f32(float x) { return name<ScalarLanes>(x); }
SX_SCALAR_MATH(exp)
SX_SCALAR_MATH(log)
SX_SCALAR_MATH(tanh)
SX_SCALAR_MATH(erf)
SX_SCALAR_MATH(logistic)
SX_SCALAR_MATH(sin)
SX_SCALAR_MATH(cos)
SX_SCALAR_MATH_VERSIONS float normal_f32(int32_t w0, int32_t w1) { return normal<ScalarLanes>(w0, w1); }
#undef SX_SCALAR_MATH
#undef SX_SCALAR_MATH_VERSIONS

void reduce_pio2_large(float a, float* r, int32_t* q) { reduce_pio2_in_limbs(a, r, q); }

}  // namespace sx::graph::lane_math
