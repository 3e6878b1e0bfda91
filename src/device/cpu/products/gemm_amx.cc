// bf16 products by AMX tiles (TDPBF16PS): gemm.h's rule for `amx`.
//
// A tile instruction multiplies a 16 x 32 tile of A by a 32 x 16 tile of B
// (in pairs of K, as VDPBF16PS reads them) into a 16 x 16 tile of f32 C. How
// it sums its 32 products into C is the hardware's own (measured on Sapphire
// Rapids: neither of the pair orders of VDPBF16PS, nor one rounding of the
// exact sum), so these products do not give the bits of the other kernels.
// What stays is everything gemm.h promises within a host: an element's sum is
// the same instructions over the same chunks of 32 steps of K, in order,
// whatever rows or columns lie beside it, so a row alone, in any batch, on any
// thread count, gives the same bits.
//
// Blocks: columns in panels of B packed whole along K into tiles of pairs: all the
// columns where they fit kPanelBytes, else as many as fit (a multiple of 32 columns,
// at most kPanel); rows 32 at a time (two tiles of A a chunk, read
// in place where A's rows allow it, else packed); C in 2 x 2 tiles that stay in tile
// registers over all of K, so that each is stored once, and each 32 rows of a panel
// are done (rounded, and handed to an epilogue) while they are in cache; rounded with
// no epilogue, each 2 x 2 block as soon as it is stored, while it is in L1.
// Compiled with AVX-512 (F, BW, VL) and AMX; called only where host_runs_amx().
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "device/cpu/fusion/fusion_tiles.h"
#include "device/cpu/products/gemm.h"
#include "graph/tensor.h"

