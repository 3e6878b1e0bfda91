// The kernel of the attention composite (forward), in f32 and bf16. It gives the bits the
// plan gives for the decomposition (graph/prims/composite.cc): for each entry of the batch
// axes, a chunk of queries at a time, the scores q k^T by the plan's product code (gemm.h:
// a sum's bits depend on K alone, so a chunk's are the whole product's), a bf16 product's
// sums rounded to bf16 as the plan rounds them; each score divided by the literal sqrt(d)
// and rounded to the node's dtype, replaced by the literal -1e9 where the causal form or
// the mask says; the softmax kernel of composite_rows.h over each row; then the weights
// times v by the same product code. A chunk's scores and weights stay in the part's chunk
// of the plan's shared scratch, a few tens of kilobytes, never in the arena. Parts (one per
// thread) take whole chunks, so the bits do not depend on the thread count.
#include <algorithm>
#include <cmath>
#include <memory>
#include <type_traits>
#include <vector>

#include "device/cpu/kernels.h"
#include "device/cpu/kernels/composite_rows.h"
#include "device/cpu/products/gemm.h"
#include "device/cpu/products/operands.h"

namespace sx::device::cpu {
namespace {

using namespace composite_rows;
using graph::DType;
using graph::Node;

// Scores a part holds at once (floats): a chunk of queries' rows stays in L2. The causal
// form takes chunks of a few rows, each computing the scores of the keys its last query
// sees: the others are replaced whatever their value.
constexpr int64_t kChunkScores = 1 << 14, kCausalChunk = 32;
constexpr int64_t kLineFloats = static_cast<int64_t>(kCacheLine / sizeof(float));

int64_t whole_lines(int64_t floats) { return (floats + kLineFloats - 1) / kLineFloats * kLineFloats; }

// An operand's first element (from `offset`, by its batch axes' `strides`) for each
// entry of the batch axes `batch`.
std::vector<int64_t> entry_offsets(const graph::Shape& batch, const std::vector<int64_t>& strides, int64_t offset) {
  std::vector<int64_t> offsets(static_cast<size_t>(graph::numel(batch)), offset);
  for (size_t e = 0; e < offsets.size(); ++e) {
    auto rest = static_cast<int64_t>(e);
    for (size_t d = batch.size(); d-- > 0;) {
      offsets[e] += rest % batch[d] * strides[d];
      rest /= batch[d];
    }
  }
  return offsets;
}

// How the step reads an operand: its matrices' strides and each entry's first element.
struct Operand {
  std::vector<int64_t> offsets;
  int64_t rows = 0, cols = 1;
};

Operand operand_of(const StepContext& c, const Node& node, size_t input, const graph::Shape& batch) {
  const OperandLayout layout = operand_layout(c, node, input);
  return {
      .offsets = entry_offsets(batch, layout.batch_strides, layout.offset), .rows = layout.rows, .cols = layout.cols};
}

// The mask's strides over the scores' axes (0 along an axis it broadcasts over).
Operand mask_of(const Node& mask, const graph::Shape& scores) {
  const size_t rank = scores.size(), offset = rank - mask.shape.size();
  const std::vector<int64_t> own = graph::row_major_strides(mask.shape);
  std::vector<int64_t> strides(rank, 0);
  for (size_t d = offset; d < rank; ++d) strides[d] = mask.shape[d - offset] == 1 ? 0 : own[d - offset];
  const graph::Shape batch(scores.begin(), scores.end() - 2);
  return {.offsets = entry_offsets(batch, strides, 0), .rows = strides[rank - 2], .cols = strides[rank - 1]};
}

// A part's products: the scores of each chunk of queries (causal: each sees its own keys)
// or of a whole chunk and of the last, shorter one; the weights times v of those two.
struct PartProducts {
  std::vector<std::unique_ptr<Gemm>> scores;
  std::unique_ptr<Gemm> mixed[2];
};

template <class S>
struct AttentionKernel {
  static constexpr bool kBf16 = std::is_same_v<S, graph::Bf16>;

  int64_t entries = 0, queries = 0, keys = 0, depth = 0, width = 0;
  int64_t chunk = 1, chunks = 1;
  Operand q, k, v, mask;
  bool causal = false, masked = false;
  float scale = 1, excluded = 0;  // the literals sqrt(d) and -1e9 in the node's dtype
  const MathKernels* math = nullptr;
  int threads = 1;
  std::vector<PartProducts> parts;
  // A part's floats of scratch: the f32 scores, then (bf16) the rounded scores and the
  // f32 sums of the output's chunk.
  int64_t part_floats = 0, rounded_at = 0, sums_at = 0;
  SharedScratch* scratch = nullptr;
  SharedScratch own_scratch;

