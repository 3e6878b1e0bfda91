// The error of an index outside its axis (see index_error.h).
#include "graph/index_error.h"

#include <fmt/format.h>

#include "graph/primitive.h"

namespace sx::graph {
namespace {

// The graph input whose elements node `id`'s are, one for one, through reshapes and casts.
const NamedNode* input_of(const Graph& graph, NodeId id) {
  while (graph.node(id).op() == PrimId::reshape || graph.node(id).op() == PrimId::cast) id = graph.node(id).inputs[0];
  for (const NamedNode& in : graph.inputs) {
    if (in.node == id) return &in;
  }
  return nullptr;
}

}  // namespace

IndexOutOfRange::IndexOutOfRange(size_t operand, int64_t position, int64_t value, int64_t length)
    : operand_(operand), position_(position), value_(value), length_(length), shape_{position + 1} {
  message_ = message("its indices", this->position());
}

void IndexOutOfRange::locate(const Graph& graph, NodeId node) {
  const Node& n = graph.node(node);
  op_ = n.op_name();
  origin_ = n.origin;
  shape_ = graph.node(n.inputs.at(operand_)).shape;
  if (const NamedNode* in = input_of(graph, n.inputs[operand_])) {
    input_ = in->name;
    shape_ = graph.node(in->node).shape;  // the same flat position, in the input's shape
  }
  message_ = message(input_ ? fmt::format("input `{}`", *input_) : "its indices", position());
}

std::vector<int64_t> IndexOutOfRange::position() const {
  std::vector<int64_t> index(shape_.size());
  int64_t rest = position_;
  for (size_t d = shape_.size(); d-- > 0;) {
    index[d] = rest % shape_[d];
    rest /= shape_[d];
  }
  return index;
}

std::string IndexOutOfRange::message(std::string_view indices, const std::vector<int64_t>& position) const {
  std::string at = position.empty() ? "" : " at " + list_str(position);
  std::string axis =
      length_ == 0 ? "outside its axis, which is empty" : fmt::format("outside its axis, 0 to {}", length_ - 1);
  return fmt::format("{}{}index {}{} of {} is {}", op_, op_.empty() ? "" : ": ", value_, at, indices, axis);
}

}  // namespace sx::graph
