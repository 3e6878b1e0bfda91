// The cases of the attention kernels' tests (the cpu device's and the cuda device's): a
// case's shapes and form, its graph, and its inputs (normal values, a mask that hides a
// quarter of the places and every place of its first row, a NaN and infinities).
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "graph/builder.h"
#include "util.h"

namespace sx::device::testing {

// One case: q [batch.., queries, depth], k [batch.., keys, depth], v [batch.., keys, width];
// the mask's shape (empty: no mask); whether q holds a NaN and v an infinity of each sign.
struct AttentionCase {
  Shape batch;
  int64_t queries, keys, depth, width;
  bool causal;
  Shape mask;
  bool edges = false;
};

// Sequences of 1 to 130 (odd lengths, several tiles or chunks of queries with a shorter
// last one), head dims of 1 to 96, with and without batch axes, plain, causal and masked
// (a mask over every axis, over some, over the keys alone), a NaN and infinities.
inline std::vector<AttentionCase> attention_cases() {
  return {
      {{}, 1, 1, 1, 1, false, {}},
      {{}, 3, 5, 2, 7, true, {}},
      {{2, 3}, 5, 7, 3, 3, false, {}},
      {{2, 3}, 7, 7, 5, 4, true, {}, true},
      {{2}, 17, 17, 16, 16, true, {}},
      {{3}, 33, 40, 96, 24, false, {33, 40}},
      {{2, 2}, 9, 11, 8, 8, true, {2, 1, 9, 11}},
      {{2}, 6, 13, 4, 5, false, {13}},
      {{1, 2}, 130, 130, 64, 64, true, {}},
      {{3}, 129, 65, 1, 2, false, {129, 65}},
      {{2}, 70, 7, 4, 3, true, {}},
  };
}

inline Shape with_matrix(Shape batch, int64_t rows, int64_t cols) {
  batch.insert(batch.end(), {rows, cols});
  return batch;
}

// Normal values, then `edges` (a NaN, an infinity) at elements 1, 8, 15, ...
inline Tensor normal_tensor(DType dtype, const Shape& shape, std::mt19937& random,
                            const std::vector<double>& edges = {}) {
  std::normal_distribution<double> normal(0.0, 2.0);
  std::vector<double> values(static_cast<size_t>(graph::numel(shape)));
  for (double& v : values) v = normal(random);
  for (size_t i = 0; i < edges.size() && 1 + i * 7 < values.size(); ++i) values[1 + i * 7] = edges[i];
  return Tensor::from_doubles(dtype, shape, values);
}

// A mask where about a quarter of the places may not be attended, and every place of its
// first row may not.
inline Tensor random_mask(const Shape& shape, std::mt19937& random) {
  std::bernoulli_distribution allowed(0.75);
  std::vector<double> values(static_cast<size_t>(graph::numel(shape)));
  for (double& v : values) v = allowed(random) ? 1 : 0;
  const int64_t first_row = shape.empty() ? 1 : shape.back();
  std::fill_n(values.begin(), first_row, 0.0);
  return Tensor::from_doubles(DType::boolean, shape, values);
}

// "f32 q [2, 3, 7, 5] k 7 v 4 causal mask []", for a test's trace.
inline std::string describe(const AttentionCase& c, DType dtype) {
  return fmt::format("{} q {} k {} v {}{} mask {}", graph::dtype_name(dtype),
                     graph::shape_str(with_matrix(c.batch, c.queries, c.depth)), c.keys, c.width,
                     c.causal ? " causal" : "", graph::shape_str(c.mask));
}

inline Graph attention_graph(const AttentionCase& c, DType dtype) {
  Graph graph;
  graph::Builder b(graph);
  std::vector<graph::NodeId> args{b.input("q", with_matrix(c.batch, c.queries, c.depth), dtype),
                                  b.input("k", with_matrix(c.batch, c.keys, c.depth), dtype),
                                  b.input("v", with_matrix(c.batch, c.keys, c.width), dtype)};
  if (!c.mask.empty()) args.push_back(b.input("mask", c.mask, DType::boolean));
  b.output("y", b.op("attention", args, {{"causal", int64_t{c.causal}}}));
  return graph;
}

inline std::vector<Tensor> attention_inputs(const AttentionCase& c, DType dtype, std::mt19937& random) {
  constexpr double kInfinity = std::numeric_limits<double>::infinity();
  const std::vector<double> nan = c.edges ? std::vector<double>{std::nan("")} : std::vector<double>{};
  const std::vector<double> infinities = c.edges ? std::vector<double>{kInfinity, -kInfinity} : std::vector<double>{};
  std::vector<Tensor> inputs{normal_tensor(dtype, with_matrix(c.batch, c.queries, c.depth), random, nan),
                             normal_tensor(dtype, with_matrix(c.batch, c.keys, c.depth), random),
                             normal_tensor(dtype, with_matrix(c.batch, c.keys, c.width), random, infinities)};
  if (!c.mask.empty()) inputs.push_back(random_mask(c.mask, random));
  return inputs;
}

}  // namespace sx::device::testing
