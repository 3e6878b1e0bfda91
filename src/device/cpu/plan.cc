// The cpu device's compile and run. compile walks the graph once: it drops
// the nodes no output needs, gives every other node a prepared step (and
// decides its thread count), then places every step's output in one arena
// by liveness (device/arena.h): shapes are static. run binds the input
// buffers and calls the steps in graph order; a step computing an output
// writes it into the caller's buffer where it may (Placement), and the rest
// are copied there from the arena at the end.
//
// Chains of elementwise nodes run as one step each (fusion.h), which writes
// only the members read outside the chain; a product that only a chain reads runs in
// that chain's step, the chain on each block of its result (epilogue.h). Any other node's step is its
// primitive's row in the step table (kernels.h), indexed by the primitive's
// id: fast kernels for elementwise (elementwise.cc), reductions (reduce.cc),
// data movement and gather (movement.cc), matmul (matmul.cc), random numbers
// (random.cc); reshape is a view of its input, constant is its value, iota is
// computed once at compile time. The primitives without a row (CpuDevice::fallback_primitives names
// them) run by their reference kernel, single-threaded and copying their
// inputs.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <map>
#include <new>
#include <numeric>
#include <optional>

#include "device/arena.h"
#include "device/cpu/cpu.h"
#include "device/cpu/epilogue.h"
#include "device/cpu/fusion.h"
#include "device/cpu/gemm.h"
#include "device/cpu/kernels.h"
#include "device/cpu/profile.h"
#include "device/interrupt.h"
#include "graph/index_error.h"
#include "graph/passes.h"
#include "graph/primitive.h"
#include "graph/verify.h"

