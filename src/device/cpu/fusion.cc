// Elementwise fusion (fusion.h): the interpreter that runs a group's program over
// tiles (fusion_find.cc finds the groups). A member's tile is computed by the kernel of its
// primitive over whole tiles (a loop the compiler vectorizes, or the vector math
// kernels), so a program of k members costs k short loops per tile and no reads or
// writes of memory between them.
#include "device/cpu/fusion.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <span>
#include <type_traits>

#include "device/cpu/fusion_rules.h"
#include "device/cpu/fusion_tiles.h"
#include "device/cpu/gemm.h"
#include "device/cpu/operand_walk.h"
#include "device/cpu/row_reduce.h"
#include "device/cpu/vector_math.h"

namespace sx::device::cpu {
namespace {

using graph::DType;
using graph::Node;
using graph::NodeId;
using graph::PrimId;

// Elements a tile: a member's tile is 2 KiB of floats, so a program's tiles stay in
// the first-level cache. A group that ends in a reduction takes whole rows a tile, as
// many as fit kTile, for rows of up to kLongestRow (16 KiB a member's tile, within the
// second-level cache); a sum of longer rows (a whole tensor's, say) takes each row in
// pieces of kPiece, a multiple of the sum's 16 lanes, carrying the lanes between them.
constexpr int64_t kTile = 512;
constexpr int64_t kPiece = 2048;
// A long program over several large operands (a GELU's gradient: three of 4 MiB under
// 21 members) waits on memory at each tile's first reads: the processor's prefetchers
// do not run that far ahead of so slow a reader. Such a program fetches each operand
// kAhead tiles ahead itself (gpt-small's GELU gradient, Zen 5: 1.75 -> 1.35 ms a call;
// AdamW's update of a parameter in place, 15 members over 4 operands: 4.0 -> 3.2 ms for
// 2.4M parameters). A program of one stream or of little work a stream does not: there
// it cost 10-30%. Large: more than the second-level cache of any of our hosts holds (2 MiB of f32).
constexpr int64_t kAhead = 2;
constexpr int64_t kPrefetchElements = 1 << 19;
constexpr int64_t kPrefetchWork = 3;  // members a stream, at least

// instruction per member, a tile at a time. Slots: the operands', then the members'.
class FusedProgram {
 public:
  FusedProgram(const graph::Graph& graph, const FusedGroup& group, const std::vector<uint32_t>& absorbed,
               const KernelSet& kernels, int cores, SharedScratch* scratch, int block_parts)
      : n_(graph::numel(graph.node(tiled_root(group)).shape)),
        kernels_(math_kernels_for(kernels.isa)),
        loops_(tile_kernels_for(kernels.isa)) {
    const graph::Shape& shape = graph.node(tiled_root(group)).shape;
    auto slot_of = [&](NodeId id) -> int {
      auto member = std::find(group.members.begin(), group.members.end(), id);
      if (member != group.members.end())
        return static_cast<int>(group.operands.size() + (member - group.members.begin()));
      return static_cast<int>(std::find(group.operands.begin(), group.operands.end(), id) - group.operands.begin());
    };
    int64_t cost = 0;
    for (NodeId id : group.operands) {
      const Node& node = graph.node(id);
      graph::Shape from = node.shape;
      OperandWalk walk = operand_walk(shape, std::span<const graph::Shape>(&from, 1));
      bool in_order = walk.shape.size() == 1 && walk.strides[0][0] == 1;
      bool invariant = walk.shape.size() == 1 && walk.strides[0][0] == 0;
      loads_.push_back({.dtype = node.dtype,
                        .walk = std::move(walk),
                        .in_order = in_order,
                        .in_place = in_order && node.dtype == DType::f32,
                        .invariant = invariant});
      cost += 1;
    }
    const std::span<const NodeId> elementwise(group.members.data(), group.members.size() - (group.reduces ? 1 : 0));
    std::vector<int> last_read(group.operands.size() + elementwise.size(), -1);  // per slot: an instruction
    for (NodeId id : elementwise) {
      const Node& node = graph.node(id);
      Instruction instruction{.fn = loops_.by_primitive[graph::index_of(node.op())],
                              .sources = {},
                              .arity = static_cast<int>(node.inputs.size()),
                              .round_to_bf16 = node.dtype == DType::bf16};
      for (size_t k = 0; k < node.inputs.size(); ++k) {
        NodeId from = read_node(graph, absorbed, id, k);
        // A member read through a broadcast is not a member of this group (find_fusion).
        instruction.sources[k] = slot_of(from);
        last_read[static_cast<size_t>(instruction.sources[k])] = static_cast<int>(instructions_.size());
      }
      instructions_.push_back(instruction);
      cost += *member_cost(graph, node);
      auto written = std::find(group.written.begin(), group.written.end(), id);
      outputs_.push_back(written == group.written.end() ? -1 : static_cast<int>(written - group.written.begin()));
      dtypes_.push_back(node.dtype);
    }
    slots_ = group.operands.size() + elementwise.size();
    if (group.reduces) {
      const Node& node = graph.node(group.members.back());
      row_ = row_length(graph, node);
      in_pieces_ = row_ > kLongestRow;
      tile_ = in_pieces_ ? kPiece : std::max<int64_t>(1, kTile / row_) * row_;
      reduction_ = Reduction{
          .kind = *row_reduction(graph, node),
          .output = static_cast<int>(std::find(group.written.begin(), group.written.end(), group.members.back()) -
                                     group.written.begin()),
          .to_bf16 = node.dtype == DType::bf16};
    }
    // A row (a bias) repeated along the last axis, shorter than a tile of whole rows:
    // every tile that starts a row holds the same values, loaded once a part.
    const int64_t row_length = shape.empty() ? 1 : shape.back();
    for (size_t k = 0; k < loads_.size(); ++k) {
      Load& load = loads_[k];
      load.periodic = !load.in_order && !load.invariant && row_length > 0 && row_length < tile_ &&
                      tile_ % row_length == 0 && graph::numel(graph.node(group.operands[k]).shape) == row_length &&
                      load.walk.strides[0].back() == 1;
    }
    assign_buffers(last_read);
    const auto streams = std::count_if(loads_.begin(), loads_.end(), [](const Load& load) { return load.in_order; });
    prefetch_ =
        n_ > kPrefetchElements && streams >= 2 && static_cast<int64_t>(instructions_.size()) >= kPrefetchWork * streams;
    threads_ = threads_for(n_ * cost, cores);
    tiles_ = (n_ + tile_ - 1) / tile_;
    columns_ = shape.empty() ? 1 : shape.back();
    const int parts = std::max(threads_, block_parts);
    scratch_ = scratch ? scratch : &own_scratch_;
    scratch_->reserve(static_cast<size_t>(parts) * buffers_ * tile_ * sizeof(float));
    tables_.resize(static_cast<size_t>(parts) * slots_);
    block_states_.resize(static_cast<size_t>(parts));
  }

