// Matrix products of f32 and of bf16 in the BLIS/GotoBLAS structure: B in
// packed panels of kc rows, A in packed slivers of mr rows, a
// register-blocked micro-kernel per instruction set.
//
// The rule every kernel here keeps, and the reason for the structure: each
// output element of an f32 product is one fused multiply-add a step over
// k = 0, 1, ..., K-1, starting from zero, in that order. The order depends on
// K alone: never on M, N, the batch, the thread count, the tile an element
// lands in, or the vector width. Vectors span N, never K; threads split M and
// N, never K; a block of K continues the element's sum where the previous
// block stopped. So a row alone, in a batch of 8 or of 64, on 1 or 2 threads,
// and on every kernel gives the same bits.
//
// A bf16 product keeps the rule of the instruction that multiplies bf16 in
// hardware (VDPBF16PS): K in pairs, the odd term of each pair first, so
// k = 1, 0, 3, 2, ... (an odd K's last term alone), each step one f32 fused
// multiply-add that reads a subnormal input as zero and flushes a subnormal
// result to zero. Processors with AVX512_BF16 run that instruction on bf16
// pairs packed as 32-bit words; the others widen bf16 to f32 exactly, pack K
// in that order, and run their f32 kernels with MXCSR's flush-to-zero and
// denormals-are-zero set. So bf16 products give the same bits on every
// kernel too.
//
// A few rows read B where it lies, without packing it (bf16 widened by the tiles
// as they read it, or made into pairs on the pair tiles), fetching the lines
// ahead along B's rows as they go (B may come from memory); one row of f32 (a
// served call) and other few-row products stream B a few rows at a time, those
// steps of every sum of a block of C done before the next (axpy); a few rows over B
// read through a transpose (x @ W^T) transpose its blocks in registers as they read
// them. Each keeps the same steps in the same order per element.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "device/cpu/isa.h"
#include "device/cpu/kernels.h"
#include "graph/tensor.h"

