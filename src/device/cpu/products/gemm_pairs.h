// How the cpu GEMM packs bf16 operands for the pair kernels (gemm.cc's
// Gemm::pack_a and pack_b): each 32-bit word of a packed sliver holds two steps
// of K, as VDPBF16PS reads them; and a transposed B read as such words for the
// kernels that widen bf16. Included by gemm.cc alone.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>

#include "device/cpu/products/gemm.h"
#include "graph/bf16.h"

namespace sx::device::cpu::bf16_pairs {

// bf16 pairs as the pair kernels read them: one 32-bit word holding step 2w
// in its low half and step 2w + 1 in its high half. Where K is odd, the last
// word's high half is a zero whose product is -0 (A's +0 times B's -0), which
// leaves every sum as it is.
inline constexpr uint16_t kPositiveZero = 0x0000, kNegativeZero = 0x8000;

inline uint16_t half_at(const MatrixRef& m, int64_t i, int64_t j) {
  return static_cast<const graph::Bf16*>(m.data)[i * m.rows + j * m.cols].bits;
}

inline float pair_word(uint16_t low, uint16_t high) {
  return std::bit_cast<float>(static_cast<uint32_t>(low) | static_cast<uint32_t>(high) << 16);
}

// Words [word, word + words) of a K of k that hold two steps: all but an odd K's last.
inline int64_t two_step_words(int64_t word, int64_t words, int64_t k) {
  return std::clamp<int64_t>(k / 2 - word, 0, words);
}

// Whether a bf16 matrix with this stride between its lines can be read as lines
// of 32-bit words (floats): each line starts at a whole, aligned word.
inline bool lines_of_words(const MatrixRef& m, int64_t stride) {
  return stride % 2 == 0 && reinterpret_cast<uintptr_t>(m.data) % alignof(float) == 0;
}

// As pack_a_steps, a word of two steps where it has a float: A's rows
// [row, row + rows), words [word, word + words) of a K of k. Words of two steps
// go by the instruction set's kernels where A's layout allows: rows lying along
// memory (an even row stride) are rows of words, transposed; rows lying across
// it (a transpose read in place) are two steps' lines interleaved. The rest
// (an odd K's last word, other strides) a half at a time.
inline void pack_a_pairs(const KernelSet& kernels, const MatrixRef& a, int64_t row, int64_t rows, int64_t word,
                         int64_t words, int64_t k, float* out) {
  const int mr = kernels.mr;
  const auto* base = static_cast<const graph::Bf16*>(a.data);
  int64_t first_slow = 0;
  if (a.cols == 1 && lines_of_words(a, a.rows)) {
    first_slow = two_step_words(word, words, k);
    for (int64_t s = 0; s * mr < rows; ++s) {
      const auto* words_of_row = reinterpret_cast<const float*>(base + (row + s * mr) * a.rows + 2 * word);
      kernels.pack_transposed(first_slow, std::min<int64_t>(mr, rows - s * mr), words_of_row, a.rows / 2,
                              out + s * mr * words, mr);
    }
  } else if (a.rows == 1) {
    first_slow = two_step_words(word, words, k);
    // Lines of words for up to `chunk` rows, kSteps words at a time, then dealt to their
    // slivers: each sliver gets its kSteps runs as one (as pack_a_steps deals its steps).
    constexpr int64_t kSteps = 8;
    float lines[kSteps][256];
    const int64_t chunk = 256 / mr * mr;
    for (int64_t p0 = 0; p0 < first_slow; p0 += kSteps) {
      const int64_t steps = std::min(kSteps, first_slow - p0);
      for (int64_t i0 = 0; i0 < rows; i0 += chunk) {
        const int64_t count = std::min(chunk, rows - i0);
        for (int64_t q = 0; q < steps; ++q) {
          const auto* low = reinterpret_cast<const uint16_t*>(base + 2 * (word + p0 + q) * a.cols + row);
          kernels.pair_words(count, low + i0, low + a.cols + i0, lines[q]);
        }
        for (int64_t i = 0; i < count; i += mr) {
          const int64_t height = std::min<int64_t>(mr, count - i);
          float* to = out + (i0 + i) * words + p0 * mr;
          for (int64_t q = 0; q < steps; ++q) std::copy_n(lines[q] + i, height, to + q * mr);
        }
      }
    }
  }
  for (int64_t s = 0; s * mr < rows; ++s) {
    int64_t height = std::min<int64_t>(mr, rows - s * mr);
    float* sliver = out + s * mr * words;
    for (int64_t p = first_slow; p < words; ++p) {
      int64_t step = 2 * (word + p);
      for (int64_t i = 0; i < height; ++i) {
        int64_t r = row + s * mr + i;
        uint16_t high = step + 1 < k ? half_at(a, r, step + 1) : kPositiveZero;
        sliver[p * mr + i] = pair_word(half_at(a, r, step), high);
      }
    }
  }
}

// As pack_b_steps, a word of two steps (two rows of B) where it has a float.
// Words of two steps by the instruction set's kernels where B's layout allows:
// rows along memory are two rows interleaved; columns along it (a transpose
// read in place, an even column stride) are rows of words, transposed.
inline void pack_b_pairs(const KernelSet& kernels, const MatrixRef& b, int64_t word, int64_t words, int64_t k,
                         int64_t col, int64_t cols, float* out) {
  const int nr = kernels.nr;
  const auto* base = static_cast<const graph::Bf16*>(b.data);
  int64_t slivers = (cols + nr - 1) / nr;
  int64_t first_slow = 0;
  if (b.cols == 1) {
    first_slow = two_step_words(word, words, k);
    for (int64_t p = 0; p < first_slow; ++p) {
      const auto* low = reinterpret_cast<const uint16_t*>(base + 2 * (word + p) * b.rows + col);
      for (int64_t s = 0; s < slivers; ++s) {
        float* dst = out + (s * words + p) * nr;
        int64_t width = std::min<int64_t>(nr, cols - s * nr);
        kernels.pair_words(width, low + s * nr, low + b.rows + s * nr, dst);
        std::fill(dst + width, dst + nr, 0.0f);
      }
    }
  } else if (b.rows == 1 && lines_of_words(b, b.cols)) {
    first_slow = two_step_words(word, words, k);
    for (int64_t s = 0; s < slivers; ++s) {
      float* sliver = out + s * words * nr;
      int64_t width = std::min<int64_t>(nr, cols - s * nr);
      const auto* words_of_column = reinterpret_cast<const float*>(base + (col + s * nr) * b.cols + 2 * word);
      kernels.pack_transposed_fetching(first_slow, width, words_of_column, b.cols / 2, sliver, nr);
      for (int64_t p = 0; p < first_slow && width < nr; ++p)
        std::fill(sliver + p * nr + width, sliver + (p + 1) * nr, 0.0f);
    }
  }
  for (int64_t p = first_slow; p < words; ++p) {
    int64_t step = 2 * (word + p);
    bool lone = step + 1 == k;
    const auto* low = base + step * b.rows + col * b.cols;
    const auto* high = lone ? low : low + b.rows;
    for (int64_t s = 0; s < slivers; ++s) {
      float* dst = out + (s * words + p) * nr;
      int64_t width = std::min<int64_t>(nr, cols - s * nr);
      for (int64_t j = 0; j < width; ++j) {
        int64_t at = (s * nr + j) * b.cols;
        dst[j] = pair_word(low[at].bits, lone ? kNegativeZero : high[at].bits);
      }
      std::fill(dst + width, dst + nr, 0.0f);
    }
  }
}

// As pack_b_steps in the bf16 order (gemm.h), for the kernels that widen bf16: B's rows
// [row, row + depth) (row even) and columns [col, col + cols) as f32 slivers of nr
// columns, zero past the last, from columns along memory that lie as words of two steps
// (lines_of_words). The words are transposed by the instruction set's vectors into
// `wide` (depth x cols floats), then each split into its sliver's two rows widened, the
// odd step (the high half) first; an odd K's last step alone.
inline void pack_b_widened(const KernelSet& kernels, const MatrixRef& b, int64_t row, int64_t depth, int64_t col,
                           int64_t cols, float* out, float* wide) {
  const int nr = kernels.nr;
  const int64_t pairs = depth / 2;
  const auto* base = static_cast<const graph::Bf16*>(b.data);
  const auto* words = reinterpret_cast<const float*>(base + col * b.cols + row);
  kernels.pack_transposed(pairs, cols, words, b.cols / 2, wide, cols);
  for (int64_t s = 0; s * nr < cols; ++s) {
    const int64_t width = std::min<int64_t>(nr, cols - s * nr);
    float* sliver = out + s * depth * nr;
    for (int64_t w = 0; w < pairs; ++w) {
      const auto* from = reinterpret_cast<const uint32_t*>(wide + w * cols + s * nr);
      auto* odd = reinterpret_cast<uint32_t*>(sliver + 2 * w * nr);
      for (int64_t j = 0; j < width; ++j) {
        odd[j] = from[j] & 0xFFFF0000u;
        odd[nr + j] = from[j] << 16;
      }
    }
    for (int64_t j = 0; depth % 2 == 1 && j < width; ++j)
      sliver[(depth - 1) * nr + j] = static_cast<float>(base[(col + s * nr + j) * b.cols + row + depth - 1]);
    for (int64_t p = 0; p < depth && width < nr; ++p) std::fill(sliver + p * nr + width, sliver + (p + 1) * nr, 0.0f);
  }
}

}  // namespace sx::device::cpu::bf16_pairs
