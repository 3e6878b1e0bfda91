// The cases of the composite kernels' tests: each composite form (the forward kernels'
// and their gradients'), and the values they give x (rows of normal values and rows at
// the edges: -inf, ties, large magnitudes, NaN, a row of -inf), a cotangent and a norm's
// weight or bias.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "formula_cases.h"
#include "graph/attrs.h"
#include "graph/builder.h"
#include "graph/tensor.h"
#include "util.h"

namespace sx::device::testing {

// One composite form: its primitive, attributes and how many row-long operands
// (weight, bias) follow x.
struct Form {
  std::string label;
  std::string op;
  graph::Attrs attrs;
  int row_operands = 0;
};

inline void PrintTo(const Form& form, std::ostream* out) { *out << form.label; }

inline std::vector<Form> forms() {
  const auto flag = [](bool on) { return int64_t{on}; };
  std::vector<Form> all = {
      {"softmax", "softmax", {}, 0},
      {"log_softmax", "log_softmax", {}, 0},
      {"gelu_tanh", "gelu", {{"form", std::string("tanh")}}, 0},
      {"gelu_erf", "gelu", {{"form", std::string("erf")}}, 0},
      {"rms_norm", "rms_norm", {{"eps", 1e-6}, {"weight", flag(false)}}, 0},
      {"rms_norm_weight", "rms_norm", {{"eps", 1e-6}, {"weight", flag(true)}}, 1},
  };
  for (bool weight : {false, true}) {
    for (bool bias : {false, true}) {
      all.push_back({fmt::format("layer_norm{}{}", weight ? "_weight" : "", bias ? "_bias" : ""),
                     "layer_norm",
                     {{"eps", 1e-5}, {"weight", flag(weight)}, {"bias", flag(bias)}},
                     int{weight} + int{bias}});
    }
  }
  return all;
}

// The inputs of `form` over `rows` rows of `length`: x, then its row operands.
inline std::vector<graph::NodeId> form_inputs(graph::Builder& b, const Form& form, graph::DType dtype, int64_t rows,
                                              int64_t length) {
  std::vector<graph::NodeId> args{b.input("x", {rows, length}, dtype)};
  for (int k = 0; k < form.row_operands; ++k) args.push_back(b.input(fmt::format("p{}", k), {length}, dtype));
  return args;
}

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

// Rows of x: normal values, and rows at the edges (the seventh's max a signed zero).
inline graph::Tensor rows_of_values(graph::DType dtype, int64_t rows, int64_t length, std::mt19937& random) {
  constexpr double kInfinity = std::numeric_limits<double>::infinity();
  return normal_rows(dtype, rows, length, random, 2.0, [](double* row, int64_t r, int64_t n) {
    switch (r % 6) {
      case 1: row[n / 2] = -kInfinity; break;
      case 2: std::fill(row, row + n, 1.25); break;  // ties
      case 3:
        for (int64_t i = 0; i < n; ++i) row[i] *= 1e18;  // large magnitudes
        row[0] = 3e38;
        break;
      case 4: row[n - 1] = std::numeric_limits<double>::quiet_NaN(); break;
      case 5: std::fill(row, row + n, -kInfinity); break;
      default:
        if (r == 0) break;
        // Its max a zero of both signs, -0 first: whose sign a max keeps is its order's.
        for (int64_t i = 0; i < n; ++i) row[i] = -std::abs(row[i]);
        row[n / 3] = -0.0;
        row[n - 1] = 0.0;
        break;
    }
  });
}

// Cotangents of a composite's value: normal values, and rows at the edges (large
// magnitudes, zeros, a NaN).
inline graph::Tensor cotangent_rows(graph::DType dtype, int64_t rows, int64_t length, std::mt19937& random) {
  return normal_rows(dtype, rows, length, random, 1.0, [](double* row, int64_t r, int64_t n) {
    switch (r % 4) {
      case 1:
        for (int64_t i = 0; i < n; ++i) row[i] *= 1e30;  // large magnitudes
        break;
      case 2: std::fill(row, row + n / 2, 0.0); break;
      case 3: row[0] = std::numeric_limits<double>::quiet_NaN(); break;
      default: break;
    }
  });
}

// A weight or a bias.
inline graph::Tensor row_operand(graph::DType dtype, int64_t length, std::mt19937& random) {
  std::normal_distribution<double> normal(1.0, 0.5);
  std::vector<double> v(static_cast<size_t>(length));
  for (double& w : v) w = normal(random);
  return graph::Tensor::from_doubles(dtype, {length}, v);
}

// The inputs of `form`'s gradient with respect to x: x, its row operands and the
// cotangent.
inline std::vector<graph::Tensor> gradient_inputs(const Form& form, graph::DType dtype, int64_t rows, int64_t length,
                                                  std::mt19937& random) {
  std::vector<graph::Tensor> inputs{rows_of_values(dtype, rows, length, random)};
  for (int k = 0; k < form.row_operands; ++k) inputs.push_back(row_operand(dtype, length, random));
  inputs.push_back(cotangent_rows(dtype, rows, length, random));
  return inputs;
}

}  // namespace sx::device::testing
