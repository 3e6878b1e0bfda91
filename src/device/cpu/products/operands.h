// How a product step reads its operands (matmul.cc), shared with the steps that run
// products of their own (attention.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "device/cpu/kernels.h"
#include "device/cpu/kernels/view.h"
#include "graph/graph.h"

namespace sx::device::cpu {

// How a product reads one operand, per entry of the output's batch axes: a stride per
// batch axis, then its rows' and columns' strides, in elements, from its first element
// at `offset`. A plain operand is row-major; an absorbed transpose reads its input
// through the permuted strides, and one of a reshape of a slice (attention's heads, cut
// from the packed q, k and v) reads the slice's input, from the slice's start; weights
// broadcast over the batch have batch strides of 0.
struct OperandLayout {
  std::vector<int64_t> batch_strides;
  int64_t rows = 0, cols = 1;
  int64_t offset = 0;
};

// The elements a transpose of a reshape of a slice reads from the slice's input, when
// the reshape needs no copy (`transpose`: that transpose node).
std::optional<View> slice_view(const graph::Graph& graph, const graph::Node& transpose);

// How the step of `node` (context `c`, its absorbed bits) reads its input `input`, a
// matrix (or a batch of them) in the input's last two axes.
OperandLayout operand_layout(const StepContext& c, const graph::Node& node, size_t input);

}  // namespace sx::device::cpu
