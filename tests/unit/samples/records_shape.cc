// The records of the source primitives (prims/source.cc) and of the shape family
// (prims/shape.cc): data movement, whose results devices give bit for bit.
#include <fmt/format.h>

#include "samples/families.h"

namespace sx::samples {
namespace {

using Ints = std::vector<int64_t>;

// A sample whose inputs all take the sample's dtype.
Sample moving(std::string label, std::vector<Shape> shapes,
              std::function<NodeId(Builder&, const std::vector<NodeId>&)> f, bool large = false) {
  std::vector<Input> inputs;
  for (Shape& s : shapes) inputs.push_back({std::move(s)});
  return {.label = std::move(label),
          .inputs = std::move(inputs),
          .build = [f = std::move(f)](Builder& b, const std::vector<NodeId>& x, DType) { return f(b, x); },
          .large = large};
}

Record constant_record() {
  // The same value on every call, so that a sample's graphs agree.
  auto value = [](DType dtype) {
    std::mt19937 rng(7);
    return random_tensor(dtype, {2, 3}, rng);
  };
  return {.id = PrimId::constant,
          .exact = true,
          .samples = {{.label = "value",
                       .inputs = {},
                       .build = [value](Builder& b, const std::vector<NodeId>&,
                                        DType dtype) { return b.constant(value(dtype)); }},
                      {.label = "value and input",
                       .inputs = {{{2, 3}}},
                       .build = [value](Builder& b, const std::vector<NodeId>& x, DType dtype) {
                         return b.concat({b.constant(value(dtype)), x[0]}, 0);
                       }}}};
}

Record transpose_record() {
  std::vector<Sample> samples;
  for (Ints perm : {Ints{2, 0, 1}, {1, 0, 2}, {0, 2, 1}, {0, 1, 2}}) {
    samples.push_back(moving(graph::list_str(perm), {{2, 3, 4}},
                             [perm](Builder& b, const std::vector<NodeId>& x) { return b.transpose(x[0], perm); }));
  }
  samples.push_back(moving(
      "large", {{300, 400}},
      [](Builder& b, const std::vector<NodeId>& x) {
        return b.transpose(x[0], {1, 0});
      },
      true));
  return {.id = PrimId::transpose, .exact = true, .samples = std::move(samples)};
}

}  // namespace

std::vector<Record> source_and_shape_records() {
  using X = const std::vector<NodeId>&;
  std::vector<Record> records;
  records.push_back({.id = PrimId::input, .exact = true, .samples = {moving("identity", {{2, 3}}, [](Builder&, X x) {
                                                           return x[0];
                                                         })}});
  records.push_back(constant_record());
  records.push_back({.id = PrimId::reshape,
                     .exact = true,
                     .samples = {moving("[2, 3, 4] to [6, 4]", {{2, 3, 4}},
                                        [](Builder& b, X x) {
                                          return b.reshape(x[0], {6, 4});
                                        }),
                                 moving("[2, 3] to [3, 1, 2]", {{2, 3}},
                                        [](Builder& b, X x) {
                                          return b.reshape(x[0], {3, 1, 2});
                                        }),
                                 moving("then neg", {{2, 3, 4}}, [](Builder& b, X x) {
                                   return b.neg(b.reshape(x[0], {4, 6}));
                                 })}});
  records.push_back(transpose_record());
  records.push_back({.id = PrimId::broadcast,
                     .exact = true,
                     .samples = {moving("[3, 1] to [2, 3, 5]", {{3, 1}},
                                        [](Builder& b, X x) {
                                          return b.broadcast(x[0], {2, 3, 5});
                                        }),
                                 moving("[] to [4]", {{}}, [](Builder& b, X x) { return b.broadcast(x[0], {4}); }),
                                 moving(
                                     "[1, 300] to [400, 300]", {{1, 300}},
                                     [](Builder& b, X x) {
                                       return b.broadcast(x[0], {400, 300});
                                     },
                                     true),
                                 moving(
                                     "[400, 1] to [400, 300]", {{400, 1}},
                                     [](Builder& b, X x) {
                                       return b.broadcast(x[0], {400, 300});
                                     },
                                     true)}});
  records.push_back({.id = PrimId::slice,
                     .exact = true,
                     .samples = {moving("steps", {{5, 6, 7}},
                                        [](Builder& b, X x) {
                                          return b.slice(x[0], {1, 0, 2}, {4, 6, 7}, {2, 1, 3});
                                        }),
                                 moving("empty", {{5, 6}},
                                        [](Builder& b, X x) {
                                          return b.slice(x[0], {2, 0}, {2, 6});
                                        }),
                                 moving(
                                     "large", {{500, 300}},
                                     [](Builder& b, X x) {
                                       return b.slice(x[0], {10, 5}, {490, 295});
                                     },
                                     true)}});
  records.push_back({.id = PrimId::concat,
                     .exact = true,
                     .samples = {moving("axis 0", {{2, 3}, {4, 3}, {0, 3}},
                                        [](Builder& b, X x) {
                                          return b.concat({x[0], x[1], x[2]}, 0);
                                        }),
                                 moving("axis 1", {{2, 3, 2}, {2, 1, 2}},
                                        [](Builder& b, X x) {
                                          return b.concat({x[0], x[1]}, 1);
                                        }),
                                 moving("an input twice", {{2, 1}, {2, 3}},
                                        [](Builder& b, X x) {
                                          return b.concat({x[0], x[1], x[0]}, 1);
                                        }),
                                 moving(
                                     "large", {{300, 200}, {300, 100}},
                                     [](Builder& b, X x) {
                                       return b.concat({x[0], x[1]}, 1);
                                     },
                                     true)}});
  records.push_back({.id = PrimId::pad,
                     .exact = true,
                     .samples = {moving("low high interior", {{3, 4}},
                                        [](Builder& b, X x) {
                                          return b.pad(x[0], {1, 0}, {2, 1}, {1, 2}, 7.0);
                                        }),
                                 moving("empty input", {{0, 4}}, [](Builder& b, X x) {
                                   return b.pad(x[0], {1, 1}, {1, 0}, {}, 1.0);
                                 })}});
  return records;
}

}  // namespace sx::samples
