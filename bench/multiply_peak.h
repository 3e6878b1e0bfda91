// The peak rate of the instruction that multiplies in the cpu device's products, for
// the benchmarks that compare against it (cpu_matmul, forward).
#pragma once

#include <optional>
#include <string>

#include "device/cpu/isa.h"
#include "graph/dtype.h"

namespace sx::bench {

// GFLOP/s of the instruction that multiplies `dtype` under `isa` on `threads` threads:
// the best of short tries over `budget_s`. The f32 FMA, or VDPBF16PS for bf16 under
// avx512bf16, TDPBF16PS for bf16 under amx (bf16 elsewhere runs on the f32 FMA). None
// for the scalar kernels (no vector peak to compare).
std::optional<double> multiply_peak(device::cpu::Isa isa, graph::DType dtype, int threads, double budget_s);

// The host as the benchmarks print it first: cpuid's model name, its cores, the
// instruction sets it runs and the kernels the cpu device takes (`kernels`), so that a
// figure says which machine gave it.
std::string host_line(device::cpu::Isa kernels);

}  // namespace sx::bench
