// The cpu device's kernels, as steps prepared at compile time: a step knows
// its node's shapes and dtypes and its thread count, and at run time only
// reads its inputs' bytes and writes its output's. The plan finds how to run
// a node in a table indexed by its primitive's id (StepTable), which each
// family of kernels fills with its rows.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <new>
#include <optional>
#include <span>

#include "device/cpu/thread_pool.h"
#include "graph/graph.h"
#include "graph/primitive.h"

namespace sx::device::cpu {

// in[i]: the bytes of the node's i-th input; out: the node's output buffer.
using Step = std::function<void(const uint8_t* const* in, uint8_t* out)>;
// A step that writes several outputs: out[j] is the j-th one's buffer (a fused group's
// written members, a composite's output and its cast to bf16).
using MultiStep = std::function<void(const uint8_t* const* in, uint8_t* const* out)>;

// Memory on whole cache lines: a plan's arena, and scratch that threads write
// side by side (a line two threads write would pass between them at every step).
inline constexpr size_t kCacheLine = 64;
// (graph::allocate_lines: large ones on huge pages.)
struct CacheLineDelete {
  size_t bytes = 0;
  void operator()(uint8_t* p) const { graph::free_lines(p, bytes); }
};
using CacheLineBytes = std::unique_ptr<uint8_t[], CacheLineDelete>;
inline CacheLineBytes cache_line_bytes(size_t bytes) {
  bytes = std::max<size_t>(bytes, 1);
  return CacheLineBytes(static_cast<uint8_t*>(graph::allocate_lines(bytes)), CacheLineDelete{bytes});
}

// Bytes that the steps of a plan share, each using them only while it runs (a plan runs
// one step at a time): as many as the most any step reserved. A step reserves them when
// it is made and takes `data` when it runs, a later step's reserve having maybe grown it.
struct SharedScratch {
  CacheLineBytes data;
  size_t size = 0;
  void reserve(size_t bytes) {
    if (bytes <= size) return;
    data = cache_line_bytes(bytes);
    size = bytes;
  }
};

// Work below about this many element operations runs on one thread: waking
// the pool's workers and waiting for them costs a few microseconds.
inline constexpr int64_t kGrain = 1 << 15;

// Work per element of an elementwise operation, in units of an add, by the cost its
// primitive's row gives: transcendental functions cost more, so they go parallel at
// smaller sizes.
inline constexpr int64_t kCheap = 1, kCostly = 16;
constexpr int64_t element_work(graph::ElementCost cost) {
  return cost == graph::ElementCost::costly ? kCostly : kCheap;
}

// Threads for `work` element operations, at most `cores`.
inline int threads_for(int64_t work, int cores) {
  if (work < 2 * kGrain) return 1;
  return static_cast<int>(std::min<int64_t>(cores, work / kGrain));
}

// Calls body(part, begin, end) over [0, n) split into one equal contiguous
// chunk per part, the parts run by the threads of the pool (at most `threads`
// and the pool's size). Which thread runs a part never changes what an
// element's value is.
template <class Body>
void parallel_parts(int64_t n, int threads, Body body) {
  int parts = static_cast<int>(std::min<int64_t>({threads, n, ThreadPool::shared().size()}));
  if (parts <= 1) {
    body(0, int64_t{0}, n);
    return;
  }
  int64_t chunk = (n + parts - 1) / parts;
  ThreadPool::shared().run(parts, [&](int part) {
    int64_t begin = std::min(n, part * chunk), end = std::min(n, begin + chunk);
    if (begin < end) body(part, begin, end);
  });
}

// The same, for a body(begin, end) that does not ask which part it is.
template <class Body>
void parallel_for(int64_t n, int threads, Body body) {
  parallel_parts(n, threads, [&](int, int64_t begin, int64_t end) { body(begin, end); });
}

struct KernelSet;
struct GemmScratch;

// What making a node's step may read besides the node: the graph (its
// inputs' shapes and dtypes), the thread count and the micro-kernels.
struct StepContext {
  const graph::Graph& graph;
  int cores = 1;
  const KernelSet& kernels;
  // Bit k: input k is a broadcast, transpose or reshape node the step absorbs (its
  // row's `absorbs` said so): in[k] holds that node's input, which the step
  // reads through strides in its place, so the copy is never made.
  uint32_t absorbed = 0;
  // Bit k: what lies under input k is absorbed too: under a broadcast or a reshape, a
  // transpose (in[k] holds the transpose's input); under a transpose, a reshape of a
  // slice (in[k] holds the slice's input).
  uint32_t absorbed_deep = 0;
  // Bit k: under what input k's absorbed nodes lead to (or in input k's place) lies a
  // cast of an f32 weight to bf16 that the step absorbs too: in[k] holds the f32 weight,
  // which the step rounds to bf16 as it reads it (a bf16 product's B, kThroughCast).
  uint32_t absorbed_cast = 0;
  // Bit k: the step computes its input k, a multiply of an f32 tensor by a broadcast f32
  // scalar (an update's clipped gradient), itself: in[k] holds the tensor, the node's
  // last input the scalar (Schedule's absorbed_scale).
  uint32_t absorbed_scale = 0;
  // The packing buffers the plan's matrix products share (gemm.h); null: each its own.
  GemmScratch* gemm_scratch = nullptr;
  // The bytes the plan's steps share, each while it runs; null: none.
  SharedScratch* scratch = nullptr;