namespace sx::device {
namespace {

using cpu::Run;
using graph::Node;
using graph::NodeId;
using graph::PrimId;

// A node's reference kernel as a step: for primitives without a fast kernel.
cpu::Step reference_step(const Node* node, std::vector<graph::ValueType> types) {
  return [node, types = std::move(types)](const uint8_t* const* in, uint8_t* out) {
    std::vector<graph::Tensor> args;
    for (size_t k = 0; k < types.size(); ++k) {
      size_t bytes = static_cast<size_t>(graph::numel(types[k].shape)) * graph::dtype_size(types[k].dtype);
      args.emplace_back(types[k].dtype, types[k].shape, std::span<const uint8_t>(in[k], bytes));
    }
    std::vector<const graph::Tensor*> pointers;
    for (const graph::Tensor& t : args) pointers.push_back(&t);
    graph::Tensor result = node->prim->kernel(*node, pointers);
    if (!result.bytes().empty()) std::memcpy(out, result.bytes().data(), result.bytes().size());
  };
}

// "matmul of f32[2, 3] and f32[3, 4]": a node by its primitive and operands.
std::string describe(const graph::Graph& graph, const Node& node) {
  std::string operands;
  for (NodeId in : node.inputs) {
    const Node& arg = graph.node(in);
    operands += fmt::format("{}{}{}", operands.empty() ? "" : " and ", graph::dtype_name(arg.dtype),
                            graph::shape_str(arg.shape));
  }
  return fmt::format("{} of {}", node.op_name(), operands.empty() ? "no operands" : operands);
}

class CpuPlan : public Plan {
 public:
  CpuPlan(CpuDevice& device, graph::Graph graph)
      : Plan(device, graph),
        graph_(std::move(graph)),
        cores_(device.cores()),
        kernels_(cpu::kernels_for(device.isa())) {
    const cpu::StepTable& table = cpu::step_table();
    size_t count = graph_.nodes.size();
    pointers_.resize(count, nullptr);
    storage_.resize(count);
    // Which nodes an output needs; which inputs each step reads through a broadcast's,
    // transpose's or reshape's input (its row's `absorbs`): bit k of absorbed[id] for input k,
    // and of absorbed_deep[id] as well when it reads through what lies under that node;
    // of absorbed_cast[id] when it reads an f32 weight through a cast it rounds itself.
    std::vector<bool> needed(count, false);
    std::vector<uint32_t> absorbed(count, 0), absorbed_deep(count, 0), absorbed_cast(count, 0);
    std::vector<int> users(count, 0), absorbing(count, 0);
    for (const graph::NamedNode& out : graph_.outputs) needed[out.node] = true;
    for (NodeId id = static_cast<NodeId>(count); id-- > 0;) {
      if (!needed[id]) continue;
      const Node& node = graph_.nodes[id];
      cpu::Absorbs absorbs = table[node.op()].absorbs;
      for (size_t k = 0; k < node.inputs.size(); ++k) {
        NodeId in = node.inputs[k];
        ++users[in];
        PrimId from = graph_.node(in).op();
        int reads = absorbs && k < 32 &&
                            (from == PrimId::broadcast || from == PrimId::transpose || from == PrimId::reshape ||
                             from == PrimId::cast)
                        ? absorbs(graph_, node, k, kernels_)
                        : 0;
        if (reads & cpu::kThroughCast) absorbed_cast[id] |= 1u << k;
        int depth = reads & ~cpu::kThroughCast;
        if (reads > 0) {
          if (depth > 0) absorbed[id] |= 1u << k;
          if (depth == 2) absorbed_deep[id] |= 1u << k;  // what lies under it is needed only by others
          ++absorbing[in];
          needed[cpu::read_source(graph_, id, k, absorbed[id], absorbed_deep[id], absorbed_cast[id])] = true;
          if (users[in] != absorbing[in]) needed[in] = true;
        } else {
          needed[in] = true;
        }
      }
    }
    double bytes = 0;
    for (NodeId id = 0; id < count; ++id) {
      if (needed[id] && table[graph_.nodes[id].op()].run == Run::once) {
        bytes += static_cast<double>(bytes_of(graph_.nodes[id]));
      }
    }
    check_fits_in_memory("cpu", bytes);
    // Chains of elementwise nodes run fused: a group's step runs where its root is.
    const cpu::Fusion fusion = cpu::find_fusion(graph_, needed, absorbed, absorbed_deep);
    std::vector<NodeId> in_registers;  // the groups whose program runs in registers, by root
    // A node every user absorbs (a broadcast, transpose or reshape, and what lies under
    // one read deep) is not computed (needed stays false unless another user or an
    // output asked for it).
    for (NodeId id = 0; id < count; ++id) {
      if (!needed[id]) continue;
      const Node& node = graph_.nodes[id];
      if (fusion.group_of_product[id] >= 0) continue;  // it runs in its group's step
      if (int g = fusion.group_of[id]; g >= 0) {
        const cpu::FusedGroup& group = fusion.groups[static_cast<size_t>(g)];
        if (group.members.back() != id) continue;
        if (group.product) {
          cpu::EpilogueStep step = cpu::make_epilogue_step(
              step_context(*group.product, absorbed, absorbed_deep, absorbed_cast), group, absorbed, &fusion_scratch_);
          if (step.in_registers) in_registers.push_back(id);
          entries_.push_back({.id = id,
                              .alias = 0,
                              .inputs = std::move(step.inputs),
                              .outputs = std::move(step.outputs),
                              .step = std::move(step.run),
                              .outs = {},
                              .may_overwrite = std::move(step.may_overwrite)});
          continue;
        }
        cpu::FusedStep fused = cpu::make_fused_step(graph_, group, absorbed, kernels_, cores_, &fusion_scratch_);
        if (fused.in_registers) in_registers.push_back(id);
        entries_.push_back({.id = id,
                            .alias = 0,
                            .inputs = group.operands,
                            .outputs = group.written,
                            .step = std::move(fused.run),
                            .outs = {},
                            .may_overwrite = std::move(fused.may_overwrite)});
        continue;
      }
      const cpu::StepRow& row = table[node.op()];
      if (row.run == Run::input) continue;
      if (row.run == Run::constant) {
        pointers_[id] = node.value->bytes().data();
        continue;
      }
      if (row.run == Run::view) {
        entries_.push_back({.id = id,
                            .alias = node.inputs[0],
                            .inputs = {},
                            .outputs = {},
                            .step = {},
                            .outs = {},
                            .may_overwrite = {}});
        continue;
      }
      if (row.run == Run::once) {
        storage_[id] = node.prim->kernel(node, {});
        pointers_[id] = storage_[id].bytes().data();
        continue;
      }
      Entry entry{
          .id = id, .alias = 0, .inputs = node.inputs, .outputs = {id}, .step = {}, .outs = {}, .may_overwrite = {}};
      for (size_t k = 0; k < node.inputs.size(); ++k) {
        entry.inputs[k] = cpu::read_source(graph_, id, k, absorbed[id], absorbed_deep[id], absorbed_cast[id]);
      }
      cpu::Step step;
      if (row.run == Run::step) {
        step = row.make(step_context(id, absorbed, absorbed_deep, absorbed_cast), node);
      } else {
        std::vector<graph::ValueType> types;
        for (NodeId in : node.inputs) types.push_back({graph_.node(in).shape, graph_.node(in).dtype});
        step = reference_step(&node, std::move(types));
      }
      entry.step = [step = std::move(step)](const uint8_t* const* in, uint8_t* const* out) { step(in, out[0]); };
      entries_.push_back(std::move(entry));
    }
    plan_memory(bytes);
    size_t most_inputs = 0;
    for (const Entry& entry : entries_) most_inputs = std::max(most_inputs, entry.inputs.size());
    in_.reserve(most_inputs);
    if (cpu::StepProfile::wanted()) {
      std::vector<std::string> labels;
      for (const Entry& entry : entries_) {
        std::string label = describe(graph_, graph_.node(entry.id));
        if (int g = fusion.group_of[entry.id]; g >= 0) {
          // Its members' primitives, in order: chains of one length and root differ.
          const cpu::FusedGroup& group = fusion.groups[static_cast<size_t>(g)];
          std::string primitives;
          for (NodeId member : group.members)
            primitives += fmt::format("{}{}", primitives.empty() ? "" : " ", graph_.node(member).op_name());
          label = fmt::format("fused {} nodes ({}) ending in {}", group.members.size(), primitives, label);
          if (group.product) label = fmt::format("{} with {}", describe(graph_, graph_.node(*group.product)), label);
          if (std::find(in_registers.begin(), in_registers.end(), entry.id) != in_registers.end())
            label += " in registers";
          // What it moves: the tensors it reads and those it writes.
          label += fmt::format(", reading {} and writing {}", group.operands.size(), group.written.size());
        }
        labels.push_back(std::move(label));
      }
      profile_ = std::make_unique<cpu::StepProfile>(std::move(labels));
    }
  }

