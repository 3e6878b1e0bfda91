// Lowering a graph to the cpu device's schedule (schedule.h).
#include <algorithm>
#include <array>
#include <numeric>
#include <optional>

#include "device/arena.h"
#include "device/cpu/kernels.h"
#include "device/cpu/products/epilogue.h"
#include "device/cpu/products/gemm.h"
#include "device/cpu/schedule.h"

namespace sx::device::cpu {
namespace {

using graph::Node;
using graph::NodeId;
using graph::PrimId;

size_t bytes_of(const Node& node) {
  return static_cast<size_t>(graph::numel(node.shape)) * graph::dtype_size(node.dtype);
}

// A multiply of an f32 tensor by a broadcast f32 scalar (mul x (broadcast s)): x and s.
std::optional<std::array<NodeId, 2>> scaling(const graph::Graph& graph, NodeId id) {
  const Node& node = graph.node(id);
  if (node.op() != PrimId::mul || node.dtype != graph::DType::f32) return std::nullopt;
  const Node& factor = graph.node(node.inputs[1]);
  if (factor.op() != PrimId::broadcast) return std::nullopt;
  const Node& scalar = graph.node(factor.inputs[0]);
  if (scalar.dtype != graph::DType::f32 || graph::numel(scalar.shape) != 1) return std::nullopt;
  return std::array<NodeId, 2>{node.inputs[0], factor.inputs[0]};
}

// An optimizer update's gradient (input 1) that is a scaling nothing else reads (the
// clipped gradient): the update's step computes it (absorbed_scale). In the lowered
// graph the update reads the scaling's operands: the tensor as its input 1, the scalar
// as its last input; the scaling, read by nothing then, has no step.
void find_absorbed_scales(Schedule& schedule) {
  graph::Graph& graph = schedule.graph;
  schedule.absorbed_scale.assign(graph.nodes.size(), 0);
  std::vector<int> readers(graph.nodes.size(), 0);
  for (const Node& node : graph.nodes) {
    for (NodeId in : node.inputs) ++readers[in];
  }
  for (const graph::NamedNode& out : graph.outputs) ++readers[out.node];
  for (NodeId id = 0; id < graph.nodes.size(); ++id) {
    const Node& node = graph.nodes[id];
    if (!runs_update(node) || readers[node.inputs[1]] != 1) continue;
    const std::optional<std::array<NodeId, 2>> read = scaling(graph, node.inputs[1]);
    if (!read) continue;
    schedule.absorbed_scale[id] = 1u << 1;
    graph.nodes[id].inputs[1] = (*read)[0];
    graph.nodes[id].inputs.push_back((*read)[1]);
  }
}

// Which nodes an output needs; which inputs each step reads through a broadcast's,
// transpose's or reshape's input (its row's `absorbs`): bit k of absorbed[id] for input k,
// and of absorbed_deep[id] as well when it reads through what lies under that node;
// of absorbed_cast[id] when it reads an f32 weight through a cast it rounds itself.
std::vector<bool> find_needed(Schedule& schedule) {
  const KernelSet& kernels = kernels_for(schedule.isa);
  const graph::Graph& graph = schedule.graph;
  const StepTable& table = step_table();
  const size_t count = graph.nodes.size();
  std::vector<bool> needed(count, false);
  schedule.absorbed.assign(count, 0);
  schedule.absorbed_deep.assign(count, 0);
  schedule.absorbed_cast.assign(count, 0);
  std::vector<uint32_t>& absorbed = schedule.absorbed;
  std::vector<uint32_t>& absorbed_deep = schedule.absorbed_deep;
  std::vector<uint32_t>& absorbed_cast = schedule.absorbed_cast;
  std::vector<int> users(count, 0), absorbing(count, 0);
  for (const graph::NamedNode& out : graph.outputs) needed[out.node] = true;
  for (NodeId id = static_cast<NodeId>(count); id-- > 0;) {
    if (!needed[id]) continue;
    const Node& node = graph.nodes[id];
    Absorbs absorbs = table[node.op()].absorbs;
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      NodeId in = node.inputs[k];
      ++users[in];
      PrimId from = graph.node(in).op();
      int reads = absorbs && k < 32 &&
                          (from == PrimId::broadcast || from == PrimId::transpose || from == PrimId::reshape ||
                           from == PrimId::cast)
                      ? absorbs(graph, node, k, kernels)
                      : 0;
      if (reads & kThroughCast) absorbed_cast[id] |= 1u << k;
      int depth = reads & ~kThroughCast;
      if (reads > 0) {
        if (depth > 0) absorbed[id] |= 1u << k;
        if (depth == 2) absorbed_deep[id] |= 1u << k;  // what lies under it is needed only by others
        ++absorbing[in];
        needed[read_source(graph, id, k, absorbed[id], absorbed_deep[id], absorbed_cast[id])] = true;
        if (users[in] != absorbing[in]) needed[in] = true;
      } else {
        needed[in] = true;
      }
    }
  }
  return needed;
}

// The steps of the needed nodes, in graph order. A node every user absorbs (a
// broadcast, transpose or reshape, and what lies under one read deep) is not computed
// (needed stays false unless another user or an output asked for it).
void find_steps(Schedule& schedule, const std::vector<bool>& needed) {
  const graph::Graph& graph = schedule.graph;
  const StepTable& table = step_table();
  const KernelSet& kernels = kernels_for(schedule.isa);
  const Fusion& fusion = schedule.fusion;
  for (NodeId id = 0; id < graph.nodes.size(); ++id) {
    if (!needed[id]) continue;
    const Node& node = graph.nodes[id];
    if (fusion.group_of_product[id] >= 0) continue;  // it runs in its group's step
    if (int g = fusion.group_of[id]; g >= 0) {
      const FusedGroup& group = fusion.groups[static_cast<size_t>(g)];
      if (group.members.back() != id) continue;
      const FusedFacts facts = fused_facts(graph, group, schedule.absorbed, kernels);
      ScheduledStep step;
      step.kind = StepKind::fused;
      step.id = id;
      step.group = g;
      step.inputs = group.operands;
      step.outputs = group.written;
      step.may_overwrite = facts.may_overwrite;
      if (group.product) {
        const NodeId product = *group.product;
        EpilogueLayout layout =
            lay_out_epilogue(graph, group, schedule.absorbed[product], schedule.absorbed_deep[product],
                             schedule.absorbed_cast[product], facts);
        step.kind = StepKind::product;
        step.inputs = std::move(layout.inputs);
        step.outputs = std::move(layout.outputs);
        step.may_overwrite = std::move(layout.may_overwrite);
        step.operand_at = std::move(layout.operand_at);
        step.result = layout.result;
        step.widened = layout.widened;
      }
      schedule.steps.push_back(std::move(step));
      continue;
    }
    const StepRow& row = table[node.op()];
    switch (row.run) {
      case Run::input: continue;
      case Run::constant: schedule.constants.push_back(id); continue;
      case Run::once: schedule.computed_once.push_back(id); continue;
      case Run::view: {
        ScheduledStep& view = schedule.steps.emplace_back();
        view.kind = StepKind::view;
        view.id = id;
        view.alias = node.inputs[0];
        continue;
      }
      case Run::step:
      case Run::reference: break;
    }
    ScheduledStep step;
    step.kind = row.run == Run::step ? StepKind::kernel : StepKind::reference;
    step.id = id;
    step.inputs = node.inputs;
    step.outputs = {id};
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      step.inputs[k] =
          read_source(graph, id, k, schedule.absorbed[id], schedule.absorbed_deep[id], schedule.absorbed_cast[id]);
    }
    schedule.steps.push_back(std::move(step));
  }
}

