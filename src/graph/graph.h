// The IR: a graph is a list of nodes in topological order (every input id is
// smaller than the node's own id), with named inputs and named outputs.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graph/attrs.h"
#include "graph/dtype.h"
#include "graph/shape.h"
#include "graph/tensor.h"

namespace sx::graph {

struct Primitive;
enum class PrimId : uint8_t;  // primitive.h

using NodeId = uint32_t;

struct Node {
  const Primitive* prim = nullptr;
  std::vector<NodeId> inputs;
  Attrs attrs;
  Shape shape;
  DType dtype = DType::f32;
  // A literal scalar of the program, or computed only from such: it takes
  // the dtype of the tensors it meets (see promote in dtype.h).
  bool weak = false;
  // Opaque to the graph: the front end maps it back to a source span.
  uint32_t origin = 0;
  // The value of a constant node; null for every other node.
  std::shared_ptr<const Tensor> value;

  // Its primitive's id (what code that acts per primitive dispatches on; the
  // node must have a primitive) and name (for printing; "?" without one).
  PrimId op() const;
  std::string_view op_name() const;
};

// A graph input (a parameter or placeholder) or output, by name.
struct NamedNode {
  std::string name;
  NodeId node;
  bool operator==(const NamedNode& other) const = default;
};

struct Graph {
  std::vector<Node> nodes;
  std::vector<NamedNode> inputs;
  std::vector<NamedNode> outputs;

  const Node& node(NodeId id) const { return nodes.at(id); }
  std::optional<NodeId> find_input(std::string_view name) const;
  std::optional<NodeId> find_output(std::string_view name) const;
};

// "node 4 (add f32[2, 3])": how errors name a node.
std::string describe_node(const Graph& graph, NodeId id);

}  // namespace sx::graph
