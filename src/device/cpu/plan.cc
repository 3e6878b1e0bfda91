// The cpu device's compile and run. compile lowers the graph to its schedule
// (schedule.h: which nodes run, as which steps, fused how, and where each step's
// output lies in the arena), then makes each step's kernel: a fused group's
// (fusion.h), a product with its epilogue (epilogue.h), or its primitive's row in
// the step table (kernels.h), indexed by the primitive's id: fast kernels for
// elementwise (elementwise.cc), reductions (reduce.cc), data movement and gather
// (movement.cc), matmul (matmul.cc), random numbers (random.cc), the forward
// composites (composite.cc, where runs_composite says so, writing the cast to bf16
// that reads one where the schedule says so), the optimizer updates (update.cc, each
// writing its values where the slices taking them lie); reshape is a view
// of its input, constant is its value, iota is computed once at compile time. The
// primitives without a row (CpuDevice::supports says which) run by their reference
// kernel, single-threaded and copying their inputs. run binds the input buffers and
// calls the steps in order; a step computing an output writes it into the caller's
// buffer where it may (Placement), and the rest are copied there from the arena at
// the end.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>

#include "device/cpu/cpu.h"
#include "device/cpu/fusion/fusion.h"
#include "device/cpu/kernels.h"
#include "device/cpu/products/epilogue.h"
#include "device/cpu/products/gemm.h"
#include "device/cpu/profile.h"
#include "device/cpu/schedule.h"
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

class CpuPlan : public Plan {
 public:
  CpuPlan(CpuDevice& device, cpu::Schedule schedule)
      : Plan(device, schedule.graph),
        schedule_(std::move(schedule)),
        graph_(schedule_.graph),
        kernels_(cpu::kernels_for(schedule_.isa)) {
    const size_t count = graph_.nodes.size();
    pointers_.resize(count, nullptr);
    storage_.resize(count);
    for (NodeId id : schedule_.constants) pointers_[id] = graph_.nodes[id].value->bytes().data();
    for (NodeId id : schedule_.computed_once) {
      storage_[id] = graph_.nodes[id].prim->kernel(graph_.nodes[id], {});
      pointers_[id] = storage_[id].bytes().data();
    }
    size_t most_inputs = 0;
    for (const cpu::ScheduledStep& step : schedule_.steps) {
      entries_.push_back({.step = make_step(step), .outs = {}});
      most_inputs = std::max(most_inputs, step.inputs.size());
    }
    in_.reserve(most_inputs);
    check_fits_in_memory(
        "cpu", schedule_.compile_time_bytes +
                   static_cast<double>(schedule_.in_arena.size + gemm_scratch_.bytes() + fusion_scratch_.size));
    const size_t direct = schedule_.direct_outputs.size();
    direct_now_.assign(direct, false);
    placements_.emplace(direct_now_, Placement(schedule_, schedule_.in_arena));
    if (direct > 0) placements_.emplace(std::vector<bool>(direct, true), Placement(schedule_, schedule_.in_place));
    memory_ = schedule_.in_place.memory;
    if (cpu::StepProfile::wanted()) {
      std::vector<std::string> labels;
      for (size_t step = 0; step < schedule_.steps.size(); ++step) labels.push_back(cpu::step_label(schedule_, step));
      profile_ = std::make_unique<cpu::StepProfile>(std::move(labels));
    }
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
    for (size_t k = 0; k < schedule_.direct_outputs.size(); ++k) {
      bool over_input = false;
      direct_now_[k] = writable_in_place(k, inputs, outputs, over_input);
      if (over_input) overwrites_from_ = std::min(overwrites_from_, schedule_.direct_outputs[k].step);
    }
    place(direct_now_);
    for (size_t k = 0; k < schedule_.direct_outputs.size(); ++k) {
      if (!direct_now_[k]) continue;
      const cpu::DirectOutput& d = schedule_.direct_outputs[k];
      uint8_t* at = host_tensor(*outputs[d.output]).bytes().data();
      entries_[d.step].outs[d.slot] = at;
      pointers_[schedule_.steps[d.step].outputs[d.slot]] = at;
    }
    execute();
    // An output read from outside the arena (an input, a constant) is staged
    // in the arena first: its source may be another output's buffer.
    const Placement& placement = placed_->second;
    for (const cpu::StagedOutput& staged : placement.layout.staged) {
      // An empty one has no storage to copy from (memcpy must not see a null pointer).
      if (staged.bytes > 0) {
        std::memcpy(placement.arena.get() + staged.offset, pointers_[graph_.outputs[staged.output].node], staged.bytes);
      }
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (written_in_place(i, direct_now_)) continue;
      size_t bytes = outputs[i]->byte_size();
      const int64_t staged = placement.staged_of[i];
      const uint8_t* from = staged >= 0
                                ? placement.arena.get() + placement.layout.staged[static_cast<size_t>(staged)].offset
                                : pointers_[graph_.outputs[i].node];
      if (bytes > 0) std::memcpy(host_tensor(*outputs[i]).bytes().data(), from, bytes);
    }
  }