  // What making node `id`'s step may read (kernels.h).
  cpu::StepContext step_context(NodeId id, const std::vector<uint32_t>& absorbed,
                                const std::vector<uint32_t>& absorbed_deep,
                                const std::vector<uint32_t>& absorbed_cast) {
    return {.graph = graph_,
            .cores = cores_,
            .kernels = kernels_,
            .absorbed = absorbed[id],
            .absorbed_deep = absorbed_deep[id],
            .absorbed_cast = absorbed_cast[id],
            .gemm_scratch = &gemm_scratch_};
  }

  PlanMemory memory() const override {
    PlanMemory memory = memory_;
    // The products' grow on their first run.
    memory.scratch_bytes = gemm_scratch_.bytes() + fusion_scratch_.size;
    return memory;
  }

  using Plan::run;

  void run(std::span<const Buffer* const> inputs, std::span<Buffer* const> outputs) override {
    check_inputs(graph_, inputs);
    check_outputs(graph_, outputs);
    for (size_t i = 0; i < inputs.size(); ++i)
      pointers_[graph_.inputs[i].node] = host_tensor(*inputs[i]).bytes().data();
    overwrites_from_ = entries_.size();
    for (size_t k = 0; k < direct_outputs_.size(); ++k) {
      bool over_input = false;
      direct_now_[k] = writable_in_place(k, inputs, outputs, over_input);
      if (over_input) overwrites_from_ = std::min(overwrites_from_, direct_outputs_[k].entry);
    }
    place(direct_now_);
    for (size_t k = 0; k < direct_outputs_.size(); ++k) {
      if (!direct_now_[k]) continue;
      const DirectOutput& d = direct_outputs_[k];
      uint8_t* at = host_tensor(*outputs[d.output]).bytes().data();
      entries_[d.entry].outs[d.slot] = at;
      pointers_[entries_[d.entry].outputs[d.slot]] = at;
    }
    execute();
    // An output read from outside the arena (an input, a constant) is staged
    // in the arena first: its source may be another output's buffer.
    const Placement& placement = placed_->second;
    for (size_t k = 0; k < staged_.size(); ++k) {
      const Staged& staged = staged_[k];
      // An empty one has no storage to copy from (memcpy must not see a null pointer).
      if (staged.bytes > 0) {
        std::memcpy(placement.arena.get() + placement.staged[k], pointers_[graph_.outputs[staged.output].node],
                    staged.bytes);
      }
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (written_in_place(i, direct_now_)) continue;
      size_t bytes = outputs[i]->byte_size();
      const uint8_t* from = staged_of_[i] >= 0
                                ? placement.arena.get() + placement.staged[static_cast<size_t>(staged_of_[i])]
                                : pointers_[graph_.outputs[i].node];
      if (bytes > 0) std::memcpy(host_tensor(*outputs[i]).bytes().data(), from, bytes);
    }
  }