// A composite's kernel step of f32 read by a cast to bf16 (a bf16 product's operand)
// writes that cast's values too, rounding each row while it holds it (rounded_cast); the
// cast's step goes. The first such cast of each composite, where the cast runs alone.
// Where no other step, view or output reads the composite's own output, the step writes
// the cast alone.
void merge_rounding_casts(Schedule& schedule) {
  const graph::Graph& graph = schedule.graph;
  std::vector<std::optional<size_t>> cast_step_of(graph.nodes.size());  // per node: the first cast step of it
  for (size_t s = 0; s < schedule.steps.size(); ++s) {
    const ScheduledStep& step = schedule.steps[s];
    const Node& node = graph.node(step.id);
    if (step.kind == StepKind::kernel && node.op() == PrimId::cast && node.dtype == graph::DType::bf16 &&
        step.inputs[0] == node.inputs[0] && !cast_step_of[step.inputs[0]]) {
      cast_step_of[step.inputs[0]] = s;
    }
  }
  std::vector<bool> merged(schedule.steps.size(), false);
  for (ScheduledStep& step : schedule.steps) {
    const Node& node = graph.node(step.id);
    const std::optional<size_t> cast = cast_step_of[step.id];
    if (step.kind != StepKind::kernel || !writes_rounded_cast(node.op()) || node.dtype != graph::DType::f32 || !cast) {
      continue;
    }
    step.rounded_cast = schedule.steps[*cast].id;
    step.outputs.push_back(*step.rounded_cast);
    merged[*cast] = true;
  }
  std::vector<ScheduledStep> kept;
  std::vector<int> readers(graph.nodes.size(), 0);
  for (size_t s = 0; s < schedule.steps.size(); ++s) {
    if (merged[s]) continue;
    const ScheduledStep& step = kept.emplace_back(std::move(schedule.steps[s]));
    if (step.kind == StepKind::view) ++readers[step.alias];
    for (NodeId in : step.inputs) ++readers[in];
  }
  for (const graph::NamedNode& out : graph.outputs) ++readers[out.node];
  for (ScheduledStep& step : kept) {
    if (step.rounded_cast && readers[step.id] == 0) step.outputs = {*step.rounded_cast};
  }
  schedule.steps = std::move(kept);
}

