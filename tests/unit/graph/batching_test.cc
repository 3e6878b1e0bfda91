// The batching transformation: for every primitive, vmap(f) on stacked
// inputs equals f on each row, stacked, on each small sample of its record
// (samples.h) in every dtype it takes; every non-empty subset of the inputs is
// batched in turn. A primitive with inputs and no such sample fails.
#include <fmt/format.h>

#include <random>

#include "graph/errors.h"
#include "graph/passes.h"
#include "graph/primitive.h"
#include "samples/samples.h"
#include "test_util.h"

namespace sx::graph {
namespace {

constexpr int64_t kBatch = 3;

Tensor row_of(const Tensor& t, int64_t row) {
  Shape shape(t.shape().begin() + 1, t.shape().end());
  size_t size = static_cast<size_t>(numel(shape)) * dtype_size(t.dtype());
  auto begin = t.bytes().begin() + static_cast<std::ptrdiff_t>(size * static_cast<size_t>(row));
  return Tensor(t.dtype(), shape, std::vector<uint8_t>(begin, begin + static_cast<std::ptrdiff_t>(size)));
}

// vmap of the sample's graph over the inputs `batched` marks, against the graph on
// each row.
void check_batching(const samples::Sample& sample, const samples::Instance& c, DType dtype,
                    const std::vector<bool>& batched, std::mt19937& rng) {
  std::vector<std::string> batched_names;
  std::vector<Tensor> stacked = c.inputs;
  for (size_t i = 0; i < stacked.size(); ++i) {
    if (!batched[i]) continue;
    batched_names.push_back(c.input_names[i]);
    samples::Input rows = sample.inputs[i];
    rows.shape.insert(rows.shape.begin(), kBatch);
    stacked[i] = samples::draw(rows, dtype, rng);
  }
  Tensor all = testing::run(vmap(c.graph, batched_names, kBatch), stacked)[0];
  for (int64_t row = 0; row < kBatch; ++row) {
    std::vector<Tensor> inputs;
    for (size_t i = 0; i < stacked.size(); ++i) inputs.push_back(batched[i] ? row_of(stacked[i], row) : stacked[i]);
    Tensor expected = testing::run(c.graph, inputs)[0];
    EXPECT_EQ(row_of(all, row), expected) << "row " << row;
  }
}

// Every small sample with inputs of every primitive's record, in every dtype it takes.
TEST(Batching, VmapEqualsStackingRows) {
  int checked_in_all = 0;
  for (const Primitive* p : all_primitives()) {
    if (p->arity == 0) continue;  // never batched: nothing it reads carries the axis
    const samples::Record* record = samples::find_record(p->id);
    ASSERT_NE(record, nullptr) << p->name << " has no sample record";
    std::mt19937 rng(99);
    int checked = 0;
    for (const samples::Sample& sample : record->samples) {
      if (sample.large || sample.inputs.empty()) continue;
      for (DType dtype : samples::kEveryDType) {
        std::optional<samples::Instance> c = samples::instantiate(sample, dtype, rng);
        if (!c || !samples::emits(c->graph, p->id)) continue;
        size_t n = sample.inputs.size();
        for (unsigned mask = 1; mask < (1u << n); ++mask) {
          std::vector<bool> batched(n);
          for (size_t i = 0; i < n; ++i) batched[i] = (mask >> i) & 1;
          std::string what =
              fmt::format("{} {} {} with inputs mask {}", p->name, sample.label, dtype_name(dtype), mask);
          SCOPED_TRACE(what);
          try {
            check_batching(sample, *c, dtype, batched, rng);
            ++checked;
          } catch (const std::exception& e) {
            ADD_FAILURE() << what << ": " << e.what();
          }
        }
      }
    }
    EXPECT_GT(checked, 0) << p->name << " has inputs, but no small sample of its record with inputs emits it";
    checked_in_all += checked;
  }
  RecordProperty("cases", checked_in_all);
}

TEST(Batching, RefusesUnknownInputsAndEmptyBatches) {
  Graph g;
  Builder b(g);
  b.output("y", b.neg(b.input("x", {2}, DType::f32)));
  std::vector<std::string> unknown{"z"}, known{"x"};
  EXPECT_THROW(vmap(g, unknown, 2), GraphError);
  EXPECT_THROW(vmap(g, known, 0), GraphError);
}

TEST(Batching, UnbatchedOutputsAreBroadcast) {
  Graph g;
  Builder b(g);
  NodeId x = b.input("x", {2}, DType::f32);
  NodeId y = b.input("y", {2}, DType::f32);
  b.output("x2", b.add(x, x));
  b.output("y2", b.add(y, y));
  std::vector<std::string> batched{"x"};
  Graph v = vmap(g, batched, 4);
  EXPECT_EQ(v.node(*v.find_output("x2")).shape, (Shape{4, 2}));
  EXPECT_EQ(v.node(*v.find_output("y2")).shape, (Shape{4, 2}));
}

}  // namespace
}  // namespace sx::graph