  void run(const uint8_t* const* in, uint8_t* out) const {
    const auto* q_data = reinterpret_cast<const S*>(in[0]);
    const auto* k_data = reinterpret_cast<const S*>(in[1]);
    const auto* v_data = reinterpret_cast<const S*>(in[2]);
    const auto* mask_data = masked ? in[3] : nullptr;
    S* const y = reinterpret_cast<S*>(out);
    float* const base = reinterpret_cast<float*>(scratch->data.get());
    parallel_parts(entries * chunks, threads, [&](int part, int64_t begin, int64_t end) {
      Block storage;
      float* const floats = base + part * part_floats;
      const PartProducts& products = parts[static_cast<size_t>(part)];
      for (int64_t unit = begin; unit < end; ++unit) {
        const int64_t e = unit / chunks, first = unit % chunks * chunk;
        const int64_t rows = std::min(chunk, queries - first);
        const int tail = rows == chunk ? 0 : 1;
        S* scores = kBf16 ? reinterpret_cast<S*>(floats + rounded_at) : reinterpret_cast<S*>(floats);
        products.scores[static_cast<size_t>(causal ? unit % chunks : tail)]->run(
            {.data = q_data + q.offsets[e] + first * q.rows, .rows = q.rows, .cols = q.cols, .bf16 = kBf16},
            {.data = k_data + k.offsets[e], .rows = k.cols, .cols = k.rows, .bf16 = kBf16}, floats, keys,
            kBf16 ? reinterpret_cast<graph::Bf16*>(scores) : nullptr);
        for (int64_t r = 0; r < rows; ++r) {
          const uint8_t* allowed = masked ? mask_data + mask.offsets[e] + (first + r) * mask.rows : nullptr;
          scaled_row(scores + r * keys, first + r, allowed, storage.floats);
        }
        S* const mixed = y + (e * queries + first) * width;
        float* const sums = kBf16 ? floats + sums_at : reinterpret_cast<float*>(mixed);
        products.mixed[tail]->run({.data = scores, .rows = keys, .cols = 1, .bf16 = kBf16},
                                  {.data = v_data + v.offsets[e], .rows = v.rows, .cols = v.cols, .bf16 = kBf16}, sums,
                                  width, kBf16 ? reinterpret_cast<graph::Bf16*>(mixed) : nullptr);
      }
    });
  }

