// The memory limit: one value for the process, and the size syntax.
#include "graph/memory.h"

#include <fmt/format.h>

#include <atomic>
#include <charconv>

namespace sx::graph {
namespace {

// No limit until a command sets one.
std::atomic<uint64_t> limit{UINT64_MAX};

}  // namespace

uint64_t memory_limit() { return limit.load(std::memory_order_relaxed); }

void set_memory_limit(uint64_t bytes) { limit.store(bytes, std::memory_order_relaxed); }

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
