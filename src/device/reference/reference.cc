// The reference device's plan: keeps the graph and, per run, one value per
// node, released after the node's last use. Inputs are read where they lie.
#include "device/reference/reference.h"

#include <algorithm>
#include <optional>

#include "device/interrupt.h"
#include "graph/index_error.h"
#include "graph/primitive.h"
#include "graph/verify.h"

namespace sx::device {
namespace {

class ReferencePlan : public Plan {
 public:
  ReferencePlan(Device& device, graph::Graph graph)
      : Plan(device, graph), graph_(std::move(graph)), last_use_(graph_.nodes.size(), 0) {
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

  using Plan::run;

  void run(std::span<const Buffer* const> inputs, std::span<Buffer* const> outputs) override {
    check_inputs(graph_, inputs);
    check_outputs(graph_, outputs);
    std::vector<const graph::Tensor*> values(graph_.nodes.size(), nullptr);
    std::vector<std::optional<graph::Tensor>> computed(graph_.nodes.size());
    for (size_t i = 0; i < inputs.size(); ++i) values[graph_.inputs[i].node] = &host_tensor(*inputs[i]);
    for (graph::NodeId id = 0; id < graph_.nodes.size(); ++id) {
      const graph::Node& node = graph_.nodes[id];
      if (node.op() == graph::PrimId::input) continue;
      check_interrupt();
      std::vector<const graph::Tensor*> args;
      for (graph::NodeId in : node.inputs) args.push_back(values[in]);
      try {
        computed[id] = node.prim->kernel(node, args);
      } catch (graph::IndexOutOfRange& e) {
        e.locate(graph_, id);
        throw;
      }
      values[id] = &*computed[id];
      for (graph::NodeId in : node.inputs) {
        if (last_use_[in] == id) computed[in].reset();
      }
    }
    // Every output is computed before any is written: an output buffer may be
    // an input's (donation).
    std::vector<graph::Tensor> results;
    for (const graph::NamedNode& out : graph_.outputs) results.push_back(*values[out.node]);
    for (size_t i = 0; i < outputs.size(); ++i) {
      std::span<const uint8_t> from = results[i].bytes();
      std::copy(from.begin(), from.end(), host_tensor(*outputs[i]).bytes().begin());
    }
  }

 private:
  graph::Graph graph_;
  std::vector<size_t> last_use_;  // the last node reading each value; nodes.size() for outputs
};

}  // namespace

std::unique_ptr<Plan> ReferenceDevice::compile(const graph::Graph& graph) {
  graph::verify(graph);
  return std::make_unique<ReferencePlan>(*this, graph);
}

std::vector<graph::Tensor> run_reference(const graph::Graph& graph, std::span<const graph::Tensor> inputs) {
  ReferenceDevice device;
  return device.compile(graph)->run_host(inputs);
}

}  // namespace sx::device
