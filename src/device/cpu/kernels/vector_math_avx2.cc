// graph/prims/lane_math.h over AVX2 + FMA: 8 floats a register. Compiled with
// -mavx2 -mfma; called only after cpuid.
#include "device/cpu/kernels/vector_math.h"
#include "device/cpu/simd.h"

namespace sx::device::cpu {

const MathKernels& avx2_math_kernels() {
  static const MathKernels kernels = make_math_kernels<simd::Avx2>();
  return kernels;
}

}  // namespace sx::device::cpu