namespace sx::device::cpu {

// tiles[r - 1][v - 1]: a micro-kernel for r rows by v vectors (see
// gemm_microkernel.h for its contract).
using TileKernel = void (*)(int64_t kc, const float* a, const float* b, int64_t ldb, float* c, int64_t ldc,
                            bool accumulate);
// As TileKernel with f32 A where it lies, not packed: its rows lda apart (each along
// memory), or its steps lda apart (a transpose read in place).
using InPlaceATileKernel = void (*)(int64_t kc, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                                    int64_t ldc, bool accumulate);
// A whole tile (mr rows, nr columns) as TileKernel, B read where it lies (row stride
// ldb) and stored to `packed` as pack_slivers lays out one sliver, while it computes.
using PackingTileKernel = void (*)(int64_t kc, const float* a, const float* b, int64_t ldb, float* packed, float* c,
                                   int64_t ldc, bool accumulate);
// The same with bf16 B's halves where they lie (row stride ldb, in halves), in the bf16
// order of gemm.h: widened to f32 steps, or (pair tiles) made into words of two steps
// from rows 2p and 2p + 1, kc counting words.
using Bf16PackingTileKernel = void (*)(int64_t kc, const float* a, const uint16_t* b, int64_t ldb, float* packed,
                                       float* c, int64_t ldc, bool accumulate);
// As TileKernel over packed A's pairs, bf16 B's halves where they lie (row stride ldb, in
// halves), word p made from rows 2p and 2p + 1 as the tile reads it: few rows, each of
// B's elements used once.
using PairsInPlaceTileKernel = void (*)(int64_t kc, const float* a, const uint16_t* b, int64_t ldb, float* c,
                                        int64_t ldc, bool accumulate);
// As TileKernel over A packed in steps of the bf16 order (gemm.h), bf16 B's halves where
// they lie (row stride ldb, in halves), each widened by the tile that reads it and never
// stored: step p reads row p ^ 1, so kc is even. Few rows, each of B's elements used once.
using WideningInPlaceTileKernel = void (*)(int64_t kc, const float* a, const uint16_t* b, int64_t ldb, float* c,
                                           int64_t ldc, bool accumulate);
// C[r, cols] = A * B over all kc steps of K, A packed as for TileKernel (r rows, the
// table's index), B read through a transpose where it lies (x @ W^T, W's rows along K):
// step p of column j at b[j * ldb + p], f32 or bf16 halves (widened, in the bf16 order
// of gemm.h).
using TransposedKernel = void (*)(int64_t kc, const float* a, const float* b, int64_t ldb, int64_t cols, float* c,
                                  int64_t ldc);
using WideningTransposedKernel = void (*)(int64_t kc, const float* a, const uint16_t* b, int64_t ldb, int64_t cols,
                                          float* c, int64_t ldc);
// Rows of a sliver of B that a tile fetches into L2 while it computes, every 2^shift
// steps a row's first lines (up to its last byte's) or its last byte's line, over its
// first rows << (shift + 1) steps: `rows` rows of `width` bytes, `ld` bytes apart.
struct SliverFetch {
  const char* first = nullptr;
  int64_t ld = 0, width = 0, rows = 0;
  int shift = 0;
};
// A whole tile as TileKernel that fetches `fetch` as it goes.
using FetchingTileKernel = void (*)(int64_t kc, const float* a, const float* b, int64_t ldb, float* c, int64_t ldc,
                                    bool accumulate, const SliverFetch& fetch);
// `steps` (1 to kAxpySteps) steps of n sums, in order: for s < steps, c[j] =
// fma(a[s], b[s * ldb + j], c[j]) for j < n.
using AxpyKernel = void (*)(int64_t n, int steps, const float* a, const float* b, int64_t ldb, float* c);
constexpr int kAxpySteps = 4;
// `depth` rows of f32 B (row stride ldb) to `slivers` whole nr-wide slivers.
using PackKernel = void (*)(int64_t depth, int64_t slivers, const float* b, int64_t ldb, float* out);
// out[p * out_stride + i] = src[i * ld + p] for p < depth and i < rows: rows
// of a matrix, each read along its length, written side by side. It packs A's
// slivers, and the slivers of a B read through a transpose.
using TransposeKernel = void (*)(int64_t depth, int64_t rows, const float* src, int64_t ld, float* out,
                                 int64_t out_stride);
// out[j] = the 32-bit word of low[j] (its low half) and high[j] (its high half) for
// j < n: two bf16 steps of K side by side, as the pair tiles read them.
using PairWordsKernel = void (*)(int64_t n, const uint16_t* low, const uint16_t* high, float* out);

struct KernelSet {
  static constexpr int kMaxRows = 12;
  static constexpr int kMaxVectors = 4;
  Isa isa = Isa::scalar;
  int mr = 1;     // rows of a full tile
  int nr = 1;     // columns of a full tile
  int width = 1;  // floats per vector
  TileKernel tiles[kMaxRows][kMaxVectors] = {};
  // The same over f32 B where it lies, row stride ldb (Gemm's in-place path), each
  // fetching its rows' next lines as it reads them.
  TileKernel in_place_tiles[kMaxRows][kMaxVectors] = {};
  // The same over bf16 B where it lies, widened as it is read.
  WideningInPlaceTileKernel widening_in_place_tiles[kMaxRows][kMaxVectors] = {};
  // [r - 1]: r rows (up to transposed_rows) over B read through a transpose, f32 or
  // widened from bf16.
  static constexpr int kTransposedRows = 16;
  int transposed_rows = 0;
  TransposedKernel transposed[kTransposedRows] = {};
  WideningTransposedKernel widening_transposed[kTransposedRows] = {};
  // The same over bf16 pairs, with pair_tiles: where B's steps lie along memory, its
  // word of a column's steps 2p (low half) and 2p + 1 is its own 32-bit word, so its
  // words are transposed as floats (an even K; kc counts words).
  int pair_transposed_rows = 0;
  TransposedKernel pair_transposed[kTransposedRows] = {};
  InPlaceATileKernel rows_of_a_tiles[kMaxRows][kMaxVectors] = {};
  InPlaceATileKernel steps_of_a_tiles[kMaxRows][kMaxVectors] = {};
  // The same tiles over packed bf16 pairs (kc counts pairs, each a 32-bit word
  // where tiles have a float); empty where the instruction set has none.
  TileKernel pair_tiles[kMaxRows][kMaxVectors] = {};
  PairsInPlaceTileKernel pair_in_place_tiles[kMaxRows][kMaxVectors] = {};  // with pair_tiles
  // One row of 4 * nr columns as pair_in_place_tiles (more sums at once), or none.
  PairsInPlaceTileKernel pair_in_place_row = nullptr;
  PairWordsKernel pair_words = nullptr;  // with pair_tiles
  PackingTileKernel packing_tile = nullptr;
  FetchingTileKernel fetching_tile = nullptr;
  Bf16PackingTileKernel widening_packing_tile = nullptr;
  Bf16PackingTileKernel pair_packing_tile = nullptr;  // with pair_tiles
  AxpyKernel axpy = nullptr;
  PackKernel pack_slivers = nullptr;
  TransposeKernel pack_transposed = nullptr;
  // The same, fetching into L2 as each block is transposed the same steps of the rows
  // `rows` on: the next sliver of a transposed B, whose rows lie one after another. It
  // packs bf16 pairs' slivers, whose B from memory otherwise waited on each of its lines
  // (16 x 768 x 50257 on VDPBF16PS 89 -> 111 GFLOP/s). Packing f32 or A does not: f32
  // gained less than the noise (24 x 768 x 50257 67 -> 71, 24 x 768 x 3072 from L3 81 ->
  // 79, medians of six runs), and A lies in cache.
  TransposeKernel pack_transposed_fetching = nullptr;
};

// Each defined in its own file, compiled for its instruction set: call one
// only on a host that runs it (choose_isa says which).
const KernelSet& scalar_kernels();
const KernelSet& avx2_kernels();
const KernelSet& avx512_kernels();
const KernelSet& avx512bf16_kernels();
const KernelSet& amx_kernels();  // avx512's, bf16 products by amx_product
const KernelSet& kernels_for(Isa isa);

// Whether VDPBF16PS multiplies more bf16 products a second on this processor
// than the f32 FMA does (32 an instruction against 16), each timed once, for
// about a millisecond. Call only where avx512bf16 runs.
bool pair_products_outrun_fma();

// An operand: element (i, j) of a matrix at data + i * rows + j * cols
// elements, f32 or bf16.
struct MatrixRef {
  const void* data = nullptr;
  int64_t rows = 0;  // stride between rows, in elements
  int64_t cols = 1;  // stride between columns, in elements
  bool bf16 = false;
  // A bf16 operand whose data is f32, each element rounded to bf16 as it is read
  // (graph::Bf16's rounding, as a cast rounds): a cast of a weight that the product
  // absorbs. B alone, of a product on AMX (amx_product rounds it as it packs it).
  bool from_f32 = false;
};

// Whether this host runs AMX tiles of bf16 (AMX-TILE and AMX-BF16, and Linux
// granted the process their state).
bool host_runs_amx();

// A product's scratch, its first element on a cache line: a tile's vector loads of
// packed operands then never straddle two lines, as every other one did from a block that
// malloc starts 16 bytes past a line. Plain heap memory, a line's worth more than asked:
// aligned allocations (memalign) leave fragments in the heap as plans are made and
// dropped, and a REPL's peak memory grew with its entries (e2e.repl_memory).
template <class T>
class LineBuffer {
 public:
  LineBuffer() = default;
  // Not copied: a copy's elements would start at another offset in its storage.
  LineBuffer(const LineBuffer&) = delete;
  LineBuffer& operator=(const LineBuffer&) = delete;
  LineBuffer(LineBuffer&&) noexcept = default;
  LineBuffer& operator=(LineBuffer&&) noexcept = default;

