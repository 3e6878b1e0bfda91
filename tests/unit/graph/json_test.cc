// The JSON form: exact round trips of graphs that use every primitive, and
// errors for newer versions and malformed documents.
#include "graph/json.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "graph/errors.h"
#include "graph/primitive.h"
#include "test_util.h"

namespace sx::graph {
namespace {

using testing::tensor;

// A graph with at least one node of every registered primitive.
Graph every_primitive_graph() {
  Graph g;
  Builder b(g);
  NodeId x = b.input("x", {2, 3}, DType::f32);
  NodeId k = b.input("key", {}, DType::i64);
  NodeId pos = b.add(b.abs(x), b.literal(1.0));
  std::vector<NodeId> outs;
  for (const char* op : {"neg", "sign", "exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "erf", "logistic"}) {
    outs.push_back(b.op(op, {pos}));
  }
  for (const char* op : {"sub", "mul", "div", "pow", "max", "min"}) outs.push_back(b.op(op, {pos, x}));
  NodeId mask = b.logical_and(b.lt(x, pos), b.logical_or(b.le(x, pos), b.logical_not(b.gt(x, pos))));
  mask = b.logical_and(mask, b.logical_or(b.ge(x, pos), b.logical_or(b.eq(x, pos), b.ne(x, pos))));
  outs.push_back(b.where(mask, x, b.literal(std::nan(""))));
  outs.push_back(b.cast(b.cast(x, DType::bf16), DType::f32));
  outs.push_back(b.broadcast(b.reduce_max(x, {1}, true), {2, 3}));
  outs.push_back(b.broadcast(b.reduce_min(x, {0}), {2, 3}));
  outs.push_back(b.broadcast(b.sum(x, {}), {2, 3}));
  NodeId am = b.add(b.argmax(x, {1}), b.argmin(x, {1}));
  outs.push_back(
      b.reshape(b.transpose(b.reshape(b.slice(b.concat({x, x}, 0), {0, 0}, {4, 3}, {2, 1}), {3, 2}), {1, 0}), {2, 3}));
  outs.push_back(b.slice(b.pad(x, {1, 0}, {0, 1}, {0, 0}, -INFINITY), {1, 0}, {3, 3}));
  NodeId gathered = b.gather(x, am, 1);
  outs.push_back(b.scatter_add(x, am, gathered, 1));
  outs.push_back(b.add(b.cast(b.iota({2, 3}, 1), DType::f32), b.one_hot(b.cast(am, DType::i32), 3)));
  outs.push_back(b.broadcast(b.matmul(x, b.transpose(x, {1, 0})), {3, 2, 2}));
  outs.push_back(b.random_normal(k, {2, 3}));
  outs.push_back(b.cast(b.random_bernoulli(k, 0.3, {2, 3}), DType::f32));
  outs.push_back(b.add(b.random_uniform(k, {2, 3}), b.scalar(0.1, DType::f64)));
  for (size_t i = 0; i < outs.size(); ++i) b.output("out" + std::to_string(i), outs[i]);
  return g;
}

TEST(Json, EveryPrimitiveRoundTripsExactly) {
  Graph g = every_primitive_graph();
  std::set<std::string_view> used;
  for (const Node& n : g.nodes) used.insert(n.op_name());
  for (const Primitive* p : all_primitives()) EXPECT_TRUE(used.contains(p->name)) << p->name << " is not in the graph";

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
  std::vector<Tensor> in{tensor(DType::f32, {2, 3}, {1, -2, 3, 0.5, 5, -6}), tensor(DType::i64, {}, {17})};
  std::vector<Tensor> r1 = testing::run(g, in), r2 = testing::run(back, in);
  for (size_t i = 0; i < r1.size(); ++i) EXPECT_EQ(r1[i].bytes().size(), r2[i].bytes().size());
  for (size_t i = 0; i < r1.size(); ++i)
    EXPECT_TRUE(std::equal(r1[i].bytes().begin(), r1[i].bytes().end(), r2[i].bytes().begin()));
}

TEST(Json, DoublesRoundTripBitForBit) {
  Graph g;
  Builder b(g);
  NodeId x = b.input("x", {3}, DType::f64);
  b.output("y", b.pad(x, {1}, {1}, {}, 0.1 + 0.2));
  b.output("z", b.pad(x, {1}, {1}, {}, -INFINITY));
  Graph back = graph_from_json_text(graph_to_json_text(g));
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

  nlohmann::json with_constant = graph_to_json(every_primitive_graph());
  for (auto& node : with_constant["nodes"]) {
    if (node.contains("value")) node["value"] = "AAA*";
  }
  EXPECT_NE(error_of(with_constant).find("the constant's value has '*', which is not base64"), std::string::npos);

  EXPECT_THROW(graph_from_json_text("{not json"), FormatError);
}

}  // namespace
}  // namespace sx::graph
