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

// Rows of normal values of standard deviation `deviation`, row r then changed by
// edge(row, r, length).
template <class Edge>
graph::Tensor normal_rows(graph::DType dtype, int64_t rows, int64_t length, std::mt19937& random, double deviation,
                          Edge edge) {
  std::normal_distribution<double> normal(0.0, deviation);
  std::vector<double> v(static_cast<size_t>(rows * length));
  for (int64_t r = 0; r < rows; ++r) {
    double* row = v.data() + r * length;
    for (int64_t i = 0; i < length; ++i) row[i] = normal(random);
    edge(row, r, length);
  }
  return graph::Tensor::from_doubles(dtype, {rows, length}, v);
}

// Rows of x: normal values, and rows at the edges.
inline graph::Tensor rows_of_values(graph::DType dtype, int64_t rows, int64_t length, std::mt19937& random) {
  constexpr double kInfinity = std::numeric_limits<double>::infinity();
  return normal_rows(dtype, rows, length, random, 2.0, [](double* row, int64_t r, int64_t length) {
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
  });
}

}  // namespace sx::device::testing