 private:
  struct Entry {
    NodeId id = 0;
    NodeId alias = 0;             // a view (no step): the node whose bytes it shares
    std::vector<NodeId> inputs;   // whose bytes the step reads
    std::vector<NodeId> outputs;  // whose bytes it writes: its node's, or a fused group's written members
    cpu::MultiStep step;
    std::vector<uint8_t*> outs;                    // each output's place in the arena
    std::vector<std::vector<bool>> may_overwrite;  // a fused step's (FusedStep); else it overwrites no operand
  };

  // An output whose node is not in the arena (an input, a constant): it is copied to a
  // place in the arena first.
  struct Staged {
    size_t output = 0;
    size_t bytes = 0;
  };

  // Where every step writes. The outputs that a step computes (direct_outputs_) are
  // written into the caller's buffers, so the arena holds none of them and none is
  // copied, unless the buffer overlaps another output's or an input's that steps may
  // still read after it is written (writable_in_place): those are computed in the
  // arena and copied out at the end. A placement is the arena's layout for one choice
  // of the outputs written in place (a training step makes the same choice every
  // run); its arena is made on its first run.
  struct Placement {
    std::vector<std::vector<size_t>> offsets;  // per entry, per output: its offset
    std::vector<size_t> staged;                // per staged output: its offset
    PlanMemory memory;
    size_t size = 0;
    cpu::CacheLineBytes arena;
  };

  // Output `output` is entry `entry`'s output `slot`, or a view of it.
  struct DirectOutput {
    size_t output, entry, slot;
    std::vector<bool> overwrites;  // per graph input: whether it may be written over its bytes
  };

