// What elementwise fusion (fusion.h) may join, shared by the finding of the groups
// (fusion_find.cc) and the program that runs them (fusion.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "device/cpu/fusion/fusion.h"
#include "device/cpu/kernels/row_reduce.h"

namespace sx::device::cpu {

// The longest row a max or min ends a group with; a sum of longer rows takes them in pieces.
inline constexpr int64_t kLongestRow = 4096;

// A member's work per element, or nothing when its node cannot be a member: the
// operations of fusion_tiles.h on f32 and bf16 (and the comparisons of those, where
// with a bool condition, and casts of bools to them).
std::optional<int64_t> member_cost(const graph::Graph& graph, const graph::Node& node);

// How `node` reduces, when it is a sum, max or min of an f32 or bf16 node over the
// node's last axes (axes of size 1 aside) in rows of 2 elements or more (a max or min:
// up to kLongestRow): its output is then one value per contiguous row, in order.
std::optional<ReduceKind> row_reduction(const graph::Graph& graph, const graph::Node& node);

// Elements a row of a group's reduction.
int64_t row_length(const graph::Graph& graph, const graph::Node& reduction);

// The member whose shape a group's tiles cover: its last member of its first member's
// size (its row reductions, and the members that compute on their values, are smaller).
inline graph::NodeId tiled_root(const graph::Graph& graph, const FusedGroup& group) {
  const int64_t size = graph::numel(graph.node(group.members.front()).shape);
  for (size_t m = group.members.size(); m-- > 1;) {
    if (graph::numel(graph.node(group.members[m]).shape) == size) return group.members[m];
  }
  return group.members.front();
}

// The node whose bytes member `id` reads as input k: an absorbed broadcast's input.
// (Only a matmul absorbs two nodes deep, and it is never a member.)
inline graph::NodeId read_node(const graph::Graph& graph, const std::vector<uint32_t>& absorbed, graph::NodeId id,
                               size_t k) {
  return read_source(graph, id, k, absorbed[id], 0);
}

inline bool reads_directly(const std::vector<uint32_t>& absorbed, graph::NodeId id, size_t k) {
  return (absorbed[id] >> k & 1u) == 0;
}

}  // namespace sx::device::cpu
