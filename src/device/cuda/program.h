// What the cuda device makes of a graph when it compiles it, before any GPU is touched:
// its kernels' steps in the graph's order, and every value they compute placed in one
// arena by liveness (device/arena.h, as the cpu device places its own). A graph with a
// primitive the device has no kernel for is refused here, naming every such primitive:
// the cuda device never runs a step on the host in silence. Host code only, so that
// tests run it without a GPU.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "device/arena.h"
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

// One elementwise kernel: out = prim(a) or prim(a, b), over n elements of dtype
// (the operands'; a comparison writes bool).
struct Step {
  graph::PrimId prim;
  graph::DType dtype;
  Place a, b;  // b only for a binary primitive
  bool binary = false;
  size_t out = 0;  // in the arena
  int64_t n = 0;
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
  std::vector<graph::NodeId> constants;  // the graph's constant nodes, uploaded at compile
  std::vector<Stage> stages;             // after the steps
  std::vector<size_t> outputs;           // each graph output's place in the arena, copied out last
  ArenaPlan arena;
};

// The program of `graph`; DeviceError E-DEVICE-007 naming each primitive (with its dtype)
// that has no kernel.
Program plan_program(const graph::Graph& graph);

// "neg (f32)", "sum (f32)": each primitive of the graph, with its operands' dtype, that the
// cuda device has no kernel for, each once, in the graph's order.
std::vector<std::string> missing_kernels(const graph::Graph& graph);

// Whether the device runs `prim` by a kernel of its own, for some dtype.
bool has_kernel(graph::PrimId prim);

}  // namespace sx::device::cuda
