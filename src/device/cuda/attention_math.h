// The arithmetic of the cuda device's attention kernel (codegen.h), one query row at a
// time as each of its steps computes it: the row's scores of a tile of keys, the online
// softmax's update of the row's running maximum and sum by the tile, and the update of
// each of its output's accumulators. The kernel runs a block of query rows over the keys
// a tile of kAttentionKeyTile at a time, from the first key on, every value of a row
// computed by these functions from that row's inputs alone, in f32 (bf16 operands are
// read exactly, each score rounded to bf16 as the decomposition rounds it): so a row's
// bits do not depend on the rows computed with it, and the host tests run the same
// functions in the same order (attention_row) to check the kernel's arithmetic against
// the reference; they run the kernel's blocks (attention_blocks) too, each thread a
// std::thread.
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
#endif

// Where a block's shared memory holds its query rows' q rows (`rows` of `depth`), a tile's
// keys (kAttentionKeyTile rows of depth + 1: the threads of a warp, one a key, read their
// keys' elements from different banks) and then, once scored, in the same place, its
// values (width each), the rows' weights of the tile and accumulators, and each row's
// state.
struct AttentionTiles {
  float *queries, *keys_then_values, *weights, *sums;
  float *largest, *total, *tile_largest, *factors;
  bool* skips;
};

// A kernel's blocks: each block (`block`: its thread, its threads, its index among the
// blocks and their count, a barrier, a barrier that ORs a value over its threads) takes
// `sizes.rows` query rows of a batch entry at a time (a grid-stride loop over the
// entries' blocks of rows); each step above is computed by the block's threads for one
// row (a tile's largest score, the row's sum), one (row, key) (a score, a weight) or one
// (row, column) (an accumulator) each, with a barrier between the steps. A tile of keys
// the causal form hides from a row, which changes nothing (hidden_tile_changes_nothing),
// is not scored for it, nor are the tile's keys read where it is so for every row. The
// GPU runs it with the sizes as constants (attention_kernel); the host tests with any
// number of threads, each a std::thread.
template <class S, class Block, class Sizes>
SX_HOST_DEVICE void attention_blocks(Block& block, const Sizes& sizes, const AttentionTiles& tiles, const S* q,
                                     const S* k, const S* v, const bool* mask, S* out, const AttentionForm& form,
                                     const AttentionMask& layout) {
  constexpr int64_t kTile = kAttentionKeyTile;
  const int64_t kRows = sizes.rows, kDepth = sizes.depth, kWidth = sizes.width, kKeyStride = sizes.depth + 1;
  const int64_t thread = block.thread, threads = block.threads;
  const int64_t row_blocks = (form.queries + kRows - 1) / kRows;
  for (int64_t unit = block.index; unit < form.entries * row_blocks; unit += block.count) {
    const int64_t entry = unit / row_blocks, first_query = unit % row_blocks * kRows;
    const int64_t rows = form.queries - first_query < kRows ? form.queries - first_query : kRows;
    const S* q_entry = q + (entry * form.queries + first_query) * kDepth;
    const S* k_entry = k + entry * form.keys * kDepth;
    const S* v_entry = v + entry * form.keys * kWidth;
    const bool* mask_entry = mask != nullptr ? mask + mask_entry_offset(layout, entry) : nullptr;
    for (int64_t e = thread; e < rows * kDepth; e += threads) tiles.queries[e] = static_cast<float>(q_entry[e]);
    for (int64_t e = thread; e < kRows * kWidth; e += threads) tiles.sums[e] = 0.0f;
    for (int64_t r = thread; r < kRows; r += threads) {
      const AttentionRow start;
      tiles.largest[r] = start.largest;
      tiles.total[r] = start.total;
    }
    block.sync();
    for (int64_t first = 0; first < form.keys; first += kTile) {
      const int64_t count = form.keys - first < kTile ? form.keys - first : kTile;
      int scoring = 0;
      for (int64_t r = thread; r < kRows; r += threads) {
        const bool skip = r >= rows || (form.causal && first > first_query + r &&
                                        hidden_tile_changes_nothing({tiles.largest[r], tiles.total[r]}, form.excluded));
        tiles.skips[r] = skip;
        scoring |= skip ? 0 : 1;
      }
      // Whether some row scores the tile's keys.
      scoring = block.sync_or(scoring);
      for (int64_t e = thread; scoring && e < count * kDepth; e += threads) {
        tiles.keys_then_values[e / kDepth * kKeyStride + e % kDepth] = static_cast<float>(k_entry[first * kDepth + e]);
      }
      block.sync();
      for (int64_t e = thread; e < kRows * kTile; e += threads) {
        const int64_t r = e / kTile, j = e % kTile, query = first_query + r;
        if (j >= count) continue;
        if (tiles.skips[r]) {
          tiles.weights[e] = 0.0f;
        } else {
          const bool* mask_row = mask_entry != nullptr ? mask_entry + query * layout.query_stride : nullptr;
          tiles.weights[e] = attends(form, layout, mask_row, query, first + j)
                                 ? attention_score<S>(tiles.queries + r * kDepth,
                                                      tiles.keys_then_values + j * kKeyStride, kDepth, form.scale)
                                 : form.excluded;
        }
      }
      block.sync();
      // The keys scored, their values take their place.
      for (int64_t e = thread; e < count * kWidth; e += threads) {
        tiles.keys_then_values[e] = static_cast<float>(v_entry[first * kWidth + e]);
      }
      for (int64_t r = thread; r < kRows; r += threads) {
        if (!tiles.skips[r]) {
          tiles.tile_largest[r] = tile_largest({tiles.largest[r], tiles.total[r]}, tiles.weights + r * kTile, count);
        }
      }
      block.sync();
      for (int64_t e = thread; e < kRows * kTile; e += threads) {
        const int64_t r = e / kTile;
        if (!tiles.skips[r] && e % kTile < count)
          tiles.weights[e] = score_weight(tiles.weights[e], tiles.tile_largest[r]);
      }
      block.sync();
      for (int64_t r = thread; r < kRows; r += threads) {
        if (tiles.skips[r]) {
          tiles.factors[r] = 1.0f;
          continue;
        }
        AttentionRow row{tiles.largest[r], tiles.total[r]};
        tiles.factors[r] = absorb_weights(row, tiles.tile_largest[r], tiles.weights + r * kTile, count);
        tiles.largest[r] = row.largest;
        tiles.total[r] = row.total;
      }
      block.sync();
      for (int64_t e = thread; e < rows * kWidth; e += threads) {
        const int64_t r = e / kWidth, c = e % kWidth;
        tiles.sums[e] = accumulate_values(tiles.sums[e], tiles.factors[r], tiles.weights + r * kTile,
                                          tiles.keys_then_values + c, kWidth, count);
      }
      block.sync();
    }
    S* out_rows = out + (entry * form.queries + first_query) * kWidth;
    for (int64_t e = thread; e < rows * kWidth; e += threads) {
      out_rows[e] =
          attention_output<S>(tiles.sums[e], AttentionRow{tiles.largest[e / kWidth], tiles.total[e / kWidth]});
    }
    block.sync();
  }
}

