// Helpers the graph tests share: making tensors, evaluating small graphs on
// the reference device (or another, by name), and comparing values.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

#include "device/device.h"
#include "device/reference/reference.h"
#include "graph/builder.h"

namespace sx::graph::testing {

inline Tensor tensor(DType dtype, Shape shape, std::vector<double> values) {
  return Tensor::from_doubles(dtype, std::move(shape), values);
}

inline std::vector<Tensor> run(const Graph& graph, const std::vector<Tensor>& inputs = {}) {
  return device::run_reference(graph, inputs);
}

// The graph on a device by name (reference, cpu).
inline std::vector<Tensor> run_on(std::string_view device, const Graph& graph, const std::vector<Tensor>& inputs) {
  return device::make_device(device)->compile(graph)->run_host(inputs);
}

// Builds a graph without inputs whose one output is what `build` returns, and runs it.
inline Tensor eval(const std::function<NodeId(Builder&)>& build) {
  Graph graph;
  Builder b(graph);
  b.output("out", build(b));
  return run(graph)[0];
}

inline void expect_tensor(const Tensor& actual, DType dtype, const Shape& shape, const std::vector<double>& values,
                          double tolerance = 1e-6) {
  EXPECT_EQ(dtype_name(actual.dtype()), dtype_name(dtype));
  EXPECT_EQ(shape_str(actual.shape()), shape_str(shape));
  std::vector<double> got = actual.to_doubles();
  ASSERT_EQ(got.size(), values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    if (std::isnan(values[i])) EXPECT_TRUE(std::isnan(got[i])) << "element " << i;
    else EXPECT_NEAR(got[i], values[i], tolerance) << "element " << i;
  }
}

}  // namespace sx::graph::testing
