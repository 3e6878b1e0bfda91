// Elementwise fusion (fusion.h): the interpreter that runs a group's program over
// tiles (fusion_find.cc finds the groups). A member's tile is computed by the kernel of its
// primitive over whole tiles (a loop the compiler vectorizes, or the vector math
// kernels), so a program of k members costs k short loops per tile and no reads or
// writes of memory between them.
#include "device/cpu/fusion/fusion.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <span>
#include <type_traits>

#include "device/cpu/fusion/fusion_rules.h"
#include "device/cpu/fusion/fusion_tiles.h"
#include "device/cpu/kernels/operand_walk.h"
#include "device/cpu/kernels/row_reduce.h"
#include "device/cpu/kernels/vector_math.h"
#include "device/cpu/products/gemm.h"

namespace sx::device::cpu {
namespace {

using graph::DType;
using graph::Node;
using graph::NodeId;

// Elements a tile: a member's tile is 2 KiB of floats, so a program's tiles stay in
// the first-level cache. A group that ends in a reduction takes whole rows a tile, as
// many as fit kRowTile, for rows of up to kLongestRow (16 KiB a member's tile, within the
// second-level cache); a sum of longer rows (a whole tensor's, say) takes each row in
// pieces of kPiece, a multiple of the sum's 16 lanes, carrying the lanes between them.
// Rows take twice a tile, since their members' short loops and each row's reduction
// cost per tile, not per element. Elementwise programs keep 512: an update fetched
// ahead a tile at a time (AdamW's) runs slower with larger tiles.
constexpr int64_t kTile = 512;
constexpr int64_t kRowTile = 1024;
constexpr int64_t kPiece = 2048;
// A long program over several large operands (a GELU's gradient: three of 4 MiB under
// 21 members) waits on memory at each tile's first reads: the processor's prefetchers
// do not run that far ahead of so slow a reader. Such a program fetches each operand
// kAhead tiles ahead itself, into the second-level cache: 16 KiB a stream, far enough
// ahead to cover the memory's latency at four streams, and out of the first level's way
// (fetching into the first level, or fewer tiles ahead, leaves AdamW's update of a
// large parameter twice as slow). A program of one stream or of little work a stream
// does not: the fetches cost more there than they hide. Large: 128 KiB of f32 and more.
// A training step's tensors of that size are cold when read, since the step's working
// set is many times L2; a prefetch of a line already held costs an instruction, so the
// threshold sits low.
constexpr int64_t kAhead = 8;
constexpr int64_t kPrefetchElements = 1 << 15;
constexpr int64_t kPrefetchWork = 3;  // members a stream, at least

// A group's program: its operands loaded (or read where they lie), then one
// instruction per member, a tile at a time. Slots: the operands', then the members'.
class FusedProgram {
 public:
  FusedProgram(const graph::Graph& graph, const FusedGroup& group, const std::vector<uint32_t>& absorbed,
               const KernelSet& kernels, int cores)
      : n_(graph::numel(graph.node(tiled_root(graph, group)).shape)),
        kernels_(math_kernels_for(kernels.isa)),
        loops_(tile_kernels_for(kernels.isa)) {
    const graph::Shape& shape = graph.node(tiled_root(graph, group)).shape;
    auto slot_of = [&](NodeId id) -> int {
      auto member = std::find(group.members.begin(), group.members.end(), id);
      if (member != group.members.end())
        return static_cast<int>(group.operands.size() + (member - group.members.begin()));
      return static_cast<int>(std::find(group.operands.begin(), group.operands.end(), id) - group.operands.begin());
    };
    if (group.reduces) {
      // Every reduction of the group reduces rows of one length (find_fusion).
      const auto reduction = std::find_if(group.members.begin(), group.members.end(),
                                          [&](NodeId id) { return row_reduction(graph, graph.node(id)).has_value(); });
      row_ = row_length(graph, graph.node(*reduction));
      in_pieces_ = row_ > kLongestRow;
      tile_ = in_pieces_ ? kPiece : std::max<int64_t>(1, kRowTile / row_) * row_;
    }
    // An operand of the rows' values' shape (the last axis 1) in a group of whole rows of
    // the last axis is loaded as a value a row: members of that shape read it so, and
    // members of the tiles' shape where it is (an add, subtract, multiply or divide with
    // one operand of the tiles' shape) or through a spread.
    graph::Shape rows_shape = shape;
    if (!rows_shape.empty()) rows_shape.back() = 1;
    const bool row_values = row_ > 0 && !in_pieces_ && !shape.empty() && row_ == shape.back();
    int64_t cost = 0;
    for (NodeId id : group.operands) {
      const Node& node = graph.node(id);
      graph::Shape from = node.shape;
      OperandWalk walk = operand_walk(shape, std::span<const graph::Shape>(&from, 1));
      bool in_order = walk.shape.size() == 1 && walk.strides[0][0] == 1;
      bool invariant = walk.shape.size() == 1 && walk.strides[0][0] == 0;
      bool of_rows = row_values && !invariant && node.shape == rows_shape;
      loads_.push_back({.dtype = node.dtype,
                        .walk = std::move(walk),
                        .in_order = in_order && !of_rows,
                        .in_place = in_order && !of_rows && node.dtype == DType::f32,
                        .invariant = invariant,
                        .periodic = false,
                        .row_values = of_rows});
      cost += 1;
    }
    // Rows longer than a tile: the group's last member, a sum, runs in sum_rows_in_pieces.
    const size_t programmed = group.members.size() - (in_pieces_ ? 1 : 0);
    size_t slots = group.operands.size() + group.members.size();
    std::vector<int> last_read(slots, -1);  // per slot: an instruction
    auto read = [&](Instruction& instruction, size_t k, int slot) {
      instruction.sources[k] = slot;
      last_read[static_cast<size_t>(slot)] = static_cast<int>(instructions_.size());
    };
    for (size_t m = 0; m < programmed; ++m) {
      const NodeId id = group.members[m];
      const Node& node = graph.node(id);
      auto written = std::find(group.written.begin(), group.written.end(), id);
      Instruction instruction{
          .op = Op::elementwise,
          .fn = nullptr,
          .sources = {},
          .arity = static_cast<int>(node.inputs.size()),
          .slot = slot_of(id),
          .rows = graph::numel(node.shape) != n_,
          .round_to_bf16 = node.dtype == DType::bf16,
          .reduce = ReduceKind::sum,
          .output = written == group.written.end() ? -1 : static_cast<int>(written - group.written.begin()),
          .dtype = node.dtype};
      // (Every sum, max or min in a group reduces its rows: find_fusion.)
      if (std::optional<ReduceKind> kind = row_reduction(graph, node)) {
        instruction.op = Op::reduce;
        instruction.reduce = *kind;
        read(instruction, 0, slot_of(node.inputs[0]));
        cost += 1;
      } else {
        instruction.fn = loops_.by_primitive[graph::index_of(node.op())];
        std::array<bool, 3> of_rows{};
        for (size_t k = 0; k < node.inputs.size(); ++k) {
          const NodeId from = read_node(graph, absorbed, id, k);
          const auto slot = static_cast<size_t>(slot_of(from));
          of_rows[k] =
              slot < group.operands.size() ? loads_[slot].row_values : graph::numel(graph.node(from).shape) != n_;
        }
        // A binary member of the tiles' shape with one operand a value a row reads that
        // value where it is (RowTileFn), without a spread.
        const RowTileFn row_fn = loops_.by_primitive_with_row[graph::index_of(node.op())];
        if (!instruction.rows && node.inputs.size() == 2 && of_rows[0] != of_rows[1] && row_fn != nullptr) {
          instruction.row_fn = row_fn;
          instruction.row_source = of_rows[0] ? 0 : 1;
        }
        for (size_t k = 0; k < node.inputs.size(); ++k) {
          const NodeId from = read_node(graph, absorbed, id, k);
          int slot = slot_of(from);
          if (of_rows[k] && !instruction.rows && instruction.row_fn == nullptr) {
            // A member's rows' values read back along the rows: spread over a tile first.
            Instruction spread{.op = Op::spread,
                               .fn = nullptr,
                               .sources = {},
                               .arity = 1,
                               .slot = static_cast<int>(slots++),
                               .rows = false,
                               .round_to_bf16 = false,
                               .reduce = ReduceKind::sum,
                               .output = -1,
                               .dtype = DType::f32};
            last_read.push_back(-1);
            read(spread, 0, slot);
            instructions_.push_back(spread);
            slot = spread.slot;
            cost += 1;
          }
          read(instruction, k, slot);
        }
        cost += *member_cost(graph, node);
      }
      instructions_.push_back(instruction);
    }
    slots_ = slots;
    if (in_pieces_) {
      pieces_slot_ = slot_of(graph.node(group.members.back()).inputs[0]);
      const NodeId sum = group.members.back();
      pieces_output_ =
          static_cast<int>(std::find(group.written.begin(), group.written.end(), sum) - group.written.begin());
      pieces_to_bf16_ = graph.node(sum).dtype == DType::bf16;
    }
    // A row (a bias) repeated along the last axis, shorter than a tile of whole rows:
    // every tile that starts a row holds the same values, loaded once a part.
    const int64_t row_length = shape.empty() ? 1 : shape.back();
    for (size_t k = 0; k < loads_.size(); ++k) {
      Load& load = loads_[k];
      load.periodic = !load.in_order && !load.invariant && !load.row_values && row_length > 0 && row_length < tile_ &&
                      tile_ % row_length == 0 && graph::numel(graph.node(group.operands[k]).shape) == row_length &&
                      load.walk.strides[0].back() == 1;
    }
    assign_buffers(std::move(last_read));
    const auto streams = std::count_if(loads_.begin(), loads_.end(), [](const Load& load) { return load.in_order; });
    prefetch_ =
        n_ > kPrefetchElements && streams >= 2 && static_cast<int64_t>(instructions_.size()) >= kPrefetchWork * streams;
    threads_ = threads_for(n_ * cost, cores);
    tiles_ = (n_ + tile_ - 1) / tile_;
    columns_ = shape.empty() ? 1 : shape.back();
    part_floats_ = buffers_ * tile_;
  }

