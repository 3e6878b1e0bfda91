// A product with its epilogue (epilogue.h).
#include "device/cpu/products/epilogue.h"

#include <algorithm>
#include <cassert>
#include <cstdint>

namespace sx::device::cpu {
namespace {

// Whether `group` is one cast to f32 of its bf16 product, which no other group reads.
bool widens_alone(const graph::Graph& graph, const FusedGroup& group) {
  const graph::Node& cast = graph.node(group.members.front());
  return group.members.size() == 1 && cast.op() == graph::PrimId::cast && cast.dtype == graph::DType::f32 &&
         graph.node(*group.product).dtype == graph::DType::bf16 && !group.product_read_outside;
}

}  // namespace

EpilogueLayout lay_out_epilogue(const graph::Graph& graph, const FusedGroup& group, uint32_t absorbed,
                                uint32_t absorbed_deep, uint32_t absorbed_cast, const FusedFacts& facts) {
  const graph::NodeId product = *group.product;
  EpilogueLayout layout;
  for (size_t k = 0; k < 2; ++k)
    layout.inputs.push_back(read_source(graph, product, k, absorbed, absorbed_deep, absorbed_cast));
  for (graph::NodeId operand : group.operands) {
    if (operand == product) {
      layout.operand_at.push_back(kProductResult);
      continue;
    }
    layout.operand_at.push_back(layout.inputs.size());
    layout.inputs.push_back(operand);
  }
  // An f32 result that only the group reads goes where a written f32 member of its size
  // lies, when the program may write that member over it (each element read before it
  // is written): it then needs no bytes of its own, and the block the epilogue writes
  // is the one it read.
  std::optional<size_t> shared;
  layout.widened = widens_alone(graph, group);
  if (layout.widened) shared = 0;  // the cast, the group's one written member
  const auto product_operand =
      static_cast<size_t>(std::find(group.operands.begin(), group.operands.end(), product) - group.operands.begin());
  const bool may_share = graph.node(product).dtype == graph::DType::f32 && !group.product_read_outside;
  for (size_t w = 0; w < group.written.size() && !shared && may_share; ++w) {
    const graph::Node& member = graph.node(group.written[w]);
    if (member.dtype == graph::DType::f32 && member.shape == graph.node(product).shape &&
        facts.may_overwrite[w][product_operand])
      shared = w;
  }
  layout.outputs = group.written;
  if (!shared) layout.outputs.push_back(product);
  // The product's operands are read while every output is written: none may lie over them.
  // Nor may the member the product lies in: the product writes it before the program
  // reads the others.
  for (size_t w = 0; w < group.written.size(); ++w) {
    std::vector<bool>& row = layout.may_overwrite.emplace_back(layout.inputs.size(), false);
    for (size_t k = 0; k < group.operands.size() && shared != w; ++k) {
      if (layout.operand_at[k] != kProductResult) row[layout.operand_at[k]] = facts.may_overwrite[w][k];
    }
  }
  if (!shared) layout.may_overwrite.emplace_back(layout.inputs.size(), false);
  layout.result = shared ? *shared : group.written.size();
  return layout;
}

MultiStep make_epilogue_step(const StepContext& context, const FusedGroup& group, const std::vector<uint32_t>& absorbed,
                             std::vector<size_t> operand_at, size_t result, bool widened, SharedScratch* scratch) {
  const graph::Graph& graph = context.graph;
  std::optional<ProductStep> made = make_product_step(context, graph.node(*group.product), widened);
  assert(made);  // find_fusion attaches f32 and bf16 products with a result only
  if (widened) {
    return [product = std::move(made->run)](const uint8_t* const* in, uint8_t* const* out) {
      product(in[0], in[1], out[0], nullptr);
    };
  }
  FusedStep fused = make_fused_step(graph, group, absorbed, context.kernels, context.cores, scratch, made->parts);
  const bool by_blocks = fused.run_block && !(fused.blocks_need_whole_rows && made->splits_columns);
  return [product = std::move(made->run), fused = std::move(fused), operand_at = std::move(operand_at), by_blocks,
          result, operands = std::vector<const uint8_t*>(group.operands.size())](const uint8_t* const* in,
                                                                                 uint8_t* const* out) mutable {
    for (size_t k = 0; k < operands.size(); ++k)
      operands[k] = operand_at[k] == kProductResult ? out[result] : in[operand_at[k]];
    if (!by_blocks) {
      product(in[0], in[1], out[result], nullptr);
      fused.run(operands.data(), out);
      return;
    }
    fused.start_blocks();
    const auto epilogue = [&](int part, int64_t row, int64_t rows, int64_t col, int64_t cols) {
      fused.run_block(operands.data(), out, part, row, rows, col, cols);
    };
    const BlockDone done = blocks_to(epilogue, fused.blocks_need_whole_rows);
    product(in[0], in[1], out[result], &done);
  };
}

}  // namespace sx::device::cpu