 private:
  // A scheduled step made to run.
  struct Entry {
    cpu::MultiStep step;         // null for a view
    std::vector<uint8_t*> outs;  // each output's place in the arena
  };

  // Where every step writes. The outputs that a step computes (the schedule's direct
  // outputs) are written into the caller's buffers, so the arena holds none of them and
  // none is copied, unless the buffer overlaps another output's or an input's that steps
  // may still read after it is written (writable_in_place): those are computed in the
  // arena and copied out at the end. A placement is the arena's layout for one choice
  // of the outputs written in place (a training step makes the same choice every
  // run); its arena is made on its first run.
  struct Placement {
    Placement(const cpu::Schedule& schedule, cpu::ArenaLayout laid_out)
        : layout(std::move(laid_out)), staged_of(schedule.graph.outputs.size(), -1) {
      for (size_t k = 0; k < layout.staged.size(); ++k) staged_of[layout.staged[k].output] = static_cast<int64_t>(k);
    }
    cpu::ArenaLayout layout;
    std::vector<int64_t> staged_of;  // per output: its index in layout.staged, or -1
    cpu::CacheLineBytes arena;
  };

  // What making node `id`'s step may read (kernels.h).
  cpu::StepContext step_context(NodeId id) {
    return {.graph = graph_,
            .cores = schedule_.cores,
            .kernels = kernels_,
            .absorbed = schedule_.absorbed[id],
            .absorbed_deep = schedule_.absorbed_deep[id],
            .absorbed_cast = schedule_.absorbed_cast[id],
            .absorbed_scale = schedule_.absorbed_scale[id],
            .gemm_scratch = &gemm_scratch_,
            .scratch = &fusion_scratch_};
  }

  cpu::MultiStep make_step(const cpu::ScheduledStep& scheduled) {
    const Node& node = graph_.node(scheduled.id);
    cpu::Step step;
    switch (scheduled.kind) {
      case cpu::StepKind::view: return {};
      case cpu::StepKind::fused:
        return cpu::make_fused_step(graph_, group_of(scheduled), schedule_.absorbed, kernels_, schedule_.cores,
                                    &fusion_scratch_)
            .run;
      case cpu::StepKind::product: {
        const cpu::FusedGroup& group = group_of(scheduled);
        return cpu::make_epilogue_step(step_context(*group.product), group, schedule_.absorbed, scheduled.operand_at,
                                       scheduled.result, scheduled.widened, &fusion_scratch_);
      }
      case cpu::StepKind::kernel:
        if (const cpu::MakeMultiStep make = cpu::step_table()[node.op()].make_multi) {
          return make(step_context(scheduled.id), node, scheduled.outputs);
        }
        if (scheduled.rounded_cast) {
          return cpu::make_composite_rounding_step(step_context(scheduled.id), node, scheduled.outputs.size() == 2);
        }
        step = cpu::step_table()[node.op()].make(step_context(scheduled.id), node);
        break;
      case cpu::StepKind::reference: {
        std::vector<graph::ValueType> types;
        for (NodeId in : node.inputs) types.push_back({graph_.node(in).shape, graph_.node(in).dtype});
        step = reference_step(&node, std::move(types));
        break;
      }
    }
    return [step = std::move(step)](const uint8_t* const* in, uint8_t* const* out) { step(in, out[0]); };
  }

  const cpu::FusedGroup& group_of(const cpu::ScheduledStep& scheduled) const {
    return schedule_.fusion.groups[static_cast<size_t>(scheduled.group)];
  }

