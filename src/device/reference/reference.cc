// The reference device's plan: keeps the graph and, per run, one buffer per
// node, released after the node's last use.
#include "device/reference/reference.h"

#include <algorithm>
#include <optional>

#include "graph/primitive.h"
#include "graph/verify.h"

namespace sx::device {
namespace {

class ReferencePlan : public Plan {
 public:
  explicit ReferencePlan(graph::Graph graph) : graph_(std::move(graph)), last_use_(graph_.nodes.size(), 0) {
    for (graph::NodeId id = 0; id < graph_.nodes.size(); ++id) {
      for (graph::NodeId in : graph_.nodes[id].inputs) last_use_[in] = id;
    }
    for (const graph::NamedNode& out : graph_.outputs) last_use_[out.node] = graph_.nodes.size();
    // Buffers live from their node to their last use; no run fits if its
    // largest one does not.
    double largest = 0;
    for (const graph::Node& node : graph_.nodes) {
      largest = std::max(
          largest, static_cast<double>(graph::numel(node.shape)) * static_cast<double>(graph::dtype_size(node.dtype)));
    }
    check_fits_in_memory("reference", largest);
  }

  std::vector<Buffer> run(std::span<const Buffer> inputs) override {
    check_inputs(graph_, inputs);
    std::vector<std::optional<Buffer>> values(graph_.nodes.size());
    for (size_t i = 0; i < inputs.size(); ++i) values[graph_.inputs[i].node] = inputs[i];
    for (graph::NodeId id = 0; id < graph_.nodes.size(); ++id) {
      const graph::Node& node = graph_.nodes[id];
      if (node.op_name() == "input") continue;
      std::vector<const Buffer*> args;
      for (graph::NodeId in : node.inputs) args.push_back(&*values[in]);
      values[id] = node.prim->kernel(node, args);
      for (graph::NodeId in : node.inputs) {
        if (last_use_[in] == id) values[in].reset();
      }
    }
    std::vector<Buffer> outputs;
    for (const graph::NamedNode& out : graph_.outputs) outputs.push_back(*values[out.node]);
    return outputs;
  }

 private:
  graph::Graph graph_;
  std::vector<size_t> last_use_;  // the last node reading each value; nodes.size() for outputs
};

}  // namespace

std::unique_ptr<Plan> ReferenceDevice::compile(const graph::Graph& graph) {
  graph::verify(graph);
  return std::make_unique<ReferencePlan>(graph);
}

std::vector<Buffer> run_reference(const graph::Graph& graph, std::span<const Buffer> inputs) {
  return ReferenceDevice().compile(graph)->run(inputs);
}

}  // namespace sx::device
