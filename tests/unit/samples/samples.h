// One sample record per primitive: the inputs it is tried on (shapes, dtypes,
// domains), the builder call that emits it, and how closely two devices' results
// must agree. Every primitive test reads these records (kernels' completeness,
// finite differences, batching, JSON, the device sweep), so a new primitive is
// its row in src/graph/prims/ and one record here (records_*.cc, by family).
#pragma once

#include <functional>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "graph/builder.h"
#include "graph/primitive.h"

namespace sx::samples {

using graph::Builder;
using graph::DType;
using graph::Graph;
using graph::NodeId;
using graph::PrimId;
using graph::Shape;
using graph::Tensor;

// The dtypes a sample is tried in; a sample whose builder refuses one does not take it.
inline constexpr DType kEveryDType[] = {DType::f32, DType::bf16,    DType::f64, DType::i32,
                                        DType::i64, DType::boolean, DType::u8,  DType::u16};

// Where an input's values are drawn from (see draw()).
struct Domain {
  enum class Kind { any, positive, index, index_or_outside };
  Kind kind = Kind::any;
  // index: integers in [0, length), an axis's places; index_or_outside: in [-1, length],
  // out of range at both ends too (an unchecked one_hot gives those a row of zeros).
  int64_t length = 0;

  static Domain positive() { return {.kind = Kind::positive}; }
  static Domain index(int64_t length) { return {.kind = Kind::index, .length = length}; }
  static Domain index_or_outside(int64_t length) { return {.kind = Kind::index_or_outside, .length = length}; }
};

struct Input {
  Input(Shape shape, std::optional<DType> dtype = std::nullopt, Domain domain = {})
      : shape(std::move(shape)), dtype(dtype), domain(domain) {}

  Shape shape;
  std::optional<DType> dtype;  // unset: the dtype the sample runs in, which gradients are taken over
  Domain domain;
};

// Emits the primitive from the graph inputs (one per Input) for a sample run in
// `dtype`; throws graph::ShapeError where the primitive does not take that dtype.
using BuildFn = std::function<NodeId(Builder& b, const std::vector<NodeId>& x, DType dtype)>;

struct Sample {
  std::string label;
  std::vector<Input> inputs;
  BuildFn build;
  double summed = 1;   // the terms each output element adds up (sum, matmul): widens the float tolerance
  bool large = false;  // big enough to split across the cpu's threads: the sweep runs it, the
                       // reference-only tests (finite differences, batching, JSON) skip it
};

struct Record {
  PrimId id;
  bool exact = false;  // devices must agree bit for bit (data movement, casts, random bits), not within rounding
  std::vector<Sample> samples;
};

// Every record, in registry order.
const std::vector<Record>& records();
// The record of `id`, or nullptr.
const Record* find_record(PrimId id);

// A sample built in one dtype: its graph (inputs x0, x1, ..., output y) and input values.
struct Instance {
  Graph graph;
  std::vector<std::string> input_names;
  std::vector<Tensor> inputs;
};

// `sample` in `dtype`, with values drawn from `rng`; nullopt where the builder refuses the dtype.
std::optional<Instance> instantiate(const Sample& sample, DType dtype, std::mt19937& rng);

// Whether the graph has a node of `id` (an op may simplify the primitive away, as a
// cast to the same dtype does).
bool emits(const Graph& graph, PrimId id);

// Random values every dtype holds: floats about N(0, 1), integers in [-20, 20] (or
// [0, 40] unsigned), bools half true. `positive` keeps them above zero (0.1 or more),
// for log, sqrt and pow.
Tensor random_tensor(DType dtype, Shape shape, std::mt19937& rng, bool positive = false);

// Values of `input` run in `dtype`, from its domain.
Tensor draw(const Input& input, DType dtype, std::mt19937& rng);

}  // namespace sx::samples