// An optimizer update's step writes each of its values straight into the buffer of the
// slice that takes it whole (value_slice: a `part`, decomposed), where nothing but such
// slices reads the update: those slices have no step (another slice of the same value is
// a view of the first). Each value may be written over the parameter, the gradient or
// the state it is computed from (reads_elementwise).
void schedule_updates(Schedule& schedule) {
  const graph::Graph& graph = schedule.graph;
  std::vector<bool> read_whole(graph.nodes.size(), false);
  std::vector<std::optional<size_t>> step_of(graph.nodes.size());
  for (size_t s = 0; s < schedule.steps.size(); ++s) {
    const ScheduledStep& step = schedule.steps[s];
    step_of[step.id] = s;
    if (step.kind == StepKind::view) read_whole[step.alias] = true;
    if (step.kind == StepKind::view || value_slice(graph, graph.node(step.id))) continue;
    for (NodeId in : step.inputs) read_whole[in] = true;
  }
  for (const graph::NamedNode& out : graph.outputs) read_whole[out.node] = true;
  std::vector<bool> merged(schedule.steps.size(), false);
  for (size_t s = 0; s < schedule.steps.size(); ++s) {
    ScheduledStep& step = schedule.steps[s];
    const Node& node = graph.node(step.id);
    const std::optional<int64_t> value = value_slice(graph, node);
    if (step.kind != StepKind::kernel || !value || read_whole[node.inputs[0]]) continue;
    ScheduledStep& update = schedule.steps[*step_of[node.inputs[0]]];
    if (update.outputs.size() == 1 && update.outputs[0] == update.id) update.outputs.clear();
    const auto same_value = std::find_if(update.outputs.begin(), update.outputs.end(),
                                         [&](NodeId slice) { return value_slice(graph, graph.node(slice)) == value; });
    if (same_value != update.outputs.end()) {
      step.kind = StepKind::view;
      step.alias = *same_value;
      step.inputs.clear();
      step.outputs.clear();
      continue;
    }
    update.outputs.push_back(step.id);
    merged[s] = true;
  }
  std::vector<ScheduledStep> kept;
  for (size_t s = 0; s < schedule.steps.size(); ++s) {
    if (!merged[s]) kept.push_back(std::move(schedule.steps[s]));
  }
  schedule.steps = std::move(kept);
  for (ScheduledStep& step : schedule.steps) {
    const Node& node = graph.node(step.id);
    if (step.kind != StepKind::kernel || !is_update(node.op())) continue;
    if (step.outputs.size() == 1 && step.outputs[0] == step.id && node.shape != graph.node(node.inputs[0]).shape) {
      continue;  // the stacked values: over no input
    }
    for (size_t slot = 0; slot < step.outputs.size(); ++slot) {
      std::vector<bool>& row = step.may_overwrite.emplace_back(step.inputs.size(), false);
      for (size_t k = 0; k < step.inputs.size(); ++k) row[k] = reads_elementwise(node, k);
    }
  }
}