  size_t size() const { return size_; }
  // Room for `n` elements; what it held is not kept.
  void resize(size_t n) {
    storage_.assign(n + kSlack, T{});
    size_ = n;
  }
  T* data() { return storage_.empty() ? nullptr : std::assume_aligned<64>(first()); }
  const T* data() const { return const_cast<LineBuffer*>(this)->data(); }
  T& operator[](size_t i) { return data()[i]; }

 private:
  static constexpr size_t kSlack = 64 / sizeof(T) - 1;
  T* first() {
    const auto at = reinterpret_cast<uintptr_t>(storage_.data());
    return storage_.data() + (64 - at % 64) % 64 / sizeof(T);
  }
  std::vector<T> storage_;
  size_t size_ = 0;
};

// The buffers of amx_product, one set per thread: A's rows and B's block packed as
// tiles, and a 2 x 2 block of C's tiles that lies partly past C's edge.
struct AmxBuffers {
  static constexpr int64_t kBlockRows = 32, kBlockCols = 32;
  LineBuffer<uint16_t> a, b;
  LineBuffer<uint16_t> rounded;  // two rows of an f32 B (MatrixRef::from_f32) rounded, as B is packed
  LineBuffer<float> sums;        // 32 rows of a panel's sums, where they need not go to C
  LineBuffer<float> block;       // a block of 32 x 32 partly past C's edge, or handed on alone (by_tiles)
  // Sizes them for amx_product over `k` steps and `cols` columns (a Gemm that runs on
  // AMX does it when it is made, so that its runs allocate nothing and the plan's
  // scratch counts them).
  void reserve(int64_t k, int64_t cols);
  size_t bytes() const {
    return (a.size() + b.size() + rounded.size()) * sizeof(uint16_t) + (sums.size() + block.size()) * sizeof(float);
  }
};

// What amx_product calls on each block of C as its sums are done, while it is in cache:
// call(row, rows, col, cols, values, ld), the block's sums at values (row r at
// values + r * ld). Unless keeps_c, the sums may be handed on without being written to
// C. A reference to a callable, as BlockDone is.
struct AmxFinished {
  void (*call)(const void* callable, int64_t row, int64_t rows, int64_t col, int64_t cols, const float* values,
               int64_t ld) = nullptr;
  const void* callable = nullptr;
  bool whole_rows = false;  // every block spans all the columns asked for
  bool keeps_c = true;
  // Each 2 x 2 block of tiles may be handed on alone, as soon as it is done (a rounding
  // with no epilogue): its sums then never leave L1.
  bool by_tiles = false;