  // Its tiles of scratch in `scratch` (null: its own), for its threads and `block_parts`
  // parts of a product's epilogue: before it runs, not for fused_facts.
  void prepare(SharedScratch* scratch, int block_parts) {
    const int parts = std::max(threads_, block_parts);
    scratch_ = scratch ? scratch : &own_scratch_;
    scratch_->reserve(static_cast<size_t>(parts) * static_cast<size_t>(part_floats_) * sizeof(float));
    tables_.resize(static_cast<size_t>(parts) * slots_);
    block_states_.resize(static_cast<size_t>(parts));
  }

  // Whether the program runs on blocks of its elements (run_block): not a reduction of
  // rows longer than the last axis, nor one taken in pieces.
  bool runs_by_blocks() const { return row_ == 0 || (!in_pieces_ && row_ == columns_); }
  bool blocks_need_whole_rows() const { return row_ > 0; }

  // Before a run's first block: each part loads the invariant and repeated operands again.
  void start_blocks() { std::fill(block_states_.begin(), block_states_.end(), PartState{}); }

  // Rows [row, row + rows) of the elements seen as rows of the last axis, columns
  // [col, col + cols) of them (all of them when the group reduces), on part `part`.
  void run_block(const uint8_t* const* in, uint8_t* const* out, int part, int64_t row, int64_t rows, int64_t col,
                 int64_t cols) {
    float* scratch = reinterpret_cast<float*>(scratch_->data.get()) + static_cast<size_t>(part) * part_floats_;
    const float** at = tables_.data() + static_cast<size_t>(part) * slots_;
    PartState& state = block_states_[static_cast<size_t>(part)];
    auto run_range = [&](int64_t begin, int64_t end) {
      while (begin < end) begin += run_tile(in, out, begin, end, state, scratch, at);
    };
    if (col == 0 && cols == columns_) {
      run_range(row * columns_, (row + rows) * columns_);
      return;
    }
    for (int64_t r = row; r < row + rows; ++r) run_range(r * columns_ + col, r * columns_ + col + cols);
  }

