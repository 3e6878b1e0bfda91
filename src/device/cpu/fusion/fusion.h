// Elementwise fusion on the cpu device: a chain of elementwise nodes of one shape
// (arithmetic, comparisons, where, the transcendental functions, casts between f32
// and bf16) runs as one step, a tile of the output at a time: each member computes
// its tile from its operands' tiles, which stay in the cache, and only the members
// that a node outside the chain reads are written to memory. A sum, max or min over
// the chain's last axes ends it: its tiles are then whole rows, each reduced where
// the chain computed it; over the last axis alone, the chain may go on past it with
// nodes that compute on the rows' values or read them back along the rows (a
// softmax, a layer-norm: merge_row_phases). Every element is the same formula of
// the same values as when each node runs alone (each member's result rounded to its
// dtype, each row reduced in the reduce step's order), so fusion changes no bit.
// docs/architecture.md says why it is built this way.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "device/cpu/kernels.h"

namespace sx::device::cpu {

struct FusedGroup {
  std::vector<graph::NodeId> members;  // in graph order; the last (the root) is where it runs
  // Its tiles are whole rows, which members reduce: the root is a row reduction of the
  // member before it, or (merged phases) members after a reduction compute on the rows'
  // values, or read them back along the rows (a softmax, a layer-norm).
  bool reduces = false;
  std::vector<graph::NodeId> written;   // the members read outside the group, the root among them
  std::vector<graph::NodeId> operands;  // the nodes outside the group its members read: the step's in[]
  // A matrix product that only members read, of the group's shape: the group's step
  // computes it first and runs the program on each block of its result as soon as the
  // product finishes it, while it is in cache (the product's epilogue, epilogue.h).
  std::optional<graph::NodeId> product;
  // Another group reads the product too (a later chain recomputes a member from it):
  // its result must outlive the step.
  bool product_read_outside = false;
  bool operator==(const FusedGroup& other) const = default;
};

struct Fusion {
  std::vector<FusedGroup> groups;     // each of two members or more
  std::vector<int> group_of;          // per node: its group's index, -1 for none
  std::vector<int> group_of_product;  // per node: the group whose `product` it is, -1 for none
  bool operator==(const Fusion& other) const = default;
};

// The groups of the needed nodes, `absorbed` and `absorbed_deep` as the plan decided
// them (StepContext's bits, per node).
// A node joins the group of its users when every node that reads it is in that group
// or runs after the group's root, so a group never waits on a node that waits on it.
// A product read by one lone node that could be a member makes that node a group of
// one, for the product's epilogue.
Fusion find_fusion(const graph::Graph& graph, const std::vector<bool>& needed, const std::vector<uint32_t>& absorbed,
                   const std::vector<uint32_t>& absorbed_deep);

// What lowering (schedule.h) knows of a group's program without making its step.
struct FusedFacts {
  // Per written member, per operand: whether the member may be written over the
  // operand's bytes (a parameter updated in place): the operand is read element for
  // element in the output's order, every tile of it before the member writes that
  // tile and never after.
  std::vector<std::vector<bool>> may_overwrite;
};
FusedFacts fused_facts(const graph::Graph& graph, const FusedGroup& group, const std::vector<uint32_t>& absorbed,
                       const KernelSet& kernels);

// The step of a group.
struct FusedStep {
  MultiStep run;  // the threads take whole tiles of the output
  // Made with block_parts: the group on rows [row, row + rows) and columns
  // [col, col + cols) of its elements seen as rows of its last axis, by part `part`
  // (below block_parts) while other parts run others: a product's epilogue. Each run
  // calls start_blocks before its first block. Null where the group cannot run by
  // blocks: it reduces rows longer than its last axis.
  std::function<void(const uint8_t* const* in, uint8_t* const* out, int part, int64_t row, int64_t rows, int64_t col,
                     int64_t cols)>
      run_block;
  std::function<void()> start_blocks;
  bool blocks_need_whole_rows = false;  // it reduces rows: each block spans all columns
};
// Its tiles of scratch in `scratch`, which the plan's fused steps share (they run one at
// a time); null: its own.
FusedStep make_fused_step(const graph::Graph& graph, const FusedGroup& group, const std::vector<uint32_t>& absorbed,
                          const KernelSet& kernels, int cores, SharedScratch* scratch = nullptr, int block_parts = 0);

}  // namespace sx::device::cpu
