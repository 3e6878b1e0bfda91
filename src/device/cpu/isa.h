// The instruction sets the cpu device has kernels for, and which one a
// device runs: the best the host supports, or the one SEXPGPU_CPU_ISA (or
// DeviceOptions::cpu_isa) names, refused by name when the host lacks it.
// Kernels of every instruction set give the same f32 bits (see gemm.h and
// vector_math.h), so the choice changes speed, never results; bf16 products
// too, except under amx, whose tiles sum in their own order: where the host has
// AMX it is the default, as `--precision bf16` is chosen for speed, and
// avx512bf16 named gives the bits of every other host. scripts/test runs the
// device tests that reach these kernels through this choice as a processor without AVX
// would (processor_chosen_tests: Isa, a product on every instruction set,
// VectorMath.* for exp, log, tanh, erf, logistic, sin and cos, and Random.* for the
// vector Philox): a test that reaches a new kernel chosen here joins that list.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace sx::device::cpu {

// Narrowest first: each runs what the ones before it run.
enum class Isa { scalar, avx2, avx512, avx512bf16, amx };

// "scalar", "avx2" (AVX2 with FMA), "avx512" (AVX-512F), "avx512bf16"
// (AVX-512F with AVX512_BF16: products of bf16 by VDPBF16PS, everything else
// as avx512), "amx" (avx512bf16 with AMX-BF16 tiles: products of bf16 by
// TDPBF16PS, whose sums are the hardware's own, so bf16 products give other
// bits than on every other set; f32 ones the same).
std::string_view isa_name(Isa isa);

// The instruction sets this host runs, narrowest first; scalar always.
std::vector<Isa> host_isas();

// `requested` empty: SEXPGPU_CPU_ISA when set, else the widest the host
// runs (amx where it has AMX), but avx512 rather than avx512bf16 where VDPBF16PS multiplies bf16
// more slowly than the f32 FMA (both give the same bits, so only speed
// picks). Throws DeviceError for a name that is not an instruction set or one
// this host cannot run.
Isa choose_isa(std::string_view requested);

}  // namespace sx::device::cpu