  // Whether written member `written` may lie over operand `k`'s bytes (FusedStep). An
  // operand read where it lies is read by the members themselves, so each of those
  // must run before the one that writes, or be that one (which reads each element
  // before it writes it, at the same place); one loaded into scratch is read whole at
  // the start of each tile. A value a row (a reduction's, or computed from one) is never one.
  bool may_overwrite(size_t k, int written) const {
    if (!loads_[k].in_order || (in_pieces_ && pieces_output_ == written)) return false;
    const auto member = std::find_if(instructions_.begin(), instructions_.end(),
                                     [&](const Instruction& instruction) { return instruction.output == written; });
    if (member == instructions_.end() || member->rows || member->op != Op::elementwise) return false;
    if (!loads_[k].in_place) return true;
    const auto writer = static_cast<size_t>(member - instructions_.begin());
    for (size_t m = writer + 1; m < instructions_.size(); ++m) {
      const Instruction& instruction = instructions_[m];
      for (int j = 0; j < instruction.arity; ++j) {
        if (instruction.sources[static_cast<size_t>(j)] == static_cast<int>(k)) return false;
      }
    }
    return true;
  }

  void operator()(const uint8_t* const* in, uint8_t* const* out) {
    if (in_pieces_) {
      sum_rows_in_pieces(in, out);
      return;
    }
    parallel_parts(tiles_, threads_, [&](int part, int64_t first, int64_t last) {
      float* scratch = reinterpret_cast<float*>(scratch_->data.get()) + static_cast<size_t>(part) * part_floats_;
      const float** at = tables_.data() + static_cast<size_t>(part) * slots_;
      PartState state;
      for (int64_t tile = first; tile < last; ++tile) {
        const int64_t end = std::min(n_, (tile + 1) * tile_);
        for (int64_t begin = tile * tile_; begin < end;) begin += run_tile(in, out, begin, end, state, scratch, at);
      }
    });
  }

