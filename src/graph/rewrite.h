// How passes build their result: a new graph, the map from old node ids to
// new ones, and copying of nodes and of the named inputs and outputs.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "graph/builder.h"

namespace sx::graph {

struct Rewrite {
  Graph out;
  std::vector<NodeId> map;  // old id -> new id

  explicit Rewrite(const Graph& from) : map(from.nodes.size(), 0) {}

  // Appends `node` with its inputs mapped to the new graph; returns its id.
  NodeId copy(const Node& node) {
    Node n = node;
    for (NodeId& in : n.inputs) in = map[in];
    out.nodes.push_back(std::move(n));
    return static_cast<NodeId>(out.nodes.size() - 1);
  }

  // The named inputs and outputs of `from`, mapped.
  void copy_names(const Graph& from) {
    for (const NamedNode& in : from.inputs) out.inputs.push_back({in.name, map[in.node]});
    for (const NamedNode& o : from.outputs) out.outputs.push_back({o.name, map[o.node]});
  }
};

// What two nodes share when CSE takes one for the other: primitive, type, attributes,
// inputs (`inputs`: their ids, mapped as the caller maps them) and a constant's bytes.
std::string structural_key(const Node& node, std::span<const NodeId> inputs);

}  // namespace sx::graph
