// How far the cuda device's attention may be from its decomposition's (the reference's):
// the bound of the kernel's rounding, for cuda_attention_test.cc and the cuda sweep.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "device/cuda/codegen.h"
#include "util.h"

namespace sx::device::testing {

// The attention node of a case's graph: its output.
inline const graph::Node& attention_node(const Graph& graph) { return graph.node(graph.outputs[0].node); }

// The values of q, k or v (f32 or bf16), as floats.
inline std::vector<float> floats_of(const Tensor& tensor) {
  std::vector<float> values(static_cast<size_t>(tensor.numel()));
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(tensor.value(static_cast<int64_t>(i)));
  return values;
}

// How far the kernel's value of an output element may be from the decomposition's, for a
// row whose scores before cancellation are at most `magnitude` (the largest sum of
// |q_c k_c| / sqrt(depth) over its keys) and whose column of v is at most `largest` in
// magnitude: u (2 keys + 8 + 2 depth magnitude) largest, u the unit roundoff of f32 (the
// sums of the weights and of the products in other orders, exp, the division; a score's
// rounding moving its weight), and for bf16 2^-8 (4 + 2 magnitude) largest (the
// decomposition's weights rounded to bf16, a score rounded to the neighbouring bf16) and
// one bf16 ulp of the value (each rounds its result).
inline double attention_bound(DType dtype, int64_t keys, int64_t depth, double magnitude, double largest,
                              double value) {
  const double u = std::ldexp(1.0, -24);
  double bound = u * (2.0 * static_cast<double>(keys) + 8 + 2.0 * static_cast<double>(depth) * magnitude) * largest;
  if (dtype == DType::bf16) bound += std::ldexp(1.0, -8) * (4 + 2 * magnitude) * largest + bf16_ulp(value);
  return bound;
}

// Empty where `actual` (the kernel's arithmetic) is within attention_bound of `expected`
// (the decomposition's) at every element, a non-finite value the same (NaN where NaN);
// else the first element that is not.
inline std::string compare_attention(const Graph& graph, const std::vector<Tensor>& inputs, const Tensor& actual,
                                     const Tensor& expected) {
  const cuda::AttentionForm form = cuda::attention_form(graph, attention_node(graph));
  const std::vector<float> q = floats_of(inputs[0]), k = floats_of(inputs[1]), v = floats_of(inputs[2]);
  for (int64_t e = 0; e < form.entries; ++e) {
    for (int64_t i = 0; i < form.queries; ++i) {
      double magnitude = 0;
      for (int64_t j = 0; j < form.keys; ++j) {
        double sum = 0;
        for (int64_t c = 0; c < form.depth; ++c) {
          sum += std::fabs(q[static_cast<size_t>((e * form.queries + i) * form.depth + c)] *
                           k[static_cast<size_t>((e * form.keys + j) * form.depth + c)]);
        }
        magnitude = std::max(magnitude, sum / form.scale);
      }
      for (int64_t c = 0; c < form.width; ++c) {
        double largest = 0;
        for (int64_t j = 0; j < form.keys; ++j) {
          largest = std::max<double>(largest, std::fabs(v[static_cast<size_t>((e * form.keys + j) * form.width + c)]));
        }
        const int64_t at = (e * form.queries + i) * form.width + c;
        const double a = actual.value(at), want = expected.value(at);
        const bool same = a == want || (std::isnan(a) && std::isnan(want));
        if (same) continue;
        const double bound = attention_bound(actual.dtype(), form.keys, form.depth, magnitude, largest, want);
        if (!std::isfinite(want) || !(std::fabs(a - want) <= bound)) {
          return fmt::format("entry {} query {} column {}: got {}, want {} (bound {})", e, i, c, a, want, bound);
        }
      }
    }
  }
  return "";
}

}  // namespace sx::device::testing
