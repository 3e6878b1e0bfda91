// Values the composite kernels' tests give x: rows of normal values and rows at the
// edges (-inf, ties, large magnitudes, NaN, a row of -inf).
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "graph/tensor.h"

namespace sx::device::testing {

// Rows of x: normal values, and rows at the edges.
inline graph::Tensor rows_of_values(graph::DType dtype, int64_t rows, int64_t length, std::mt19937& random) {
  constexpr double kInfinity = std::numeric_limits<double>::infinity();
  std::normal_distribution<double> normal(0.0, 2.0);
  std::vector<double> v(static_cast<size_t>(rows * length));
  for (int64_t r = 0; r < rows; ++r) {
    double* row = v.data() + r * length;
    for (int64_t i = 0; i < length; ++i) row[i] = normal(random);
    switch (r % 6) {
      case 1: row[length / 2] = -kInfinity; break;
      case 2: std::fill(row, row + length, 1.25); break;  // ties
      case 3:
        for (int64_t i = 0; i < length; ++i) row[i] *= 1e18;  // large magnitudes
        row[0] = 3e38;
        break;
      case 4: row[length - 1] = std::numeric_limits<double>::quiet_NaN(); break;
      case 5: std::fill(row, row + length, -kInfinity); break;
      default: break;
    }
  }
  return graph::Tensor::from_doubles(dtype, {rows, length}, v);
}

}  // namespace sx::device::testing
