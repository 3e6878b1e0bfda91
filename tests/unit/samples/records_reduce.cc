// The records of the reductions (prims/reduce.cc) and of matmul (prims/matmul.cc):
// the primitives whose float results are sums, compared within the bound of the
// number of terms they add up.
#include <fmt/format.h>

#include "graph/errors.h"
#include "samples/families.h"

namespace sx::samples {
namespace {

Sample reduction_sample(PrimId id, Shape shape, std::vector<int64_t> axes, std::optional<int64_t> keepdims,
                        bool large = false) {
  double summed = 1;
  for (int64_t a : axes) summed *= static_cast<double>(shape[static_cast<size_t>(a < 0 ? a + std::ssize(shape) : a)]);
  if (axes.empty()) summed = static_cast<double>(graph::numel(shape));  // no axes: all of them
  std::string label = fmt::format("{} axes {}", graph::shape_str(shape), graph::list_str(axes));
  if (keepdims) label += fmt::format(" keepdims {}", *keepdims);
  graph::Attrs attrs{{"axes", axes}};
  if (keepdims) attrs.set("keepdims", *keepdims);
  return {.label = label,
          .inputs = {{std::move(shape)}},
          .build = [id, attrs](Builder& b, const std::vector<NodeId>& x,
                               DType) { return b.op(graph::primitive(id).name, {x[0]}, attrs); },
          .summed = summed,
          .large = large};
}

Record reduction_record(PrimId id) {
  std::vector<Sample> samples;
  for (std::vector<int64_t> axes : {std::vector<int64_t>{0}, {1}, {2}, {0, 1}, {1, 2}, {0, 2}, {0, 1, 2}}) {
    for (int64_t keepdims : {0, 1}) samples.push_back(reduction_sample(id, {4, 5, 6}, axes, keepdims));
  }
  samples.push_back(reduction_sample(id, {4, 5, 6}, {-1}, std::nullopt));
  samples.push_back(reduction_sample(id, {4, 5, 6}, {}, std::nullopt));
  samples.push_back(reduction_sample(id, {0, 3}, {0}, std::nullopt));
  // Large enough for the threads: rows, columns, a middle axis, everything.
  samples.push_back(reduction_sample(id, {64, 2000}, {1}, std::nullopt, true));
  samples.push_back(reduction_sample(id, {2000, 64}, {0}, std::nullopt, true));
  samples.push_back(reduction_sample(id, {16, 300, 40}, {1}, std::nullopt, true));
  samples.push_back(reduction_sample(id, {300, 400}, {0, 1}, std::nullopt, true));
  // Only axes of size 1 reduced (a gradient's sum over a batch of one).
  samples.push_back(reduction_sample(id, {4, 1, 6}, {1}, std::nullopt));
  samples.push_back(reduction_sample(id, {1, 300, 40}, {0}, std::nullopt, true));
  return {.id = id, .samples = std::move(samples)};
}

Record matmul_record() {
  struct Operands {
    Shape a, b;
    bool large = false;
  };
  std::vector<Sample> samples;
  for (const auto& [a, b, large] :
       {Operands{{3, 5}, {5, 4}}, Operands{{2, 3, 5}, {2, 5, 4}}, Operands{{2, 3, 5}, {5, 4}}, Operands{{5}, {5, 4}},
        Operands{{3, 5}, {5}}, Operands{{2, 4, 3, 8}, {8, 5}}, Operands{{2, 1, 3, 8}, {4, 8, 5}},
        Operands{{64, 256}, {256, 96}, true}, Operands{{1, 512}, {512, 128}, true}, Operands{{3, 0}, {0, 4}}}) {
    samples.push_back({.label = fmt::format("{} @ {}", graph::shape_str(a), graph::shape_str(b)),
                       .inputs = {{a}, {b}},
                       .build = [](Builder& bb, const std::vector<NodeId>& x, DType) { return bb.matmul(x[0], x[1]); },
                       .summed = static_cast<double>(a.back()),
                       .large = large});
  }
  // Constant weights, which the cpu device packs at compile time.
  for (const auto& [a, b, large] : {Operands{{3, 5}, {5, 4}}, Operands{{2, 3, 5}, {5, 4}},
                                    Operands{{64, 256}, {256, 96}, true}, Operands{{2, 3, 5}, {2, 5, 4}}}) {
    samples.push_back({.label = fmt::format("{} @ constant {}", graph::shape_str(a), graph::shape_str(b)),
                       .inputs = {{a}},
                       .build =
                           [weights = b](Builder& bb, const std::vector<NodeId>& x, DType dtype) {
                             if (dtype == DType::boolean) throw graph::ShapeError("no packed bool weights");
                             std::mt19937 rng(11);
                             return bb.matmul(x[0], bb.constant(random_tensor(dtype, weights, rng)));
                           },
                       .summed = static_cast<double>(a.back()),
                       .large = large});
  }
  // Transposed operands, which the cpu device reads through strides: x^T @ g and g @ w^T
  // as gradients make them, attention's heads ([batch, seq, heads, dim] to [batch, heads,
  // seq, dim]) and both operands at once.
  struct Transposed {
    Shape a, b;
    std::vector<int64_t> a_perm, b_perm;  // empty: the operand as it is
    bool large = false;
  };
  auto transposed = [](Builder& bb, NodeId x, const std::vector<int64_t>& perm) {
    return perm.empty() ? x : bb.transpose(x, perm);
  };
  for (const auto& t :
       {Transposed{{2, 5, 3}, {2, 5, 4}, {0, 2, 1}, {}}, Transposed{{2, 3, 5}, {2, 4, 5}, {}, {0, 2, 1}},
        Transposed{{2, 3, 4, 5}, {2, 4, 5, 6}, {0, 2, 1, 3}, {}}, Transposed{{5, 3}, {4, 5}, {1, 0}, {1, 0}},
        Transposed{{8, 64, 4, 16}, {8, 64, 4, 16}, {0, 2, 1, 3}, {0, 2, 3, 1}, true},
        Transposed{{96, 256}, {96, 64}, {1, 0}, {}, true}}) {
    samples.push_back({.label = fmt::format("{}{} @ {}{}", graph::shape_str(t.a), graph::list_str(t.a_perm),
                                            graph::shape_str(t.b), graph::list_str(t.b_perm)),
                       .inputs = {{t.a}, {t.b}},
                       .build =
                           [t, transposed](Builder& bb, const std::vector<NodeId>& x, DType) {
                             return bb.matmul(transposed(bb, x[0], t.a_perm), transposed(bb, x[1], t.b_perm));
                           },
                       .summed = static_cast<double>(t.a_perm.empty() ? t.a.back() : t.a[t.a_perm.back()]),
                       .large = t.large});
  }
  return {.id = PrimId::matmul, .samples = std::move(samples)};
}

}  // namespace

std::vector<Record> reduce_records() {
  std::vector<Record> records;
  for (PrimId id : {PrimId::sum, PrimId::reduce_max, PrimId::reduce_min, PrimId::argmax, PrimId::argmin}) {
    records.push_back(reduction_record(id));
  }
  records.push_back(matmul_record());
  return records;
}

}  // namespace sx::samples
