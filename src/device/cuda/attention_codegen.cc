// The attention composite's generated kernel (codegen.h): which forms it takes, how many
// query rows its blocks hold, and its source, the form's shapes and literals written in.
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>

#include "device/cuda/attention_math.h"
#include "device/cuda/codegen.h"
#include "device/cuda/composite_math.h"
#include "device/cuda/nvrtc.h"
#include "graph/primitive.h"
#include "graph/shape.h"

namespace sx::device::cuda {
namespace {

// The floats of static shared memory a block may hold (48 KiB, the most without opting in).
constexpr int64_t kSharedFloats = 48 * 1024 / 4;

// The floats of shared memory attention_blocks holds with `rows` query rows a block.
int64_t shared_floats(int64_t rows, int64_t depth, int64_t width) {
  const int64_t tile = kAttentionKeyTile;
  return rows * (depth + width + tile + 4) + tile * std::max(depth + 1, width) + rows / 4 + 1;
}

// The query rows a block holds: 32, or the most that fit in shared memory, or the
// queries where fewer (a power of 2); 0 where not even one row fits (the depth and width
// too large).
int64_t rows_per_block(int64_t queries, int64_t depth, int64_t width) {
  int64_t rows = 32;
  while (rows > 1 && rows / 2 >= queries) rows /= 2;
  while (rows > 0 && shared_floats(rows, depth, width) > kSharedFloats) rows /= 2;
  return rows;
}

graph::Shape batch_of(const graph::Shape& shape) { return {shape.begin(), shape.end() - 2}; }

// The scores' shape: [batch..., queries, keys].
graph::Shape scores_shape(const graph::Graph& graph, const graph::Node& node) {
  const size_t rank = node.shape.size();
  graph::Shape scores = batch_of(node.shape);
  scores.insert(scores.end(), {node.shape[rank - 2], graph.node(node.inputs[1]).shape[rank - 2]});
  return scores;
}

// The mask's strides over the scores [batch..., queries, keys]: 0 along an axis it
// broadcasts over (it may have fewer axes, aligned on the last).
AttentionMask mask_layout(const graph::Shape& mask, const graph::Shape& scores) {
  const size_t rank = scores.size(), offset = rank - mask.size();
  const std::vector<int64_t> own = graph::row_major_strides(mask);
  std::vector<int64_t> strides(rank, 0);
  for (size_t d = offset; d < rank; ++d) strides[d] = mask[d - offset] == 1 ? 0 : own[d - offset];
  AttentionMask layout;
  layout.batch_rank = static_cast<int32_t>(rank - 2);
  for (size_t d = 0; d + 2 < rank; ++d) {
    layout.batch_shape[d] = scores[d];
    layout.batch_stride[d] = strides[d];
  }
  layout.query_stride = strides[rank - 2];
  layout.key_stride = strides[rank - 1];
  return layout;
}

// A float as its bits, so that the kernel holds exactly the host's value.
std::string exactly(float value) { return fmt::format("__int_as_float({:#x})", std::bit_cast<uint32_t>(value)); }

std::string int_list(const int64_t* values, int32_t count) {
  std::string text;
  for (int32_t d = 0; d < count; ++d) text += fmt::format("{}{}ll", d ? ", " : "", values[d]);
  return text;
}

}  // namespace

AttentionForm attention_form(const graph::Graph& graph, const graph::Node& node) {
  const size_t rank = node.shape.size();
  const graph::Shape& key = graph.node(node.inputs[1]).shape;
  AttentionForm form;
  form.entries = graph::numel(batch_of(node.shape));
  form.queries = node.shape[rank - 2];
  form.width = node.shape[rank - 1];
  form.keys = key[rank - 2];
  form.depth = key[rank - 1];
  form.causal = node.attrs.get_int("causal") != 0;
  const bool bf16 = node.dtype == graph::DType::bf16;
  const double scale = std::sqrt(static_cast<double>(form.depth));
  form.scale = bf16 ? literal<graph::Bf16, float>(scale) : literal<float, float>(scale);
  form.excluded = bf16 ? literal<graph::Bf16, float>(-1e9) : literal<float, float>(-1e9);
  return form;
}

AttentionMask attention_mask(const graph::Graph& graph, const graph::Node& node) {
  if (node.inputs.size() != 4) return {};
  return mask_layout(graph.node(node.inputs[3]).shape, scores_shape(graph, node));
}

bool has_attention_kernel(const graph::Graph& graph, const graph::Node& node) {
  if (node.op() != graph::PrimId::attention || (node.inputs.size() != 3 && node.inputs.size() != 4)) return false;
  if (node.dtype != graph::DType::f32 && node.dtype != graph::DType::bf16) return false;
  const size_t rank = node.shape.size();
  if (rank < 2) return false;
  const graph::Node &q = graph.node(node.inputs[0]), &k = graph.node(node.inputs[1]), &v = graph.node(node.inputs[2]);
  for (const graph::Node* operand : {&q, &k, &v}) {
    if (operand->dtype != node.dtype || operand->shape.size() != rank) return false;
    if (batch_of(operand->shape) != batch_of(node.shape)) return false;
  }
  const int64_t keys = k.shape[rank - 2], depth = q.shape[rank - 1], width = node.shape[rank - 1];
  if (q.shape[rank - 2] != node.shape[rank - 2] || k.shape[rank - 1] != depth || v.shape[rank - 2] != keys ||
      v.shape[rank - 1] != width || keys == 0 || depth == 0 || width == 0) {
    return false;
  }
  if (rows_per_block(node.shape[rank - 2], depth, width) == 0) return false;
  if (node.inputs.size() == 3) return true;
  const graph::Node& mask = graph.node(node.inputs[3]);
  return mask.dtype == graph::DType::boolean && rank - 2 <= kAttentionBatchAxes &&
         graph::broadcasts_to(mask.shape, scores_shape(graph, node));
}

int64_t attention_rows_per_block(const graph::Graph& graph, const graph::Node& node) {
  const AttentionForm form = attention_form(graph, node);
  return rows_per_block(form.queries, form.depth, form.width);
}

int64_t attention_threads(const graph::Graph& graph, const graph::Node& node) {
  const AttentionForm form = attention_form(graph, node);
  const int64_t rows = attention_rows_per_block(graph, node);
  return form.entries * ((form.queries + rows - 1) / rows) * kGeneratedKernelThreads;
}

GeneratedKernel generate_attention_kernel(const graph::Graph& graph, graph::NodeId id) {
  const graph::Node& node = graph.node(id);
  const AttentionForm form = attention_form(graph, node);
  const bool masked = node.inputs.size() == 4;
  const AttentionMask layout = attention_mask(graph, node);
  const char* t = node.dtype == graph::DType::bf16 ? "sx::graph::Bf16" : "float";
  const std::string signature_and_body = fmt::format(
      "(const {0}* __restrict__ operand0, const {0}* __restrict__ operand1, const {0}* __restrict__ operand2, "
      "{1}{0}* __restrict__ out, int64_t n) {{\n"
      "  (void)n;\n"
      "  const sx::device::cuda::AttentionForm form = {{{2}ll, {3}ll, {4}ll, {5}ll, {6}ll, {7}, {8}, {9}}};\n"
      "  const sx::device::cuda::AttentionMask mask = {{{10}, {{{11}}}, {{{12}}}, {13}ll, {14}ll}};\n"
      "  sx::device::cuda::attention_kernel<{0}, {15}, {5}, {6}>(operand0, operand1, operand2, {16}, out, form, "
      "mask);\n"
      "}}\n",
      t, masked ? "const bool* __restrict__ operand3, " : "", form.entries, form.queries, form.keys, form.depth,
      form.width, exactly(form.scale), exactly(form.excluded), form.causal, layout.batch_rank,
      int_list(layout.batch_shape, layout.batch_rank), int_list(layout.batch_stride, layout.batch_rank),
      layout.query_stride, layout.key_stride, attention_rows_per_block(graph, node), masked ? "operand3" : "nullptr");
  GeneratedKernel kernel;
  kernel.name = fmt::format("sx_attention_{:016x}", text_hash(signature_and_body));
  kernel.source = fmt::format(
      "#include \"graph/bf16.h\"\n"
      "#include \"device/cuda/attention_math.h\"\n\n"
      "extern \"C\" __global__ void __launch_bounds__({}) {}{}",
      kGeneratedKernelThreads, kernel.name, signature_and_body);
  return kernel;
}

}  // namespace sx::device::cuda