 private:
  struct Load {
    DType dtype;
    OperandWalk walk;         // over the group's shape
    bool in_order;            // in the output's order, element for element
    bool in_place;            // f32 in the output's order: read where it lies
    bool invariant;           // one value (a scalar): its tile is filled once a part
    bool periodic = false;    // a row repeated along the last axis: its tile, once a part (PartState)
    bool row_values = false;  // a value a row of the tiles (the last axis 1): the tile's rows' values
  };
  // elementwise: fn over the tile's elements (or, `rows`, over its rows' values);
  // reduce: each row of the tile to its value; spread: each row's value along its row.
  enum class Op : uint8_t { elementwise, reduce, spread };
  struct Instruction {
    Op op;
    TileFn fn;
    std::array<int, 3> sources;
    int arity;
    int slot;            // where its result is
    bool rows;           // its result is a value a row of the tile
    bool round_to_bf16;  // each value rounded to bf16
    ReduceKind reduce;
    int output;  // its index among the written members, -1 when not written
    DType dtype;
    RowTileFn row_fn = nullptr;  // elementwise with sources[row_source] a value a row: run by this
    int row_source = 0;
  };
  // What a part's tiles of scratch hold from its earlier tiles of this run.
  struct PartState {
    bool invariants = false;  // the invariant operands' values
    bool rows = false;        // the repeated operands' rows, from a row's start
  };
  // Gives each slot that needs a tile of scratch (an operand not read in place, a
  // member not written where it lies in the output) one of buffers_ tiles, reused
  // once its value is dead: a program's tiles then stay in L1 however long it is.
  // A member's tile is none of its sources' (the loops read and write by index, but
  // vectorize only where the two do not overlap); an invariant operand's is its own
  // for good (it is loaded by a part's first tile only), and so is the last
  // member's when the group reduces (the reduction reads it after the program).
  void assign_buffers(std::vector<int> last_read) {
    const size_t loads = loads_.size();
    const int end = static_cast<int>(instructions_.size());
    if (in_pieces_) last_read[static_cast<size_t>(pieces_slot_)] = end;
    buffer_.assign(slots_, -1);
    std::vector<int> free;
    auto take = [&] {
      if (free.empty()) return buffers_++;
      int buffer = free.back();
      free.pop_back();
      return buffer;
    };
    for (size_t k = 0; k < loads; ++k) {
      if (!loads_[k].in_place) buffer_[k] = take();
      if (loads_[k].invariant || loads_[k].periodic) last_read[k] = end;
    }
    std::vector<bool> released(slots_, false);
    auto release = [&](size_t slot, int m) {
      if (buffer_[slot] < 0 || released[slot] || last_read[slot] > m) return;
      free.push_back(buffer_[slot]);
      released[slot] = true;
    };
    for (int m = 0; m < end; ++m) {
      const Instruction& instruction = instructions_[static_cast<size_t>(m)];
      const auto slot = static_cast<size_t>(instruction.slot);
      if (!writes_in_place(instruction)) buffer_[slot] = take();
      for (int k = 0; k < instruction.arity; ++k) release(static_cast<size_t>(instruction.sources[k]), m);
      release(slot, m);  // written, and read by no later member
    }
  }

