// The record of composite_gradient (prims/composite_gradient.cc): the gradient of each
// composite differentiated by its decomposition, for each of its float inputs, on the
// small shapes of the composites' own records. Its finite differences check a gradient's
// gradient, which is a composite_gradient of a composite_gradient.
#include <fmt/format.h>

#include "graph/composite.h"
#include "graph/errors.h"
#include "samples/families.h"

namespace sx::samples {
namespace {

using graph::Attrs;

// The gradient of `of` for its input `input`: the sample's inputs are the composite's,
// then the cotangent of its value (of shape `value`); floats only.
Sample gradient_sample(std::string of, std::vector<Input> inputs, Attrs attrs, size_t input, Shape value,
                       double summed) {
  std::string label = fmt::format("{} input {}", of, input);
  for (const Input& in : inputs) label += " " + graph::shape_str(in.shape);
  inputs.push_back({std::move(value)});
  return {.label = std::move(label),
          .inputs = std::move(inputs),
          .build =
              [of, attrs, input](Builder& b, const std::vector<NodeId>& x, DType dtype) {
                if (!graph::is_float(dtype)) throw graph::ShapeError("composite_gradient: floats only");
                return b.op("composite_gradient", x, graph::gradient_attrs(graph::primitive(of), input, attrs));
              },
          .summed = summed};
}

}  // namespace

std::vector<Record> composite_gradient_records() {
  const Attrs last_axis{{"axes", std::vector<int64_t>{-1}}};
  const Attrs norm{{"eps", 1e-5}, {"weight", int64_t{1}}, {"bias", int64_t{1}}};
  const Attrs rms{{"eps", 1e-6}, {"weight", int64_t{1}}};
  std::vector<Sample> samples{
      gradient_sample("softmax", {{{3, 7}}}, last_axis, 0, {3, 7}, 7),
      gradient_sample("softmax", {{{4, 5, 6}}}, {{"axes", std::vector<int64_t>{0, 2}}}, 0, {4, 5, 6}, 24),
      gradient_sample("log_softmax", {{{3, 7}}}, last_axis, 0, {3, 7}, 7),
      gradient_sample("rms_norm", {{{2, 3, 8}}, {{8}}}, rms, 0, {2, 3, 8}, 8),
      gradient_sample("rms_norm", {{{2, 3, 8}}, {{8}}}, rms, 1, {2, 3, 8}, 48),
      gradient_sample("gelu", {{{3, 7}}}, {{"form", std::string("tanh")}}, 0, {3, 7}, 1),
      gradient_sample("gelu", {{{3, 7}}}, {{"form", std::string("erf")}}, 0, {3, 7}, 1),
      gradient_sample("cross_entropy", {{{4, 5}}, {{4}, DType::i32, Domain::index(5)}}, {}, 0, {}, 20),
      gradient_sample("attention", {{{2, 3, 4}}, {{2, 5, 4}}, {{2, 5, 6}}, {{3, 5}, DType::boolean}},
                      {{"causal", int64_t{0}}}, 0, {2, 3, 6}, 20),
  };
  for (size_t input : {0, 1, 2})
    samples.push_back(gradient_sample("layer_norm", {{{4, 8}}, {{8}}, {{8}}}, norm, input, {4, 8}, 32));
  for (size_t input : {0, 1, 2}) {
    samples.push_back(gradient_sample("attention", {{{2, 3, 4}}, {{2, 3, 4}}, {{2, 3, 4}}}, {{"causal", int64_t{1}}},
                                      input, {2, 3, 4}, 12));
  }
  return {{.id = PrimId::composite_gradient, .samples = std::move(samples)}};
}

}  // namespace sx::samples
