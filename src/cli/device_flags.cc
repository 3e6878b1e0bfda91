// --device and --cpu-cores.
#include "cli/device_flags.h"

#include <fmt/format.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <limits>

#include "lang/diagnostic.h"

namespace sx::cli {

// cpu unless --device or SEXPGPU_DEVICE says otherwise.
constexpr const char* kDefaultDevice = "cpu";

void DeviceFlags::add_to(CLI::App& command) {
  const char* env_device = std::getenv("SEXPGPU_DEVICE");
  device = env_device && *env_device ? env_device : kDefaultDevice;
  command.add_option(
      "--device", device,
      "Where tensors run: cpu, reference or cuda (a build with the CUDA toolkit and a GPU) (SEXPGPU_DEVICE); "
      "metal is refused: SexpGPU has none");
  cpu_cores_flag = command.add_option("--cpu-cores", cpu_cores,
                                      "Most host cores --device cpu uses: a positive whole number; a count above the "
                                      "host's cores means all of them, as does no flag (SEXPGPU_CPU_CORES)");
}

namespace {

// The cores this process may run on (its affinity), as the cpu device's thread pool counts them.
int host_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  return online > 0 ? static_cast<int>(std::min<long>(online, std::numeric_limits<int>::max())) : 1;
}

}  // namespace

int parse_cpu_cores(std::string_view text, std::string_view source, int host_cores) {
  constexpr const char* kHelp = "write a count such as 4; without the flag or the variable, every core is used";
  bool digits = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!digits) {
    lang::fail("E-DEVICE-003", {},
               fmt::format("{} is `{}`, not a whole number of cores", source, lang::shown_in_message(text)), kHelp);
  }
  int cores = 0;
  // Digits alone: the only failure left is a count too large for an int.
  if (std::from_chars(text.data(), text.data() + text.size(), cores).ec == std::errc::result_out_of_range) {
    lang::fail("E-DEVICE-003", {},
               fmt::format("{} is `{}`, more cores than a count holds: at most {}", source,
                           lang::shown_in_message(text), std::numeric_limits<int>::max()),
               kHelp);
  }
  if (cores == 0) {
    lang::fail("E-DEVICE-003", {},
               fmt::format("{} is `{}`, not a positive number of cores", source, lang::shown_in_message(text)), kHelp);
  }
  return cores > host_cores ? 0 : cores;
}

std::unique_ptr<device::Device> DeviceFlags::make() const {
  int cores = 0;
  if (cpu_cores_flag && cpu_cores_flag->count() > 0) {
    cores = parse_cpu_cores(cpu_cores, "--cpu-cores", host_cores());
  } else if (const char* env = std::getenv("SEXPGPU_CPU_CORES"); env && *env) {
    cores = parse_cpu_cores(env, "SEXPGPU_CPU_CORES", host_cores());
  }
  try {
    return device::make_device(device, device::DeviceOptions{.cpu_cores = cores});
  } catch (const device::DeviceError& e) {
    lang::fail(e.code(), {}, e.what());
  }
}

}  // namespace sx::cli