  // A member of the tiles' shape written in f32 is computed where it lies in its output.
  static bool writes_in_place(const Instruction& instruction) {
    return instruction.op == Op::elementwise && !instruction.rows && instruction.output >= 0 &&
           instruction.dtype == DType::f32;
  }

  // Rows too long for a tile, each summed by one thread a piece at a time, in
  // row_sum's order (so with its bits: the rows are longer than 32).
  void sum_rows_in_pieces(const uint8_t* const* in, uint8_t* const* out) {
    parallel_parts(n_ / row_, threads_, [&](int part, int64_t first, int64_t last) {
      float* scratch = reinterpret_cast<float*>(scratch_->data.get()) + static_cast<size_t>(part) * part_floats_;
      const float** at = tables_.data() + static_cast<size_t>(part) * slots_;
      PartState state;
      for (int64_t row = first; row < last; ++row) {
        LaneSums<float> sums;
        for (int64_t begin = row * row_; begin < (row + 1) * row_; begin += tile_) {
          const int64_t length = run_tile(in, out, begin, (row + 1) * row_, state, scratch, at);
          const int64_t whole = length - length % LaneSums<float>::kLanes;  // short only at the row's end
          const float* piece = at[pieces_slot_];
          sums.add(piece, whole);
          if (begin + length == (row + 1) * row_) {
            const float sum = sums.finish(piece + whole, length - whole);
            if (pieces_to_bf16_) reinterpret_cast<graph::Bf16*>(out[pieces_output_])[row] = graph::Bf16(sum);
            else reinterpret_cast<float*>(out[pieces_output_])[row] = sum;
          }
        }
      }
    });
  }

  // A tile's `count` values of a row-valued member to its output, from its `first` row.
  void write_rows(uint8_t* const* out, const Instruction& instruction, const float* values, int64_t first,
                  int64_t count) const {
    uint8_t* to = out[instruction.output];
    if (instruction.dtype == DType::f32) std::copy_n(values, count, reinterpret_cast<float*>(to) + first);
    else if (instruction.dtype == DType::bf16)
      loops_.narrow_bf16(values, reinterpret_cast<graph::Bf16*>(to) + first, count);
    else loops_.narrow_bool(values, reinterpret_cast<bool*>(to) + first, count);
  }

