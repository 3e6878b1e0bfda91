// The cpu device's lowered form: what a plan runs, decided before anything runs. lower()
// is a pure function of a graph, the instruction set and the thread count: it drops the
// nodes no output needs, decides which broadcasts, transposes and reshapes a step reads
// through (absorbs), groups chains of elementwise nodes (fusion.h) and the products they
// alone read (epilogue.h; a bf16 product's lone cast to f32 written by the product
// itself, ScheduledStep's widened), lets a composite's kernel write the cast to bf16
// that reads it (ScheduledStep's rounded_cast), lets an optimizer update's step write
// each of its values where the slice taking it (its `part`) lies, that slice having no
// step, and scale its gradient itself (Schedule's absorbed_scale), orders the steps, and
// places every step's output in one arena by liveness (device/arena.h). CpuPlan
// (plan.cc) only makes each step's kernel and runs
// them; print_schedule (schedule_text.cc) shows it as `sexpgpu check --schedule` does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "device/cpu/fusion/fusion.h"
#include "device/cpu/isa.h"
#include "device/device.h"
#include "graph/graph.h"

namespace sx::device {
class CpuDevice;
}  // namespace sx::device

namespace sx::device::cpu {

// How a step computes its outputs.
enum class StepKind : uint8_t {
  kernel,     // its primitive's row in the step table (kernels.h)
  reference,  // its primitive's reference kernel: a primitive without a row
  fused,      // a fused group (fusion.h), at its last member
  product,    // a product with the group that alone reads it as its epilogue (epilogue.h)
  view,       // the bytes of `alias` (a reshape): no work
};

struct ScheduledStep {
  StepKind kind = StepKind::kernel;
  graph::NodeId id = 0;               // its node: a group's last member
  graph::NodeId alias = 0;            // a view: the node whose bytes it shares
  int group = -1;                     // fused and product: its group in Schedule::fusion
  std::vector<graph::NodeId> inputs;  // whose bytes it reads
  std::vector<graph::NodeId>
      outputs;  // whose bytes it writes: its node's, a group's written members, or an update's value slices
  // kernel, a composite's of f32: the cast to bf16 of its output that it writes as well
  // (its last output; its only one where nothing else reads its own), rounding each row
  // as it computes it; that cast has no step.
  std::optional<graph::NodeId> rounded_cast;
  // Per output, per input: whether the output may be written over the input's bytes
  // (FusedFacts); empty: over none.
  std::vector<std::vector<bool>> may_overwrite;
  std::vector<size_t> operand_at;  // product: EpilogueLayout's
  size_t result = 0;               // product: EpilogueLayout's
  bool widened = false;            // product: EpilogueLayout's (its group's program does not run)
  bool operator==(const ScheduledStep& other) const = default;
};

// An output that a step computes (through views): output `output` is step `step`'s
// output `slot`. It may be written into the caller's buffer rather than the arena.
struct DirectOutput {
  size_t output = 0, step = 0, slot = 0;
  std::vector<bool> overwrites;  // per graph input: whether it may be written over its bytes
  bool operator==(const DirectOutput& other) const = default;
};

// An output read from outside the arena (an input, a constant): staged in the arena
// after the steps, since its source may be another output's buffer.
struct StagedOutput {
  size_t output = 0;
  size_t bytes = 0;
  size_t offset = 0;
  bool operator==(const StagedOutput& other) const = default;
};

// The arena's layout for one choice of the direct outputs written in place.
struct ArenaLayout {
  std::vector<std::vector<size_t>> offsets;  // per step, per output: its offset
  std::vector<StagedOutput> staged;
  size_t size = 0;
  PlanMemory memory;  // its arena and live peak; no scratch
  bool operator==(const ArenaLayout& other) const;
};

struct Schedule {
  graph::Graph graph;  // the graph lowered: the node ids below are its
  Isa isa = Isa::scalar;
  int cores = 1;
  // Per node: bit k, its step reads input k through that broadcast, transpose or
  // reshape (StepContext's `absorbed`), and through what lies under it (`absorbed_deep`);
  // reads an f32 weight through a cast to bf16 that it rounds itself (`absorbed_cast`).
  std::vector<uint32_t> absorbed, absorbed_deep, absorbed_cast;
  // Per node, an optimizer update's: bit k, its step computes its input k, a multiply of
  // an f32 tensor by a broadcast f32 scalar that nothing else reads (the clipped
  // gradient), itself: in `graph` its input k is that tensor, and the scalar its last
  // input after its own; the multiply has no step (StepContext's `absorbed_scale`).
  std::vector<uint32_t> absorbed_scale;
  Fusion fusion;
  std::vector<ScheduledStep> steps;          // in graph order
  std::vector<graph::NodeId> computed_once;  // computed at compile time (iota)
  std::vector<graph::NodeId> constants;      // read where the node holds its value
  double compile_time_bytes = 0;             // the bytes of computed_once's values
  std::vector<DirectOutput> direct_outputs;
  std::vector<int> direct_of;  // per graph output: its index in direct_outputs, or -1
  ArenaLayout in_arena;        // every output computed in the arena
  ArenaLayout in_place;        // every direct output in the caller's buffer (a training step's)

  // Equal lowerings of one graph (the graphs themselves are not compared).
  bool same_lowering(const Schedule& other) const;
};

// The schedule of `graph` (verified, its composites expanded) on `cores` threads with
// the kernels of `isa`. Throws graph::MemoryLimitError where its values computed at
// compile time do not fit.
Schedule lower(graph::Graph graph, Isa isa, int cores);

// The layout with direct output k written in place where direct[k], else in the arena.
ArenaLayout lay_out_arena(const Schedule& schedule, const std::vector<bool>& direct);

// "matmul of f32[2, 3] and f32[3, 4]": a node by its primitive and operands.
std::string describe(const graph::Graph& graph, const graph::Node& node);

// What step `step` is, in one line: its node described, or its group's members (the
// profile's label, profile.h).
std::string step_label(const Schedule& schedule, size_t step);

// One line per step (its kind, label, outputs with their arena offsets and sizes), then
// the arena's total, for the layout that writes the outputs in place.
std::string print_schedule(const Schedule& schedule);

// One line per composite node of `given` (a graph with its composites kept): the kernel
// `device` runs it by, or `fallback: decomposition` with the nodes it becomes (a form
// its kernel does not take, a softmax over columns, falls back too).
std::string print_composites(const graph::Graph& given, const CpuDevice& device);

}  // namespace sx::device::cpu
