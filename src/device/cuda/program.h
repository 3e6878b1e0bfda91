// What the cuda device makes of a graph when it compiles it, before any GPU is touched:
// its kernels' steps in the graph's order (generated kernels, codegen.h, for the fused
// elementwise chains, the row reductions and the composites with a kernel of their own;
// nvcc's elementwise.cu for bf16's arithmetic and casts, movement.cu for the movement
// primitives, scatter_add.cu for scatter_add), their source as one program for NVRTC,
// and every value they write placed in one arena by liveness (device/arena.h, as the
// cpu device places its own). A graph
// with a primitive the device has no kernel for is refused here, naming every such
// primitive: the cuda device never runs a step on the host in silence. Host code only,
// so that tests run it without a GPU.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "device/arena.h"
#include "device/cuda/movement.h"
#include "device/cuda/scatter_add.h"
#include "graph/graph.h"

namespace sx::device::cuda {

// Where a step finds a value: the run's input `index`, the program's constant `index`
// (Program::constants), or the arena at byte `index`.
struct Place {
  enum class Kind : uint8_t { input, constant, arena };
  Kind kind = Kind::arena;
  size_t index = 0;
  bool operator==(const Place&) const = default;
};

// One kernel's launch, writing `out` in the arena:
// - fused: the generated kernel `kernel` of a fusion (or of gather, scatter_add, one_hot,
//   iota, a random primitive, gelu, or an update, n elements of its parameter), reading
//   `operands`, n elements;
// - row: the generated reduction `kernel` of operands[0], n result elements of `length`
//   reduced elements each (a row of the last axis, or reduction.h's walk of any axes), or
//   the generated kernel of a row composite (softmax, a norm), n rows of `length`;
// - elementwise: nvcc's kernel of `prim` on operands of `dtype` (elementwise.h), n elements
//   (a cast's to `cast_to`);
// - product: `batch` matrix products of operands [n, length] by [length, columns] in
//   `dtype`, through cuBLASLt (products.h);
// - movement: `movement`'s copies of the operands into n elements of `dtype` (movement.h);
// - scatter_add: `scatter` of the operands (x, indices, updates) into n elements, in the
//   arena's scratch at byte `scratch` (scatter_add.h).
struct Step {
  enum class Kind : uint8_t { fused, row, elementwise, product, movement, scatter_add };
  Kind kind = Kind::fused;
  size_t kernel = 0;  // in Program::kernel_names
  graph::PrimId prim{};
  graph::DType dtype = graph::DType::f32;
  graph::DType cast_to = graph::DType::f32;
  std::vector<Place> operands;
  size_t out = 0;
  int64_t n = 0;
  int64_t length = 0;
  int64_t columns = 0, batch = 1;
  Movement movement;
  SortedScatter scatter;
  size_t scratch = 0;
  // fused and scatter_add: whether the kernel checks indices (codegen.h's index_check): it then takes
  // the run's IndexFault and `node`, and runs for its `checked_indices` even where n is 0.
  bool checks_indices = false;
  int64_t checked_indices = 0;
  uint32_t node = 0;
  // row: a node of passed kernels (codegen.h's passed_kernels): `kernel` over `threads`
  // threads, then `second_kernel` over `second_threads`; its place in the arena, of
  // `bytes`, holds the first pass's values for the second after its own.
  int64_t threads = 0;
  std::optional<size_t> second_kernel;
  int64_t second_threads = 0;
  size_t bytes = 0;
};

// A copy of bytes into the arena: an output that is an input or a constant is staged
// there before the outputs are written, since an output may be written over an input.
struct Stage {
  Place from;
  size_t to = 0;
  size_t bytes = 0;
};

struct Program {
  std::vector<Step> steps;
  std::string source;                     // every generated kernel, for one NVRTC compile
  std::vector<std::string> kernel_names;  // their entry points
  std::vector<graph::NodeId> constants;   // the graph's constant nodes, uploaded at compile
  std::vector<Stage> stages;              // after the steps
  std::vector<size_t> outputs;            // each graph output's place in the arena, copied out last
  ArenaPlan arena;
};

// `graph` as the device plans it: each composite without a kernel of its own for its
// form (codegen.h's has_composite_kernel) replaced by its decomposition, whose steps
// then run on the device's other kernels, and the graph simplified (graph/passes.h).
graph::Graph with_composites_expanded(const graph::Graph& graph);

// The scratch bytes CUB's radix sort of `count` pairs by keys of `key_bits` needs
// (scatter_add.h's sort_scratch_bytes, which asks the GPU).
using SortBytes = std::function<size_t(int64_t count, int key_bits)>;

// The program of `graph`; DeviceError E-DEVICE-007 naming each primitive (with its dtype)
// that has no kernel, or for a graph too large to check its indices (an index node
// numbered kMostFaultNodes or above). Each sorted scatter_add's scratch is planned in the
// arena, with `sort_bytes` for its sort; without it (the host tests, which have no GPU
// to ask) the sort's part is left out.
Program plan_program(const graph::Graph& graph, const SortBytes& sort_bytes = {});

// The source and kernel names of plan_program's, alone (the other fields empty), also for
// a graph with primitives without a kernel: every kernel generated for the graph, once.
Program generated_kernels(const graph::Graph& graph);

// "neg (f32)", "sum (f32)": each primitive of the graph, with its operands' dtype, that the
// cuda device has no kernel for, each once, in the graph's order.
std::vector<std::string> missing_kernels(const graph::Graph& graph);

// Whether the device runs `prim` by a kernel of its own, for some dtype (and, for a
// reduction or a composite, some axes).
bool has_kernel(graph::PrimId prim);

}  // namespace sx::device::cuda
