// The sample records (tests/unit/samples) that every primitive test reads: one per
// registered primitive, and each sample emits its primitive in some dtype, so that
// no record is dead weight and none is missing.
#include "samples/samples.h"

#include <fmt/format.h>

#include "graph/primitive.h"
#include "test_util.h"

namespace sx::graph {
namespace {

TEST(Samples, EveryPrimitiveHasOneRecord) {
  for (const Primitive* p : all_primitives()) {
    EXPECT_NE(samples::find_record(p->id), nullptr)
        << p->name << " has no sample record: add one to its family's file in tests/unit/samples/";
  }
  EXPECT_EQ(samples::records().size(), all_primitives().size()) << "a primitive has two records";
}

TEST(Samples, EverySampleEmitsItsPrimitiveInSomeDType) {
  std::mt19937 rng(1);
  for (const samples::Record& record : samples::records()) {
    std::string_view name = primitive(record.id).name;
    EXPECT_FALSE(record.samples.empty()) << name;
    for (const samples::Sample& sample : record.samples) {
      bool emitted = false;
      for (DType dtype : samples::kEveryDType) {
        if (emitted) break;
        std::optional<samples::Instance> c = samples::instantiate(sample, dtype, rng);
        emitted = c && samples::emits(c->graph, record.id);
      }
      EXPECT_TRUE(emitted) << name << " " << sample.label << ": emits " << name << " in no dtype";
    }
  }
}

}  // namespace
}  // namespace sx::graph