  // A row of scores of query `query`: divided by sqrt(d), masked, then its softmax.
  // The keys the causal form lets the query see are divided (a loop the compiler makes
  // into vectors), the others replaced.
  void scaled_row(S* row, int64_t query, const uint8_t* allowed, float* block) const {
    const int64_t seen = causal ? std::min(keys, query + 1) : keys;
    for (int64_t j = 0; j < seen; ++j) row[j] = S(rounded<S>(static_cast<float>(row[j]) / scale));
    std::fill(row + seen, row + keys, S(excluded));
    if (allowed != nullptr) {
      for (int64_t j = 0; j < seen; ++j) {
        if (allowed[j * mask.cols] == 0) row[j] = S(excluded);
      }
    }
    softmax_row(row, row, keys, math, block);
  }
};

template <class S>
Step attention_step(const StepContext& c, const Node& node) {
  const Node& query = c.graph.node(node.inputs[0]);
  const Node& key = c.graph.node(node.inputs[1]);
  const size_t rank = node.shape.size();
  const graph::Shape batch(node.shape.begin(), node.shape.end() - 2);
  auto kernel = std::make_shared<AttentionKernel<S>>();
  AttentionKernel<S>& a = *kernel;
  a.entries = graph::numel(batch);
  a.queries = node.shape[rank - 2];
  a.width = node.shape[rank - 1];
  a.keys = key.shape[rank - 2];
  a.depth = query.shape[rank - 1];
  a.q = operand_of(c, node, 0, batch);
  a.k = operand_of(c, node, 1, batch);
  a.v = operand_of(c, node, 2, batch);
  a.causal = node.attrs.get_int("causal") != 0;
  a.masked = node.inputs.size() == 4;
  if (a.masked) {
    graph::Shape scores = batch;
    scores.insert(scores.end(), {a.queries, a.keys});
    a.mask = mask_of(c.graph.node(node.inputs[3]), scores);
  }
  a.scale = literal_in(node.dtype, std::sqrt(static_cast<double>(a.depth)));
  a.excluded = literal_in(node.dtype, -1e9);
  a.math = math_kernels_for(c.kernels.isa);
  a.chunk = std::clamp<int64_t>(kChunkScores / a.keys, 1, a.queries);
  if (a.causal) a.chunk = std::min(a.chunk, kCausalChunk);
  a.chunks = (a.queries + a.chunk - 1) / a.chunk;
  // About 10 microseconds of one core's FMA peak per thread at least, as a product's.
  const double flops =
      2.0 * static_cast<double>(a.entries * a.queries * a.keys) * static_cast<double>(a.depth + a.width);
  a.threads = flops < 2e6 ? 1 : static_cast<int>(std::min<int64_t>(c.cores, a.entries * a.chunks));
  const int64_t tail = a.queries - (a.chunks - 1) * a.chunk;
  const int64_t rows[2] = {a.chunk, tail};
  const int sizes = tail == a.chunk ? 1 : 2;  // of chunks: a whole one, and the last one
  for (int part = 0; part < a.threads; ++part) {
    PartProducts& products = a.parts.emplace_back();
    const auto product = [&](int64_t m, int64_t n, int64_t k) {
      return std::make_unique<Gemm>(c.kernels, m, n, k, 1, AttentionKernel<S>::kBf16, c.gemm_scratch, part);
    };
    for (int t = 0; t < sizes; ++t) products.mixed[t] = product(rows[t], a.width, a.keys);
    if (!a.causal) {
      for (int t = 0; t < sizes; ++t) products.scores.push_back(product(rows[t], a.keys, a.depth));
      continue;
    }
    for (int64_t first = 0; first < a.queries; first += a.chunk) {
      const int64_t last = std::min(a.queries, first + a.chunk);  // the chunk's queries see keys below it
      products.scores.push_back(product(last - first, std::min(a.keys, last), a.depth));
    }
  }
  const int64_t scores = a.chunk * a.keys;
  a.rounded_at = whole_lines(scores);
  a.sums_at = a.rounded_at + (AttentionKernel<S>::kBf16 ? whole_lines((scores + 1) / 2) : 0);
  a.part_floats = a.sums_at + (AttentionKernel<S>::kBf16 ? whole_lines(a.chunk * a.width) : 0);
  a.scratch = c.scratch != nullptr ? c.scratch : &a.own_scratch;
  a.scratch->reserve(static_cast<size_t>(a.threads * a.part_floats) * sizeof(float));
  return [kernel](const uint8_t* const* in, uint8_t* out) { kernel->run(in, out); };
}

}  // namespace

bool runs_attention(const graph::Graph& graph, const Node& node) {
  if (node.inputs.size() != 3 && node.inputs.size() != 4) return false;
  const Node &q = graph.node(node.inputs[0]), &k = graph.node(node.inputs[1]), &v = graph.node(node.inputs[2]);
  const size_t rank = node.shape.size();
  if (rank < 2 || graph::numel(node.shape) == 0 || (node.dtype != DType::f32 && node.dtype != DType::bf16)) {
    return false;
  }
  const auto batch_of = [](const graph::Shape& s) { return graph::Shape(s.begin(), s.end() - 2); };
  for (const Node* operand : {&q, &k, &v}) {
    if (operand->dtype != node.dtype || operand->shape.size() != rank) return false;
    if (batch_of(operand->shape) != batch_of(node.shape)) return false;
  }
  const int64_t keys = k.shape[rank - 2];
  if (q.shape[rank - 2] != node.shape[rank - 2] || k.shape[rank - 1] != q.shape[rank - 1] || keys == 0 ||
      q.shape[rank - 1] == 0 || v.shape[rank - 2] != keys || v.shape[rank - 1] != node.shape[rank - 1]) {
    return false;
  }
  if (node.inputs.size() == 3) return true;
  const Node& mask = graph.node(node.inputs[3]);
  if (mask.dtype != DType::boolean || mask.shape.size() > rank) return false;
  graph::Shape scores = batch_of(node.shape);
  scores.insert(scores.end(), {node.shape[rank - 2], keys});
  const size_t offset = rank - mask.shape.size();
  for (size_t d = 0; d < mask.shape.size(); ++d) {
    if (mask.shape[d] != 1 && mask.shape[d] != scores[d + offset]) return false;
  }
  return true;
}

int absorbs_attention_operand(const graph::Graph& graph, const Node& node, size_t input, const KernelSet&) {
  const Node& operand = graph.node(node.inputs[input]);
  if (input > 2 || operand.op() != graph::PrimId::transpose || graph::numel(node.shape) == 0) return 0;
  return slice_view(graph, operand) ? 2 : 1;
}

Step make_attention_step(const StepContext& context, const Node& node) {
  return by_float_dtype(node.dtype,
                        [&](auto types) { return attention_step<typename decltype(types)::storage>(context, node); });
}

}  // namespace sx::device::cpu
