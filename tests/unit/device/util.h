// Helpers the device tests share: random tensors, running a graph on a
// device by name, and comparing a device's results with the reference's,
// bit for bit or within a tolerance stated per dtype.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "device/device.h"
#include "graph/builder.h"
#include "samples/samples.h"

namespace sx::device::testing {

using graph::DType;
using graph::Graph;
using graph::Shape;
using graph::Tensor;

// Random values that every dtype holds (the samples' values, samples.h).
using samples::random_tensor;

inline std::vector<Tensor> run_on(const std::string& device, const Graph& graph, const std::vector<Tensor>& inputs,
                                  int cores = 0) {
  return make_device(device, DeviceOptions{.cpu_cores = cores})->compile(graph)->run_host(inputs);
}

inline bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && a.bytes().size() == b.bytes().size() &&
         (a.bytes().empty() || std::memcmp(a.bytes().data(), b.bytes().data(), a.bytes().size()) == 0);
}

// Relative tolerance of one rounding in each float dtype's arithmetic (bf16
// computes in f32); 0 for the others.
inline double tolerance(DType dtype) {
  switch (dtype) {
    case DType::f32:
    case DType::bf16: return 2e-6;
    case DType::f64: return 1e-14;
    default: return 0;
  }
}

// One unit in the last place of a bf16 near x.
inline double bf16_ulp(double x) { return x == 0 ? 0 : std::ldexp(1.0, std::ilogb(x) - 7); }

// The unit roundoff of the arithmetic a float dtype computes in (bf16 computes in f32).
inline double unit_roundoff(DType dtype) { return std::ldexp(1.0, dtype == DType::f64 ? -53 : -24); }

// How far two sums of `length` terms, each of about unit size (the sweep's inputs are
// standard normal), may be apart when they add in different orders: each order's
// rounding errors are a random walk of `length` steps, each at most u times a partial
// sum, and a partial sum is at most about |result| + sqrt(length). Eight standard
// deviations: a real error (a term dropped or counted twice, about 1) fails it from
// lengths of 1 to 10^6. The worst-case bound, length * u * sum|x|, would accept an
// error of hundreds for the sweep's sum of 120,000 terms.
inline double sum_bound(DType dtype, double length, double result) {
  if (length <= 1) return 0;
  double root = std::sqrt(length);
  return 8 * unit_roundoff(dtype) * root * (std::fabs(result) + root);
}

// Empty when `actual` agrees with `expected`: the same bits when `exact`,
// else within tolerance(dtype) * (1 + |expected|) per element (one rounding),
// plus sum_bound when the element is a sum of `length` terms (matmul, sum),
// plus, for bf16, one bf16 ulp (two results a hair apart in f32 can round to
// neighbouring bf16s); NaN where the reference has NaN. Otherwise says where
// they differ.
inline std::string compare(const Tensor& actual, const Tensor& expected, bool exact, double length = 1) {
  if (actual.dtype() != expected.dtype() || actual.shape() != expected.shape()) {
    return fmt::format("got {}{}, want {}{}", graph::dtype_name(actual.dtype()), graph::shape_str(actual.shape()),
                       graph::dtype_name(expected.dtype()), graph::shape_str(expected.shape()));
  }
  if (exact || !graph::is_float(expected.dtype())) {
    if (same_bits(actual, expected)) return "";
    for (int64_t i = 0; i < actual.numel(); ++i) {
      double a = actual.value(i), e = expected.value(i);
      if (!(a == e || (std::isnan(a) && std::isnan(e))))
        return fmt::format("element {}: got {}, want {} (bits)", i, a, e);
    }
    return "bits differ (NaN payload or signed zero)";
  }
  double tol = tolerance(expected.dtype());
  for (int64_t i = 0; i < actual.numel(); ++i) {
    double a = actual.value(i), e = expected.value(i);
    if (std::isnan(e) != std::isnan(a)) return fmt::format("element {}: got {}, want {}", i, a, e);
    if (std::isnan(e) || a == e) continue;
    double bound = tol * (1 + std::fabs(e)) + sum_bound(expected.dtype(), length, e) +
                   (expected.dtype() == DType::bf16 ? bf16_ulp(e) : 0);
    if (!(std::fabs(a - e) <= bound)) return fmt::format("element {}: got {}, want {} (tolerance {})", i, a, e, bound);
  }
  return "";
}

// exp(-(y * y)) of the product y = x @ w, which nothing else reads: the product's epilogue.
inline Graph product_then_chain() {
  Graph graph;
  graph::Builder b(graph);
  graph::NodeId x = b.input("x", {4, 8}, DType::f32);
  graph::NodeId w = b.input("w", {8, 3}, DType::f32);
  graph::NodeId y = b.matmul(x, w);
  b.output("z", b.exp(b.neg(b.mul(y, y))));
  return graph;
}

}  // namespace sx::device::testing