  // Whether the program runs on blocks of its elements (run_block): not a reduction of
  // rows longer than the last axis, nor one taken in pieces.
  bool runs_by_blocks() const { return !reduction_ || (!in_pieces_ && row_ == columns_); }
  bool blocks_need_whole_rows() const { return reduction_.has_value(); }

  // Before a run's first block: each part loads the invariant and repeated operands again.
  void start_blocks() { std::fill(block_states_.begin(), block_states_.end(), PartState{}); }

  // Rows [row, row + rows) of the elements seen as rows of the last axis, columns
  // [col, col + cols) of them (all of them when the group reduces), on part `part`.
  void run_block(const uint8_t* const* in, uint8_t* const* out, int part, int64_t row, int64_t rows, int64_t col,
                 int64_t cols) {
    float* scratch = reinterpret_cast<float*>(scratch_->data.get()) + static_cast<size_t>(part) * buffers_ * tile_;
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
  // must run before the one that writes; one loaded into scratch is read whole at the
  // start of each tile. A row reduction's output (a value a row) is never one.
  bool may_overwrite(size_t k, int written) const {
    if (!loads_[k].in_order || (reduction_ && reduction_->output == written)) return false;
    const auto member = std::find(outputs_.begin(), outputs_.end(), written);
    if (member == outputs_.end()) return false;
    if (!loads_[k].in_place) return true;
    const auto writer = static_cast<size_t>(member - outputs_.begin());
    for (size_t m = writer; m < instructions_.size(); ++m) {
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
      float* scratch = reinterpret_cast<float*>(scratch_->data.get()) + static_cast<size_t>(part) * buffers_ * tile_;
      const float** at = tables_.data() + static_cast<size_t>(part) * slots_;
      PartState state;
      for (int64_t tile = first; tile < last; ++tile) run_tile(in, out, tile * tile_, n_, state, scratch, at);
    });
  }