  bool absorbs(size_t input) const { return (absorbed >> input & 1u) != 0; }
  bool absorbs_deep(size_t input) const { return (absorbed_deep >> input & 1u) != 0; }
  bool absorbs_cast(size_t input) const { return (absorbed_cast >> input & 1u) != 0; }
};

using MakeStep = Step (*)(const StepContext& context, const graph::Node& node);
// A step writing the nodes `outputs` (its node's, or those of the slices taking its values).
using MakeMultiStep = MultiStep (*)(const StepContext& context, const graph::Node& node,
                                    std::span<const graph::NodeId> outputs);
// How deep a step of `node` reads input `input`, a broadcast, transpose or reshape
// node: 0, as it is; 1, through that node's input; 2, through what lies under that
// input (a broadcast or a reshape of a transpose: the transpose's input; a transpose
// of a reshape of a slice: the slice's input); with kThroughCast added, through a cast
// of an f32 graph input or constant to bf16 under that too (or in the input's place),
// which the step reads rounded itself where `kernels` (the plan's) round it as they
// read it. (Such a cast's input is never a fused group's member, so fusion needs no
// sight of it.)
constexpr int kThroughCast = 4;
using Absorbs = int (*)(const graph::Graph& graph, const graph::Node& node, size_t input, const KernelSet& kernels);

// The node whose bytes node `id` reads as its input k, given the bits of what
// it absorbs (StepContext's `absorbed`, `absorbed_deep` and `absorbed_cast`).
inline graph::NodeId read_source(const graph::Graph& graph, graph::NodeId id, size_t k, uint32_t absorbed,
                                 uint32_t absorbed_deep, uint32_t absorbed_cast = 0) {
  graph::NodeId source = graph.node(id).inputs[k];
  const auto past_cast = [&](graph::NodeId at) { return (absorbed_cast >> k & 1u) ? graph.node(at).inputs[0] : at; };
  if ((absorbed >> k & 1u) == 0) return past_cast(source);
  const bool under_transpose = graph.node(source).op() == graph::PrimId::transpose;
  source = graph.node(source).inputs[0];
  if ((absorbed_deep >> k & 1u) == 0) return past_cast(source);
  source = graph.node(source).inputs[0];
  return past_cast(under_transpose ? graph.node(source).inputs[0] : source);
}

// How the cpu device runs each primitive, by id: the plan's dispatch.
enum class Run : uint8_t {
  reference,  // by its reference kernel: a fallback (CpuDevice::fallback_primitives)
  input,      // a graph input: its buffer is read where it lies
  constant,   // its value, read where the node holds it
  view,       // the bytes of its input (reshape)
  once,       // computed at compile time (iota)
  step,       // by `make`, one of the families below
};

struct StepRow {
  Run run = Run::reference;
  MakeStep make = nullptr;
  Absorbs absorbs = nullptr;           // none: every input is read as it is
  MakeMultiStep make_multi = nullptr;  // set: `make`'s place, for a step of several outputs
};

class StepTable {
 public:
  StepRow& operator[](graph::PrimId id) { return rows_[graph::index_of(id)]; }
  const StepRow& operator[](graph::PrimId id) const { return rows_[graph::index_of(id)]; }
  // Sets `id`'s row to a step made by `make`, which absorbs the broadcasts `absorbs` names.
  void set(graph::PrimId id, MakeStep make, Absorbs absorbs = nullptr) { (*this)[id] = {Run::step, make, absorbs}; }
  // Sets `id`'s row to a step of several outputs made by `make`.
  void set_multi(graph::PrimId id, MakeMultiStep make) { (*this)[id] = {Run::step, nullptr, nullptr, make}; }