  void execute() {
    if (profile_) profile_->count_run();
    for (size_t step = 0; step < entries_.size(); ++step) {
      Entry& entry = entries_[step];
      if (!entry.step) {
        pointers_[entry.id] = pointers_[entry.alias];
        continue;
      }
      // Once a step writes over an input, the run goes to its end: stopped there, it
      // would leave the caller's buffers half old, half new (interrupt.h).
      if (step == 0 || step < overwrites_from_) check_interrupt();
      in_.clear();
      for (NodeId id : entry.inputs) in_.push_back(pointers_[id]);
      try {
        if (!profile_) {
          entry.step(in_.data(), entry.outs.data());
          continue;
        }
        auto start = std::chrono::steady_clock::now();
        entry.step(in_.data(), entry.outs.data());
        profile_->add(step, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      } catch (const DeviceError&) {
        throw;
      } catch (graph::IndexOutOfRange& e) {
        e.locate(graph_, entry.id);
        throw;
      } catch (const std::exception& e) {
        throw DeviceError(fmt::format("{} failed: {}", describe(graph_, graph_.node(entry.id)), e.what()));
      }
    }
  }

  static size_t bytes_of(const Node& node) {
    return static_cast<size_t>(graph::numel(node.shape)) * graph::dtype_size(node.dtype);
  }

  // Every step's output gets its place in one arena by the steps between its
  // writing and its last reading (a view's readers count for its source;
  // outputs live to the end), and so does a staging place for each output
  // read from outside the arena: once with the outputs written in place out of
  // it, once with them in it (Placement).
  void plan_memory(double constant_bytes) {
    // The outputs a step computes (through views), each its own node's only output.
    std::vector<std::optional<std::pair<size_t, size_t>>> written_by(graph_.nodes.size());  // entry, slot
    std::vector<NodeId> source(graph_.nodes.size());  // the node whose bytes it is
    std::iota(source.begin(), source.end(), NodeId{0});
    for (size_t e = 0; e < entries_.size(); ++e) {
      const Entry& entry = entries_[e];
      if (!entry.step) source[entry.id] = source[entry.alias];
      for (size_t slot = 0; slot < entry.outputs.size(); ++slot) written_by[entry.outputs[slot]] = std::pair{e, slot};
    }
    std::vector<int> claims(graph_.nodes.size(), 0);
    for (const graph::NamedNode& out : graph_.outputs) ++claims[source[out.node]];
    direct_of_.assign(graph_.outputs.size(), -1);
    for (size_t i = 0; i < graph_.outputs.size(); ++i) {
      const NodeId from = source[graph_.outputs[i].node];
      if (!written_by[from] || claims[from] != 1) continue;
      direct_of_[i] = static_cast<int>(direct_outputs_.size());
      direct_outputs_.push_back(
          {.output = i, .entry = written_by[from]->first, .slot = written_by[from]->second, .overwrites = {}});
    }
    find_overwrites(source, claims);
    direct_now_.assign(direct_outputs_.size(), false);
    const Placement& all_in_arena = placements_.emplace(direct_now_, placement(direct_now_)).first->second;
    check_fits_in_memory(
        "cpu", constant_bytes + static_cast<double>(all_in_arena.size + gemm_scratch_.bytes() + fusion_scratch_.size));
    memory_ = all_in_arena.memory;
    if (!direct_outputs_.empty()) {
      std::vector<bool> all_direct(direct_outputs_.size(), true);
      memory_ = placements_.emplace(all_direct, placement(all_direct)).first->second.memory;
    }
  }

  // Which inputs each direct output may be written over, when the caller passes one
  // buffer for both (donation): those that no step reads after the output's step, nor
  // that step itself but as its FusedStep allows, and that no output is (outputs read
  // from inputs are copied out after the steps).
  void find_overwrites(const std::vector<NodeId>& source, const std::vector<int>& claims) {
    std::vector<int64_t> last_reader(graph_.nodes.size(), -1);  // per node: the last entry reading its bytes
    for (size_t e = 0; e < entries_.size(); ++e) {
      for (NodeId in : entries_[e].inputs) last_reader[source[in]] = static_cast<int64_t>(e);
    }
    for (DirectOutput& d : direct_outputs_) {
      d.overwrites.assign(graph_.inputs.size(), false);
      const Entry& writer = entries_[d.entry];
      for (size_t i = 0; i < graph_.inputs.size(); ++i) {
        const NodeId input = graph_.inputs[i].node;
        if (claims[input] > 0) continue;
        bool safe = last_reader[input] < static_cast<int64_t>(d.entry);
        if (last_reader[input] == static_cast<int64_t>(d.entry) && !writer.may_overwrite.empty()) {
          safe = true;
          for (size_t k = 0; k < writer.inputs.size(); ++k) {
            if (source[writer.inputs[k]] == input) safe = safe && writer.may_overwrite[d.slot][k];
          }
        }
        d.overwrites[i] = safe;
      }
    }
  }

  // The arena's layout with direct output k in it unless direct[k].
  Placement placement(const std::vector<bool>& direct) {
    std::vector<int64_t> buffer(graph_.nodes.size(), -1);  // each node's buffer, -1 when not in the arena
    std::vector<bool> in_place(graph_.nodes.size(), false);
    for (size_t k = 0; k < direct_outputs_.size(); ++k) {
      const DirectOutput& d = direct_outputs_[k];
      if (direct[k]) in_place[entries_[d.entry].outputs[d.slot]] = true;
    }
    std::vector<BufferLife> lives;
    auto read_at = [&](NodeId id, int64_t step) {
      if (buffer[id] >= 0) lives[static_cast<size_t>(buffer[id])].last = std::max(lives[buffer[id]].last, step);
    };
    for (size_t e = 0; e < entries_.size(); ++e) {
      const Entry& entry = entries_[e];
      auto step = static_cast<int64_t>(e);
      if (!entry.step) {
        buffer[entry.id] = buffer[entry.alias];
        read_at(entry.alias, step);
        continue;
      }
      for (NodeId in : entry.inputs) read_at(in, step);
      for (NodeId out : entry.outputs) {
        if (in_place[out]) continue;
        buffer[out] = static_cast<int64_t>(lives.size());
        lives.push_back({.bytes = bytes_of(graph_.nodes[out]), .first = step, .last = step});
      }
    }
    auto end = static_cast<int64_t>(entries_.size());
    std::vector<int64_t> staging;  // each staged output's buffer
    staged_.clear();
    staged_of_.assign(graph_.outputs.size(), -1);
    for (size_t i = 0; i < graph_.outputs.size(); ++i) {
      NodeId node = graph_.outputs[i].node;
      read_at(node, end);
      if (buffer[node] >= 0 || written_in_place(i, direct)) continue;
      staged_of_[i] = static_cast<int64_t>(staged_.size());
      staged_.push_back({.output = i, .bytes = bytes_of(graph_.node(node))});
      staging.push_back(static_cast<int64_t>(lives.size()));
      lives.push_back({.bytes = bytes_of(graph_.node(node)), .first = end, .last = end});
    }
    ArenaPlan plan = plan_arena(lives);
    Placement placement;
    for (const Entry& entry : entries_) {
      std::vector<size_t>& offsets = placement.offsets.emplace_back();
      if (!entry.step) continue;
      for (NodeId out : entry.outputs) {
        offsets.push_back(buffer[out] >= 0 ? plan.offsets[static_cast<size_t>(buffer[out])] : 0);
      }
    }
    for (int64_t at : staging) placement.staged.push_back(plan.offsets[static_cast<size_t>(at)]);
    placement.size = plan.size;
    placement.memory = {.arena_bytes = plan.size, .live_peak_bytes = plan.live_peak};
    return placement;
  }

  bool written_in_place(size_t output, const std::vector<bool>& direct) const {
    return direct_of_[output] >= 0 && direct[static_cast<size_t>(direct_of_[output])];
  }

  // Points every step at the places of the placement for `direct`, making it and its
  // arena on first use, filled with 0xff bytes so that a kernel relying on zeroed
  // memory fails its tests. A caller that keeps changing which outputs overlap its
  // inputs keeps only the last few placements.
  void place(const std::vector<bool>& direct) {
    if (placed_ && placed_->first == direct) return;
    auto found = placements_.find(direct);
    if (found == placements_.end()) {
      if (placements_.size() >= kPlacementsKept) placements_.clear();
      found = placements_.emplace(direct, placement(direct)).first;
    }
    placed_ = &*found;
    Placement& placement = found->second;
    if (!placement.arena) {
      placement.arena = cpu::cache_line_bytes(placement.size);
      std::memset(placement.arena.get(), 0xff, placement.size);
    }
    for (size_t e = 0; e < entries_.size(); ++e) {
      Entry& entry = entries_[e];
      entry.outs.resize(entry.outputs.size());
      for (size_t slot = 0; slot < entry.outputs.size(); ++slot) {
        entry.outs[slot] = placement.arena.get() + placement.offsets[e][slot];
        pointers_[entry.outputs[slot]] = entry.outs[slot];
      }
    }
    memory_ = placement.memory;
  }

  // Whether direct output k may be written into its buffer during the steps: the
  // buffer shares no byte with another output's, and with an input's only when it is
  // that input's very buffer and the steps may write over it (find_overwrites), which
  // `over_input` then says.
  bool writable_in_place(size_t k, std::span<const Buffer* const> inputs, std::span<Buffer* const> outputs,
                         bool& over_input) const {
    auto range = [](const Buffer& buffer) {
      const uint8_t* at = host_tensor(buffer).bytes().data();
      return std::pair{at, at + buffer.byte_size()};
    };
    auto meet = [](std::pair<const uint8_t*, const uint8_t*> x, std::pair<const uint8_t*, const uint8_t*> y) {
      return x.first < y.second && y.first < x.second;
    };
    const DirectOutput& d = direct_outputs_[k];
    const auto mine = range(*outputs[d.output]);
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!meet(mine, range(*inputs[i]))) continue;
      if (mine != range(*inputs[i]) || !d.overwrites[i]) return false;
      over_input = true;
    }
    for (size_t j = 0; j < outputs.size(); ++j) {
      if (j != d.output && meet(mine, range(*outputs[j]))) return false;
    }
    return true;
  }

