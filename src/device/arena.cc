// Greedy-by-size placement (see arena.h). Quadratic in the buffers alive at
// once, which stays small next to the work a plan does.
#include "device/arena.h"

#include <algorithm>
#include <map>
#include <numeric>

namespace sx::device {

ArenaPlan plan_arena(std::span<const BufferLife> buffers, size_t alignment) {
  ArenaPlan plan;
  plan.offsets.assign(buffers.size(), 0);
  auto aligned = [alignment](size_t bytes) { return (bytes + alignment - 1) / alignment * alignment; };
  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return buffers[a].bytes > buffers[b].bytes; });
  std::vector<size_t> placed;
  for (size_t i : order) {
    const BufferLife& buffer = buffers[i];
    size_t bytes = aligned(buffer.bytes);
    // The ranges taken by placed buffers whose lifetimes meet this one's,
    // by offset; then the first gap that fits.
    std::vector<std::pair<size_t, size_t>> taken;
    for (size_t j : placed) {
      const BufferLife& other = buffers[j];
      if (other.last < buffer.first || buffer.last < other.first) continue;
      taken.emplace_back(plan.offsets[j], plan.offsets[j] + aligned(other.bytes));
    }
    std::sort(taken.begin(), taken.end());
    size_t offset = 0;
    for (const auto& [begin, end] : taken) {
      if (offset + bytes <= begin) break;
      offset = std::max(offset, end);
    }
    plan.offsets[i] = offset;
    plan.size = std::max(plan.size, offset + bytes);
    placed.push_back(i);
  }
  // The lower bound: bytes alive at each step where a buffer starts.
  std::map<int64_t, size_t> starts;
  for (const BufferLife& buffer : buffers) starts[buffer.first] = 0;
  for (auto& [step, live] : starts) {
    for (const BufferLife& buffer : buffers) {
      if (buffer.first <= step && step <= buffer.last) live += aligned(buffer.bytes);
    }
    plan.live_peak = std::max(plan.live_peak, live);
  }
  return plan;
}

}  // namespace sx::device