 private:
  std::array<StepRow, graph::kPrimitiveCount> rows_{};
};

// The table, built once: the plan's own rows and each family's.
const StepTable& step_table();

// Each family sets the rows of the primitives it has kernels for:
// elementwise.cc, reduce.cc, movement.cc, matmul.cc, random.cc, composite.cc, update.cc.
void add_elementwise_steps(StepTable& table);
void add_reduce_steps(StepTable& table);
void add_movement_steps(StepTable& table);
void add_matmul_steps(StepTable& table);
void add_random_steps(StepTable& table);
void add_composite_steps(StepTable& table);
void add_update_steps(StepTable& table);

// Whether composite `node` of `graph` runs by its kernel (composite.cc): softmax and
// log_softmax over contiguous rows, layer_norm and rms_norm (weight and bias one element
// per column), gelu of either form, attention (runs_attention), each in f32 or bf16;
// cross_entropy over the last axis (runs_cross_entropy); adamw and sgd of f32 (update.cc);
// a composite_gradient node that runs_composite_gradient takes. The others run as their
// decomposition.
bool runs_composite(const graph::Graph& graph, const graph::Node& node);

// Whether composite `op`'s step can also write its value rounded to bf16
// (make_composite_rounding_step): the forward composites runs_composite takes.
bool writes_rounded_cast(graph::PrimId op);

// The step of composite `node` of f32 (one runs_composite takes) that writes its output
// cast to bf16, each row rounded as the cast kernel rounds it while the step holds the
// row: after its output (out[0], out[1] the cast) where `writes_output`, else alone
// (out[0]), the rows computed in the context's scratch.
MultiStep make_composite_rounding_step(const StepContext& context, const graph::Node& node, bool writes_output);

// Whether the gradient with respect to input `input` of composite `forward` with `attrs`
// (its node's, axes normalized), given the cotangent of its value, runs by its kernel
// (composite_gradient.cc): `inputs` are the composite's, then the cotangent. With respect
// to x: softmax and log_softmax over contiguous rows, layer_norm and rms_norm (weight and
// bias one element per column), gelu of either form; with respect to a norm's weight or
// bias too; x of f32 or bf16, the cotangent of x's dtype and shape; cross_entropy's with
// respect to its logits (runs_cross_entropy), which make_cross_entropy_gradient_step makes.
bool runs_composite_gradient(const graph::Graph& graph, graph::PrimId forward, const graph::Attrs& attrs, size_t input,
                             std::span<const graph::NodeId> inputs);

// The step of that gradient (one runs_composite_gradient takes), `inputs` the nodes of
// the context's graph it reads: in[] its inputs in that order; out, the gradient, of that
// input's dtype and shape. It gives the bits the plan gives for what autodiff builds
// through the composite's decomposition.
Step make_composite_gradient_step(const StepContext& context, graph::PrimId forward, const graph::Attrs& attrs,
                                  size_t input, std::span<const graph::NodeId> inputs);

// Whether the cpu runs attention `node` by its kernel (attention.cc): q, k and v of the
// node's dtype, f32 or bf16, with the node's batch axes (none broadcast), and a bool mask
// that broadcasts to the scores where given; no axis empty.
bool runs_attention(const graph::Graph& graph, const graph::Node& node);

// The attention kernel's step, and what it absorbs: a transpose of q, k or v (and a
// reshape of a slice under it), read through strides as a product reads it (matmul.cc).
Step make_attention_step(const StepContext& context, const graph::Node& node);
int absorbs_attention_operand(const graph::Graph& graph, const graph::Node& node, size_t input,
                              const KernelSet& kernels);

// cross_entropy's kernels (cross_entropy.cc). Whether they take a node of `inputs`:
// logits of f32 or bf16 with a class axis last and no element missing, targets of an index
// dtype with the logits' shape less that axis, and for the gradient with respect to the
// logits the cotangent of the loss, a scalar of the logits' dtype.
bool runs_cross_entropy(const graph::Graph& graph, std::span<const graph::NodeId> inputs);
// The step of a cross_entropy node (in: logits, targets; out: the loss), and of the
// composite_gradient of one with respect to its logits (in: logits, targets, the
// cotangent; out: the gradient), each with the bits the plan gives for its decomposition,
// and the one_hot's error for a target outside the classes.
Step make_cross_entropy_step(const StepContext& context, const graph::Node& node);
Step make_cross_entropy_gradient_step(const StepContext& context, const graph::Node& node);

// The optimizer updates' kernels (update.cc): adamw and sgd of f32 in every form, each
// update's values written in one pass, each straight into the buffer of the slice that
// takes it (its `part`, decomposed: lower.cc). Whether `op` is adamw or sgd.
bool is_update(graph::PrimId op);

// Whether the cpu runs `node` by update.cc's kernels: an update of f32.
bool runs_update(const graph::Node& node);

// Where `node` is a slice of an update the cpu runs taking one of its values whole (a
// part's decomposition, before its reshape): that value's index.
std::optional<int64_t> value_slice(const graph::Graph& graph, const graph::Node& node);

// Whether update `node` reads its input `input` element by element (the parameter, the
// gradient and the state, not the scalars): a value may then be written over its bytes.
bool reads_elementwise(const graph::Node& node, size_t input);

}  // namespace sx::device::cpu