  void operator()(int64_t row, int64_t rows, int64_t col, int64_t cols, const float* values, int64_t ld) const {
    call(callable, row, rows, col, cols, values, ld);
  }
};

// C's rows [row, row + rows) and columns [col, col + cols) = A @ B over all K (k > 0),
// bf16 A and B (B maybe f32 rounded as it is packed, from_f32), by AMX tiles
// (gemm_amx.cc has their rule), each block handed to
// `finished` where given. Call only where host_runs_amx().
void amx_product(const MatrixRef& a, const MatrixRef& b, int64_t k, int64_t row, int64_t rows, int64_t col,
                 int64_t cols, float* c, int64_t ldc, AmxBuffers& buffers, const AmxFinished* finished = nullptr);

// The packing buffers of one thread's part of a product (LineBuffer).
struct GemmWorkspace {
  LineBuffer<float> a_pack, b_pack, tile;
  LineBuffer<float> b_row;   // a widened row of B, when streaming
  LineBuffer<float> b_wide;  // B's block as f32 rows before packing, when it is bf16 or strided (made
                             // on first use)
  AmxBuffers amx;
};

// Packing buffers that the products of a plan share, its steps running one at a time:
// each Gemm made with it grows the slots it uses to what it needs, so the plan holds
// the buffers of its largest product rather than of every one (gpt-large's training
// step: 250 MB of them). Products that run at once (a batch spread over the threads)
// take slots of their own.
struct GemmScratch {
  std::vector<GemmWorkspace> slots;
  // The f32 C of a bf16 product before it is rounded (Gemm::run's `rounded`), the
  // largest any product of the plan asked for. On whole cache lines: threads write
  // neighbouring columns of it.
  SharedScratch product;
  size_t bytes() const;  // as made so far
};

// Called as a product finishes blocks of C: rows [row, row + rows) and columns
// [col, col + cols), every sum done (and rounded, when rounded), by the thread running
// part `part` of the product (below Gemm::threads()), with the caller's MXCSR. An
// epilogue runs there on the block while it is still in cache. A reference to a
// callable (`blocks_to`), so that a run allocates nothing.
struct BlockDone {
  void (*call)(const void* callable, int part, int64_t row, int64_t rows, int64_t col, int64_t cols) = nullptr;
  const void* callable = nullptr;
  bool whole_rows = false;  // every block spans all of C's columns (the product must not split them)

