// A matrix product and the fused group that alone reads its result (FusedGroup::product)
// run as one step: the group's program runs on each block of the result as soon as the
// product finishes it, while the block is still in cache, so the result is not read back
// from memory. A bias and an activation after a product (GELU's ten members) are its
// epilogue so, and so is any chain of the elementwise primitives fusion takes, with a
// reduction of the rows at its end (a layer norm's mean). Each element is the same
// formula of the same values as when the two run apart: the product's sums are its
// blocks' (gemm.h), the program's its tiles' (fusion.h), so no bit changes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "device/cpu/fusion/fusion.h"
#include "device/cpu/kernels.h"
#include "device/cpu/products/gemm.h"

namespace sx::device::cpu {

// A product's step that calls an epilogue: run(a, b, out, done) with the bytes of its
// operands as the step reads them and its result; `done`, when not null, is called on
// every block of the result as it is finished, its rows counted over the batch entries
// in order.
struct ProductStep {
  std::function<void(const uint8_t* a, const uint8_t* b, uint8_t* out, const BlockDone* done)> run;
  int parts = 1;                // the most blocks done at once: `done`'s parts are below it
  bool splits_columns = false;  // threads take parts of the columns: no block is a whole row
};

// The step of an f32 or bf16 matmul node with a result (matmul.cc); nothing for the rest.
// With `widened`, a bf16 node's result is written as f32: each value rounded to bf16,
// then widened exactly (EpilogueLayout's widened).
std::optional<ProductStep> make_product_step(const StepContext& context, const graph::Node& node, bool widened = false);

// Where lowering (schedule.h) puts the bytes of a group's step with its product.
struct EpilogueLayout {
  std::vector<graph::NodeId> inputs;  // the product's operands as it reads them, then the group's others
  // The group's written members, then the product, unless the product lies where one of
  // them does (an f32 member the program writes over it).
  std::vector<graph::NodeId> outputs;
  std::vector<std::vector<bool>> may_overwrite;  // per output, per input: as FusedFacts'
  std::vector<size_t> operand_at;                // per operand of the group: its input, or kProductResult
  size_t result = 0;                             // the output the product writes
  // The group is one cast to f32 of a bf16 product that nothing else reads: the product
  // writes its result widened where the cast's output lies, and no program runs (the
  // cast's bits, in one pass: the bf16 result, written and read back, has no bytes).
  bool widened = false;
};
inline constexpr size_t kProductResult = SIZE_MAX;

// The layout of `group`'s step with its product; `absorbed`, `absorbed_deep` and `absorbed_cast`: the
// product node's bits (StepContext's), `facts`: the group's.
EpilogueLayout lay_out_epilogue(const graph::Graph& graph, const FusedGroup& group, uint32_t absorbed,
                                uint32_t absorbed_deep, uint32_t absorbed_cast, const FusedFacts& facts);

// The step of `group` with its product, laid out as lay_out_epilogue's `operand_at`,
// `result` and `widened` say; `context`: the product node's. A group that cannot take
// the product's blocks (it reduces whole rows and the product's threads split the
// columns) runs after the product, as one step still.
MultiStep make_epilogue_step(const StepContext& context, const FusedGroup& group, const std::vector<uint32_t>& absorbed,
                             std::vector<size_t> operand_at, size_t result, bool widened, SharedScratch* scratch);

}  // namespace sx::device::cpu
