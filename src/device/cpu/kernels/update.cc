// Kernels of the optimizer updates (graph/prims/update.cc): adamw and sgd of f32 in every
// form, each parameter's values computed in one pass over its elements (update_lanes.h:
// the instruction set's lanes over whole vectors, the scalar instance over the rest, the
// same bits), threads taking equal contiguous chunks as the elementwise kernels do. A
// `part` of an update runs as its decomposition, a slice of the stacked values (reshaped,
// a view), and the step writes each value where the schedule puts it: into the buffer of
// the slice that takes it (a training step's output, written in place), or into the
// stacked values where something reads the update whole (its slices then copy). Where the
// gradient is a multiply by a scalar that nothing else reads (the clipping coefficient),
// the step reads the multiply's operands and computes the product itself: the lowered
// graph gives it the tensor as its gradient and the scalar as its last input.
#include <algorithm>
#include <cstring>
#include <optional>

#include "device/cpu/kernels.h"
#include "device/cpu/kernels/vector_math.h"
#include "device/cpu/products/gemm.h"
#include "graph/prims/lane_math.h"

namespace sx::device::cpu {
namespace {

using graph::Node;
using graph::NodeId;
using graph::PrimId;

// The formulas over one lane: the scalar instruction set's kernels, and a range's last
// elements short of a whole vector on the others.
const UpdateLanes& scalar_lanes() {
  static const UpdateLanes lanes = make_update_lanes<graph::lane_math::ScalarLanes>();
  return lanes;
}

// Work per element in adds: adamw's 15 operations, sgd's few.
constexpr int64_t kAdamwWork = 15, kSgdWork = 4;

// AdamW's update of a large parameter reads four cold streams, which the processor's
// prefetchers do not fetch far enough ahead of so slow a reader: as a fused program does
// (fusion.cc), the step fetches each kAhead tiles ahead into the second-level cache.
constexpr int64_t kTile = 512;
constexpr int64_t kAhead = 8;
constexpr int64_t kPrefetchElements = 1 << 15;

struct Form {
  bool adamw = true, decays = false, momentum = false, scaled = false;
  int values() const { return adamw ? 3 : (momentum ? 2 : 1); }
  // Where the momentum buffer, sgd's, lies among the node's inputs.
  size_t buffer_at() const { return decays ? 4 : 3; }
};

Form form_of(const Node& node, bool scaled) {
  const bool adamw = node.op() == PrimId::adamw;
  return {.adamw = adamw,
          .decays = node.attrs.get_int("weight_decay") != 0,
          .momentum = !adamw && node.attrs.get_int("momentum") != 0,
          .scaled = scaled};
}

UpdateKernel kernel_of(const UpdateLanes& lanes, const Form& f) {
  if (f.adamw) return lanes.adamw[f.decays][f.scaled];
  return lanes.sgd[f.decays][f.momentum][f.scaled];
}

constexpr int kNone = -1;

// One update's step: where each operand and value lies, and the kernels that compute it.
struct UpdateStep {
  int64_t n = 0;
  int threads = 1;
  bool prefetch = false;
  int width = 1;
  UpdateKernel whole = nullptr, rest = nullptr;        // over whole vectors, and over the rest
  std::array<int, 3> value_slot{kNone, kNone, kNone};  // per value: its output, or none
  std::array<int64_t, 3> value_offset{};               // and its place in it, in floats
  std::array<int, 2> state_at{kNone, kNone};
  std::array<int, 8> scalar_at{kNone, kNone, kNone, kNone, kNone, kNone, kNone, kNone};
  int first_at = kNone, scale_at = kNone;

  void operator()(const uint8_t* const* in, uint8_t* const* out) const {
    UpdateArgs a;
    a.param = reinterpret_cast<const float*>(in[0]);
    a.grad = reinterpret_cast<const float*>(in[1]);
    for (size_t s = 0; s < state_at.size(); ++s) {
      if (state_at[s] != kNone) a.state[s] = reinterpret_cast<const float*>(in[state_at[s]]);
    }
    for (size_t v = 0; v < value_slot.size(); ++v) {
      if (value_slot[v] != kNone) a.values[v] = reinterpret_cast<float*>(out[value_slot[v]]) + value_offset[v];
    }
    for (size_t k = 0; k < scalar_at.size(); ++k) {
      if (scalar_at[k] != kNone) std::memcpy(&a.scalars[k], in[scalar_at[k]], sizeof(float));
    }
    if (scale_at != kNone) std::memcpy(&a.grad_scale, in[scale_at], sizeof(float));
    if (first_at != kNone) a.first = *in[first_at] != 0;
    parallel_for(n, threads, [&](int64_t begin, int64_t end) { run(a, begin, end); });
  }