 private:
  struct Load {
    DType dtype;
    OperandWalk walk;       // over the group's shape
    bool in_order;          // in the output's order, element for element
    bool in_place;          // f32 in the output's order: read where it lies
    bool invariant;         // one value (a scalar): its tile is filled once a part
    bool periodic = false;  // a row repeated along the last axis: its tile, once a part (PartState)
  };
  struct Instruction {
    TileFn fn;
    std::array<int, 3> sources;
    int arity;
    bool round_to_bf16;
  };
  // What a part's tiles of scratch hold from its earlier tiles of this run.
  struct PartState {
    bool invariants = false;  // the invariant operands' values
    bool rows = false;        // the repeated operands' rows, from a row's start
  };
  // The root's row reduction of the last member's tile: each row's value to
  // written output `output`.
  struct Reduction {
    ReduceKind kind;
    int output;
    bool to_bf16;
  };

  // Gives each slot that needs a tile of scratch (an operand not read in place, a
  // member not written where it lies in the output) one of buffers_ tiles, reused
  // once its value is dead: a program's tiles then stay in L1 however long it is.
  // A member's tile is none of its sources' (the loops read and write by index, but
  // vectorize only where the two do not overlap); an invariant operand's is its own
  // for good (it is loaded by a part's first tile only), and so is the last
  // member's when the group reduces (the reduction reads it after the program).
  void assign_buffers(std::vector<int> last_read) {
    const size_t loads = loads_.size(), members = instructions_.size();
    if (reduction_) last_read[loads + members - 1] = static_cast<int>(members);
    buffer_.assign(loads + members, -1);
    std::vector<int> free;
    auto take = [&] {
      if (free.empty()) return buffers_++;
      int buffer = free.back();
      free.pop_back();
      return buffer;
    };
    for (size_t k = 0; k < loads; ++k) {
      if (!loads_[k].in_place) buffer_[k] = take();
      if (loads_[k].invariant || loads_[k].periodic) last_read[k] = static_cast<int>(members);
    }
    std::vector<bool> released(loads + members, false);
    auto release = [&](size_t slot, size_t m) {
      if (buffer_[slot] < 0 || released[slot] || last_read[slot] > static_cast<int>(m)) return;
      free.push_back(buffer_[slot]);
      released[slot] = true;
    };
    for (size_t m = 0; m < members; ++m) {
      const size_t slot = loads + m;
      if (outputs_[m] < 0 || dtypes_[m] != DType::f32) buffer_[slot] = take();
      for (int k = 0; k < instructions_[m].arity; ++k) release(static_cast<size_t>(instructions_[m].sources[k]), m);
      release(slot, m);  // written, and read by no later member
    }
  }

  // Rows too long for a tile, each summed by one thread a piece at a time, in
  // row_sum's order (so with its bits: the rows are longer than 32).
  void sum_rows_in_pieces(const uint8_t* const* in, uint8_t* const* out) {
    parallel_parts(n_ / row_, threads_, [&](int part, int64_t first, int64_t last) {
      float* scratch = reinterpret_cast<float*>(scratch_->data.get()) + static_cast<size_t>(part) * buffers_ * tile_;
      const float** at = tables_.data() + static_cast<size_t>(part) * slots_;
      PartState state;
      for (int64_t row = first; row < last; ++row) {
        LaneSums<float> sums;
        for (int64_t begin = row * row_; begin < (row + 1) * row_; begin += tile_) {
          const int64_t length = run_tile(in, out, begin, (row + 1) * row_, state, scratch, at);
          const int64_t whole = length - length % LaneSums<float>::kLanes;  // short only at the row's end
          sums.add(at[slots_ - 1], whole);
          if (begin + length == (row + 1) * row_)
            write_row(out, row, sums.finish(at[slots_ - 1] + whole, length - whole));
        }
      }
    });
  }

