// The cuda device's program of a graph: steps, constants and the arena's layout.
#include "device/cuda/program.h"

#include <fmt/format.h>

#include <algorithm>

#include "device/cuda/element.h"
#include "device/cuda/elementwise.h"
#include "device/device.h"
#include "graph/primitive.h"

namespace sx::device::cuda {
namespace {

bool is_source(const graph::Node& node) {
  return node.op() == graph::PrimId::input || node.op() == graph::PrimId::constant;
}

// The dtype a node's kernel takes: its first operand's (a comparison gives bool).
graph::DType operand_dtype(const graph::Graph& graph, const graph::Node& node) {
  return node.inputs.empty() ? node.dtype : graph.node(node.inputs[0]).dtype;
}

bool runs(const graph::Graph& graph, const graph::Node& node) {
  return is_source(node) || has_elementwise_kernel(node.op(), operand_dtype(graph, node));
}

size_t bytes_of(const graph::Node& node) {
  return static_cast<size_t>(graph::numel(node.shape)) * graph::dtype_size(node.dtype);
}

}  // namespace

bool has_kernel(graph::PrimId prim) {
  return prim == graph::PrimId::input || prim == graph::PrimId::constant ||
         visit_element(prim, [](auto, auto, auto) {});
}

std::vector<std::string> missing_kernels(const graph::Graph& graph) {
  std::vector<std::string> missing;
  for (const graph::Node& node : graph.nodes) {
    if (runs(graph, node)) continue;
    std::string name = fmt::format("{} ({})", node.op_name(), graph::dtype_name(operand_dtype(graph, node)));
    if (std::find(missing.begin(), missing.end(), name) == missing.end()) missing.push_back(std::move(name));
  }
  return missing;
}

Program plan_program(const graph::Graph& graph) {
  if (std::vector<std::string> missing = missing_kernels(graph); !missing.empty()) {
    std::string names = missing[0];
    for (size_t i = 1; i < missing.size(); ++i) names += ", " + missing[i];
    throw DeviceError(
        "the cuda device has no kernel for " + names + ": the graph runs on cpu and reference; use --device cpu",
        "E-DEVICE-007");
  }
  Program program;
  // Each node's place before its buffer's offset is known: arena places hold the index
  // of the node's BufferLife until the arena is planned.
  std::vector<Place> place(graph.nodes.size());
  for (size_t i = 0; i < graph.inputs.size(); ++i) place[graph.inputs[i].node] = {Place::Kind::input, i};
  std::vector<BufferLife> lives;
  auto read_at = [&](graph::NodeId id, int64_t step) {
    if (place[id].kind == Place::Kind::arena) lives[place[id].index].last = std::max(lives[place[id].index].last, step);
  };
  for (graph::NodeId id = 0; id < graph.nodes.size(); ++id) {
    const graph::Node& node = graph.nodes[id];
    if (node.op() == graph::PrimId::input) continue;
    if (node.op() == graph::PrimId::constant) {
      place[id] = {Place::Kind::constant, program.constants.size()};
      program.constants.push_back(id);
      continue;
    }
    auto step = static_cast<int64_t>(id);
    for (graph::NodeId in : node.inputs) read_at(in, step);
    place[id] = {Place::Kind::arena, lives.size()};
    lives.push_back({.bytes = bytes_of(node), .first = step, .last = step});
    program.steps.push_back({.prim = node.op(),
                             .dtype = operand_dtype(graph, node),
                             .a = place[node.inputs[0]],
                             .b = node.inputs.size() > 1 ? place[node.inputs[1]] : Place{},
                             .binary = node.inputs.size() > 1,
                             .out = lives.size() - 1,
                             .n = graph::numel(node.shape)});
  }
  auto end = static_cast<int64_t>(graph.nodes.size());
  std::vector<size_t> output_life;
  for (const graph::NamedNode& output : graph.outputs) {
    read_at(output.node, end + 1);
    if (place[output.node].kind == Place::Kind::arena) {
      output_life.push_back(place[output.node].index);
      continue;
    }
    output_life.push_back(lives.size());
    size_t bytes = bytes_of(graph.node(output.node));
    program.stages.push_back({.from = place[output.node], .to = lives.size(), .bytes = bytes});
    lives.push_back({.bytes = bytes, .first = end, .last = end + 1});
  }
  program.arena = plan_arena(lives, 256);
  auto offset = [&](size_t life) { return program.arena.offsets[life]; };
  for (Step& step : program.steps) {
    step.out = offset(step.out);
    if (step.a.kind == Place::Kind::arena) step.a.index = offset(step.a.index);
    if (step.binary && step.b.kind == Place::Kind::arena) step.b.index = offset(step.b.index);
  }
  for (Stage& stage : program.stages) stage.to = offset(stage.to);
  for (size_t life : output_life) program.outputs.push_back(offset(life));
  return program;
}

}  // namespace sx::device::cuda