namespace sx::device::cpu {
namespace {

constexpr int64_t kTile = 16;                 // rows of a tile, and f32 columns of C's and B's
constexpr int64_t kChunk = 32;                // steps of K a tile instruction takes
constexpr int64_t kPanel = 512;               // columns of C a packed panel of B covers at most
constexpr int64_t kPanelBytes = 1024 * 1024;  // a panel of B, packed: half the L2 of the hosts with AMX
constexpr int64_t kBlockRows = AmxBuffers::kBlockRows, kBlockCols = AmxBuffers::kBlockCols;
constexpr int64_t kFetchAhead = 4;  // pairs of B's rows that packing fetches ahead

// The palette-1 tile configuration: every tile used here is 16 rows of 64 bytes.
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t bytes_per_row[16] = {};
  uint8_t rows[16] = {};
};

// Tiles 0-3 hold C's 2 x 2 block, 4-5 A's two row tiles, 6-7 B's two column tiles.
class TilesConfigured {
 public:
  TilesConfigured() {
    TileConfig config;
    for (int t = 0; t < 8; ++t) {
      config.rows[t] = kTile;
      config.bytes_per_row[t] = 64;
    }
    _tile_loadconfig(&config);
  }
  ~TilesConfigured() { _tile_release(); }
  TilesConfigured(const TilesConfigured&) = delete;
  TilesConfigured& operator=(const TilesConfigured&) = delete;
};

uint16_t bits_at(const MatrixRef& m, int64_t i, int64_t j) {
  const int64_t at = i * m.rows + j * m.cols;
  if (m.from_f32) return graph::Bf16(static_cast<const float*>(m.data)[at]).bits;
  return static_cast<const graph::Bf16*>(m.data)[at].bits;
}

constexpr int64_t kTileHalves = kTile * kChunk;  // bf16 halves in a tile of 16 rows of 64 bytes

// 16 halves of `low` and of `high` interleaved into 16 words: word j holds low[j]
// in its low half and high[j] in its high half.
__m512i interleave(__m256i low, __m256i high) {
  const __m512i order = _mm512_set_epi16(47, 15, 46, 14, 45, 13, 44, 12, 43, 11, 42, 10, 41, 9, 40, 8, 39, 7, 38, 6, 37,
                                         5, 36, 4, 35, 3, 34, 2, 33, 1, 32, 0);
  return _mm512_permutex2var_epi16(_mm512_castsi256_si512(low), order, _mm512_castsi256_si512(high));
}

// Steps [step, step + depth) of B's columns [col, col + cols) as tiles of pairs: for
// each chunk of 32 steps, `tiles` tiles of 16 columns, each 16 rows of 16 words, word
// j of row r holding steps 2r and 2r + 1 of column j. Zero past K and past the columns.
// f32 B (from_f32) is rounded here by the cast's own rounding, two rows (or 16 columns'
// chunks) at a time into `rounded`, 2 * cols halves.
void pack_b(const MatrixRef& b, int64_t k, int64_t step, int64_t depth, int64_t col, int64_t cols, int64_t tiles,
            uint16_t* out, uint16_t* rounded) {
  const int64_t chunks = (depth + kChunk - 1) / kChunk, steps = std::min(depth, k - step);
  const auto* base = static_cast<const uint16_t*>(b.data);
  const auto* floats = static_cast<const float*>(b.data);
  const auto narrow = tile_kernels_for(Isa::amx).narrow_bf16;
  if (b.cols == 1) {
    // Row i's halves from column col: where they lie, or f32 rounded into `into`.
    const auto row_at = [&](int64_t i, uint16_t* into) -> const uint16_t* {
      if (!b.from_f32) return base + (step + i) * b.rows + col;
      narrow(floats + (step + i) * b.rows + col, reinterpret_cast<graph::Bf16*>(into), cols);
      return into;
    };
    // Rows of B: two at a time, 16 columns of each interleaved into a tile's row. The
    // rows kFetchAhead pairs on are fetched meanwhile: each row is a few lines of a
    // weight that lies in memory, too short for the hardware's prefetcher to start on
    // before the loop has read it.
    const int64_t element = b.from_f32 ? 4 : 2;
    const auto* bytes = static_cast<const char*>(b.data);
    for (int64_t pair = 0; pair < chunks * kTile; ++pair) {
      const int64_t p = 2 * pair;
      for (int64_t ahead = p + 2 * kFetchAhead; ahead < std::min(steps, p + 2 * kFetchAhead + 2); ++ahead) {
        const char* line = bytes + ((step + ahead) * b.rows + col) * element;
        for (int64_t byte = 0; byte < cols * element; byte += 64) __builtin_prefetch(line + byte, 0, 2);
      }
      const uint16_t* even = p < steps ? row_at(p, rounded) : nullptr;
      const uint16_t* odd = p + 1 < steps ? row_at(p + 1, rounded + cols) : nullptr;
      uint16_t* row = out + (p / kChunk) * tiles * kTileHalves + (pair % kTile) * kChunk;
      for (int64_t t = 0; t < tiles; ++t) {
        const int64_t j = t * kTile, width = std::clamp<int64_t>(cols - j, 0, kTile);
        const __mmask16 live = static_cast<__mmask16>((1u << width) - 1);
        __m256i low = even ? _mm256_maskz_loadu_epi16(live, even + j) : _mm256_setzero_si256();
        __m256i high = odd ? _mm256_maskz_loadu_epi16(live, odd + j) : _mm256_setzero_si256();
        _mm512_storeu_si512(row + t * kTileHalves, interleave(low, high));
      }
    }
    return;
  }
  std::memset(out, 0, static_cast<size_t>(chunks * tiles * kTileHalves) * sizeof(uint16_t));
  if (b.rows == 1 && b.from_f32) {
    // f32 columns along memory (a transpose read in place): a tile's 16 columns down all
    // of K, each read in order, a chunk of each rounded to 16 words of pairs, then the
    // words transposed 16 x 16. (A chunk of every column at a time, each of a weight's
    // rows would be come back to once a chunk, after the others had pushed it out.)
    for (int64_t t = 0; t * kTile < cols; ++t) {
      const int64_t width = std::min(kTile, cols - t * kTile);
      for (int64_t q = 0; q < chunks; ++q) {
        const int64_t first = q * kChunk, count = std::min(kChunk, steps - first);
        alignas(64) uint16_t words[kTile * kChunk] = {};
        for (int64_t j = 0; j < width; ++j) {
          narrow(floats + (col + t * kTile + j) * b.cols + step + first,
                 reinterpret_cast<graph::Bf16*>(words + j * kChunk), count);
        }
        avx512_kernels().pack_transposed(kTile, width, reinterpret_cast<const float*>(words), kTile,
                                         reinterpret_cast<float*>(out + (q * tiles + t) * kTileHalves), kTile);
      }
    }
    return;
  }
  const bool words_in_place =
      b.rows == 1 && b.cols % 2 == 0 && step % 2 == 0 && reinterpret_cast<uintptr_t>(b.data) % alignof(float) == 0;
  for (int64_t q = 0; q < chunks; ++q) {
    const int64_t first = q * kChunk, count = std::min(kChunk, steps - first);
    for (int64_t t = 0; t * kTile < cols; ++t) {
      const int64_t width = std::min(kTile, cols - t * kTile);
      uint16_t* tile = out + (q * tiles + t) * kTileHalves;
      if (words_in_place && count == kChunk) {
        // A transpose read in place: a column's pairs are words side by side, so a tile
        // is a 16 x 16 transpose of words (moved as floats, bits untouched).
        const auto* words = reinterpret_cast<const float*>(base + step + first + (col + t * kTile) * b.cols);
        avx512_kernels().pack_transposed(kTile, width, words, b.cols / 2, reinterpret_cast<float*>(tile), kTile);
        continue;
      }
      for (int64_t p = 0; p < count; ++p) {
        for (int64_t j = 0; j < width; ++j) {
          tile[(p / 2) * kChunk + j * 2 + (p & 1)] = bits_at(b, step + first + p, col + t * kTile + j);
        }
      }
    }
  }
}

// Rows [row, row + rows) of A (at most 32) over steps [step, step + depth) as two row
// tiles a chunk: 32 rows of 32 steps each, zero past the rows and past K.
void pack_a(const MatrixRef& a, int64_t k, int64_t row, int64_t rows, int64_t step, int64_t depth, uint16_t* out) {
  const int64_t chunks = (depth + kChunk - 1) / kChunk, steps = std::min(depth, k - step);
  if (rows < kBlockRows || steps % kChunk != 0) {
    std::memset(out, 0, static_cast<size_t>(chunks * kBlockRows * kChunk) * sizeof(uint16_t));
  }
  const auto* base = static_cast<const uint16_t*>(a.data);
  if (a.cols == 1) {
    for (int64_t i = 0; i < rows; ++i) {
      const uint16_t* from = base + (row + i) * a.rows + step;
      for (int64_t q = 0; q * kChunk < steps; ++q) {
        std::memcpy(out + q * kBlockRows * kChunk + i * kChunk, from + q * kChunk,
                    static_cast<size_t>(std::min(kChunk, steps - q * kChunk)) * sizeof(uint16_t));
      }
    }
    return;
  }
  // A's columns (a transpose read in place, rows side by side). A whole chunk of 32
  // rows of unit stride: steps paired into words (as B's rows are), then words
  // transposed 16 x 16 (moved as floats, bits untouched).
  int64_t p = 0;
  if (rows == kBlockRows && a.rows == 1) {
    alignas(64) uint32_t pairs[kTile * kBlockRows];  // pairs[w * 32 + i]: steps 2w, 2w + 1 of row i
    for (; p + kChunk <= steps; p += kChunk) {
      for (int64_t w = 0; w < kTile; ++w) {
        const uint16_t* even = base + (step + p + 2 * w) * a.cols + row;
        const uint16_t* odd = even + a.cols;
        for (int64_t half = 0; half < 2; ++half) {
          __m256i low = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(even + half * kTile));
          __m256i high = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(odd + half * kTile));
          _mm512_store_si512(pairs + w * kBlockRows + half * kTile, interleave(low, high));
        }
      }
      avx512_kernels().pack_transposed(kBlockRows, kTile, reinterpret_cast<const float*>(pairs), kBlockRows,
                                       reinterpret_cast<float*>(out + (p / kChunk) * kBlockRows * kChunk), kTile);
    }
  }
  // Else a step's rows are read along their length, and land in the block's rows.
  for (; p < steps; ++p) {
    uint16_t* to = out + (p / kChunk) * kBlockRows * kChunk + p % kChunk;
    const uint16_t* from = base + (step + p) * a.cols + row * a.rows;
    for (int64_t i = 0; i < rows; ++i) to[i * kChunk] = from[i * a.rows];
  }
}

