// Operands of the GEMM's tests (gemm_test.cc, gemm_amx_test.cc), and the oracle of
// gemm.h's rule: fmaf over k in order for f32, over k = 1, 0, 3, 2, ... with
// subnormals flushed for bf16.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "device/cpu/products/gemm.h"
#include "graph/tensor.h"

namespace sx::device::testing {

struct Operand {
  std::vector<float> f32;
  std::vector<graph::Bf16> bf16;
  int64_t rows = 0, cols = 0;  // strides in elements
  int64_t offset = 0;          // elements before (0, 0)
  bool is_bf16 = false;
  float at(int64_t i, int64_t j) const {
    int64_t k = offset + i * rows + j * cols;
    return is_bf16 ? static_cast<float>(bf16[static_cast<size_t>(k)]) : f32[static_cast<size_t>(k)];
  }
  cpu::MatrixRef ref() const {
    return {.data = is_bf16 ? static_cast<const void*>(bf16.data() + offset) : f32.data() + offset,
            .rows = rows,
            .cols = cols,
            .bf16 = is_bf16};
  }
};

// A [r, c] matrix of N(0, 1) values, stored row-major or transposed: `offset`
// elements before it and `pad` after each of its lines (rows, or columns when
// transposed), so its lines are views of a wider matrix.
inline Operand random_operand(int64_t r, int64_t c, bool transposed, bool bf16, std::mt19937& rng, int64_t pad = 0,
                              int64_t offset = 0) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Operand o;
  o.is_bf16 = bf16;
  o.rows = transposed ? 1 : c + pad;
  o.cols = transposed ? r + pad : 1;
  o.offset = offset;
  const int64_t lines = transposed ? c : r, line = (transposed ? r : c) + pad;
  for (int64_t i = 0; i < offset + lines * line; ++i) {
    float v = normal(rng);
    if (bf16) o.bf16.emplace_back(v);
    else o.f32.push_back(v);
  }
  return o;
}

inline float flushed(float x) { return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.0f, x) : x; }

inline std::vector<float> oracle(const Operand& a, const Operand& b, int64_t m, int64_t n, int64_t k) {
  std::vector<float> c(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      float acc = 0.0f;
      for (int64_t step = 0; step < k; ++step) {
        if (!a.is_bf16) {
          acc = std::fmaf(a.at(i, step), b.at(step, j), acc);
          continue;
        }
        int64_t p = (step ^ 1) < k ? step ^ 1 : step;
        acc = flushed(std::fmaf(flushed(a.at(i, p)), flushed(b.at(p, j)), acc));
      }
      c[static_cast<size_t>(i * n + j)] = acc;
    }
  }
  return c;
}

}  // namespace sx::device::testing
