// How an elementwise step reads operands when some are broadcasts it absorbed
// (StepContext::absorbed): each operand is reached through a stride per axis of the
// output, 0 along the axes its broadcast repeats it, so the repeated copy is never
// written or read. Each output element still gets the same formula of the same
// operand values as the reference kernel computes, so the bits are the reference's.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "device/cpu/kernels.h"
#include "graph/shape.h"

namespace sx::device::cpu {

struct OperandWalk {
  static constexpr size_t kMostOperands = 3;                // where's condition and two values
  graph::Shape shape;                                       // the output's axes, merged where every operand allows
  std::array<std::vector<int64_t>, kMostOperands> strides;  // per operand, in elements, per axis of `shape`
  size_t operands = 0;
};

// The walk of operands over an output of shape `out`, operand k's own shape being
// froms[k]: by zero strides on the axes where it is repeated (it aligns with the
// output's last axes, as a broadcast's input does; an operand of the output's shape
// is read row-major). Size-1 axes are dropped and neighbours merged where every
// operand steps across them as across one axis, so the last axis is as long as the
// operands allow.
inline OperandWalk operand_walk(const graph::Shape& out, std::span<const graph::Shape> froms) {
  const size_t rank = out.size();
  OperandWalk full;
  full.operands = froms.size();
  for (size_t k = 0; k < full.operands; ++k) {
    const graph::Shape& from = froms[k];
    std::vector<int64_t> from_strides = graph::row_major_strides(from);
    std::vector<int64_t>& strides = full.strides[k];
    strides.assign(rank, 0);
    const size_t lead = rank - from.size();
    for (size_t d = 0; d < from.size(); ++d) strides[lead + d] = from[d] == 1 ? 0 : from_strides[d];
  }
  OperandWalk walk;
  walk.operands = full.operands;
  for (size_t d = 0; d < rank; ++d) {
    if (out[d] == 1) continue;
    bool merges = !walk.shape.empty();
    for (size_t k = 0; merges && k < walk.operands; ++k) {
      merges = walk.strides[k].back() == full.strides[k][d] * out[d];
    }
    if (merges) {
      walk.shape.back() *= out[d];
      for (size_t k = 0; k < walk.operands; ++k) walk.strides[k].back() = full.strides[k][d];
      continue;
    }
    walk.shape.push_back(out[d]);
    for (size_t k = 0; k < walk.operands; ++k) walk.strides[k].push_back(full.strides[k][d]);
  }
  if (walk.shape.empty()) {  // one element
    walk.shape = {1};
    for (size_t k = 0; k < walk.operands; ++k) walk.strides[k] = {0};
  }
  return walk;
}

// The walk of the node's operands over its output: an absorbed broadcast's input
// through the broadcast, any other operand (which has the output's shape) row-major.
inline OperandWalk operand_walk(const StepContext& c, const graph::Node& node) {
  std::vector<graph::Shape> froms;
  for (size_t k = 0; k < node.inputs.size(); ++k) {
    const graph::Node& operand = c.graph.node(node.inputs[k]);
    froms.push_back(c.absorbs(k) ? c.graph.node(operand.inputs[0]).shape : operand.shape);
  }
  return operand_walk(node.shape, froms);
}

// Calls segment(at, offsets, length) over the output elements [begin, end) in row-major
// order, a run along the last axis at a time: `at` the first output element of the run,
// offsets[k] operand k's element there, then `length` elements, along which operand k
// advances by walk.strides[k].back().
template <class Segment>
void walk_segments(const OperandWalk& walk, int64_t begin, int64_t end, Segment segment) {
  const size_t rank = walk.shape.size();
  const int64_t inner = walk.shape[rank - 1];
  for (int64_t at = begin; at < end;) {
    int64_t row = at / inner, j = at % inner;
    int64_t length = std::min(inner - j, end - at);
    std::array<int64_t, OperandWalk::kMostOperands> offsets{};
    for (size_t k = 0; k < walk.operands; ++k) offsets[k] = j * walk.strides[k][rank - 1];
    for (size_t d = rank - 1; d-- > 0;) {
      int64_t i = row % walk.shape[d];
      row /= walk.shape[d];
      for (size_t k = 0; k < walk.operands; ++k) offsets[k] += i * walk.strides[k][d];
    }
    segment(at, offsets.data(), length);
    at += length;
  }
}

// Every elementwise operand may be absorbed when it is a broadcast.
inline int absorbs_any_broadcast(const graph::Graph& graph, const graph::Node& node, size_t input, const KernelSet&) {
  return input < OperandWalk::kMostOperands && node.inputs.size() <= OperandWalk::kMostOperands &&
                 graph.node(node.inputs[input]).op() == graph::PrimId::broadcast
             ? 1
             : 0;
}

}  // namespace sx::device::cpu
