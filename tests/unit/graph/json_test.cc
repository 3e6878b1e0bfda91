// The JSON form: exact round trips of every primitive's samples (samples.h),
// and errors for newer versions and malformed documents.
#include "graph/json.h"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "graph/errors.h"
#include "graph/primitive.h"
#include "samples/samples.h"
#include "test_util.h"

namespace sx::graph {
namespace {

using testing::tensor;

void expect_round_trip(const Graph& g, const std::vector<Tensor>& inputs) {
  std::string text = graph_to_json_text(g);
  Graph back = graph_from_json_text(text);
  EXPECT_EQ(graph_to_json_text(back), text);
  ASSERT_EQ(back.nodes.size(), g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    EXPECT_EQ(back.nodes[i].prim, g.nodes[i].prim);
    EXPECT_EQ(back.nodes[i].attrs, g.nodes[i].attrs) << i;
    if (g.nodes[i].value) {
      EXPECT_EQ(*back.nodes[i].value, *g.nodes[i].value) << i;
    }
  }
  EXPECT_EQ(back.inputs, g.inputs);
  EXPECT_EQ(back.outputs, g.outputs);
  std::vector<Tensor> r1 = testing::run(g, inputs), r2 = testing::run(back, inputs);
  ASSERT_EQ(r1.size(), r2.size());
  for (size_t i = 0; i < r1.size(); ++i) {
    EXPECT_TRUE(r1[i].bytes().size() == r2[i].bytes().size() &&
                std::equal(r1[i].bytes().begin(), r1[i].bytes().end(), r2[i].bytes().begin()))
        << "output " << i << " differs after the round trip";
  }
}

// Every small sample of every primitive's record, in every dtype it takes, so that
// each primitive's attributes (and each dtype's constants) round-trip.
TEST(Json, EveryPrimitiveRoundTripsExactly) {
  int checked_in_all = 0;
  for (const Primitive* p : all_primitives()) {
    const samples::Record* record = samples::find_record(p->id);
    ASSERT_NE(record, nullptr) << p->name << " has no sample record";
    std::mt19937 rng(5);
    int checked = 0;
    for (const samples::Sample& sample : record->samples) {
      if (sample.large) continue;
      for (DType dtype : samples::kEveryDType) {
        std::optional<samples::Instance> c = samples::instantiate(sample, dtype, rng);
        if (!c || !samples::emits(c->graph, p->id)) continue;
        SCOPED_TRACE(fmt::format("{} {} {}", p->name, sample.label, dtype_name(dtype)));
        expect_round_trip(c->graph, c->inputs);
        ++checked;
      }
    }
    EXPECT_GT(checked, 0) << "no small sample of " << p->name << "'s record emits it";
    checked_in_all += checked;
  }
  RecordProperty("cases", checked_in_all);
}

TEST(Json, DoublesAndWeakLiteralsRoundTrip) {
  Graph g;
  Builder b(g);
  NodeId x = b.input("x", {3}, DType::f64);
  b.output("y", b.pad(x, {1}, {1}, {}, 0.1 + 0.2));
  b.output("z", b.pad(x, {1}, {1}, {}, -INFINITY));
  b.output("literal", b.literal(std::nan("")));
  Graph back = graph_from_json_text(graph_to_json_text(g));
  const Node& literal = back.node(*back.find_output("literal"));
  EXPECT_TRUE(literal.weak);
  EXPECT_TRUE(std::isnan(literal.value->value(0)));
  EXPECT_EQ(back.node(*back.find_output("y")).attrs.get_double("value"), 0.1 + 0.2);
  EXPECT_EQ(back.node(*back.find_output("z")).attrs.get_double("value"), -INFINITY);
}

std::string error_of(const nlohmann::json& document) {
  try {
    graph_from_json(document);
  } catch (const FormatError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Json, ErrorsSayWhatIsWrongAndHowToFixIt) {
  Graph g;
  Builder b(g);
  b.output("y", b.exp(b.input("x", {2}, DType::f32)));
  nlohmann::json good = graph_to_json(g);

  nlohmann::json newer = good;
  newer["version"] = 2;
  EXPECT_EQ(error_of(newer),
            "graph JSON: version 2 is newer than this build reads (up to 1); upgrade sexpgpu to read it");

  nlohmann::json unknown_op = good;
  unknown_op["nodes"][1]["op"] = "fancy";
  EXPECT_EQ(error_of(unknown_op),
            "graph JSON: node 1: unknown op \"fancy\"; the file needs a newer sexpgpu: upgrade it");

  nlohmann::json missing = good;
  missing["nodes"][1].erase("dtype");
  EXPECT_EQ(error_of(missing),
            "graph JSON: node 1: the field \"dtype\" is missing; the file is damaged or was not "
            "written by sexpgpu: write it again with `sexpgpu export`");

  nlohmann::json wrong_format = good;
  wrong_format["format"] = "onnx";
  EXPECT_NE(error_of(wrong_format).find("is \"onnx\", not \"sexpgpu-graph\""), std::string::npos);

  nlohmann::json bad_shape = good;
  bad_shape["nodes"][1]["shape"] = {3};
  EXPECT_NE(error_of(bad_shape).find("verify: node 1 (exp f32[3]): its rule gives f32[2]"), std::string::npos);

  Graph constant;
  Builder c(constant);
  c.output("y", c.constant(tensor(DType::f32, {3}, {1, 2, 3})));
  nlohmann::json with_constant = graph_to_json(constant);
  for (auto& node : with_constant["nodes"]) {
    if (node.contains("value")) node["value"] = "AAA*";
  }
  EXPECT_NE(error_of(with_constant).find("the constant's value has '*', which is not base64"), std::string::npos);

  EXPECT_THROW(graph_from_json_text("{not json"), FormatError);
}

}  // namespace
}  // namespace sx::graph
