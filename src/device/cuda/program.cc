// The cuda device's program of a graph: steps, kernels, constants and the arena's layout.
#include "device/cuda/program.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "device/cuda/codegen.h"
#include "device/cuda/element.h"
#include "device/cuda/elementwise.h"
#include "device/cuda/movement.h"
#include "device/cuda/products.h"
#include "device/device.h"
#include "graph/passes.h"
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

bool runs(const graph::Graph& graph, graph::NodeId id) {
  const graph::Node& node = graph.node(id);
  return is_source(node) || fusible(graph, id) || has_elementwise_kernel(node.op(), operand_dtype(graph, node)) ||
         (node.op() == graph::PrimId::cast && has_cast_kernel(operand_dtype(graph, node), node.dtype)) ||
         row_reducible(graph, id) || reducible(graph, id) || movable(graph, id) || indexable(graph, id) ||
         randomizable(graph, id) || has_composite_kernel(graph, node) ||
         (node.op() == graph::PrimId::matmul && has_product(node.dtype));
}

size_t bytes_of(const graph::Node& node) {
  return static_cast<size_t>(graph::numel(node.shape)) * graph::dtype_size(node.dtype);
}

// Whether scatter_add `id` runs by sorting its indices (scatter_add.h), else by the
// scanning kernel.
bool scatters_by_sorting(const graph::Graph& graph, graph::NodeId id) {
  if (graph.node(id).op() != graph::PrimId::scatter_add) return false;
  GatherGeometry g = gather_geometry(graph, id);
  return sorts_scatter(g.count, g.length);
}

// Marks `step` as checking the `count` indices of node `id`; DeviceError E-DEVICE-007
// where the node is beyond those an IndexFault names.
void checks_indices(Step& step, const graph::Graph& graph, graph::NodeId id, int64_t count) {
  if (id >= kMostFaultNodes) {
    throw DeviceError(fmt::format("the cuda device checks the indices of the first {} nodes of a graph; "
                                  "node {} ({}) is beyond them: use --device cpu",
                                  kMostFaultNodes, id, graph.node(id).op_name()),
                      "E-DEVICE-007");
  }
  step.checks_indices = true;
  step.checked_indices = count;
  step.node = static_cast<uint32_t>(id);
}

// The steps in the graph's order of the nodes they write, with the node each writes and
// the nodes each reads; operand places are filled in later.
struct Launch {
  Step step;
  graph::NodeId writes;
  std::vector<graph::NodeId> reads;
};

