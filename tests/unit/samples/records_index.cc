// The records of the index family (prims/index.cc) and of the random primitives
// (prims/random.cc).
#include <fmt/format.h>

#include "graph/errors.h"
#include "samples/families.h"

namespace sx::samples {
namespace {

Record gather_record() {
  std::vector<Sample> samples;
  const graph::Shape gathered{5, 4, 3};
  for (DType index : {DType::i32, DType::i64, DType::u8}) {
    for (int64_t axis : {0, 1, 2}) {
      samples.push_back(
          {.label = fmt::format("by {} axis {}", graph::dtype_name(index), axis),
           .inputs = {{gathered}, {{2, 3}, index, Domain::index(gathered[static_cast<size_t>(axis)])}},
           .build = [axis](Builder& b, const std::vector<NodeId>& x, DType) { return b.gather(x[0], x[1], axis); }});
    }
  }
  samples.push_back({.label = "large",
                     .inputs = {{{1000, 64}}, {{500}, DType::i64, Domain::index(1000)}},
                     .build = [](Builder& b, const std::vector<NodeId>& x, DType) { return b.gather(x[0], x[1], 0); },
                     .large = true});
  return {.id = PrimId::gather, .exact = true, .samples = std::move(samples)};
}

Record scatter_add_record() {
  auto scatter_along = [](int64_t axis) {
    return [axis](Builder& b, const std::vector<NodeId>& x, DType) { return b.scatter_add(x[0], x[1], x[2], axis); };
  };
  // Exact: every device adds a target's updates in the order of the updates, as the
  // reference does. The large sample repeats each index four times on average, over
  // an outer axis and rows longer than a thread's block of columns.
  return {.id = PrimId::scatter_add,
          .exact = true,
          .samples = {{.label = "axis 0",
                       .inputs = {{{5, 3}}, {{4}, DType::i64, Domain::index(5)}, {{4, 3}}},
                       .build = scatter_along(0)},
                      {.label = "axis 1",
                       .inputs = {{{3, 2}}, {{4}, DType::i64, Domain::index(2)}, {{3, 4}}},
                       .build = scatter_along(1)},
                      {.label = "large, indices [10 20]",
                       .inputs = {{{3, 50, 1100}}, {{10, 20}, DType::i32, Domain::index(50)}, {{3, 10, 20, 1100}}},
                       .build = scatter_along(1),
                       .large = true}}};
}

// A key of either integer dtype; the sample's dtype is the values'.
Record random_record(PrimId id) {
  std::vector<Sample> samples;
  for (DType key : {DType::i64, DType::i32}) {
    samples.push_back({.label = fmt::format("key {}", graph::dtype_name(key)),
                       .inputs = {{{}, key}},
                       .build = [id](Builder& b, const std::vector<NodeId>& x, DType dtype) {
                         if (id == PrimId::random_normal) return b.random_normal(x[0], {1000}, dtype);
                         if (id == PrimId::random_uniform) return b.random_uniform(x[0], {1000}, dtype);
                         if (dtype != DType::boolean) throw graph::ShapeError("bernoulli gives bool");
                         return b.random_bernoulli(x[0], 0.3, {1000});
                       }});
  }
  return {.id = id, .exact = true, .samples = std::move(samples)};
}

}  // namespace

std::vector<Record> index_records() {
  return {gather_record(),
          scatter_add_record(),
          {.id = PrimId::iota,
           .exact = true,
           .samples = {{.label = "[3, 4] axis 1",
                        .inputs = {},
                        .build =
                            [](Builder& b, const std::vector<NodeId>&, DType dtype) {
                              return b.iota({3, 4}, 1, dtype);
                            }}}},
          {.id = PrimId::one_hot,
           .exact = true,
           .samples = {{.label = "depth 5",
                        .inputs = {{{3, 4}, DType::i32, Domain::index_or_outside(5)}},
                        .build = [](Builder& b, const std::vector<NodeId>& x,
                                    DType dtype) { return b.one_hot(x[0], 5, dtype); }},
                       {.label = "depth 5, checked",
                        .inputs = {{{3, 4}, DType::i32, Domain::index(5)}},
                        .build = [](Builder& b, const std::vector<NodeId>& x,
                                    DType dtype) { return b.one_hot(x[0], 5, dtype, true); }}}},
          random_record(PrimId::random_normal),
          random_record(PrimId::random_uniform),
          random_record(PrimId::random_bernoulli)};
}

}  // namespace sx::samples