  graph::Graph graph_;
  int cores_;
  const cpu::KernelSet& kernels_;
  std::vector<graph::Tensor> storage_;    // values computed at compile time (iota)
  std::vector<const uint8_t*> pointers_;  // each node's bytes during a run
  cpu::GemmScratch gemm_scratch_;         // the packing buffers of every matrix product
  cpu::SharedScratch fusion_scratch_;     // the tiles of every fused step
  std::vector<Entry> entries_;            // in graph order
  std::vector<const uint8_t*> in_;        // a step's input pointers (kept: a run allocates nothing)
  std::vector<Staged> staged_;
  std::vector<int64_t> staged_of_;  // per output: its index in staged_, or -1
  static constexpr size_t kPlacementsKept = 4;
  std::vector<DirectOutput> direct_outputs_;  // those a step computes (Placement)
  std::vector<int> direct_of_;                // per output: its index in direct_outputs_, or -1
  std::vector<bool> direct_now_;              // per direct output: written in place this run
  size_t overwrites_from_ = 0;                // this run's first step writing over an input
  std::map<std::vector<bool>, Placement> placements_;
  const std::pair<const std::vector<bool>, Placement>* placed_ = nullptr;
  PlanMemory memory_;
  std::unique_ptr<cpu::StepProfile> profile_;  // SEXPGPU_CPU_PROFILE's, else null
};

}  // namespace