  void operator()(int part, int64_t row, int64_t rows, int64_t col, int64_t cols) const {
    call(callable, part, row, rows, col, cols);
  }
};

// A BlockDone calling `f`, which must outlive it.
template <class F>
BlockDone blocks_to(const F& f, bool whole_rows) {
  return {.call = [](const void* callable, int part, int64_t row, int64_t rows, int64_t col,
                     int64_t cols) { (*static_cast<const F*>(callable))(part, row, rows, col, cols); },
          .callable = &f,
          .whole_rows = whole_rows};
}

// C[m, n] = A[m, k] @ B[k, n] for one shape and operand dtype (both f32 or
// both bf16), with its packing buffers made once: its own, or slots
// [first_slot, first_slot + threads) of `scratch`. C is f32, row-major with
// row stride ldc. With `rounded`, C is also written there rounded to bf16 (same
// row stride), each tile as soon as its sums are done, while it is in cache: a
// pass over all of C afterwards would read it back from memory (gpt-small's bf16
// gradient rounds 29M values a step). With `rounded_in_c` instead (bf16), C's sums are
// rounded so and left in C as f32, each the bits of its bf16 value widened: a product
// that only a cast to f32 reads, in one pass. run is not reentrant: one call at a time
// (a plan runs one call at a time).
class Gemm {
 public:
  Gemm(const KernelSet& kernels, int64_t m, int64_t n, int64_t k, int threads, bool bf16,
       GemmScratch* scratch = nullptr, int first_slot = 0);
  Gemm(const Gemm&) = delete;  // scratch_ may point into the object
  Gemm& operator=(const Gemm&) = delete;
  // With `done`, called on every block of C as it is finished.
  void run(MatrixRef a, MatrixRef b, float* c, int64_t ldc, graph::Bf16* rounded = nullptr,
           const BlockDone* done = nullptr, bool rounded_in_c = false);

  int threads() const { return threads_; }
  // Whether threads take parts of C's columns: then no block is a whole row.
  bool splits_columns() const { return grid_cols_ > 1; }