// Columns of a panel of B for a product over `k` steps of `cols` columns: all of them
// where B packed whole fits kPanelBytes (a short K, as a weight's gradient over 128
// tokens has: A is then packed once, not once a panel); else whole 2 x 2 blocks, as
// many as kPanelBytes hold (at most kPanel).
int64_t panel_columns(int64_t k, int64_t cols) {
  const int64_t chunks = std::max<int64_t>(1, (k + kChunk - 1) / kChunk),
                block_bytes = chunks * kChunk * kBlockCols * 2, blocks = (cols + kBlockCols - 1) / kBlockCols;
  if (blocks * block_bytes <= kPanelBytes) return std::max<int64_t>(1, blocks) * kBlockCols;
  return std::clamp<int64_t>(kPanelBytes / block_bytes, 1, kPanel / kBlockCols) * kBlockCols;
}

}  // namespace

const KernelSet& amx_kernels() {
  static const KernelSet set = [] {
    KernelSet amx = avx512_kernels();
    amx.isa = Isa::amx;
    return amx;
  }();
  return set;
}

bool host_runs_amx() {
  static const bool runs = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    __asm__("cpuid" : "=a"(eax), "=b"(ebx), "=c"(ecx), "=d"(edx) : "a"(7), "c"(0));
    const bool tiles = (edx >> 24) & 1, bf16 = (edx >> 22) & 1;
    if (!tiles || !bf16) return false;
    // Linux hands a process the tile registers' state only on request.
    constexpr long kRequestPermission = 0x1023, kTileData = 18;
    return syscall(SYS_arch_prctl, kRequestPermission, kTileData) == 0;
  }();
  return runs;
}

