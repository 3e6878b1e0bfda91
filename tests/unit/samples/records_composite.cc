// The records of the composites (prims/composite.cc, prims/update.cc): float results of
// a few steps each, with sums along a row (softmax, the norms, attention's products),
// compared within the bound of the terms a row adds up.
#include <fmt/format.h>

#include "graph/errors.h"
#include "samples/families.h"

namespace sx::samples {
namespace {

using graph::Attrs;

// A sample that emits `op` with `attrs` on every input, refusing dtypes other than the
// floats (and, where `f32_only`, other than f32).
Sample composite_sample(std::string op, std::string label, std::vector<Input> inputs, Attrs attrs, double summed,
                        bool large = false, bool f32_only = false) {
  return {.label = std::move(label),
          .inputs = std::move(inputs),
          .build =
              [op, attrs, f32_only](Builder& b, const std::vector<NodeId>& x, DType dtype) {
                if (!graph::is_float(dtype) || (f32_only && dtype != DType::f32)) {
                  throw graph::ShapeError(fmt::format("{}: floats only", op));
                }
                return b.op(op, x, attrs);
              },
          .summed = summed,
          .large = large};
}

Record over_axes_record(PrimId id) {
  const std::string op(graph::primitive(id).name);
  auto axes = [](std::vector<int64_t> a) { return Attrs{{"axes", std::move(a)}}; };
  return {.id = id,
          .samples = {composite_sample(op, "[3, 7] last axis", {{{3, 7}}}, axes({-1}), 7),
                      composite_sample(op, "[4, 5, 6] axis 1", {{{4, 5, 6}}}, axes({1}), 5),
                      composite_sample(op, "[4, 5, 6] axes 0 and 2", {{{4, 5, 6}}}, axes({0, 2}), 24),
                      composite_sample(op, "[7] its one axis", {{{7}}}, axes({0}), 7),
                      composite_sample(op, "[64, 2000] rows", {{{64, 2000}}}, axes({-1}), 2000, true)}};
}

Record layer_norm_record() {
  auto attrs = [](int64_t weight, int64_t bias) { return Attrs{{"eps", 1e-5}, {"weight", weight}, {"bias", bias}}; };
  return {.id = PrimId::layer_norm,
          .samples = {
              composite_sample("layer_norm", "[4, 8]", {{{4, 8}}}, attrs(0, 0), 8),
              composite_sample("layer_norm", "[2, 3, 8] with weight", {{{2, 3, 8}}, {{8}}}, attrs(1, 0), 8),
              composite_sample("layer_norm", "[4, 8] with bias", {{{4, 8}}, {{8}}}, attrs(0, 1), 8),
              composite_sample("layer_norm", "[4, 8] with weight and bias", {{{4, 8}}, {{8}}, {{8}}}, attrs(1, 1), 8),
              composite_sample("layer_norm", "[256, 768] with weight and bias", {{{256, 768}}, {{768}}, {{768}}},
                               attrs(1, 1), 768, true)}};
}

Record rms_norm_record() {
  auto attrs = [](int64_t weight) { return Attrs{{"eps", 1e-6}, {"weight", weight}}; };
  return {.id = PrimId::rms_norm,
          .samples = {
              composite_sample("rms_norm", "[4, 8]", {{{4, 8}}}, attrs(0), 8),
              composite_sample("rms_norm", "[2, 3, 8] with weight", {{{2, 3, 8}}, {{8}}}, attrs(1), 8),
              composite_sample("rms_norm", "[256, 768] with weight", {{{256, 768}}, {{768}}}, attrs(1), 768, true)}};
}

Record gelu_record() {
  std::vector<Sample> samples;
  for (std::string form : {"tanh", "erf"}) {
    Attrs attrs{{"form", form}};
    samples.push_back(composite_sample("gelu", form + " [3, 7]", {{{3, 7}}}, attrs, 1));
    samples.push_back(composite_sample("gelu", form + " scalar", {{{}}}, attrs, 1));
    samples.push_back(composite_sample("gelu", form + " [1024, 512]", {{{1024, 512}}}, attrs, 1, true));
  }
  return {.id = PrimId::gelu, .samples = std::move(samples)};
}

Record cross_entropy_record() {
  auto sample = [](Shape logits, DType targets, bool large = false) {
    Shape rows(logits.begin(), logits.end() - 1);
    const int64_t classes = logits.back();
    const double terms = static_cast<double>(graph::numel(logits));
    std::string label = fmt::format("{} with {} targets", graph::shape_str(logits), graph::dtype_name(targets));
    return composite_sample("cross_entropy", label,
                            {{std::move(logits)}, {std::move(rows), targets, Domain::index(classes)}}, {}, terms,
                            large);
  };
  return {.id = PrimId::cross_entropy,
          .samples = {sample({4, 5}, DType::i32), sample({2, 3, 5}, DType::i64), sample({5}, DType::i32),
                      sample({512, 256}, DType::i32, true)}};
}

Record attention_record() {
  auto causal = [](int64_t c) { return Attrs{{"causal", c}}; };
  return {.id = PrimId::attention,
          .samples = {
              composite_sample("attention", "[2, 3, 4] causal", {{{2, 3, 4}}, {{2, 3, 4}}, {{2, 3, 4}}}, causal(1), 12),
              composite_sample("attention", "[2, 3, 4] by [2, 5, 4] keys, values of 6",
                               {{{2, 3, 4}}, {{2, 5, 4}}, {{2, 5, 6}}}, causal(0), 20),
              composite_sample("attention", "[2, 3, 4] by 5 keys, masked",
                               {{{2, 3, 4}}, {{2, 5, 4}}, {{2, 5, 6}}, {{3, 5}, DType::boolean}}, causal(0), 20),
              composite_sample("attention", "[2, 4, 64, 32] causal",
                               {{{2, 4, 64, 32}}, {{2, 4, 64, 32}}, {{2, 4, 64, 32}}}, causal(1), 2048, true)}};
}

// An optimizer's operands: the parameter's shape for the tensors, [] for the scalars, the
// moments' and factors' values positive (a square root reads them).
Record adamw_record() {
  auto operands = [](Shape shape, bool decays) {
    std::vector<Input> in{{shape}, {shape}, {shape}, {shape, std::nullopt, Domain::positive()}};
    for (int i = 0; i < (decays ? 8 : 7); ++i) in.push_back({{}, std::nullopt, Domain::positive()});
    return in;
  };
  auto decay = [](int64_t d) { return Attrs{{"weight_decay", d}}; };
  return {.id = PrimId::adamw,
          .samples = {composite_sample("adamw", "[3, 4]", operands({3, 4}, false), decay(0), 1, false, true),
                      composite_sample("adamw", "[5] with weight decay", operands({5}, true), decay(1), 1, false, true),
                      composite_sample("adamw", "[512, 300]", operands({512, 300}, true), decay(1), 1, true, true)}};
}

Record sgd_record() {
  std::vector<Sample> samples;
  for (int64_t decays : {0, 1}) {
    for (int64_t momentum : {0, 1}) {
      std::vector<Input> in{{{3, 4}}, {{3, 4}}, {{}}};
      if (decays) in.push_back({{}});
      if (momentum) in.insert(in.end(), {{{3, 4}}, {{}}, {{}, DType::boolean}});
      samples.push_back(composite_sample("sgd", fmt::format("[3, 4] weight decay {} momentum {}", decays, momentum),
                                         std::move(in), {{"weight_decay", decays}, {"momentum", momentum}}, 1, false,
                                         true));
    }
  }
  return {.id = PrimId::sgd, .samples = std::move(samples)};
}

Record part_record() {
  std::vector<Sample> samples;
  for (int64_t index : {0, 2}) {
    samples.push_back({.label = fmt::format("[3, 4, 5] value {}", index),
                       .inputs = {{{3, 4, 5}}},
                       .build = [index](Builder& b, const std::vector<NodeId>& x, DType) {
                         return b.op("part", {x[0]}, {{"index", index}});
                       }});
  }
  return {.id = PrimId::part, .exact = true, .samples = std::move(samples)};
}

}  // namespace

std::vector<Record> composite_records() {
  return {over_axes_record(PrimId::softmax),
          over_axes_record(PrimId::log_softmax),
          layer_norm_record(),
          rms_norm_record(),
          gelu_record(),
          cross_entropy_record(),
          attention_record(),
          adamw_record(),
          sgd_record(),
          part_record()};
}

}  // namespace sx::samples
