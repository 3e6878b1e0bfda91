// Instruction-set detection (cpuid through GCC's __builtin_cpu_supports,
// which also checks that the OS saves the wide registers) and the choice.
#include "device/cpu/isa.h"

#include <fmt/format.h>

#include <cstdlib>

#include "device/cpu/products/gemm.h"
#include "device/device.h"
#include "graph/shown.h"

namespace sx::device::cpu {

std::string_view isa_name(Isa isa) {
  switch (isa) {
    case Isa::scalar: return "scalar";
    case Isa::avx2: return "avx2";
    case Isa::avx512: return "avx512";
    case Isa::avx512bf16: return "avx512bf16";
    case Isa::amx: return "amx";
  }
  return "scalar";
}

std::vector<Isa> host_isas() {
  std::vector<Isa> isas{Isa::scalar};
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) isas.push_back(Isa::avx2);
  if (!__builtin_cpu_supports("avx512f")) return isas;
  isas.push_back(Isa::avx512);
  if (!__builtin_cpu_supports("avx512bf16")) return isas;
  isas.push_back(Isa::avx512bf16);
  if (host_runs_amx()) isas.push_back(Isa::amx);
  return isas;
}

Isa choose_isa(std::string_view requested) {
  std::vector<Isa> host = host_isas();
  std::string_view source = "the device options";
  if (requested.empty()) {
    const char* env = std::getenv("SEXPGPU_CPU_ISA");
    if (env == nullptr || *env == '\0') {
      if (host.back() == Isa::avx512bf16 && !pair_products_outrun_fma()) return Isa::avx512;
      return host.back();
    }
    requested = env;
    source = "SEXPGPU_CPU_ISA";
  }
  std::string shown = graph::shown_in_message(requested);
  for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512, Isa::avx512bf16, Isa::amx}) {
    if (requested != isa_name(isa)) continue;
    for (Isa available : host) {
      if (available == isa) return isa;
    }
    std::string names;
    for (Isa available : host) names += fmt::format("{}{}", names.empty() ? "" : ", ", isa_name(available));
    throw DeviceError(fmt::format("cpu: instruction set '{}' (from {}) is one this processor lacks; it runs {}", shown,
                                  source, names));
  }
  throw DeviceError(fmt::format(
      "cpu: '{}' (from {}) is not an instruction set of the cpu device: use scalar, avx2, avx512, avx512bf16 or amx",
      shown, source));
}

}  // namespace sx::device::cpu
