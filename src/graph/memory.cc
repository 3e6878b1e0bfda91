// The memory limit: one value for the process, its default, and the size syntax.
#include "graph/memory.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <fstream>

namespace sx::graph {
namespace {

// 0 until set_memory_limit: the default then applies.
std::atomic<uint64_t> chosen_limit{0};

// The cgroup v2 limit of this process's group, when one is set ("max" means none).
std::optional<uint64_t> cgroup_memory_max() {
  std::ifstream file("/sys/fs/cgroup/memory.max");
  std::string text;
  if (!(file >> text)) return std::nullopt;
  uint64_t bytes = 0;
  auto parsed = std::from_chars(text.data(), text.data() + text.size(), bytes);
  if (parsed.ec != std::errc() || parsed.ptr != text.data() + text.size()) return std::nullopt;
  return bytes;
}

}  // namespace

uint64_t default_memory_limit() {
  static const uint64_t limit = [] {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    uint64_t memory = pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
    if (auto cgroup = cgroup_memory_max(); cgroup && (memory == 0 || *cgroup < memory)) memory = *cgroup;
    // Unknown memory (no sysconf, no cgroup): no limit but the allocator's.
    return memory == 0 ? UINT64_MAX : std::max<uint64_t>(memory / 4 * 3, 1);
  }();
  return limit;
}

uint64_t memory_limit() {
  uint64_t chosen = chosen_limit.load(std::memory_order_relaxed);
  return chosen ? chosen : default_memory_limit();
}

void set_memory_limit(uint64_t bytes) { chosen_limit.store(bytes, std::memory_order_relaxed); }

std::string bytes_text(double bytes) {
  const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return fmt::format("{:.0f} bytes", bytes);
  double scaled = bytes / 1024;
  int unit = 0;
  while (scaled >= 1024 && unit < 5) scaled /= 1024, ++unit;
  return fmt::format("{:.0f} bytes ({:.1f} {})", bytes, scaled, units[unit]);
}

void refuse_memory(std::string_view what, double bytes) {
  throw MemoryLimitError(fmt::format("{} needs {}, over the memory limit of {}", what, bytes_text(bytes),
                                     bytes_text(static_cast<double>(memory_limit()))));
}

std::string out_of_memory_message(std::string_view doing) {
  return fmt::format("ran out of memory {}: an allocation failed under the memory limit of {}", doing,
                     bytes_text(static_cast<double>(memory_limit())));
}

std::optional<uint64_t> parse_size(std::string_view text) {
  uint64_t count = 0;
  auto parsed = std::from_chars(text.data(), text.data() + text.size(), count);
  if (parsed.ec != std::errc() || parsed.ptr == text.data() || count == 0) return std::nullopt;
  std::string_view unit(parsed.ptr, text.data() + text.size());
  if (unit.size() > 1) return std::nullopt;
  int shift = 0;
  if (!unit.empty()) {
    switch (unit[0]) {
      case 'k':
      case 'K': shift = 10; break;
      case 'm':
      case 'M': shift = 20; break;
      case 'g':
      case 'G': shift = 30; break;
      case 't':
      case 'T': shift = 40; break;
      default: return std::nullopt;
    }
  }
  if (count > (UINT64_MAX >> shift)) return std::nullopt;
  return count << shift;
}

}  // namespace sx::graph