void AmxBuffers::reserve(int64_t k, int64_t cols) {
  const int64_t chunks = (k + kChunk - 1) / kChunk;
  const auto grow = [](LineBuffer<uint16_t>& buffer, int64_t halves) {
    if (buffer.size() < static_cast<size_t>(halves)) buffer.resize(static_cast<size_t>(halves));
  };
  const int64_t panel = panel_columns(k, cols);
  grow(b, chunks * panel * kChunk);
  grow(a, chunks * kBlockRows * kChunk);
  grow(rounded, 2 * panel);
  if (sums.size() < static_cast<size_t>(kBlockRows * panel)) sums.resize(static_cast<size_t>(kBlockRows * panel));
  block.resize(static_cast<size_t>(kBlockRows * kBlockCols));
}

void amx_product(const MatrixRef& a, const MatrixRef& b, int64_t k, int64_t row, int64_t rows, int64_t col,
                 int64_t cols, float* c, int64_t ldc, AmxBuffers& buffers, const AmxFinished* finished) {
  TilesConfigured configured;
  // Blocks finished in whole rows, where B takes more than one panel: each 32 rows
  // finished once the last panel has passed over them (C's rows were written a panel at
  // a time, and wait in L2).
  const bool whole_rows = finished && finished->whole_rows;
  const int64_t width_most = panel_columns(k, cols);
  const bool rows_at_end = whole_rows && width_most < cols;
  // Sums that only the call reads (a bf16 product's, which it rounds) stay in a block
  // of 32 rows of a panel, never written to C: C's f32 sums would otherwise go to
  // memory and back for nothing (4 of gpt-large's 9 ms for a 3072 x 128 x 768 weight
  // gradient).
  const bool in_sums = finished && !finished->keeps_c && !rows_at_end;
  const bool by_tiles = in_sums && finished->by_tiles;
  buffers.reserve(k, cols);
  float* block = buffers.block.data();
  const int64_t chunks = (k + kChunk - 1) / kChunk;
  for (int64_t jc = col; jc < col + cols; jc += width_most) {
    const int64_t panel = std::min(width_most, col + cols - jc);
    const int64_t tiles = (panel + kBlockCols - 1) / kBlockCols * 2;  // whole 2 x 2 blocks
    const int64_t sums_ld = tiles * kTile;
    pack_b(b, k, 0, k, jc, panel, tiles, buffers.b.data(), buffers.rounded.data());
    for (int64_t ic = row; ic < row + rows; ic += kBlockRows) {
      const int64_t height = std::min(kBlockRows, row + rows - ic);
      // Whole chunks of 32 whole rows of a row-major A are read where they lie; the
      // rest is packed.
      const int64_t direct = a.cols == 1 && height == kBlockRows ? k / kChunk : 0;
      if (direct < chunks) pack_a(a, k, ic, height, direct * kChunk, k - direct * kChunk, buffers.a.data());
      const uint16_t* a_rows = static_cast<const uint16_t*>(a.data) + ic * a.rows;
      const int64_t a_stride = a.rows * static_cast<int64_t>(sizeof(uint16_t));
      for (int64_t t = 0; t < tiles; t += 2) {
        const int64_t j = jc + t * kTile, width = std::min(kBlockCols, col + cols - j);
        const bool whole = height == kBlockRows && width == kBlockCols;
        // To the sums' block, or to C: a block partly past C's edge, or handed on by
        // tiles, through buffers.block.
        const bool to_block = by_tiles || (!in_sums && !whole);
        float* target = to_block ? block : in_sums ? buffers.sums.data() + t * kTile : c + ic * ldc + j;
        const int64_t ld = to_block ? kBlockCols : in_sums ? sums_ld : ldc;
        const int64_t stride = ld * static_cast<int64_t>(sizeof(float));
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
        for (int64_t q = 0; q < chunks; ++q) {
          const uint16_t* b_chunk = buffers.b.data() + (q * tiles + t) * kTile * kChunk;
          if (q < direct) {
            _tile_loadd(4, a_rows + q * kChunk, a_stride);
            _tile_loadd(5, a_rows + kTile * a.rows + q * kChunk, a_stride);
          } else {
            const uint16_t* a_chunk = buffers.a.data() + (q - direct) * kBlockRows * kChunk;
            _tile_loadd(4, a_chunk, 64);
            _tile_loadd(5, a_chunk + kTile * kChunk, 64);
          }
          _tile_loadd(6, b_chunk, 64);
          _tile_loadd(7, b_chunk + kTile * kChunk, 64);
          _tile_dpbf16ps(0, 4, 6);
          _tile_dpbf16ps(1, 4, 7);
          _tile_dpbf16ps(2, 5, 6);
          _tile_dpbf16ps(3, 5, 7);
        }
        _tile_stored(0, target, stride);
        _tile_stored(1, target + kTile, stride);
        _tile_stored(2, target + kTile * ld, stride);
        _tile_stored(3, target + kTile * ld + kTile, stride);
        if (by_tiles) {
          (*finished)(ic, height, j, width, block, kBlockCols);
        } else if (!in_sums && !whole) {
          for (int64_t i = 0; i < height; ++i) std::copy_n(block + i * ld, width, c + (ic + i) * ldc + j);
        }
      }
      if (by_tiles) continue;  // handed on already
      if (in_sums) (*finished)(ic, height, jc, panel, buffers.sums.data(), sums_ld);
      else if (finished && !rows_at_end) (*finished)(ic, height, jc, panel, c + ic * ldc + jc, ldc);
    }
  }
  for (int64_t ic = row; rows_at_end && ic < row + rows; ic += kBlockRows) {
    (*finished)(ic, std::min(kBlockRows, row + rows - ic), col, cols, c + ic * ldc + col, ldc);
  }
}

}  // namespace sx::device::cpu
