// The arithmetic of the cuda device's attention kernel (codegen.h), one query row at a
// time as each of its steps computes it: the row's scores of a tile of keys, the online
// softmax's update of the row's running maximum and sum by the tile, and the update of
// each of its output's accumulators. The kernel runs a block of query rows over the keys
// a tile of kAttentionKeyTile at a time, from the first key on, every value of a row
// computed by these functions from that row's inputs alone, in f32 (bf16 operands are
// read exactly, each score rounded to bf16 as the decomposition rounds it): so a row's
// bits do not depend on the rows computed with it, and the host tests run the same
// functions in the same order (attention_row) to check the kernel's arithmetic against
// the reference. The kernel's blocks, attention_blocks, are compiled by NVRTC only.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#if !defined(__CUDACC_RTC__)
#include <vector>
#endif

#include "device/cuda/composite_math.h"
#include "device/cuda/transcendental.h"
#include "graph/host_device.h"

namespace sx::device::cuda {

// Keys a tile holds: fixed, whatever the shape, since the online softmax's rescaling at
// each tile's end rounds, so the tiles' bounds decide the bits.
inline constexpr int64_t kAttentionKeyTile = 32;

// The score of a query and a key: their products added with fma from the first element
// on, rounded to S as the decomposition's product is, divided by sqrt(depth) (`scale`,
// the literal in S) and rounded to S again.
template <class S>
SX_HOST_DEVICE float attention_score(const float* query, const float* key, int64_t depth, float scale) {
  float dot = 0.0f;
  for (int64_t c = 0; c < depth; ++c) dot = std::fma(query[c], key[c], dot);
  return stored<S>(float(stored<S>(dot) / scale));
}

// A query row's online softmax so far: the largest score seen (NaN once one is NaN) and
// the sum of exp(score - largest) over the scores seen.
struct AttentionRow {
  float largest = -std::numeric_limits<float>::infinity();
  float total = 0.0f;
};

// The row's largest score once it has seen `count` more (NaN once one is NaN).
SX_HOST_DEVICE inline float tile_largest(const AttentionRow& row, const float* scores, int64_t count) {
  float largest = row.largest;
  for (int64_t j = 0; j < count; ++j) {
    const float s = scores[j];
    if (s > largest || (std::isnan(s) && !std::isnan(largest))) largest = s;
  }
  return largest;
}

// A score's weight under the row's new largest score: exp(score - largest), 0 while every
// score seen is -inf (so that a later finite score decides the row; a row all -inf ends
// 0/0, NaN, as the decomposition's exp(-inf - -inf) gives).
SX_HOST_DEVICE inline float score_weight(float score, float largest) {
  return largest == -std::numeric_limits<float>::infinity() ? 0.0f : gpu::Exp{}(score - largest);
}

// The row's sum after a tile of `count` weights under its new largest score, added in the
// keys' order after the old sum is scaled; returns that scale, exp(old largest - new
// largest) (0 at the first tile, 1 while every score is -inf), by which the row's
// accumulators are scaled too.
SX_HOST_DEVICE inline float absorb_weights(AttentionRow& row, float largest, const float* weights, int64_t count) {
  if (largest == -std::numeric_limits<float>::infinity()) return 1.0f;
  const float factor = gpu::Exp{}(row.largest - largest);
  float total = row.total * factor;
  for (int64_t j = 0; j < count; ++j) total = total + weights[j];
  row.largest = largest;
  row.total = total;
  return factor;
}

// The three steps above on a tile of `count` scores of the row, each replaced by its
// weight; returns the accumulators' scale. The kernel runs the steps with a barrier
// between them, the weights a thread each.
SX_HOST_DEVICE inline float absorb_scores(AttentionRow& row, float* scores, int64_t count) {
  const float largest = tile_largest(row, scores, count);
  for (int64_t j = 0; j < count; ++j) scores[j] = score_weight(scores[j], largest);
  return absorb_weights(row, largest, scores, count);
}

// An accumulator of the row's output (one column of v) after a tile: scaled by `factor`,
// then each weight times its key's value added with fma, in the keys' order.
SX_HOST_DEVICE inline float accumulate_values(float sum, float factor, const float* weights, const float* values,
                                              int64_t stride, int64_t count) {
  sum = sum * factor;
  for (int64_t j = 0; j < count; ++j) sum = std::fma(weights[j], values[j * stride], sum);
  return sum;
}

// Whether a tile of keys the causal form hides from the row (each scored `excluded`,
// -1e9) would leave its largest score and sum as they are: their weights
// exp(excluded - largest) are 0 and the factor exp(0) is 1, which the kernel then writes
// without scoring the keys. The accumulators still take the tile (0 times a value of v,
// as the decomposition adds it: a NaN where the value is infinite or NaN).
SX_HOST_DEVICE inline bool hidden_tile_changes_nothing(const AttentionRow& row, float excluded) {
  return gpu::Exp{}(excluded - row.largest) == 0.0f;
}

// The row's output from an accumulator: divided by the row's sum, rounded to S.
template <class S>
SX_HOST_DEVICE S attention_output(float sum, const AttentionRow& row) {
  return S(sum / row.total);
}

// Where an attention's mask holds the first score of a batch entry: its strides along the
// batch axes (0 where it broadcasts), and along the queries and the keys.
inline constexpr int kAttentionBatchAxes = 6;
struct AttentionMask {
  int32_t batch_rank = 0;
  int64_t batch_shape[kAttentionBatchAxes] = {};
  int64_t batch_stride[kAttentionBatchAxes] = {};
  int64_t query_stride = 0, key_stride = 0;
};

SX_HOST_DEVICE inline int64_t mask_entry_offset(const AttentionMask& mask, int64_t entry) {
  int64_t offset = 0;
  for (int32_t d = mask.batch_rank; d-- > 0;) {
    offset += entry % mask.batch_shape[d] * mask.batch_stride[d];
    entry /= mask.batch_shape[d];
  }
  return offset;
}

// An attention's shape and form: q [entries, queries, depth], k [entries, keys, depth],
// v [entries, keys, width] (the batch axes flattened into entries), the literals sqrt(depth)
// and -1e9 in the node's dtype.
struct AttentionForm {
  int64_t entries = 0, queries = 0, keys = 0, depth = 0, width = 0;
  float scale = 1.0f, excluded = -1e9f;
  bool causal = false;
};

// Whether query `query` may attend to key `key` (mask_row: the mask's row of the query
// in its entry, null without one).
SX_HOST_DEVICE inline bool attends(const AttentionForm& form, const AttentionMask& mask, const bool* mask_row,
                                   int64_t query, int64_t key) {
  if (form.causal && key > query) return false;
  return mask_row == nullptr || mask_row[key * mask.key_stride];
}

#if !defined(__CUDACC_RTC__)
// One query row's output, on the host, through the functions above in the kernel's order:
// q_row [depth], k [keys, depth] and v [keys, width] as floats; out [width].
template <class S>
void attention_row(const AttentionForm& form, const AttentionMask& mask, const float* q_row, const float* k,
                   const float* v, const bool* mask_row, int64_t query, S* out) {
  AttentionRow row;
  float weights[kAttentionKeyTile];
  std::vector<float> sums(static_cast<size_t>(form.width), 0.0f);
  for (int64_t first = 0; first < form.keys; first += kAttentionKeyTile) {
    const int64_t count = form.keys - first < kAttentionKeyTile ? form.keys - first : kAttentionKeyTile;
    float factor = 1.0f;
    if (form.causal && first > query && hidden_tile_changes_nothing(row, form.excluded)) {
      for (int64_t j = 0; j < count; ++j) weights[j] = 0.0f;
    } else {
      for (int64_t j = 0; j < count; ++j) {
        weights[j] = attends(form, mask, mask_row, query, first + j)
                         ? attention_score<S>(q_row, k + (first + j) * form.depth, form.depth, form.scale)
                         : form.excluded;
      }
      factor = absorb_scores(row, weights, count);
    }
    for (int64_t c = 0; c < form.width; ++c) {
      sums[c] = accumulate_values(sums[c], factor, weights, v + first * form.width + c, form.width, count);
    }
  }
  for (int64_t c = 0; c < form.width; ++c) out[c] = attention_output<S>(sums[c], row);
}
#else
// The kernel's blocks: each takes kRows query rows of a batch entry at a time (grid-stride
// over the entries' blocks of rows), their q rows, the tile's keys and values, the rows'
// weights and accumulators in shared memory; each step above computed by the block's
// threads for one row (a tile's largest score, the row's sum), one (row, key) (a score,
// a weight) or one (row, column) (an accumulator) each, with a barrier between the steps. A tile of keys the
// causal form hides from a row, which changes nothing (hidden_tile_changes_nothing), is
// not scored for it, nor are the tile's keys read where it is so for every row.
template <class S, int kRows, int kDepth, int kWidth>
__device__ void attention_blocks(const S* __restrict__ q, const S* __restrict__ k, const S* __restrict__ v,
                                 const bool* __restrict__ mask, S* __restrict__ out, const AttentionForm& form,
                                 const AttentionMask& layout) {
  constexpr int64_t kTile = kAttentionKeyTile;
  __shared__ float queries_s[kRows * kDepth];
  // A key's row one float longer than its depth: the threads of a warp, one a key, read
  // their keys' elements from different banks.
  constexpr int64_t kKeyStride = kDepth + 1;
  __shared__ float keys_s[kTile * kKeyStride];
  __shared__ float values_s[kTile * kWidth];
  __shared__ float weights_s[kRows * kTile];
  __shared__ float sums_s[kRows * kWidth];
  __shared__ float largest_s[kRows], total_s[kRows], tile_largest_s[kRows], factors_s[kRows];
  __shared__ bool skips_s[kRows];
  const int64_t thread = threadIdx.x, threads = blockDim.x;
  const int64_t row_blocks = (form.queries + kRows - 1) / kRows;
  for (int64_t unit = blockIdx.x; unit < form.entries * row_blocks; unit += gridDim.x) {
    const int64_t entry = unit / row_blocks, first_query = unit % row_blocks * kRows;
    const int64_t rows = form.queries - first_query < kRows ? form.queries - first_query : kRows;
    const S* q_entry = q + (entry * form.queries + first_query) * kDepth;
    const S* k_entry = k + entry * form.keys * kDepth;
    const S* v_entry = v + entry * form.keys * kWidth;
    const bool* mask_entry = mask != nullptr ? mask + mask_entry_offset(layout, entry) : nullptr;
    for (int64_t e = thread; e < rows * kDepth; e += threads) queries_s[e] = static_cast<float>(q_entry[e]);
    for (int64_t e = thread; e < kRows * kWidth; e += threads) sums_s[e] = 0.0f;
    for (int64_t r = thread; r < kRows; r += threads) {
      const AttentionRow start;
      largest_s[r] = start.largest;
      total_s[r] = start.total;
    }
    __syncthreads();
    for (int64_t first = 0; first < form.keys; first += kTile) {
      const int64_t count = form.keys - first < kTile ? form.keys - first : kTile;
      int scoring = 0;
      for (int64_t r = thread; r < kRows; r += threads) {
        const bool skip = r >= rows || (form.causal && first > first_query + r &&
                                        hidden_tile_changes_nothing({largest_s[r], total_s[r]}, form.excluded));
        skips_s[r] = skip;
        scoring |= skip ? 0 : 1;
      }
      // Whether some row scores the tile's keys.
      scoring = __syncthreads_or(scoring);
      for (int64_t e = thread; scoring && e < count * kDepth; e += threads) {
        keys_s[e / kDepth * kKeyStride + e % kDepth] = static_cast<float>(k_entry[first * kDepth + e]);
      }
      for (int64_t e = thread; e < count * kWidth; e += threads) {
        values_s[e] = static_cast<float>(v_entry[first * kWidth + e]);
      }
      __syncthreads();
      for (int64_t e = thread; e < kRows * kTile; e += threads) {
        const int64_t r = e / kTile, j = e % kTile, query = first_query + r;
        if (j >= count) continue;
        if (skips_s[r]) {
          weights_s[e] = 0.0f;
        } else {
          const bool* mask_row = mask_entry != nullptr ? mask_entry + query * layout.query_stride : nullptr;
          weights_s[e] = attends(form, layout, mask_row, query, first + j)
                             ? attention_score<S>(queries_s + r * kDepth, keys_s + j * kKeyStride, kDepth, form.scale)
                             : form.excluded;
        }
      }
      __syncthreads();
      for (int64_t r = thread; r < kRows; r += threads) {
        if (!skips_s[r]) tile_largest_s[r] = tile_largest({largest_s[r], total_s[r]}, weights_s + r * kTile, count);
      }
      __syncthreads();
      for (int64_t e = thread; e < kRows * kTile; e += threads) {
        const int64_t r = e / kTile;
        if (!skips_s[r] && e % kTile < count) weights_s[e] = score_weight(weights_s[e], tile_largest_s[r]);
      }
      __syncthreads();
      for (int64_t r = thread; r < kRows; r += threads) {
        if (skips_s[r]) {
          factors_s[r] = 1.0f;
          continue;
        }
        AttentionRow row{largest_s[r], total_s[r]};
        factors_s[r] = absorb_weights(row, tile_largest_s[r], weights_s + r * kTile, count);
        largest_s[r] = row.largest;
        total_s[r] = row.total;
      }
      __syncthreads();
      for (int64_t e = thread; e < rows * kWidth; e += threads) {
        const int64_t r = e / kWidth, c = e % kWidth;
        sums_s[e] = accumulate_values(sums_s[e], factors_s[r], weights_s + r * kTile, values_s + c, kWidth, count);
      }
      __syncthreads();
    }
    S* out_rows = out + (entry * form.queries + first_query) * kWidth;
    for (int64_t e = thread; e < rows * kWidth; e += threads) {
      out_rows[e] = attention_output<S>(sums_s[e], AttentionRow{largest_s[e / kWidth], total_s[e / kWidth]});
    }
    __syncthreads();
  }
}
#endif

}  // namespace sx::device::cuda