 private:
  using Workspace = GemmWorkspace;
  struct Region {
    int64_t row_begin, row_end, col_begin, col_end;
  };
  // Where a region's finished blocks go: rounded to bf16 (to `rounded`, or widened to
  // `widened`, which is C), and to an epilogue, on the thread running part `part`;
  // `caller_csr`, the MXCSR the epilogue runs with.
  struct Finish {
    graph::Bf16* rounded;
    float* widened;
    const BlockDone* done;
    int part;
    unsigned caller_csr;
    bool rounds() const { return rounded != nullptr || widened != nullptr; }
  };
  // The ways a region of C is computed: no steps of K (zeros), AMX's tiles, a few rows
  // with B read where it lies (in place), fewer rows than a tile (streamed), a few rows
  // over B read through a transpose where it lies (transposed), or B and A packed for
  // the micro-kernel's tiles.
  enum class RegionPath { empty_sum, amx_tiles, in_place, streamed, transposed, packed };
  RegionPath path_of(int64_t rows, int64_t cols, const MatrixRef& b) const;
  // A region by its path, then rounded and handed to finish.done.
  void run_region(const Region& region, MatrixRef a, MatrixRef b, float* c, int64_t ldc, const Finish& finish,
                  Workspace& ws);
  // The amx_tiles and packed paths, which round and hand on each block as they finish it.
  void amx_region(const Region& region, MatrixRef a, MatrixRef b, float* c, int64_t ldc, const Finish& finish,
                  Workspace& ws) const;
  void packed_region(const Region& region, MatrixRef a, MatrixRef b, float* c, int64_t ldc, const Finish& finish,
                     Workspace& ws);
  // Calls finish.done on a block, with the caller's MXCSR.
  void block_done(const Finish& finish, int64_t row, int64_t rows, int64_t col, int64_t cols) const;
  // The sums of C's rows [row, row + rows) and columns [col, col + cols), at `values`
  // (row stride ld, maybe C itself), rounded to where `finish` says (row stride ldc).
  void round_block(const Finish& finish, const float* values, int64_t ld, int64_t ldc, int64_t row, int64_t rows,
                   int64_t col, int64_t cols) const;
  // A few rows (kInPlaceRows), B's rows along memory, f32 or bf16: A
  // packed whole, a sliver for each tile (the rows shared evenly), B read where it lies
  // by the tiles (bf16 widened by the tile that reads it), kInPlaceDepth steps of K at
  // a time; the columns past the last whole vector streamed. bf16 B goes by
  // pairs_in_place_region where the pair tiles run, elsewhere by the f32 tiles (the
  // same bits).
  void in_place_region(const Region& region, MatrixRef a, MatrixRef b, float* c, int64_t ldc, Workspace& ws) const;
  // A few rows on the pair tiles, bf16 B's rows along memory: A packed in pairs, a
  // sliver for each tile (the rows shared evenly), each word of B made from its two rows
  // by the tile that reads it, never stored (pair_in_place_tiles), kInPlaceDepth words at
  // a time.
  void pairs_in_place_region(const Region& region, MatrixRef a, MatrixRef b, float* c, int64_t ldc,
                             Workspace& ws) const;
  // Whether a region of this many rows and columns, B's rows along memory, goes in
  // place: a few rows, resident, two or more, or of bf16 one too; with bf16 pairs, up
  // to 16 rows (and two tiles over short rows of C).
  bool in_place(int64_t rows, int64_t cols) const;
  void stream_region(const Region& region, MatrixRef a, MatrixRef b, float* c, int64_t ldc, Workspace& ws) const;
  // A few rows (KernelSet's transposed_rows) over B read through a transpose, its steps
  // along memory, f32 or bf16 widened: A packed whole, C by tiles that transpose B's
  // blocks as they read them (KernelSet::transposed).
  void transposed_region(const Region& region, MatrixRef a, MatrixRef b, float* c, int64_t ldc, Workspace& ws) const;

  // A packed word is one step of K, or (pairs_) two: words [word, word + words).
  void pack_a(const MatrixRef& a, int64_t row, int64_t rows, int64_t word, int64_t words, float* out) const;
  // As pack_a, a sliver for each of the packed path's tiles (RowTiles in gemm.cc).
  void pack_a_tiles(const MatrixRef& a, int64_t row, int64_t rows, int64_t word, int64_t words, float* out) const;
  void pack_b(const MatrixRef& b, int64_t word, int64_t words, int64_t col, int64_t cols, float* out,
              float* wide) const;

  const KernelSet& kernels_;
  int64_t m_, n_, k_;
  bool bf16_;
  bool amx_;       // bf16 run by amx_product
  bool pairs_;     // bf16 run as packed pairs by kernels_.pair_tiles
  int64_t words_;  // K in packed words: k_, or k_'s pairs

  int threads_;
  int64_t kc_, mc_, nc_;               // blocks in packed words, rows and columns
  bool resident_ = false;              // a region's rows fit one block of A, packed once for all of B
  int64_t nc_resident_;                // nc then: a kc x nc block of B fits L2
  int grid_rows_ = 1, grid_cols_ = 1;  // how a product is split over the threads
  GemmScratch own_scratch_;            // when made without a shared one
  GemmScratch* scratch_;               // own_scratch_ or the shared one
  int first_slot_;
  // The instruction set's rounding (TileKernels::narrow_bf16_rows, round_bf16_rows).
  void (*narrow_bf16_rows_)(const float* x, int64_t x_stride, graph::Bf16* o, int64_t o_stride, int64_t rows,
                            int64_t n);
  void (*round_bf16_rows_)(const float* x, int64_t x_stride, float* o, int64_t o_stride, int64_t rows, int64_t n);
};

}  // namespace sx::device::cpu
