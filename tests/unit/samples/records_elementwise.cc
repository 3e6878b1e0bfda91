// The records of the elementwise primitives (prims/unary.cc, prims/binary.cc):
// arithmetic, comparisons, logic, where and cast.
#include <fmt/format.h>

#include <cmath>

#include "graph/errors.h"
#include "samples/families.h"

namespace sx::samples {
namespace {

// b.op(name of id, x): the op broadcasts and promotes its operands before the primitive.
BuildFn op_on_all(PrimId id) {
  return [id](Builder& b, const std::vector<NodeId>& x, DType) { return b.op(graph::primitive(id).name, x); };
}

Record unary_record(PrimId id, Domain domain = {}) {
  std::vector<Sample> samples;
  for (auto [label, shape] : {std::pair{"[3, 7]", Shape{3, 7}}, {"scalar", Shape{}}}) {
    samples.push_back({.label = label, .inputs = {{shape, {}, domain}}, .build = op_on_all(id)});
  }
  samples.push_back({.label = "large", .inputs = {{{256, 300}, {}, domain}}, .build = op_on_all(id), .large = true});
  return {.id = id, .samples = std::move(samples)};
}

// `base` is the first operand's domain (pow's, which must be positive).
Record binary_record(PrimId id, Domain base = {}) {
  auto operands = [base](Shape x, Shape y) { return std::vector<Input>{{x, {}, base}, {y}}; };
  return {.id = id,
          .samples = {
              {.label = "[3, 7]", .inputs = operands({3, 7}, {3, 7}), .build = op_on_all(id)},
              {.label = "broadcast operands", .inputs = operands({3, 1}, {1, 4}), .build = op_on_all(id)},
              {.label = "broadcast to a higher rank", .inputs = operands({2, 3}, {3}), .build = op_on_all(id)},
              {.label = "large", .inputs = operands({256, 300}, {256, 300}), .build = op_on_all(id), .large = true}}};
}

Record where_record() {
  auto where = [](Shape cond, Shape x, Shape y) {
    return std::vector<Input>{{std::move(cond), DType::boolean}, {std::move(x)}, {std::move(y)}};
  };
  BuildFn build = op_on_all(PrimId::where);
  return {.id = PrimId::where,
          .exact = true,
          .samples = {
              {.label = "[4, 5]", .inputs = where({4, 5}, {4, 5}, {4, 5}), .build = build},
              {.label = "broadcast operands", .inputs = where({3}, {2, 3}, {3}), .build = build},
              {.label = "large", .inputs = where({256, 300}, {256, 300}, {256, 300}), .build = build, .large = true}}};
}

// From the sample's dtype to each dtype: random values, and the values where float to
// integer conversion is defined by saturating.
Record cast_record() {
  std::vector<Sample> samples;
  for (DType to : kEveryDType) {
    auto cast_to = [to](Builder& b, const std::vector<NodeId>& x, DType) { return b.cast(x[0], to); };
    std::string what = fmt::format("to {}", graph::dtype_name(to));
    samples.push_back({.label = what, .inputs = {{{5, 7}}}, .build = cast_to});
    samples.push_back({.label = what + " large", .inputs = {{{256, 300}}}, .build = cast_to, .large = true});
    // NaN, infinities and values out of every integer's range saturate.
    samples.push_back(
        {.label = what + " specials", .inputs = {}, .build = [to](Builder& b, const std::vector<NodeId>&, DType from) {
           if (!graph::is_float(from)) throw graph::ShapeError("specials are float values");
           std::vector<double> specials{NAN, INFINITY, -INFINITY, 1e10, -1e10, 300, -1.5, 70000, 0.5, -0.0};
           return b.cast(b.constant(Tensor::from_doubles(from, {10}, specials)), to);
         }});
  }
  // The primitive itself to the same dtype, which the op leaves out: the identity, and
  // the one cast whose gradient finite differences can check in f64.
  samples.push_back({.label = "emitted to the same dtype",
                     .inputs = {{{2, 3}}},
                     .build = [](Builder& b, const std::vector<NodeId>& x, DType dtype) {
                       return b.emit(graph::primitive(PrimId::cast), {x[0]}, {{"dtype", dtype}});
                     }});
  return {.id = PrimId::cast, .exact = true, .samples = std::move(samples)};
}

}  // namespace

std::vector<Record> elementwise_records() {
  std::vector<Record> records;
  for (PrimId id : {PrimId::neg, PrimId::abs, PrimId::sign, PrimId::exp, PrimId::sin, PrimId::cos, PrimId::tanh,
                    PrimId::erf, PrimId::logistic, PrimId::logical_not}) {
    records.push_back(unary_record(id));
  }
  for (PrimId id : {PrimId::log, PrimId::sqrt, PrimId::rsqrt}) records.push_back(unary_record(id, Domain::positive()));
  for (PrimId id :
       {PrimId::add, PrimId::sub, PrimId::mul, PrimId::div, PrimId::max, PrimId::min, PrimId::eq, PrimId::ne,
        PrimId::lt, PrimId::le, PrimId::gt, PrimId::ge, PrimId::logical_and, PrimId::logical_or}) {
    records.push_back(binary_record(id));
  }
  records.push_back(binary_record(PrimId::pow, Domain::positive()));
  records.push_back(where_record());
  records.push_back(cast_record());
  Record stop_gradient = unary_record(PrimId::stop_gradient);
  stop_gradient.exact = true;  // its input's bits
  records.push_back(std::move(stop_gradient));
  return records;
}

}  // namespace sx::samples