CpuDevice::CpuDevice(const DeviceOptions& options) : cores_(options.cpu_cores), isa_(cpu::choose_isa(options.cpu_isa)) {
  if (cores_ < 0) throw DeviceError(fmt::format("cpu: --cpu-cores must be 0 (all) or more, got {}", cores_));
  if (cores_ == 0) cores_ = cpu::available_cores();
}

std::unique_ptr<Plan> CpuDevice::compile(const graph::Graph& graph) {
  graph::verify(graph);
  // No composite has a kernel here yet: each runs as its decomposition. The compile path
  // (runtime/compile.h) has expanded them before optimizing; a graph given here directly
  // has them expanded now.
  return std::make_unique<CpuPlan>(*this, graph::merge_batch_sums(graph::expand_composites(graph)));
}

bool CpuDevice::supports(graph::PrimId primitive) const {
  return !graph::primitive(primitive).composite() && cpu::step_table()[primitive].run != Run::reference;
}

namespace cpu {

const StepTable& step_table() {
  static const StepTable table = [] {
    StepTable t;
    t[PrimId::input].run = Run::input;
    t[PrimId::constant].run = Run::constant;
    t[PrimId::reshape].run = Run::view;
    t[PrimId::stop_gradient].run = Run::view;
    t[PrimId::iota].run = Run::once;
    add_elementwise_steps(t);
    add_reduce_steps(t);
    add_movement_steps(t);
    add_matmul_steps(t);
    add_random_steps(t);
    return t;
  }();
  return table;
}

}  // namespace cpu

}  // namespace sx::device
