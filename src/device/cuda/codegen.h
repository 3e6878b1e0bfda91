// The cuda device's generated kernels, CUDA C source that NVRTC compiles (nvrtc.h): the
// graph's elementwise chains, each fused into one kernel, and the reductions, indexing
// and random primitives, a kernel each. A node joins the kernel of the node that reads
// it when it is that node's only reader and not a graph output, so a chain's values in
// between stay in registers, as the cpu device's fused loops keep them in its tiles.
// Each element is computed by the functions of element_math.h, transcendental.h,
// reduction.h, index_math.h, random_math.h, composite_math.h, gradient_math.h and
// update_math.h, which the host tests check against the reference's bits.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "device/cuda/attention_math.h"
#include "device/cuda/index_math.h"
#include "device/cuda/reduction.h"
#include "graph/graph.h"
#include "graph/index_error.h"

namespace sx::device::cuda {

// Elementwise nodes computed by one kernel, which writes only the last one's value.
struct Fusion {
  std::vector<graph::NodeId> nodes;     // in the graph's order; the last is the root
  std::vector<graph::NodeId> operands;  // the values it reads from memory, in the kernel's parameter order
};

// The fusions of every node that a generated kernel computes (fusible), in the graph's
// order of their roots.
std::vector<Fusion> find_fusions(const graph::Graph& graph);

// Whether a generated kernel computes `node`: where, a cast between dtypes other than
// bf16, or an elementwise primitive of element.h's visit_generated_element; of bf16 only
// those nvcc's kernels do not compute (elementwise.h): the transcendental functions and
// pow, computed in float and rounded to bf16 as the reference rounds them.
bool fusible(const graph::Graph& graph, graph::NodeId node);

struct GeneratedKernel {
  std::string name;    // its entry point: "sx_fused_" and a hash of its body
  std::string source;  // CUDA C for NVRTC
};

// Whether a generated kernel computes `node`: sum or reduce_max over the last axis
// alone, of a numeric dtype (bf16 accumulated in float, as the reference does).
bool row_reducible(const graph::Graph& graph, graph::NodeId node);

// The kernel of a row reduction: void NAME(const S* x, S* out, int64_t n, int64_t
// length), one thread per row (element_math.h's row_sum or row_max).
GeneratedKernel generate_row_reduction(const graph::Graph& graph, graph::NodeId node);

// Whether a generated kernel computes `node`: sum, reduce_max, reduce_min, argmax or
// argmin over any axes, of a numeric dtype (bf16 accumulated in float), of at most
// kMostAxes axes (reduction.h).
bool reducible(const graph::Graph& graph, graph::NodeId node);

// The kept and reduced axes of a reducible node's input.
ReductionAxes reduction_axes(const graph::Graph& graph, graph::NodeId node);

// The kernel of a reduction: void NAME(const S* x, R* out, int64_t n, int64_t length),
// out[r] the result element r, of `length` reduced elements (reduction.h's functions).
GeneratedKernel generate_reduction(const graph::Graph& graph, graph::NodeId node);

// Whether a generated kernel computes `node`: gather, scatter_add, one_hot or iota, of
// any dtype (index_math.h).
bool indexable(const graph::Graph& graph, graph::NodeId node);

// The operand's [outer, length, inner] and the indices' count of a gather or scatter_add.
GatherGeometry gather_geometry(const graph::Graph& graph, graph::NodeId node);

// The indices a kernel checks: its node's input `operand`, `count` of them, each to be
// in [0, length).
struct IndexCheck {
  size_t operand = 0;
  int64_t count = 0;
  int64_t length = 0;
};

// gather's and scatter_add's indices, a checked one_hot's, and the targets of a
// cross_entropy or of its gradient (its one_hot's, operand 1); nullopt for other nodes.
std::optional<IndexCheck> index_check(const graph::Graph& graph, graph::NodeId node);

// The kernel of an indexable node: void NAME(const S0* operand0, ..., T* out, int64_t n),
// its inputs in order, out[i] the result's element i for i < n. A node with an
// index_check has two more parameters, IndexFault* fault and uint32_t node: its threads
// check every index, even where the result is empty, and record the first outside its
// axis in `fault` under `node` (index_math.h).
GeneratedKernel generate_index_kernel(const graph::Graph& graph, graph::NodeId node);

// The error the cpu device raises for the index `fault` recorded (IndexOutOfRange,
// located at its node of `graph`); DeviceError E-DEVICE-008 where the fault names no node
// with an index_check, which only a corrupted fault does.
graph::IndexOutOfRange index_fault_error(const graph::Graph& graph, const IndexFault& fault);

// Whether a generated kernel computes `node`: random_uniform or random_normal of f32,
// f64 or bf16, or random_bernoulli (random_math.h).
bool randomizable(const graph::Graph& graph, graph::NodeId node);

// The kernel of a randomizable node: void NAME(const K* operand0, T* out, int64_t n),
// operand0 its key.
GeneratedKernel generate_random_kernel(const graph::Graph& graph, graph::NodeId node);

// Whether a generated kernel computes composite `node` itself: of f32, f64 or bf16,
// softmax or log_softmax over the last axis, layer_norm or rms_norm with their weight and
// bias (where given) of the last axis's length, or gelu (composite_math.h); the
// composite_gradient with respect to x of one of these forms, of f32 or bf16, the
// cotangent last among its operands (gradient_math.h), or with respect to such a norm's
// weight or bias, of x not empty; cross_entropy of f32 or bf16 logits, not empty, and
// targets of any index dtype, and its gradient with respect to the logits
// (cross_entropy_math.h); adamw or sgd of f32 in every form (update_math.h); attention where has_attention_kernel. A
// `part` of an update has none: it is expanded into its slice of the update's stacked values.
bool has_composite_kernel(const graph::Graph& graph, const graph::Node& node);
// Whether some form of composite `prim` has one.
bool has_composite_kernel(graph::PrimId prim);
// adamw or sgd.
bool is_update(graph::PrimId prim);
// Whether the kernel of composite `node` (one with has_composite_kernel) takes an element
// a thread (gelu, its gradient, an update) or blocks of rows (attention) rather than a row
// a thread.
bool runs_by_elements(const graph::Graph& graph, const graph::Node& node);

// The kernel of such a node. gelu's: void NAME(const T* operand0, T* out, int64_t n), an
// element each; its gradient's the same with the cotangent's operand1 too. An update's:
// void NAME(const float* operand0, ..., float* out, int64_t n), its inputs in order, an
// element of the parameter each, value k of element i into out[k * n + i]. The others':
// void NAME(const T* operand0, ..., T* out, int64_t n, int64_t length), its inputs in
// order, a row of `length` elements each, n rows (a gradient's cotangent last).
GeneratedKernel generate_composite_kernel(const graph::Graph& graph, graph::NodeId node);

// The kernels of a cross_entropy, of its gradient with respect to the logits, or of the
// gradient of a norm's weight or bias (passed_kernels), which take a row composite's
// arguments: its operands, out, n rows of `length`, and where the node checks its targets
// (index_check), the run's IndexFault and the node. `first` runs over `threads` threads,
// then `second`, where given, over `second_threads`: the loss's sum over the rows (of
// their values), a weight's sums over the rows, a column a thread (of each row's
// statistics). The first pass's values for the second lie after the node's value, in its
// arena place of `bytes`. The bias's sums are its first pass, a column a thread; the
// gradient of the logits a row a thread.
struct PassedKernels {
  GeneratedKernel first;
  int64_t threads = 0;
  std::optional<GeneratedKernel> second;
  int64_t second_threads = 0;
  size_t bytes = 0;
};
std::optional<PassedKernels> passed_kernels(const graph::Graph& graph, graph::NodeId node);

// The threads a block of a generated kernel has.
inline constexpr int64_t kGeneratedKernelThreads = 256;

// Whether the attention kernel (attention_math.h) computes attention `node`: of f32 or
// bf16, q, k and v of its dtype and of its batch axes (none broadcast), a key at least,
// a depth and width whose block of rows fits in shared memory (q's and v's last axes up to
// about 350 each), and a bool mask (where given) that broadcasts to the scores.
bool has_attention_kernel(const graph::Graph& graph, const graph::Node& node);

// Its form and its mask's layout (none without a mask), as its kernel holds them.
AttentionForm attention_form(const graph::Graph& graph, const graph::Node& node);
AttentionMask attention_mask(const graph::Graph& graph, const graph::Node& node);

// The query rows its blocks hold: 32, or the most that fit in shared memory, or the
// queries where fewer (a power of 2).
int64_t attention_rows_per_block(const graph::Graph& graph, const graph::Node& node);

// The threads its launch asks for (n): kGeneratedKernelThreads a block of query rows.
int64_t attention_threads(const graph::Graph& graph, const graph::Node& node);

// Its kernel: void NAME(const T* q, const T* k, const T* v, [const bool* mask,] T* out,
// int64_t n), n its attention_threads.
GeneratedKernel generate_attention_kernel(const graph::Graph& graph, graph::NodeId node);

// The kernel of `fusion`: void NAME(const S0* operand0, ..., R* out, int64_t n), out[i]
// the root's value at element i, for i < n.
GeneratedKernel generate_kernel(const graph::Graph& graph, const Fusion& fusion);

}  // namespace sx::device::cuda