// Per node: the node whose bytes it is (itself, or a view's source).
std::vector<NodeId> sources_of(const Schedule& schedule) {
  std::vector<NodeId> source(schedule.graph.nodes.size());
  std::iota(source.begin(), source.end(), NodeId{0});
  for (const ScheduledStep& step : schedule.steps) {
    if (step.kind == StepKind::view) source[step.id] = source[step.alias];
  }
  return source;
}

// Which inputs each direct output may be written over, when the caller passes one
// buffer for both (donation): those that no step reads after the output's step, nor
// that step itself but as its may_overwrite allows, and that no output is (outputs read
// from inputs are copied out after the steps).
void find_overwrites(Schedule& schedule, const std::vector<NodeId>& source, const std::vector<int>& claims) {
  const graph::Graph& graph = schedule.graph;
  std::vector<int64_t> last_reader(graph.nodes.size(), -1);  // per node: the last step reading its bytes
  for (size_t s = 0; s < schedule.steps.size(); ++s) {
    for (NodeId in : schedule.steps[s].inputs) last_reader[source[in]] = static_cast<int64_t>(s);
  }
  for (DirectOutput& d : schedule.direct_outputs) {
    d.overwrites.assign(graph.inputs.size(), false);
    const ScheduledStep& writer = schedule.steps[d.step];
    for (size_t i = 0; i < graph.inputs.size(); ++i) {
      const NodeId input = graph.inputs[i].node;
      if (claims[input] > 0) continue;
      bool safe = last_reader[input] < static_cast<int64_t>(d.step);
      if (last_reader[input] == static_cast<int64_t>(d.step) && !writer.may_overwrite.empty()) {
        safe = true;
        for (size_t k = 0; k < writer.inputs.size(); ++k) {
          if (source[writer.inputs[k]] == input) safe = safe && writer.may_overwrite[d.slot][k];
        }
      }
      d.overwrites[i] = safe;
    }
  }
}

// The outputs a step computes (through views), each its own node's only output.
void find_direct_outputs(Schedule& schedule) {
  const graph::Graph& graph = schedule.graph;
  std::vector<std::optional<std::pair<size_t, size_t>>> written_by(graph.nodes.size());  // step, slot
  for (size_t s = 0; s < schedule.steps.size(); ++s) {
    const ScheduledStep& step = schedule.steps[s];
    for (size_t slot = 0; slot < step.outputs.size(); ++slot) written_by[step.outputs[slot]] = std::pair{s, slot};
  }
  const std::vector<NodeId> source = sources_of(schedule);
  std::vector<int> claims(graph.nodes.size(), 0);
  for (const graph::NamedNode& out : graph.outputs) ++claims[source[out.node]];
  schedule.direct_of.assign(graph.outputs.size(), -1);
  for (size_t i = 0; i < graph.outputs.size(); ++i) {
    const NodeId from = source[graph.outputs[i].node];
    if (!written_by[from] || claims[from] != 1) continue;
    schedule.direct_of[i] = static_cast<int>(schedule.direct_outputs.size());
    schedule.direct_outputs.push_back(
        {.output = i, .step = written_by[from]->first, .slot = written_by[from]->second, .overwrites = {}});
  }
  find_overwrites(schedule, source, claims);
}

}  // namespace

Schedule lower(graph::Graph graph, Isa isa, int cores) {
  Schedule schedule;
  schedule.graph = std::move(graph);
  schedule.isa = isa;
  schedule.cores = cores;
  find_absorbed_scales(schedule);
  const std::vector<bool> needed = find_needed(schedule);
  for (NodeId id = 0; id < schedule.graph.nodes.size(); ++id) {
    if (needed[id] && step_table()[schedule.graph.nodes[id].op()].run == Run::once) {
      schedule.compile_time_bytes += static_cast<double>(bytes_of(schedule.graph.nodes[id]));
    }
  }
  check_fits_in_memory("cpu", schedule.compile_time_bytes);
  // Chains of elementwise nodes run fused: a group's step runs where its root is.
  schedule.fusion = find_fusion(schedule.graph, needed, schedule.absorbed, schedule.absorbed_deep);
  find_steps(schedule, needed);
  schedule_updates(schedule);
  merge_rounding_casts(schedule);
  find_direct_outputs(schedule);
  schedule.in_arena = lay_out_arena(schedule, std::vector<bool>(schedule.direct_outputs.size(), false));
  schedule.in_place = lay_out_arena(schedule, std::vector<bool>(schedule.direct_outputs.size(), true));
  return schedule;
}