  // The tile at `begin`, not past `end` (its row's end when rows are taken in pieces,
  // whole rows when the group reduces), and its length; it loads the invariant and
  // repeated operands only where the part's `state` says their tiles do not hold them.
  // Reduces its rows when they are whole.
  int64_t run_tile(const uint8_t* const* in, uint8_t* const* out, int64_t begin, int64_t end, PartState& state,
                   float* scratch, const float** at) const {
    const int64_t length = std::min(tile_, end - begin);
    const bool row_start = begin % columns_ == 0, rows_loaded = row_start && state.rows;
    for (size_t k = 0; k < loads_.size(); ++k) {
      const Load& load = loads_[k];
      if (prefetch_ && load.in_order && begin + kAhead * tile_ < n_) {
        const size_t size = graph::dtype_size(load.dtype);
        const uint8_t* ahead = in[k] + static_cast<size_t>(begin + kAhead * tile_) * size;
        const size_t bytes = static_cast<size_t>(std::min(length, n_ - begin - kAhead * tile_)) * size;
        for (size_t at_byte = 0; at_byte < bytes; at_byte += kCacheLine) __builtin_prefetch(ahead + at_byte, 0, 2);
      }
      if (load.in_place) {
        at[k] = reinterpret_cast<const float*>(in[k]) + begin;
        continue;
      }
      if ((load.invariant && state.invariants) || (load.periodic && rows_loaded)) continue;
      float* tile = scratch + buffer_[k] * tile_;
      at[k] = tile;
      if (load.row_values) {
        graph::visit_dtype(load.dtype, [&](auto types) {
          using S = typename decltype(types)::storage;
          const S* from = reinterpret_cast<const S*>(in[k]) + begin / row_;
          for (int64_t r = 0; r < length / row_; ++r) tile[r] = static_cast<float>(from[r]);
        });
        continue;
      }
      graph::visit_dtype(load.dtype, [&](auto types) {
        using S = typename decltype(types)::storage;
        const S* from = reinterpret_cast<const S*>(in[k]);
        const int64_t stride = load.walk.strides[0].back();
        walk_segments(load.walk, begin, begin + length, [&](int64_t to, const int64_t* offsets, int64_t count) {
          const S* source = from + offsets[0];
          if constexpr (std::is_same_v<S, float>) {
            if (stride == 1 && count == length) {  // the whole tile lies in a row: read it there (a bias)
              at[k] = source;
              return;
            }
          }
          float* target = tile + (to - begin);
          if (stride == 0) {
            std::fill(target, target + count, static_cast<float>(source[0]));
          } else if (stride == 1) {
            if constexpr (std::is_same_v<S, graph::Bf16>) loops_.widen_bf16(source, target, count);
            else if constexpr (std::is_same_v<S, bool>) loops_.widen_bool(source, target, count);
            else
              for (int64_t j = 0; j < count; ++j) target[j] = static_cast<float>(source[j]);
          } else {
            for (int64_t j = 0; j < count; ++j) target[j] = static_cast<float>(source[j * stride]);
          }
        });
      });
    }
    state.invariants = true;
    // A repeated operand's tile holds its rows from a row's start when it was filled
    // whole from one (a tile at another place, or a short one, leaves it otherwise).
    if (!rows_loaded) state.rows = row_start && length == tile_;
    const int64_t rows = row_ > 0 ? length / row_ : 0;  // whole rows, unless in pieces
    for (const Instruction& instruction : instructions_) {
      const auto slot = static_cast<size_t>(instruction.slot);
      const float* sources[3] = {at[instruction.sources[0]], at[instruction.sources[1]], at[instruction.sources[2]]};
      const bool in_place = writes_in_place(instruction);
      float* result =
          in_place ? reinterpret_cast<float*>(out[instruction.output]) + begin : scratch + buffer_[slot] * tile_;
      at[slot] = result;
      if (instruction.op == Op::spread) {
        loops_.spread(sources[0], rows, row_, result);
        continue;
      }
      const int64_t count = instruction.rows ? rows : length;
      if (instruction.op == Op::reduce && instruction.reduce == ReduceKind::sum) {
        loops_.row_sums(sources[0], rows, row_, result);
      } else if (instruction.op == Op::reduce) {
        for (int64_t r = 0; r < rows; ++r)
          result[r] = reduce_row<float, float>(instruction.reduce, sources[0] + r * row_, row_);
      } else if (instruction.row_fn != nullptr) {
        instruction.row_fn(sources, instruction.row_source, result, rows, row_);
      } else {
        instruction.fn(sources, result, count, kernels_);
      }
      if (instruction.round_to_bf16) loops_.round_to_bf16(result, count);
      if (instruction.output < 0 || in_place) continue;
      if (instruction.rows) write_rows(out, instruction, result, begin / row_, count);
      else if (instruction.dtype == DType::bf16)
        loops_.narrow_bf16(result, reinterpret_cast<graph::Bf16*>(out[instruction.output]) + begin, length);
      else loops_.narrow_bool(result, reinterpret_cast<bool*>(out[instruction.output]) + begin, length);
    }
    return length;
  }

