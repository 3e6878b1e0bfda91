// graph/prims/lane_math.h over AVX-512F: 16 floats a register, masks in k
// registers (simd.h's Avx512). Compiled with -mavx512f; called only after cpuid.
#include "device/cpu/kernels/vector_math.h"
#include "device/cpu/simd.h"

namespace sx::device::cpu {

const MathKernels& avx512_math_kernels() {
  static const MathKernels kernels = make_math_kernels<simd::Avx512>();
  return kernels;
}

}  // namespace sx::device::cpu
