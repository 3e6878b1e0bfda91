// Finding elementwise fusion's groups (fusion.h) and what each may join (fusion_rules.h).
#include <algorithm>

#include "device/cpu/fusion/fusion.h"
#include "device/cpu/fusion/fusion_rules.h"
#include "device/cpu/fusion/fusion_tiles.h"

namespace sx::device::cpu {

using graph::DType;
using graph::Node;
using graph::NodeId;
using graph::PrimId;

namespace {

bool float_like(DType dtype) { return dtype == DType::f32 || dtype == DType::bf16; }

// Whether the tiles, which hold floats, compute the node: a comparison of floats (its
// bool result a float 0 or 1), where picking floats by a bool, a cast of floats or of a
// bool to floats, and any other of floats to floats.
bool in_tiles(const Node& node, DType operand) {
  switch (node.op()) {
    case PrimId::eq:
    case PrimId::ne:
    case PrimId::lt:
    case PrimId::le:
    case PrimId::gt:
    case PrimId::ge: return node.dtype == DType::boolean && float_like(operand);
    case PrimId::where: return operand == DType::boolean && float_like(node.dtype);
    case PrimId::cast: return float_like(node.dtype) && (float_like(operand) || operand == DType::boolean);
    default: return float_like(node.dtype) && float_like(operand);
  }
}

}  // namespace

std::optional<int64_t> member_cost(const graph::Graph& graph, const Node& node) {
  if (node.inputs.empty() || !tile_kernels_for(Isa::scalar).by_primitive[graph::index_of(node.op())]) {
    return std::nullopt;
  }
  if (!in_tiles(node, graph.node(node.inputs[0]).dtype)) return std::nullopt;
  return element_work(node.prim->cost);
}

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

int64_t row_length(const graph::Graph& graph, const Node& reduction) {
  return graph::numel(graph.node(reduction.inputs[0]).shape) / std::max<int64_t>(1, graph::numel(reduction.shape));
}

namespace {

struct Use {
  NodeId user;
  bool direct;  // not through an absorbed broadcast
};

// A group that reads a cheap member of another group (an add, a multiply) computes
// it again from that member's own operands, when that adds at most one operand as
// large as the group's tiles: the other group then need not write it, nor this one
// read it. So a gradient recomputes the forward's cheap intermediates in its own
// tiles instead of reading them back from memory. (The other group ran first: it
// wrote the member for this group's nodes, which come after its root.)
void recompute_cheap_operands(const graph::Graph& graph, const std::vector<uint32_t>& absorbed,
                              const std::vector<int>& group_of, FusedGroup& group) {
  const int64_t size = graph::numel(graph.node(tiled_root(graph, group)).shape);
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
        // (A group's reduction is no elementwise member: it is not recomputed; nor is a
        // value a row, which only a group's own rows compute.)
        if (std::optional<int64_t> cost = member_cost(graph, node); !cost || *cost > kCheap) continue;
        if (graph::numel(node.shape) != size) continue;
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

// Whether `id` may join a group whose tiles are whole rows of `shape` (its last axis),
// `inside` saying which nodes will be its members: an elementwise node of that shape or
// of its rows' values (`rows`: the last axis 1), or a row reduction of a member to the
// rows' values. A member of the shape reads the rows' values of a member through a
// broadcast along the rows; one of the rows' values reads members of its own shape and,
// from outside, single values (scalars) or values a row of its own shape.
bool joins_rows(const graph::Graph& graph, const std::vector<uint32_t>& absorbed, const std::vector<bool>& inside,
                NodeId id, const graph::Shape& shape, const graph::Shape& rows) {
  const Node& node = graph.node(id);
  if (node.shape != shape && node.shape != rows) return false;
  if (row_reduction(graph, node)) {
    return node.shape == rows && inside[node.inputs[0]] && graph.node(node.inputs[0]).shape == shape;
  }
  if (!member_cost(graph, node)) return false;
  for (size_t k = 0; k < node.inputs.size(); ++k) {
    const NodeId from = read_node(graph, absorbed, id, k);
    const bool direct = reads_directly(absorbed, id, k);
    if (inside[from]) {
      if (!direct && !(node.shape == shape && graph.node(from).shape == rows)) return false;
    } else if (node.shape == rows && graph::numel(graph.node(from).shape) != 1 &&
               !(direct && graph.node(from).shape == rows)) {
      return false;
    }
  }
  return true;
}

// A group whose tiles are whole rows of its last axis, ending in their reduction, goes
// on past it: the first node that reads a member (and that node's group), computing on
// the rows' values or reading them back along the rows, joins it when every other
// reader of the members runs after the joined group's root, where it then runs. Again
// until a reader cannot join. So a softmax (a max, a sum of exponentials, a division)
// and a layer-norm (a mean, a variance, the normalized rows) are one pass over rows
// that stay in cache, writing only what is read outside.
void merge_row_phases(const graph::Graph& graph, const std::vector<uint32_t>& absorbed,
                      const std::vector<std::vector<Use>>& uses, Fusion& fusion) {
  const size_t count = graph.nodes.size();
  std::vector<size_t> order(fusion.groups.size());
  for (size_t g = 0; g < order.size(); ++g) order[g] = g;
  std::sort(order.begin(), order.end(),
            [&](size_t x, size_t y) { return fusion.groups[x].members.back() < fusion.groups[y].members.back(); });
  std::vector<bool> inside(count, false);
  for (size_t a : order) {
    FusedGroup& group = fusion.groups[a];
    if (!group.reduces || group.members.empty()) continue;
    const Node& reduction = graph.node(group.members.back());
    const graph::Shape& shape = graph.node(reduction.inputs[0]).shape;
    graph::Shape rows = shape;
    if (rows.empty() || row_length(graph, reduction) != shape.back() || shape.back() > kLongestRow) continue;
    rows.back() = 1;
    if (reduction.shape != rows) continue;
    for (NodeId id : group.members) inside[id] = true;
    for (;;) {
      NodeId next = static_cast<NodeId>(count);
      for (NodeId member : group.members) {
        for (const Use& use : uses[member]) {
          if (!inside[use.user]) next = std::min(next, use.user);
        }
      }
      if (next == count) break;
      const int other = fusion.group_of[next];
      const std::vector<NodeId> joining =
          other >= 0 ? fusion.groups[static_cast<size_t>(other)].members : std::vector<NodeId>{next};
      for (NodeId id : joining) inside[id] = true;
      const NodeId root = std::max(group.members.back(), joining.back());
      bool joins = std::all_of(joining.begin(), joining.end(),
                               [&](NodeId id) { return joins_rows(graph, absorbed, inside, id, shape, rows); });
      auto read_after_root = [&](const std::vector<NodeId>& members) {
        for (NodeId member : members) {
          for (const Use& use : uses[member]) {
            if (!inside[use.user] && use.user < root) return false;
          }
        }
        return true;
      };
      joins = joins && read_after_root(group.members) && read_after_root(joining);
      if (!joins) {
        for (NodeId id : joining) inside[id] = false;
        break;
      }
      for (NodeId id : joining) fusion.group_of[id] = static_cast<int>(a);
      group.members.insert(group.members.end(), joining.begin(), joining.end());
      std::sort(group.members.begin(), group.members.end());
      if (other >= 0) fusion.groups[static_cast<size_t>(other)].members.clear();
    }
    // A node of no group whose readers were in different groups, now all inside this one
    // (a gradient's operand that both a phase's sum and the next phase read, or the
    // widening of a bf16 product), joins it too: else it runs alone, its result going
    // to memory and back.
    for (bool grew = true; grew;) {
      grew = false;
      for (size_t m = 0; m < group.members.size(); ++m) {
        const NodeId member = group.members[m];
        for (size_t k = 0; k < graph.node(member).inputs.size(); ++k) {
          const NodeId from = read_node(graph, absorbed, member, k);
          if (inside[from] || fusion.group_of[from] >= 0 || uses[from].empty() ||
              !std::all_of(uses[from].begin(), uses[from].end(),
                           [&](const Use& use) { return use.direct && inside[use.user]; })) {
            continue;
          }
          inside[from] = true;
          if (!joins_rows(graph, absorbed, inside, from, shape, rows)) {
            inside[from] = false;
            continue;
          }
          fusion.group_of[from] = static_cast<int>(a);
          group.members.push_back(from);
          grew = true;
        }
      }
    }
    std::sort(group.members.begin(), group.members.end());
    for (NodeId id : group.members) inside[id] = false;
  }
  // The groups that joined others are gone: the rest renumbered.
  std::vector<int> renumbered(fusion.groups.size(), -1);
  std::vector<FusedGroup> kept;
  for (size_t g = 0; g < fusion.groups.size(); ++g) {
    if (fusion.groups[g].members.empty()) continue;
    renumbered[g] = static_cast<int>(kept.size());
    kept.push_back(std::move(fusion.groups[g]));
  }
  fusion.groups = std::move(kept);
  for (int& g : fusion.group_of) {
    if (g >= 0) g = renumbered[static_cast<size_t>(g)];
  }
}

// Gives each group the matrix product (f32 or bf16, not empty) that only its members
// read, directly, and that is no output, the latest where several are; a product read
// so by one lone node that could be a member makes that node a group of one.
void attach_products(const graph::Graph& graph, const std::vector<bool>& needed,
                     const std::vector<std::vector<Use>>& uses, const std::vector<bool>& is_output, Fusion& fusion) {
  fusion.group_of_product.assign(graph.nodes.size(), -1);
  for (NodeId id = 0; id < graph.nodes.size(); ++id) {
    const Node& node = graph.node(id);
    if (!needed[id] || node.op() != PrimId::matmul || !float_like(node.dtype) || graph::numel(node.shape) == 0 ||
        is_output[id] || uses[id].empty()) {
      continue;
    }
    const NodeId user = uses[id][0].user;
    int g = fusion.group_of[user];
    const bool direct = std::all_of(uses[id].begin(), uses[id].end(), [&](const Use& use) {
      return use.direct && (g >= 0 ? fusion.group_of[use.user] == g : use.user == user);
    });
    if (!direct) continue;
    if (g < 0) {
      if (!member_cost(graph, graph.node(user))) continue;
      g = static_cast<int>(fusion.groups.size());
      fusion.groups.push_back({.members = {user},
                               .reduces = false,
                               .written = {},
                               .operands = {},
                               .product = {},
                               .product_read_outside = false});
      fusion.group_of[user] = g;
    }
    FusedGroup& group = fusion.groups[static_cast<size_t>(g)];
    if (graph.node(tiled_root(graph, group)).shape != node.shape) continue;
    if (group.product) fusion.group_of_product[*group.product] = -1;
    group.product = id;
    fusion.group_of_product[id] = g;
  }
}

}  // namespace

Fusion find_fusion(const graph::Graph& graph, const std::vector<bool>& needed, const std::vector<uint32_t>& absorbed,
                   const std::vector<uint32_t>& absorbed_deep) {
  const size_t count = graph.nodes.size();
  std::vector<std::vector<Use>> uses(count);
  std::vector<bool> is_output(count, false);
  for (const graph::NamedNode& out : graph.outputs) is_output[out.node] = true;
  for (NodeId id = 0; id < count; ++id) {
    if (!needed[id]) continue;
    for (size_t k = 0; k < graph.node(id).inputs.size(); ++k) {
      uses[read_source(graph, id, k, absorbed[id], absorbed_deep[id])].push_back({id, reads_directly(absorbed, id, k)});
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
  merge_row_phases(graph, absorbed, uses, fusion);
  attach_products(graph, needed, uses, is_output, fusion);
  for (FusedGroup& group : fusion.groups) recompute_cheap_operands(graph, absorbed, fusion.group_of, group);
  // A member is written when a node outside its group reads it: a node of no group, an
  // output, or a group that reads it as an operand.
  std::vector<bool> written(count, false);
  for (NodeId id = 0; id < count; ++id) {
    if (!needed[id] || fusion.group_of[id] >= 0) continue;
    for (size_t k = 0; k < graph.node(id).inputs.size(); ++k) {
      written[read_source(graph, id, k, absorbed[id], absorbed_deep[id])] = true;
    }
  }
  for (NodeId id = 0; id < count; ++id) written[id] = written[id] || is_output[id];
  for (FusedGroup& group : fusion.groups) {
    std::vector<bool> inside(count, false);
    for (NodeId id : group.members) inside[id] = true;
    for (NodeId id : group.members) {
      for (size_t k = 0; k < graph.node(id).inputs.size(); ++k) {
        // (A member read through a broadcast is a reduction's values read back along
        // the rows, of merged phases.)
        NodeId from = read_node(graph, absorbed, id, k);
        if (inside[from]) continue;
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
  // A product that another group reads too (recomputing a member from it) is kept.
  for (const FusedGroup& reader : fusion.groups) {
    for (NodeId operand : reader.operands) {
      const int owner = fusion.group_of_product[operand];
      if (owner >= 0 && &fusion.groups[static_cast<size_t>(owner)] != &reader)
        fusion.groups[static_cast<size_t>(owner)].product_read_outside = true;
    }
  }
  return fusion;
}

}  // namespace sx::device::cpu
