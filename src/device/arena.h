// Memory planning: every buffer a plan computes gets an offset in one arena,
// assigned from the buffers' lifetimes, so that buffers alive at different
// times share bytes and a run allocates nothing. Greedy by size, as TFLite's
// and ggml's planners are: the largest buffer first, each at the lowest
// offset that no buffer alive at the same time occupies.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace sx::device {

// A buffer of `bytes`, written at step `first` and last read at step `last`
// (inclusive): it may share bytes with any buffer whose steps do not meet it.
struct BufferLife {
  size_t bytes = 0;
  int64_t first = 0, last = 0;
};

struct ArenaPlan {
  std::vector<size_t> offsets;  // one per buffer, each a multiple of the alignment
  size_t size = 0;              // bytes of the arena
  size_t live_peak = 0;         // the most bytes alive at one step: no arena is smaller
};

ArenaPlan plan_arena(std::span<const BufferLife> buffers, size_t alignment = 64);

}  // namespace sx::device
