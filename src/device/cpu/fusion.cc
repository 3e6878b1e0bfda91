// Elementwise fusion (fusion.h): finding the groups, and the interpreter that runs a
// group's program over tiles. A member's tile is computed by the kernel of its
// primitive over whole tiles (a loop the compiler vectorizes, or the vector math
// kernels), so a program of k members costs k short loops per tile and no reads or
// writes of memory between them.
#include "device/cpu/fusion.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <span>
#include <type_traits>

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
constexpr int64_t kLongestRow = 4096;
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

bool float_like(DType dtype) { return dtype == DType::f32 || dtype == DType::bf16; }

// A member's work per element, or nothing when its node cannot be a member: the
// operations of fusion_tiles.h on f32 and bf16 (and the comparisons of those, where
// with a bool condition, and casts of bools to them).
std::optional<int64_t> member_cost(const graph::Graph& graph, const Node& node) {
  if (node.inputs.empty() || !tile_kernels_for(Isa::scalar).by_primitive[graph::index_of(node.op())]) {
    return std::nullopt;
  }
  const DType operand = graph.node(node.inputs[0]).dtype;
  switch (node.op()) {
    case PrimId::eq:
    case PrimId::ne:
    case PrimId::lt:
    case PrimId::le:
    case PrimId::gt:
    case PrimId::ge:
      if (node.dtype == DType::boolean && float_like(operand)) return kCheap;
      return std::nullopt;
    case PrimId::where:
      if (operand == DType::boolean && float_like(node.dtype)) return kCheap;
      return std::nullopt;
    case PrimId::cast:  // a bool, held as 0 or 1, converts as it is
      if (float_like(node.dtype) && (float_like(operand) || operand == DType::boolean)) return kCheap;
      return std::nullopt;
    case PrimId::sqrt:
    case PrimId::rsqrt:
    case PrimId::pow:
    case PrimId::exp:
    case PrimId::log:
    case PrimId::sin:
    case PrimId::cos:
    case PrimId::tanh:
    case PrimId::erf:
    case PrimId::logistic:
      if (float_like(node.dtype) && float_like(operand)) return kCostly;
      return std::nullopt;
    default:
      if (float_like(node.dtype) && float_like(operand)) return kCheap;
      return std::nullopt;
  }
}

// How `node` reduces, when it is a sum, max or min of an f32 or bf16 node over the
// node's last axes (axes of size 1 aside) in rows of 2 elements or more (a max or min:
// up to kLongestRow): its output is then one value per contiguous row, in order.
std::optional<ReduceKind> row_reduction(const graph::Graph& graph, const Node& node) {
  std::optional<ReduceKind> kind;
  if (node.op() == PrimId::sum) kind = ReduceKind::sum;
  if (node.op() == PrimId::reduce_max) kind = ReduceKind::max;
  if (node.op() == PrimId::reduce_min) kind = ReduceKind::min;
  if (!kind || !float_like(node.dtype)) return std::nullopt;
  const Node& x = graph.node(node.inputs[0]);
  if (x.dtype != node.dtype) return std::nullopt;
  std::vector<bool> reduced(x.shape.size(), false);
  for (int64_t axis : node.attrs.get_ints("axes")) reduced[static_cast<size_t>(axis)] = true;
  int64_t length = 1;
  for (size_t d = 0; d < x.shape.size(); ++d) {
    if (x.shape[d] == 1) continue;
    if (reduced[d]) length *= x.shape[d];
    else if (length > 1) return std::nullopt;  // a kept axis after a reduced one
  }
  if (length < 2 || (length > kLongestRow && kind != ReduceKind::sum)) return std::nullopt;
  return kind;
}

// Elements a row of a group's reduction.
int64_t row_length(const graph::Graph& graph, const Node& reduction) {
  return graph::numel(graph.node(reduction.inputs[0]).shape) / std::max<int64_t>(1, graph::numel(reduction.shape));
}