  void execute() {
    if (profile_) profile_->count_run();
    for (size_t step = 0; step < entries_.size(); ++step) {
      Entry& entry = entries_[step];
      const cpu::ScheduledStep& scheduled = schedule_.steps[step];
      if (!entry.step) {
        pointers_[scheduled.id] = pointers_[scheduled.alias];
        continue;
      }
      // Once a step writes over an input, the run goes to its end: stopped there, it
      // would leave the caller's buffers half old, half new (interrupt.h).
      if (step == 0 || step < overwrites_from_) check_interrupt();
      in_.clear();
      for (NodeId id : scheduled.inputs) in_.push_back(pointers_[id]);
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
        e.locate(graph_, scheduled.id);
        throw;
      } catch (const std::exception& e) {
        throw DeviceError(fmt::format("{} failed: {}", cpu::describe(graph_, graph_.node(scheduled.id)), e.what()));
      }
    }
  }

  bool written_in_place(size_t output, const std::vector<bool>& direct) const {
    const int k = schedule_.direct_of[output];
    return k >= 0 && direct[static_cast<size_t>(k)];
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
      found = placements_.emplace(direct, Placement(schedule_, cpu::lay_out_arena(schedule_, direct))).first;
    }
    placed_ = &*found;
    Placement& placement = found->second;
    if (!placement.arena) {
      placement.arena = cpu::cache_line_bytes(placement.layout.size);
      std::memset(placement.arena.get(), 0xff, placement.layout.size);
    }
    for (size_t e = 0; e < entries_.size(); ++e) {
      Entry& entry = entries_[e];
      const std::vector<NodeId>& written = schedule_.steps[e].outputs;
      entry.outs.resize(written.size());
      for (size_t slot = 0; slot < written.size(); ++slot) {
        entry.outs[slot] = placement.arena.get() + placement.layout.offsets[e][slot];
        pointers_[written[slot]] = entry.outs[slot];
      }
    }
    memory_ = placement.layout.memory;
  }

  // Whether direct output k may be written into its buffer during the steps: the
  // buffer shares no byte with another output's, and with an input's only when it is
  // that input's very buffer and the steps may write over it (DirectOutput's
  // `overwrites`), which `over_input` then says.
  bool writable_in_place(size_t k, std::span<const Buffer* const> inputs, std::span<Buffer* const> outputs,
                         bool& over_input) const {
    auto range = [](const Buffer& buffer) {
      const uint8_t* at = host_tensor(buffer).bytes().data();
      return std::pair{at, at + buffer.byte_size()};
    };
    auto meet = [](std::pair<const uint8_t*, const uint8_t*> x, std::pair<const uint8_t*, const uint8_t*> y) {
      return x.first < y.second && y.first < x.second;
    };
    const cpu::DirectOutput& d = schedule_.direct_outputs[k];
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

  const cpu::Schedule schedule_;
  const graph::Graph& graph_;  // the schedule's
  const cpu::KernelSet& kernels_;
  std::vector<graph::Tensor> storage_;    // values computed at compile time (iota)
  std::vector<const uint8_t*> pointers_;  // each node's bytes during a run
  cpu::GemmScratch gemm_scratch_;         // the packing buffers of every matrix product
  cpu::SharedScratch fusion_scratch_;     // the tiles of every fused step; rows of a composite writing its cast alone
  std::vector<Entry> entries_;            // per scheduled step
  std::vector<const uint8_t*> in_;        // a step's input pointers (kept: a run allocates nothing)
  static constexpr size_t kPlacementsKept = 4;
  std::vector<bool> direct_now_;  // per direct output: written in place this run
  size_t overwrites_from_ = 0;    // this run's first step writing over an input
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

cpu::Schedule CpuDevice::schedule(const graph::Graph& graph) const {
  graph::verify(graph);
  // A composite without a kernel for its form (cpu::runs_composite) runs as its
  // decomposition, expanded now.
  const graph::Graph expanded = graph::expand_composites(graph, cpu::runs_composite);
  return cpu::lower(graph::merge_batch_sums(expanded), isa_, cores_);
}

std::unique_ptr<Plan> CpuDevice::compile(const graph::Graph& graph) {
  return std::make_unique<CpuPlan>(*this, schedule(graph));
}

bool CpuDevice::supports(graph::PrimId primitive) const { return cpu::step_table()[primitive].run != Run::reference; }

bool CpuDevice::runs(const graph::Graph& graph, const graph::Node& node) const {
  return supports(node.op()) && (!node.prim->composite() || cpu::runs_composite(graph, node));
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
    add_composite_steps(t);
    add_update_steps(t);
    return t;
  }();
  return table;
}

}  // namespace cpu

}  // namespace sx::device