std::vector<Launch> launches(const graph::Graph& graph, Program& program) {
  std::map<std::string, size_t> kernel_index;
  auto add_kernel = [&](const GeneratedKernel& kernel) {
    auto [at, added] = kernel_index.emplace(kernel.name, program.kernel_names.size());
    if (added) {
      program.kernel_names.push_back(kernel.name);
      program.source += kernel.source;
    }
    return at->second;
  };
  std::map<graph::NodeId, Launch> by_node;
  for (const Fusion& fusion : find_fusions(graph)) {
    graph::NodeId root = fusion.nodes.back();
    Step step;
    step.kernel = add_kernel(generate_kernel(graph, fusion));
    step.n = graph::numel(graph.node(root).shape);
    by_node.emplace(root, Launch{step, root, fusion.operands});
  }
  for (graph::NodeId id = 0; id < graph.nodes.size(); ++id) {
    const graph::Node& node = graph.nodes[id];
    if (is_source(node) || by_node.contains(id) || fusible(graph, id)) continue;
    if (node.op() == graph::PrimId::matmul) {
      const graph::Shape& a = graph.node(node.inputs[0]).shape;
      Step step;
      step.kind = Step::Kind::product;
      step.dtype = node.dtype;
      step.n = a[a.size() - 2];
      step.length = a.back();
      step.columns = node.shape.back();
      step.batch = graph::numel(node.shape) / std::max<int64_t>(1, step.n * step.columns);
      by_node.emplace(id, Launch{step, id, node.inputs});
    } else if (movable(graph, id)) {
      Step step;
      step.kind = Step::Kind::movement;
      step.dtype = node.dtype;
      step.movement = plan_movement(graph, id);
      step.n = graph::numel(node.shape);
      by_node.emplace(id, Launch{step, id, node.inputs});
    } else if (std::optional<PassedKernels> passes = passed_kernels(graph, id)) {
      const graph::Shape& x = graph.node(node.inputs[0]).shape;
      Step step;
      step.kind = Step::Kind::row;
      step.kernel = add_kernel(passes->first);
      step.threads = passes->threads;
      if (passes->second) step.second_kernel = add_kernel(*passes->second);
      step.second_threads = passes->second_threads;
      step.bytes = passes->bytes;
      step.length = x.back();
      step.n = graph::numel(x) / step.length;
      if (std::optional<IndexCheck> check = index_check(graph, id)) checks_indices(step, graph, id, check->count);
      by_node.emplace(id, Launch{step, id, node.inputs});
    } else if (has_composite_kernel(graph, node)) {
      // gelu (and its gradient) and the updates an element per thread, attention in
      // blocks of query rows, the others a row of the last axis per thread.
      const graph::Shape& x = graph.node(node.inputs[0]).shape;
      Step step;
      step.kernel = add_kernel(generate_composite_kernel(graph, id));
      step.n = node.op() == graph::PrimId::attention ? attention_threads(graph, node) : graph::numel(x);
      if (!runs_by_elements(graph, node)) {
        step.kind = Step::Kind::row;
        step.length = x.back();
        step.n = step.length == 0 ? 0 : step.n / step.length;
      }
      by_node.emplace(id, Launch{step, id, node.inputs});
    } else if (row_reducible(graph, id)) {
      const graph::Shape& x = graph.node(node.inputs[0]).shape;
      Step step;
      step.kind = Step::Kind::row;
      step.kernel = add_kernel(generate_row_reduction(graph, id));
      step.length = x.empty() ? 1 : x.back();
      step.n = graph::numel(node.shape);
      by_node.emplace(id, Launch{step, id, node.inputs});
    } else if (scatters_by_sorting(graph, id)) {
      GatherGeometry g = gather_geometry(graph, id);
      Step step;
      step.kind = Step::Kind::scatter_add;
      step.n = graph::numel(node.shape);
      step.scatter = {.dtype = node.dtype,
                      .index_dtype = graph.node(node.inputs[1]).dtype,
                      .geometry = g,
                      .outer = g.length * g.inner == 0 ? 0 : step.n / (g.length * g.inner)};
      checks_indices(step, graph, id, g.count);
      by_node.emplace(id, Launch{step, id, node.inputs});
    } else if (indexable(graph, id) || randomizable(graph, id)) {
      Step step;
      step.kernel =
          add_kernel(indexable(graph, id) ? generate_index_kernel(graph, id) : generate_random_kernel(graph, id));
      step.n = graph::numel(node.shape);
      if (std::optional<IndexCheck> check = indexable(graph, id) ? index_check(graph, id) : std::nullopt) {
        checks_indices(step, graph, id, check->count);
      }
      by_node.emplace(id, Launch{step, id, node.inputs});
    } else if (reducible(graph, id)) {
      Step step;
      step.kind = Step::Kind::row;
      step.kernel = add_kernel(generate_reduction(graph, id));
      step.n = graph::numel(node.shape);
      step.length = step.n == 0 ? 0 : graph::numel(graph.node(node.inputs[0]).shape) / step.n;
      by_node.emplace(id, Launch{step, id, node.inputs});
    } else {
      Step step;
      step.kind = Step::Kind::elementwise;
      step.prim = node.op();
      step.dtype = operand_dtype(graph, node);
      step.cast_to = node.dtype;
      step.n = graph::numel(node.shape);
      by_node.emplace(id, Launch{step, id, node.inputs});
    }
  }
  std::vector<Launch> ordered;
  for (auto& [id, launch] : by_node) ordered.push_back(std::move(launch));
  return ordered;
}

}  // namespace

bool has_kernel(graph::PrimId prim) {
  return prim == graph::PrimId::input || prim == graph::PrimId::constant || prim == graph::PrimId::sum ||
         prim == graph::PrimId::reduce_max || prim == graph::PrimId::reduce_min || prim == graph::PrimId::argmax ||
         prim == graph::PrimId::argmin || prim == graph::PrimId::matmul || prim == graph::PrimId::gather ||
         prim == graph::PrimId::scatter_add || prim == graph::PrimId::one_hot || prim == graph::PrimId::iota ||
         graph::primitive(prim).kind == graph::PrimKind::random || moves_by_copies(prim) ||
         prim == graph::PrimId::where || prim == graph::PrimId::cast ||
         visit_generated_element(prim, [](auto, auto, auto) {}) || has_composite_kernel(prim);
}