#if defined(__CUDACC_RTC__)
// The sizes of a generated kernel's blocks, constants of its source.
template <int kRows, int kDepth, int kWidth>
struct AttentionSizes {
  static constexpr int64_t rows = kRows, depth = kDepth, width = kWidth;
};

// A CUDA block, for attention_blocks.
struct CudaBlock {
  int64_t thread = threadIdx.x, threads = blockDim.x, index = blockIdx.x, count = gridDim.x;
  void sync() const { __syncthreads(); }
  int sync_or(int value) const { return __syncthreads_or(value); }
};

// The generated kernel's body: attention_blocks with its shared memory.
template <class S, int kRows, int kDepth, int kWidth>
void attention_kernel(const S* __restrict__ q, const S* __restrict__ k, const S* __restrict__ v,
                      const bool* __restrict__ mask, S* __restrict__ out, const AttentionForm& form,
                      const AttentionMask& layout) {
  constexpr int kTileFloats = kAttentionKeyTile * (kDepth + 1 > kWidth ? kDepth + 1 : kWidth);
  __shared__ float queries[kRows * kDepth], keys_then_values[kTileFloats];
  __shared__ float weights[kRows * kAttentionKeyTile], sums[kRows * kWidth];
  __shared__ float largest[kRows], total[kRows], tile_largest[kRows], factors[kRows];
  __shared__ bool skips[kRows];
  const AttentionTiles tiles = {queries, keys_then_values, weights, sums, largest, total, tile_largest, factors, skips};
  CudaBlock block;
  attention_blocks<S>(block, AttentionSizes<kRows, kDepth, kWidth>{}, tiles, q, k, v, mask, out, form, layout);
}
#endif

}  // namespace sx::device::cuda
