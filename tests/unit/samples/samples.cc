// Joining the families' records, and turning a sample into a graph with values.
#include "samples/samples.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "graph/errors.h"
#include "samples/families.h"

namespace sx::samples {

const std::vector<Record>& records() {
  static const std::vector<Record> all = [] {
    std::vector<Record> joined;
    for (auto family : {source_and_shape_records, elementwise_records, reduce_records, index_records, composite_records,
                        composite_gradient_records}) {
      for (Record& r : family()) joined.push_back(std::move(r));
    }
    std::ranges::sort(joined, {}, [](const Record& r) { return graph::index_of(r.id); });
    return joined;
  }();
  return all;
}

const Record* find_record(PrimId id) {
  auto it = std::ranges::find(records(), id, &Record::id);
  return it == records().end() ? nullptr : &*it;
}

std::optional<Instance> instantiate(const Sample& sample, DType dtype, std::mt19937& rng) {
  Instance instance;
  Builder b(instance.graph);
  std::vector<NodeId> xs;
  for (size_t i = 0; i < sample.inputs.size(); ++i) {
    instance.input_names.push_back(fmt::format("x{}", i));
    xs.push_back(b.input(instance.input_names.back(), sample.inputs[i].shape, sample.inputs[i].dtype.value_or(dtype)));
  }
  try {
    b.output("y", sample.build(b, xs, dtype));
  } catch (const graph::ShapeError&) {
    return std::nullopt;
  }
  for (const Input& in : sample.inputs) instance.inputs.push_back(draw(in, dtype, rng));
  return instance;
}

bool emits(const Graph& graph, PrimId id) {
  return std::ranges::any_of(graph.nodes, [id](const graph::Node& n) { return n.op() == id; });
}

Tensor random_tensor(DType dtype, Shape shape, std::mt19937& rng, bool positive) {
  int64_t n = graph::numel(shape);
  std::vector<double> values(static_cast<size_t>(n));
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_int_distribution<int> ints(positive || graph::is_unsigned(dtype) ? 1 : -20, 20);
  for (double& v : values) {
    if (dtype == DType::boolean) v = rng() % 2;
    else if (graph::is_float(dtype)) v = positive ? 0.1 + std::fabs(normal(rng)) * 2 : normal(rng);
    else v = ints(rng) + (graph::is_unsigned(dtype) ? 20 : 0);
  }
  return Tensor::from_doubles(dtype, std::move(shape), values);
}

Tensor draw(const Input& input, DType dtype, std::mt19937& rng) {
  DType t = input.dtype.value_or(dtype);
  const bool outside = input.domain.kind == Domain::Kind::index_or_outside;
  if (input.domain.kind != Domain::Kind::index && !outside) {
    return random_tensor(t, input.shape, rng, input.domain.kind == Domain::Kind::positive);
  }
  // -1 is below every axis; an unsigned dtype cannot hold it and gets 0.
  std::uniform_int_distribution<int64_t> pick(outside ? -1 : 0, input.domain.length - (outside ? 0 : 1));
  Tensor indices(t, input.shape);
  for (int64_t i = 0; i < indices.numel(); ++i) {
    indices.set_value(i, static_cast<double>(std::max<int64_t>(pick(rng), graph::is_unsigned(t) ? 0 : -1)));
  }
  return indices;
}

}  // namespace sx::samples
