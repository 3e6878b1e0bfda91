#include "multiply_peak.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <vector>

#include "device/cpu/thread_pool.h"
#include "fma_peak.h"

namespace sx::bench {

using device::cpu::Isa;
using Clock = std::chrono::steady_clock;

std::optional<double> multiply_peak(Isa isa, graph::DType dtype, int threads, double budget_s) {
  if (isa == Isa::scalar) return std::nullopt;
  const int64_t iterations = 100'000;
  bool pairs = isa == Isa::avx512bf16 && dtype == graph::DType::bf16,
       tiles = isa == Isa::amx && dtype == graph::DType::bf16;
  // 12 chains of vectors of multiply-adds an iteration, or 4 tiles of 16 x 16 x 32.
  double flops = tiles ? 4.0 * 2 * 16 * 16 * 32 : 12.0 * 2 * (isa == Isa::avx2 ? 8 : pairs ? 32 : 16), best = 0;
  device::cpu::ThreadPool& pool = device::cpu::ThreadPool::shared();
  threads = std::min(threads, pool.size());
  std::vector<float> results(static_cast<size_t>(threads));
  auto seconds_since = [](Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
  };
  for (auto begin = Clock::now(); seconds_since(begin) < budget_s;) {
    auto start = Clock::now();
    pool.run(threads, [&](int t) {
      results[static_cast<size_t>(t)] = isa == Isa::avx2 ? fma_peak_avx2(iterations)
                                        : pairs          ? dpbf16_peak_avx512bf16(iterations)
                                        : tiles          ? tdpbf16_peak_amx(iterations)
                                                         : fma_peak_avx512(iterations);
    });
    best = std::max(best, flops * static_cast<double>(iterations) * threads / seconds_since(start) / 1e9);
  }
  return best;
}

std::string host_line(Isa kernels) {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line, model = "?";
  while (std::getline(cpuinfo, line)) {
    if (line.starts_with("model name") && line.find(':') != std::string::npos) {
      model = line.substr(line.find(':') + 2);
      break;
    }
  }
  std::string isas;
  for (Isa available : device::cpu::host_isas()) isas += fmt::format(" {}", device::cpu::isa_name(available));
  return fmt::format("host: {} ({} cores; runs{}), kernels: {}", model, device::cpu::available_cores(), isas,
                     device::cpu::isa_name(kernels));
}

}  // namespace sx::bench