// The member whose shape a group's tiles cover: its last elementwise member.
NodeId tiled_root(const FusedGroup& group) { return group.members[group.members.size() - (group.reduces ? 2 : 1)]; }

// The node whose bytes member `id` reads as input k: an absorbed broadcast's input.
// (Only a matmul absorbs two nodes deep, and it is never a member.)
NodeId read_node(const graph::Graph& graph, const std::vector<uint32_t>& absorbed, NodeId id, size_t k) {
  return read_source(graph, id, k, absorbed[id], 0);
}

bool reads_directly(const std::vector<uint32_t>& absorbed, NodeId id, size_t k) {
  return (absorbed[id] >> k & 1u) == 0;
}

// A group's program: its operands loaded (or read where they lie), then one
// instruction per member, a tile at a time. Slots: the operands', then the members'.
class FusedProgram {
 public:
  FusedProgram(const graph::Graph& graph, const FusedGroup& group, const std::vector<uint32_t>& absorbed,
               const KernelSet& kernels, int cores, SharedScratch* scratch)
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
    assign_buffers(last_read);
    const auto streams = std::count_if(loads_.begin(), loads_.end(), [](const Load& load) { return load.in_order; });
    prefetch_ =
        n_ > kPrefetchElements && streams >= 2 && static_cast<int64_t>(instructions_.size()) >= kPrefetchWork * streams;
    threads_ = threads_for(n_ * cost, cores);
    tiles_ = (n_ + tile_ - 1) / tile_;
    scratch_ = scratch ? scratch : &own_scratch_;
    scratch_->reserve(static_cast<size_t>(threads_) * buffers_ * tile_ * sizeof(float));
    tables_.resize(static_cast<size_t>(threads_) * slots_);
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
      for (int64_t tile = first; tile < last; ++tile) run_tile(in, out, tile * tile_, first * tile_, scratch, at);
    });
  }

 private:
  struct Load {
    DType dtype;
    OperandWalk walk;  // over the group's shape
    bool in_order;     // in the output's order, element for element
    bool in_place;     // f32 in the output's order: read where it lies
    bool invariant;    // one value (a scalar): its tile is filled once a part
  };
  struct Instruction {
    TileFn fn;
    std::array<int, 3> sources;
    int arity;
    bool round_to_bf16;
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
      if (loads_[k].invariant) last_read[k] = static_cast<int>(members);
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
      for (int64_t row = first; row < last; ++row) {
        LaneSums<float> sums;
        for (int64_t begin = row * row_; begin < (row + 1) * row_; begin += tile_) {
          const int64_t length = run_tile(in, out, begin, first * row_, scratch, at);
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

  // The tile at `begin` (not past its row's end when rows are taken in pieces), and
  // its length; `first`, the first tile of this thread's part (which loads the
  // invariant operands). Reduces its rows when they are whole.
  int64_t run_tile(const uint8_t* const* in, uint8_t* const* out, int64_t begin, int64_t first, float* scratch,
                   const float** at) const {
    const int64_t end = in_pieces_ ? (begin / row_ + 1) * row_ : n_;
    const int64_t length = std::min(tile_, end - begin);
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
      if (load.invariant && begin != first) continue;  // the tile of the part's first tile
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
  SharedScratch own_scratch_;         // when the plan shares none
  SharedScratch* scratch_ = nullptr;  // per thread: a tile per slot
  std::vector<const float*> tables_;  // per thread: each slot's tile
};

// A group that reads a cheap member of another group (an add, a multiply) computes
// it again from that member's own operands, when that adds at most one operand as
// large as the group's tiles: the other group then need not write it, nor this one
// read it. So a gradient recomputes the forward's cheap intermediates in its own
// tiles instead of reading them back from memory. (The other group ran first: it
// wrote the member for this group's nodes, which come after its root.)
void recompute_cheap_operands(const graph::Graph& graph, const std::vector<uint32_t>& absorbed,
                              const std::vector<int>& group_of, FusedGroup& group) {
  const int64_t size = graph::numel(graph.node(tiled_root(group)).shape);
  std::vector<bool> inside(graph.nodes.size(), false);
  for (NodeId id : group.members) inside[id] = true;
  // Whether a member of the group reads `node` from memory.
  auto read_by_group = [&](NodeId node) {
    for (NodeId id : group.members) {
      for (size_t k = 0; k < graph.node(id).inputs.size(); ++k) {
        if (read_node(graph, absorbed, id, k) == node && !(inside[node] && reads_directly(absorbed, id, k))) {
          return true;
        }
      }
    }
    return false;
  };
  for (bool grew = true; grew;) {
    grew = false;
    for (size_t m = 0; m < group.members.size(); ++m) {
      const NodeId id = group.members[m];
      for (size_t k = 0; k < graph.node(id).inputs.size(); ++k) {
        const NodeId candidate = read_node(graph, absorbed, id, k);
        if (inside[candidate] || !reads_directly(absorbed, id, k) || group_of[candidate] < 0) continue;
        const Node& node = graph.node(candidate);
        // (A group's reduction is no elementwise member: it is not recomputed.)
        if (std::optional<int64_t> cost = member_cost(graph, node); !cost || *cost > kCheap) continue;
        int added = 0;
        bool through_broadcast_of_member = false;
        for (size_t j = 0; j < node.inputs.size(); ++j) {
          NodeId from = read_node(graph, absorbed, candidate, j);
          if (!reads_directly(absorbed, candidate, j)) {
            through_broadcast_of_member = through_broadcast_of_member || inside[from];
            continue;
          }
          if (!inside[from] && graph::numel(graph.node(from).shape) == size && !read_by_group(from)) ++added;
        }
        if (through_broadcast_of_member || added > 1) continue;
        inside[candidate] = true;
        group.members.push_back(candidate);
        grew = true;
      }
    }
  }
  std::sort(group.members.begin(), group.members.end());
}

}  // namespace

Fusion find_fusion(const graph::Graph& graph, const std::vector<bool>& needed, const std::vector<uint32_t>& absorbed,
                   const std::vector<uint32_t>& absorbed_twice) {
  const size_t count = graph.nodes.size();
  struct Use {
    NodeId user;
    bool direct;  // not through an absorbed broadcast
  };
  std::vector<std::vector<Use>> uses(count);
  std::vector<bool> is_output(count, false);
  for (const graph::NamedNode& out : graph.outputs) is_output[out.node] = true;
  for (NodeId id = 0; id < count; ++id) {
    if (!needed[id]) continue;
    for (size_t k = 0; k < graph.node(id).inputs.size(); ++k) {
      uses[read_source(graph, id, k, absorbed[id], absorbed_twice[id])].push_back(
          {id, reads_directly(absorbed, id, k)});
    }
  }
  // From the last node back: a node joins the group of a user when every other reader
  // is in it or runs after its root; else it roots a group.
  std::vector<std::vector<NodeId>> members;  // per group, the root first
  std::vector<int> group_of(count, -1);
  for (NodeId id = static_cast<NodeId>(count); id-- > 0;) {
    if (!needed[id] || !member_cost(graph, graph.node(id))) continue;
    int group = -1;
    for (const Use& use : uses[id]) {
      int g = group_of[use.user];
      if (g < 0 || !use.direct || graph.node(members[g][0]).shape != graph.node(id).shape) continue;
      if (group < 0 || members[g][0] < members[group][0]) group = g;
    }
    for (const Use& use : uses[id]) {
      bool inside = group >= 0 && group_of[use.user] == group && use.direct;
      if (!inside && group >= 0 && use.user <= members[group][0]) group = -1;
    }
    if (group < 0) {
      group = static_cast<int>(members.size());
      members.emplace_back();
    }
    group_of[id] = group;
    members[group].push_back(id);
  }
  // A row reduction of a group's root (or of a lone member) ends the group, when every
  // other reader of its members runs after the reduction, where the group now runs.
  std::vector<bool> reduces(members.size(), false);
  for (NodeId id = 0; id < count; ++id) {
    if (!needed[id] || !row_reduction(graph, graph.node(id))) continue;
    const NodeId x = graph.node(id).inputs[0];
    const int g = group_of[x];
    if (g < 0 || reduces[g] || members[g][0] != x) continue;  // (a reduction of a reduction starts anew)
    bool readers_after = true;
    for (NodeId member : members[g]) {
      for (const Use& use : uses[member]) {
        bool inside = group_of[use.user] == g && use.direct;
        if (!inside && use.user != id && use.user < id) readers_after = false;
      }
    }
    if (!readers_after) continue;
    group_of[id] = g;
    members[g].insert(members[g].begin(), id);
    reduces[g] = true;
  }
  Fusion fusion;
  fusion.group_of.assign(count, -1);
  for (size_t g = 0; g < members.size(); ++g) {
    const std::vector<NodeId>& reversed = members[g];
    if (reversed.size() < 2) continue;
    for (NodeId id : reversed) fusion.group_of[id] = static_cast<int>(fusion.groups.size());
    FusedGroup& group = fusion.groups.emplace_back();
    group.members.assign(reversed.rbegin(), reversed.rend());
    group.reduces = reduces[g];
  }
  for (FusedGroup& group : fusion.groups) recompute_cheap_operands(graph, absorbed, fusion.group_of, group);
  // A member is written when a node outside its group reads it: a node of no group, an
  // output, or a group that reads it as an operand.
  std::vector<bool> written(count, false);
  for (NodeId id = 0; id < count; ++id) {
    if (!needed[id] || fusion.group_of[id] >= 0) continue;
    for (size_t k = 0; k < graph.node(id).inputs.size(); ++k) {
      written[read_source(graph, id, k, absorbed[id], absorbed_twice[id])] = true;
    }
  }
  for (NodeId id = 0; id < count; ++id) written[id] = written[id] || is_output[id];
  for (FusedGroup& group : fusion.groups) {
    std::vector<bool> inside(count, false);
    for (NodeId id : group.members) inside[id] = true;
    for (NodeId id : group.members) {
      for (size_t k = 0; k < graph.node(id).inputs.size(); ++k) {
        NodeId from = read_node(graph, absorbed, id, k);
        if (inside[from] && reads_directly(absorbed, id, k)) continue;
        if (std::find(group.operands.begin(), group.operands.end(), from) == group.operands.end()) {
          group.operands.push_back(from);
        }
        written[from] = true;
      }
    }
  }
  for (size_t g = 0; g < fusion.groups.size(); ++g) {
    for (NodeId id : fusion.groups[g].members) {
      if (fusion.group_of[id] == static_cast<int>(g) && written[id]) fusion.groups[g].written.push_back(id);
    }
  }
  return fusion;
}

FusedStep make_fused_step(const graph::Graph& graph, const FusedGroup& group, const std::vector<uint32_t>& absorbed,
                          const KernelSet& kernels, int cores, SharedScratch* scratch) {
  auto program = std::make_shared<FusedProgram>(graph, group, absorbed, kernels, cores, scratch);
  FusedStep step{.run = [program](const uint8_t* const* in, uint8_t* const* out) { (*program)(in, out); },
                 .may_overwrite = {}};
  for (size_t w = 0; w < group.written.size(); ++w) {
    std::vector<bool>& row = step.may_overwrite.emplace_back(group.operands.size());
    for (size_t k = 0; k < group.operands.size(); ++k) row[k] = program->may_overwrite(k, static_cast<int>(w));
  }
  return step;
}

}  // namespace sx::device::cpu