graph::Graph with_composites_expanded(const graph::Graph& graph) {
  auto runs = [](const graph::Graph& g, const graph::Node& node) { return has_composite_kernel(g, node); };
  if (std::none_of(graph.nodes.begin(), graph.nodes.end(),
                   [&](const graph::Node& node) { return node.prim->composite() && !runs(graph, node); })) {
    return graph;
  }
  // Simplified as the runtime simplifies the decompositions it expands: their
  // stop_gradient, which has no kernel, is the identity once gradients are taken.
  return graph::simplify(graph::expand_composites(graph, runs));
}

Program generated_kernels(const graph::Graph& graph) {
  Program program;
  launches(graph, program);
  return program;
}

std::vector<std::string> missing_kernels(const graph::Graph& graph) {
  std::vector<std::string> missing;
  for (graph::NodeId id = 0; id < graph.nodes.size(); ++id) {
    if (runs(graph, id)) continue;
    const graph::Node& node = graph.node(id);
    std::string name = fmt::format("{} ({})", node.op_name(), graph::dtype_name(operand_dtype(graph, node)));
    if (std::find(missing.begin(), missing.end(), name) == missing.end()) missing.push_back(std::move(name));
  }
  return missing;
}

Program plan_program(const graph::Graph& graph, const SortBytes& sort_bytes) {
  if (std::vector<std::string> missing = missing_kernels(graph); !missing.empty()) {
    std::string names = missing[0];
    for (size_t i = 1; i < missing.size(); ++i) names += ", " + missing[i];
    throw DeviceError(
        "the cuda device has no kernel for " + names + ": the graph runs on cpu and reference; use --device cpu",
        "E-DEVICE-007");
  }
  Program program;
  // Each value's place; an arena place holds the index of its BufferLife until the
  // arena is planned.
  std::vector<Place> place(graph.nodes.size());
  for (size_t i = 0; i < graph.inputs.size(); ++i) place[graph.inputs[i].node] = {Place::Kind::input, i};
  for (graph::NodeId id = 0; id < graph.nodes.size(); ++id) {
    if (graph.nodes[id].op() != graph::PrimId::constant) continue;
    place[id] = {Place::Kind::constant, program.constants.size()};
    program.constants.push_back(id);
  }
  std::vector<BufferLife> lives;
  auto read_at = [&](graph::NodeId id, int64_t step) {
    if (place[id].kind == Place::Kind::arena) lives[place[id].index].last = std::max(lives[place[id].index].last, step);
  };
  std::vector<Launch> ordered = launches(graph, program);
  for (size_t i = 0; i < ordered.size(); ++i) {
    Launch& launch = ordered[i];
    auto step = static_cast<int64_t>(i);
    for (graph::NodeId in : launch.reads) {
      read_at(in, step);
      launch.step.operands.push_back(place[in]);
    }
    place[launch.writes] = {Place::Kind::arena, lives.size()};
    launch.step.out = lives.size();
    lives.push_back(
        {.bytes = std::max(bytes_of(graph.node(launch.writes)), launch.step.bytes), .first = step, .last = step});
    if (launch.step.kind == Step::Kind::scatter_add) {
      SortedScatter& scatter = launch.step.scatter;
      if (sort_bytes && scatter.geometry.count > 0)
        scatter.sort_bytes = sort_bytes(scatter.geometry.count, slot_bits(scatter.geometry.length));
      launch.step.scratch = lives.size();
      lives.push_back(
          {.bytes = scatter_scratch(scatter.geometry.count, scatter.sort_bytes).bytes, .first = step, .last = step});
    }
  }
  auto end = static_cast<int64_t>(ordered.size());
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
  for (Launch& launch : ordered) {
    Step& step = launch.step;
    step.out = offset(step.out);
    if (step.kind == Step::Kind::scatter_add) step.scratch = offset(step.scratch);
    for (Place& operand : step.operands) {
      if (operand.kind == Place::Kind::arena) operand.index = offset(operand.index);
    }
    program.steps.push_back(std::move(step));
  }
  for (Stage& stage : program.stages) stage.to = offset(stage.to);
  for (size_t life : output_life) program.outputs.push_back(offset(life));
  return program;
}

}  // namespace sx::device::cuda
