// The schedule as text (schedule.h): the profile's labels and `check --schedule`'s lines.
#include <fmt/format.h>

#include "device/cpu/cpu.h"
#include "device/cpu/schedule.h"
#include "graph/composite.h"
#include "graph/passes.h"

namespace sx::device::cpu {
namespace {

using graph::Node;
using graph::NodeId;

std::string_view kind_name(StepKind kind) {
  switch (kind) {
    case StepKind::kernel: return "kernel";
    case StepKind::reference: return "reference";
    case StepKind::fused: return "fused";
    case StepKind::product: return "product";
    case StepKind::view: return "view";
  }
  return "";
}

std::string typed(const graph::Graph& graph, NodeId id) {
  const Node& node = graph.node(id);
  return fmt::format("%{} {}{}", id, graph::dtype_name(node.dtype), graph::shape_str(node.shape));
}

// Where step `s` writes each output: its place in the arena, or the caller's buffer.
std::string places(const Schedule& schedule, size_t s) {
  const ScheduledStep& step = schedule.steps[s];
  if (step.kind == StepKind::view) return fmt::format("%{} is the bytes of %{}", step.id, step.alias);
  // Per output: the graph output it is written into (it or a view of it), or none.
  std::vector<const graph::NamedNode*> in_place(step.outputs.size(), nullptr);
  for (const DirectOutput& d : schedule.direct_outputs) {
    if (d.step == s) in_place[d.slot] = &schedule.graph.outputs[d.output];
  }
  std::string text;
  for (size_t slot = 0; slot < step.outputs.size(); ++slot) {
    const NodeId out = step.outputs[slot];
    const Node& node = schedule.graph.node(out);
    const size_t bytes = static_cast<size_t>(graph::numel(node.shape)) * graph::dtype_size(node.dtype);
    text += slot == 0 ? "" : ", ";
    text += in_place[slot] ? fmt::format("{} into output \"{}\"", typed(schedule.graph, out), in_place[slot]->name)
                           : fmt::format("{} at {} ({} bytes)", typed(schedule.graph, out),
                                         schedule.in_place.offsets[s][slot], bytes);
  }
  return text;
}

// A node's primitive, a composite's gradient named by its composite and input.
std::string op_label(const Node& node) {
  if (node.op() != graph::PrimId::composite_gradient) return std::string(node.op_name());
  return fmt::format("{}'s gradient (input {})", node.attrs.get_string("of"), node.attrs.get_int("input"));
}

}  // namespace

std::string describe(const graph::Graph& graph, const Node& node) {
  std::string operands;
  for (NodeId in : node.inputs) {
    const Node& arg = graph.node(in);
    operands += fmt::format("{}{}{}", operands.empty() ? "" : " and ", graph::dtype_name(arg.dtype),
                            graph::shape_str(arg.shape));
  }
  return fmt::format("{} of {}", op_label(node), operands.empty() ? "no operands" : operands);
}

std::string step_label(const Schedule& schedule, size_t s) {
  const graph::Graph& graph = schedule.graph;
  const ScheduledStep& step = schedule.steps[s];
  std::string label = describe(graph, graph.node(step.id));
  if (step.rounded_cast) label += " and its cast to bf16";
  if (step.widened) {
    const NodeId product = *schedule.fusion.groups[static_cast<size_t>(step.group)].product;
    return describe(graph, graph.node(product)) + " and its cast to f32";
  }
  if (schedule.absorbed_scale[step.id] != 0) label += ", its gradient scaled by its last operand";
  if (step.group < 0) return label;
  // Its members' primitives, in order: chains of one length and root differ.
  const FusedGroup& group = schedule.fusion.groups[static_cast<size_t>(step.group)];
  std::string primitives;
  for (NodeId member : group.members)
    primitives += fmt::format("{}{}", primitives.empty() ? "" : " ", graph.node(member).op_name());
  label = fmt::format("fused {} nodes ({}) ending in {}", group.members.size(), primitives, label);
  if (group.product) label = fmt::format("{} with {}", describe(graph, graph.node(*group.product)), label);
  // What it moves: the tensors it reads and those it writes.
  return label + fmt::format(", reading {} and writing {}", group.operands.size(), group.written.size());
}

std::string print_schedule(const Schedule& schedule) {
  const graph::Graph& graph = schedule.graph;
  std::string text =
      fmt::format("cpu schedule: {}, {} {}, {} steps (node numbers are the lowered graph's)\n", isa_name(schedule.isa),
                  schedule.cores, schedule.cores == 1 ? "core" : "cores", schedule.steps.size());
  for (size_t s = 0; s < schedule.steps.size(); ++s) {
    const ScheduledStep& step = schedule.steps[s];
    text += fmt::format("{:>4} {:<9} {}", s, kind_name(step.kind), step_label(schedule, s));
    text += step.kind == StepKind::reference ? " (fallback: its reference kernel)" : "";
    text += fmt::format(": {}\n", places(schedule, s));
  }
  for (const StagedOutput& staged : schedule.in_place.staged) {
    text += fmt::format("     copy      output \"{}\" from {} at {} ({} bytes)\n", graph.outputs[staged.output].name,
                        typed(graph, graph.outputs[staged.output].node), staged.offset, staged.bytes);
  }
  for (NodeId id : schedule.computed_once) text += fmt::format("     once      {}\n", describe(graph, graph.node(id)));
  return text + fmt::format("arena: {} bytes (live peak {} bytes), outputs written in place\n",
                            schedule.in_place.memory.arena_bytes, schedule.in_place.memory.live_peak_bytes);
}

std::string print_composites(const graph::Graph& given, const CpuDevice& device) {
  const graph::NodePredicate runs = [&](const graph::Graph& g, const Node& node) { return device.runs(g, node); };
  std::string text;
  // A composite whose gradient is expanded is expanded too, whatever the device runs
  // (graph::expand_shared_composites): the gradient reads its intermediates.
  const std::vector<bool> differentiated = graph::computed_besides(given, runs);
  for (NodeId id = 0; id < given.nodes.size(); ++id) {
    const Node& node = given.nodes[id];
    if (!node.prim->composite()) continue;
    text +=
        fmt::format("%{} {} {}{}: ", id, op_label(node), graph::dtype_name(node.dtype), graph::shape_str(node.shape));
    const bool kernel = runs(given, node);
    const NodeId whole = node.inputs.empty() ? id : node.inputs[0];
    if (node.op() == graph::PrimId::part && runs(given, given.node(whole)) && !differentiated[whole]) {
      text += fmt::format("written by the kernel of %{} (into the slice of its decomposition)\n", whole);
      continue;
    }
    if (kernel && !differentiated[id]) {
      text += fmt::format("kernel {}\n", node.op_name());
      continue;
    }
    // The nodes it becomes: its decomposition, the composites in it expanded as compile does.
    std::vector<graph::ValueType> types;
    for (NodeId in : node.inputs) types.push_back({given.node(in).shape, given.node(in).dtype});
    const graph::Graph expanded =
        graph::expand_shared_composites(graph::decomposition(*node.prim, types, node.attrs), runs);
    std::string became;
    size_t count = 0;
    for (const Node& part : expanded.nodes) {
      if (part.op() == graph::PrimId::input) continue;
      became += fmt::format("{}{}", became.empty() ? "" : " ", part.op_name());
      ++count;
    }
    text += fmt::format("{}: decomposition into {} nodes ({})\n",
                        kernel ? "gradient reads its intermediates" : "fallback", count, became);
  }
  return text.empty() ? "no composites\n" : text;
}

}  // namespace sx::device::cpu