  void run(const UpdateArgs& a, int64_t begin, int64_t end) const {
    for (int64_t tile = begin; tile < end; tile += kTile) {
      const int64_t stop = std::min(end, tile + kTile);
      if (prefetch) fetch_ahead(a, tile, stop);
      const int64_t vectors = (stop - tile) - (stop - tile) % width;
      if (vectors > 0) whole(a, tile, vectors);
      if (stop - tile > vectors) rest(a, tile + vectors, stop - tile - vectors);
    }
  }

  void fetch_ahead(const UpdateArgs& a, int64_t tile, int64_t stop) const {
    const int64_t from = tile + kAhead * kTile, to = std::min(n, stop + kAhead * kTile);
    for (const float* stream : {a.param, a.grad, a.state[0], a.state[1]}) {
      if (stream == nullptr) continue;
      for (int64_t at = from; at < to; at += static_cast<int64_t>(kCacheLine / sizeof(float))) {
        __builtin_prefetch(stream + at, 0, 2);
      }
    }
  }
};

// Where each of the update's values goes: into output j where it is the slice that takes
// it (value_slice), or into its place in the stacked values where output j is the update.
void place_values(const StepContext& c, const Node& node, std::span<const NodeId> outputs, const Form& form,
                  UpdateStep& step) {
  for (size_t j = 0; j < outputs.size(); ++j) {
    const Node& written = c.graph.node(outputs[j]);
    if (&written == &node) {
      for (int v = 0; v < form.values(); ++v) {
        step.value_slot[static_cast<size_t>(v)] = static_cast<int>(j);
        step.value_offset[static_cast<size_t>(v)] = v * step.n;
      }
      continue;
    }
    step.value_slot[static_cast<size_t>(*value_slice(c.graph, written))] = static_cast<int>(j);
  }
}

MultiStep make_update_step(const StepContext& c, const Node& node, std::span<const NodeId> outputs) {
  const Form form = form_of(node, (c.absorbed_scale >> 1 & 1u) != 0);
  UpdateStep step;
  step.n = graph::numel(c.graph.node(node.inputs[0]).shape);
  step.threads = threads_for(step.n * (form.adamw ? kAdamwWork : kSgdWork), c.cores);
  step.prefetch = form.adamw && step.n > kPrefetchElements;
  const MathKernels* math = math_kernels_for(c.kernels.isa);
  step.rest = kernel_of(scalar_lanes(), form);
  step.whole = math != nullptr ? kernel_of(math->update, form) : step.rest;
  step.width = math != nullptr ? math->width : 1;
  place_values(c, node, outputs, form, step);
  // The node's own operands; where it scales its gradient, the scale after them.
  const size_t operands = node.inputs.size() - (form.scaled ? 1 : 0);
  if (form.adamw) {
    step.state_at = {2, 3};
    for (size_t k = 0; k + 4 < operands; ++k) step.scalar_at[k] = static_cast<int>(k + 4);
  } else {
    step.scalar_at[0] = 2;
    if (form.decays) step.scalar_at[1] = 3;
    if (form.momentum) {
      const auto at = static_cast<int>(form.buffer_at());
      step.state_at[0] = at;
      step.scalar_at[2] = at + 1;
      step.first_at = at + 2;
    }
  }
  if (form.scaled) step.scale_at = static_cast<int>(operands);
  return step;
}

}  // namespace

bool is_update(PrimId op) { return op == PrimId::adamw || op == PrimId::sgd; }

bool runs_update(const Node& node) { return is_update(node.op()) && node.dtype == graph::DType::f32; }

std::optional<int64_t> value_slice(const graph::Graph& graph, const Node& node) {
  if (node.op() != PrimId::slice) return std::nullopt;
  const Node& update = graph.node(node.inputs[0]);
  if (!runs_update(update) || node.shape.empty() || node.shape[0] != 1) return std::nullopt;
  const graph::Shape value(update.shape.begin() + 1, update.shape.end());
  if (!std::equal(node.shape.begin() + 1, node.shape.end(), value.begin(), value.end())) return std::nullopt;
  const std::vector<int64_t>& start = node.attrs.get_ints("start");
  const int64_t index = start.empty() ? 0 : start[0];
  if (index < 0 || index >= update.shape[0]) return std::nullopt;
  return index;
}

bool reads_elementwise(const Node& node, size_t input) {
  if (input < 2) return true;
  const Form form = form_of(node, false);
  if (form.adamw) return input < 4;
  return form.momentum && input == form.buffer_at();
}

void add_update_steps(StepTable& table) {
  table.set_multi(PrimId::adamw, make_update_step);
  table.set_multi(PrimId::sgd, make_update_step);
}

}  // namespace sx::device::cpu