  int64_t n_;
  const MathKernels* kernels_;
  const TileKernels& loops_;
  std::vector<Load> loads_;
  std::vector<Instruction> instructions_;
  size_t slots_ = 0;
  std::vector<int> buffer_;  // per slot: its tile of scratch, or -1 (read or written in place)
  int buffers_ = 0;          // tiles of scratch a part
  int threads_ = 1;
  int64_t tile_ = kTile;    // elements a tile: whole rows when the group reduces
  int64_t row_ = 0;         // elements a row of the reductions; 0: none
  bool in_pieces_ = false;  // rows longer than kLongestRow: a tile is a piece of one
  int pieces_slot_ = 0;     // then: the slot of the member it sums
  int pieces_output_ = 0;   // and the sum's index among the written
  bool pieces_to_bf16_ = false;
  bool prefetch_ = false;    // operands in order are fetched kAhead tiles ahead
  int64_t part_floats_ = 0;  // scratch a part: its tiles
  int64_t tiles_ = 0;
  int64_t columns_ = 1;                  // elements along the last axis: a row of run_block's blocks
  std::vector<PartState> block_states_;  // per part, for run_block: reset by start_blocks
  SharedScratch own_scratch_;            // when the plan shares none
  SharedScratch* scratch_ = nullptr;     // per thread: a tile per slot
  std::vector<const float*> tables_;     // per thread: each slot's tile
};

}  // namespace

FusedFacts fused_facts(const graph::Graph& graph, const FusedGroup& group, const std::vector<uint32_t>& absorbed,
                       const KernelSet& kernels) {
  const FusedProgram program(graph, group, absorbed, kernels, 1);
  FusedFacts facts;
  for (size_t w = 0; w < group.written.size(); ++w) {
    std::vector<bool>& row = facts.may_overwrite.emplace_back(group.operands.size());
    for (size_t k = 0; k < group.operands.size(); ++k) row[k] = program.may_overwrite(k, static_cast<int>(w));
  }
  return facts;
}

FusedStep make_fused_step(const graph::Graph& graph, const FusedGroup& group, const std::vector<uint32_t>& absorbed,
                          const KernelSet& kernels, int cores, SharedScratch* scratch, int block_parts) {
  auto program = std::make_shared<FusedProgram>(graph, group, absorbed, kernels, cores);
  program->prepare(scratch, block_parts);
  FusedStep step{.run = [program](const uint8_t* const* in, uint8_t* const* out) { (*program)(in, out); },
                 .run_block = {},
                 .start_blocks = {},
                 .blocks_need_whole_rows = program->blocks_need_whole_rows()};
  if (block_parts > 0 && program->runs_by_blocks()) {
    step.run_block = [program](const uint8_t* const* in, uint8_t* const* out, int part, int64_t row, int64_t rows,
                               int64_t col, int64_t cols) { program->run_block(in, out, part, row, rows, col, cols); };
    step.start_blocks = [program] { program->start_blocks(); };
  }
  return step;
}

}  // namespace sx::device::cpu