  void write_row(uint8_t* const* out, int64_t row, float value) const {
    if (reduction_->to_bf16) reinterpret_cast<graph::Bf16*>(out[reduction_->output])[row] = graph::Bf16(value);
    else reinterpret_cast<float*>(out[reduction_->output])[row] = value;
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
        for (size_t at_byte = 0; at_byte < bytes; at_byte += kCacheLine) __builtin_prefetch(ahead + at_byte);
      }
      if (load.in_place) {
        at[k] = reinterpret_cast<const float*>(in[k]) + begin;
        continue;
      }
      if ((load.invariant && state.invariants) || (load.periodic && rows_loaded)) continue;
      float* tile = scratch + buffer_[k] * tile_;
      at[k] = tile;
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
    for (size_t m = 0; m < instructions_.size(); ++m) {
      const Instruction& instruction = instructions_[m];
      const size_t slot = loads_.size() + m;
      const bool in_place = outputs_[m] >= 0 && dtypes_[m] == DType::f32;
      float* result = in_place ? reinterpret_cast<float*>(out[outputs_[m]]) + begin : scratch + buffer_[slot] * tile_;
      const float* sources[3] = {at[instruction.sources[0]], at[instruction.sources[1]], at[instruction.sources[2]]};
      instruction.fn(sources, result, length, kernels_);
      if (instruction.round_to_bf16) {
        loops_.round_to_bf16(result, length);
      }
      at[slot] = result;
      if (outputs_[m] < 0 || in_place) continue;
      if (dtypes_[m] == DType::bf16) {
        loops_.narrow_bf16(result, reinterpret_cast<graph::Bf16*>(out[outputs_[m]]) + begin, length);
      } else {
        loops_.narrow_bool(result, reinterpret_cast<bool*>(out[outputs_[m]]) + begin, length);
      }
    }
    if (!reduction_ || in_pieces_) return length;
    const float* rows = at[slots_ - 1];
    for (int64_t r = 0; r * row_ < length; ++r) {
      write_row(out, begin / row_ + r, reduce_row<float, float>(reduction_->kind, rows + r * row_, row_));
    }
    return length;
  }

  int64_t n_;
  const MathKernels* kernels_;
  const TileKernels& loops_;
  std::vector<Load> loads_;
  std::vector<Instruction> instructions_;
  std::vector<int> outputs_;  // per member: its index among the written, -1 when not written
  std::vector<DType> dtypes_;
  size_t slots_ = 0;
  std::vector<int> buffer_;  // per slot: its tile of scratch, or -1 (read or written in place)
  int buffers_ = 0;          // tiles of scratch a part
  int threads_ = 1;
  int64_t tile_ = kTile;                // elements a tile: whole rows when the group reduces
  int64_t row_ = 0;                     // elements a row of the reduction
  bool in_pieces_ = false;              // rows longer than kLongestRow: a tile is a piece of one
  bool prefetch_ = false;               // operands in order are fetched kAhead tiles ahead
  std::optional<Reduction> reduction_;  // the root's, when the group reduces
  int64_t tiles_ = 0;
  int64_t columns_ = 1;                  // elements along the last axis: a row of run_block's blocks
  std::vector<PartState> block_states_;  // per part, for run_block: reset by start_blocks
  SharedScratch own_scratch_;            // when the plan shares none
  SharedScratch* scratch_ = nullptr;     // per thread: a tile per slot
  std::vector<const float*> tables_;     // per thread: each slot's tile
};

}  // namespace

FusedStep make_fused_step(const graph::Graph& graph, const FusedGroup& group, const std::vector<uint32_t>& absorbed,
                          const KernelSet& kernels, int cores, SharedScratch* scratch, int block_parts) {
  auto program = std::make_shared<FusedProgram>(graph, group, absorbed, kernels, cores, scratch, block_parts);
  FusedStep step{.run = [program](const uint8_t* const* in, uint8_t* const* out) { (*program)(in, out); },
                 .may_overwrite = {},
                 .run_block = {},
                 .start_blocks = {},
                 .blocks_need_whole_rows = program->blocks_need_whole_rows()};
  for (size_t w = 0; w < group.written.size(); ++w) {
    std::vector<bool>& row = step.may_overwrite.emplace_back(group.operands.size());
    for (size_t k = 0; k < group.operands.size(); ++k) row[k] = program->may_overwrite(k, static_cast<int>(w));
  }
  if (block_parts > 0 && program->runs_by_blocks()) {
    step.run_block = [program](const uint8_t* const* in, uint8_t* const* out, int part, int64_t row, int64_t rows,
                               int64_t col, int64_t cols) { program->run_block(in, out, part, row, rows, col, cols); };
    step.start_blocks = [program] { program->start_blocks(); };
  }
  return step;
}

}  // namespace sx::device::cpu