// Every step's output gets its place in one arena by the steps between its writing and
// its last reading (a view's readers count for its source; outputs live to the end),
// and so does a staging place for each output read from outside the arena.
ArenaLayout lay_out_arena(const Schedule& schedule, const std::vector<bool>& direct) {
  const graph::Graph& graph = schedule.graph;
  std::vector<int64_t> buffer(graph.nodes.size(), -1);  // each node's buffer, -1 when not in the arena
  std::vector<bool> in_place(graph.nodes.size(), false);
  for (size_t k = 0; k < schedule.direct_outputs.size(); ++k) {
    const DirectOutput& d = schedule.direct_outputs[k];
    if (direct[k]) in_place[schedule.steps[d.step].outputs[d.slot]] = true;
  }
  std::vector<BufferLife> lives;
  auto read_at = [&](NodeId id, int64_t step) {
    if (buffer[id] >= 0) lives[static_cast<size_t>(buffer[id])].last = std::max(lives[buffer[id]].last, step);
  };
  for (size_t s = 0; s < schedule.steps.size(); ++s) {
    const ScheduledStep& scheduled = schedule.steps[s];
    auto step = static_cast<int64_t>(s);
    if (scheduled.kind == StepKind::view) {
      buffer[scheduled.id] = buffer[scheduled.alias];
      read_at(scheduled.alias, step);
      continue;
    }
    for (NodeId in : scheduled.inputs) read_at(in, step);
    for (NodeId out : scheduled.outputs) {
      if (in_place[out]) continue;
      buffer[out] = static_cast<int64_t>(lives.size());
      lives.push_back({.bytes = bytes_of(graph.nodes[out]), .first = step, .last = step});
    }
  }
  auto end = static_cast<int64_t>(schedule.steps.size());
  std::vector<int64_t> staging;  // each staged output's buffer
  ArenaLayout layout;
  for (size_t i = 0; i < graph.outputs.size(); ++i) {
    NodeId node = graph.outputs[i].node;
    read_at(node, end);
    const int direct_index = schedule.direct_of[i];
    if (buffer[node] >= 0 || (direct_index >= 0 && direct[static_cast<size_t>(direct_index)])) continue;
    layout.staged.push_back({.output = i, .bytes = bytes_of(graph.node(node)), .offset = 0});
    staging.push_back(static_cast<int64_t>(lives.size()));
    lives.push_back({.bytes = bytes_of(graph.node(node)), .first = end, .last = end});
  }
  ArenaPlan plan = plan_arena(lives);
  for (const ScheduledStep& step : schedule.steps) {
    std::vector<size_t>& offsets = layout.offsets.emplace_back();
    if (step.kind == StepKind::view) continue;
    for (NodeId out : step.outputs) {
      offsets.push_back(buffer[out] >= 0 ? plan.offsets[static_cast<size_t>(buffer[out])] : 0);
    }
  }
  for (size_t k = 0; k < staging.size(); ++k) layout.staged[k].offset = plan.offsets[static_cast<size_t>(staging[k])];
  layout.size = plan.size;
  layout.memory = {.arena_bytes = plan.size, .live_peak_bytes = plan.live_peak};
  return layout;
}

bool ArenaLayout::operator==(const ArenaLayout& other) const {
  return offsets == other.offsets && staged == other.staged && size == other.size &&
         memory.arena_bytes == other.memory.arena_bytes && memory.live_peak_bytes == other.memory.live_peak_bytes &&
         memory.scratch_bytes == other.memory.scratch_bytes;
}

bool Schedule::same_lowering(const Schedule& other) const {
  return isa == other.isa && cores == other.cores && absorbed == other.absorbed &&
         absorbed_deep == other.absorbed_deep && absorbed_cast == other.absorbed_cast &&
         absorbed_scale == other.absorbed_scale && fusion == other.fusion && steps == other.steps &&
         computed_once == other.computed_once && constants == other.constants &&
         compile_time_bytes == other.compile_time_bytes && direct_outputs == other.direct_outputs &&
         direct_of == other.direct_of && in_arena == other.in_arena && in_place == other.in_place;
}

}  // namespace sx::device::cpu
