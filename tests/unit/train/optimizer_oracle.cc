// The SexpGPU side of the PyTorch oracle (tests/oracle/optimizer_oracle.py): reads a case
// (a model file, optimizer, schedule, clipping, EMA, initial values and a quadratic loss),
// builds one training step as one graph (loss, gradients by autodiff, the optimizer update)
// as the training loop does, runs it step after step on the reference device feeding its
// outputs back, and writes what each step gave.
//
//   train_optimizer_oracle CASE.json OUT.json
//
// The case: {"model": "(defmodel ...) (defvar model ...)", "optimizer": "(adamw ...)",
// "schedule": "(warmup-cosine ...)" or null, "total_steps": T, "steps": N,
// "grad_clip": x or null, "ema": d or null, "params": {path: initial values},
// "targets": {path: values}, "weights": {path: values}}, every value flat, in row-major
// order. The loss is the sum over parameters of sum(weight * (p - target)^2).
// The output: {"steps": [{"loss", "lr", "norm", "params": {path: values},
// "ema": {path: values}}, ...]}, each after that step's update (loss and norm before it).
#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "graph/autodiff.h"
#include "train_test_util.h"

namespace sx::train::testing {
namespace {

using nlohmann::json;

graph::NodeId constant(graph::Builder& b, const graph::Shape& shape, const std::vector<double>& values) {
  return b.constant(graph::Tensor::from_doubles(graph::DType::f32, shape, values));
}

json run(const json& c) {
  RunFile f;
  f.load(c.at("model").get<std::string>());
  const OptimizerSpec& opt = f.optimizer(c.at("optimizer").get<std::string>());
  UpdateSettings settings = settings_for(opt);
  if (!c.at("schedule").is_null()) settings.schedule = &f.schedule(c.at("schedule").get<std::string>());
  settings.total_steps = c.at("total_steps").get<int64_t>();
  if (!c.at("grad_clip").is_null()) settings.grad_clip = c.at("grad_clip").get<double>();
  if (!c.at("ema").is_null()) settings.ema = c.at("ema").get<double>();
  GroupAssignment groups = assign_groups(f.table, opt);
  for (const auto& w : groups.warnings) std::cerr << "warning: " << w.message << "\n";

  graph::Graph g;
  graph::Builder b(g);
  std::vector<graph::NodeId> values;
  graph::NodeId loss = b.scalar(0.0, graph::DType::f32);
  for (const auto& entry : groups.params) {
    const std::string& path = entry.param->path;
    const graph::Shape& shape = entry.param->decl->shape;
    graph::NodeId p = b.input(path, shape, graph::DType::f32);
    values.push_back(p);
    graph::NodeId d = b.sub(p, constant(b, shape, c.at("targets").at(path).get<std::vector<double>>()));
    graph::NodeId weighted =
        b.mul(constant(b, shape, c.at("weights").at(path).get<std::vector<double>>()), b.mul(d, d));
    loss = b.add(loss, b.sum(weighted, {}));
  }
  std::vector<graph::NodeId> grads = graph::gradients(b, loss, values);
  std::vector<ParamNodes> nodes;
  for (size_t i = 0; i < values.size(); ++i) nodes.push_back({values[i], grads[i]});
  UpdateGraph update = build_update(b, groups, nodes, settings);
  b.output("loss", loss);
  b.output("lr", update.lr);
  if (update.grad_norm) b.output("norm", *update.grad_norm);
  for (size_t i = 0; i < values.size(); ++i) b.output("new." + groups.params[i].param->path, update.new_params[i]);
  for (const auto& s : update.state) b.output("state." + s.tensor.name, s.updated);

  // The loop: every input is fed from the last step's outputs (the state starts as zeros).
  std::map<std::string, graph::Tensor> current;
  for (const auto& entry : groups.params) {
    const std::string& path = entry.param->path;
    current[path] = graph::Tensor::from_doubles(graph::DType::f32, entry.param->decl->shape,
                                                c.at("params").at(path).get<std::vector<double>>());
  }
  for (const auto& s : update.state) current[s.tensor.name] = graph::Tensor(s.tensor.dtype, s.tensor.shape);
  json steps = json::array();
  const int64_t n = c.at("steps").get<int64_t>();
  for (int64_t step = 0; step < n; ++step) {
    current["step"] = graph::Tensor::scalar(graph::DType::i64, static_cast<double>(step));
    std::vector<graph::Tensor> inputs;
    for (const auto& input : g.inputs) inputs.push_back(current.at(input.name));
    std::vector<graph::Tensor> outputs = run_graph(g, inputs);
    json out = {{"params", json::object()}, {"ema", json::object()}, {"norm", nullptr}};
    for (size_t i = 0; i < g.outputs.size(); ++i) {
      const std::string& name = g.outputs[i].name;
      if (name == "loss" || name == "lr" || name == "norm") {
        out[name] = outputs[i].value(0);
        continue;
      }
      std::string fed = name.substr(name.find('.') + 1);  // new.<path> -> <path>, state.<name> -> <name>
      if (name.starts_with("new.")) out["params"][fed] = outputs[i].to_doubles();
      if (fed.starts_with("ema.")) out["ema"][fed.substr(4)] = outputs[i].to_doubles();
      current[fed] = std::move(outputs[i]);
    }
    steps.push_back(out);
  }
  return {{"steps", steps}};
}

}  // namespace
}  // namespace sx::train::testing

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: train_optimizer_oracle CASE.json OUT.json\n");
    return 2;
  }
  try {
    std::ifstream in(argv[1]);
    nlohmann::json result = sx::train::testing::run(nlohmann::json::parse(in));
    std::ofstream(argv[2]) << result.dump();
  } catch (const sx::lang::Error& e) {
    std::fprintf(stderr, "train_optimizer_oracle: %s: %s\n", e.diagnostic().code.c_str(), e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "train_optimizer_oracle: %s\n", e.what());
    return 1;
  }
  return 0;
}
