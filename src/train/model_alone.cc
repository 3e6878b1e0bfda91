// Tracing the model alone and writing model.json.
#include "train/model_alone.h"

#include <fmt/format.h>

#include "graph/json.h"
#include "graph/passes.h"
#include "lang/builtins/builtins.h"
#include "lang/printer.h"
#include "lang/tracer.h"
#include "train/codes.h"
#include "train/step.h"

namespace sx::train {
namespace {

// The trace names the model's inputs this way until they are renamed in its graph (a
// parameter's path starts with its root's name, `model.` among them).
constexpr std::string_view kInputPrefix = "model-alone.";

// Each tensor of `v` with its path under `path`, in order; E-INFER-001 for a value that
// is none of tensor, list, plist, number, boolean, string or nil.
void output_paths(const lang::Value& v, const std::string& path,
                  std::vector<std::pair<std::string, graph::NodeId>>& out) {
  if (const auto* t = lang::as_tensor(v)) {
    out.emplace_back(path, t->node);
    return;
  }
  if (v.is_nil() || v.is_number() || v.is(lang::Type::Bool) || v.is(lang::Type::String)) return;
  if (v.is(lang::Type::Cons) || v.is(lang::Type::Vector)) {
    std::vector<lang::Value> items = v.is(lang::Type::Vector) ? v.as<lang::Vector>()->items : lang::list_items(v);
    bool plist = !items.empty() && items.size() % 2 == 0;
    for (size_t i = 0; plist && i < items.size(); i += 2) plist = items[i].is(lang::Type::Keyword);
    if (plist) {
      for (size_t i = 0; i < items.size(); i += 2) {
        std::string key = items[i].as<lang::Symbol>()->name;
        output_paths(items[i + 1], path == "output" ? key : path + "." + key, out);
      }
    } else {
      for (size_t i = 0; i < items.size(); ++i) output_paths(items[i], fmt::format("{}.{}", path, i), out);
    }
    return;
  }
  lang::fail(kModelNotAlone, {},
             fmt::format("a model run alone returns tensors, in lists and plists; `{}` is {}",
                         lang::shown_in_message(path), lang::type_label(v)),
             "the checkpoints will hold no model, so they run only from the file");
}

}  // namespace

ModelAlone trace_model_alone(Session& session, const Loader& loader) {
  auto& interp = session.interp();
  const auto& tracer = interp.tracer();
  graph::Builder& b = tracer->builder();
  lang::Value model = required_definition(session, "model", "the model a checkpoint holds");
  lang::Value* prepare = session.top().lookup(lang::intern("eval-prepare"));
  if (!prepare) prepare = session.top().lookup(lang::intern("prepare"));
  lang::Value record = traced_batch(session, loader, 1, "record.");
  lang::Value prepared = prepare ? call(session, *prepare, {record}) : record;
  const lang::Value* given = plist_find(prepared, "inputs");
  if (!given) lang::fail(kFieldMissing, {}, "the prepared plist gives no `:inputs`");
  // The model's inputs are fresh inputs of the types prepare made: what prepare computes
  // is not part of the model.
  ModelAlone alone;
  bool one = lang::as_tensor(*given) || !given->is_list();
  std::vector<lang::Value> items = one ? std::vector<lang::Value>{*given} : lang::list_items(*given);
  std::vector<graph::NodeId> input_nodes;
  for (size_t i = 0; i < items.size(); ++i) {
    const auto* t = lang::as_tensor(items[i]);
    if (!t) continue;
    std::string name = one ? "inputs" : fmt::format("inputs.{}", i);
    graph::NodeId node = b.input(std::string(kInputPrefix) + name, t->info().shape, t->info().dtype);
    items[i] = lang::make_tensor(tracer, node);
    alone.inputs.push_back(name);
    input_nodes.push_back(node);
  }
  StepRecord& record_forms = session.step_record();
  record_forms.recording = false;
  lang::Value prediction = call(session, model, items);
  std::vector<std::pair<std::string, graph::NodeId>> outputs;
  output_paths(prediction, "output", outputs);
  std::vector<graph::NodeId> nodes;
  for (const auto& [name, node] : outputs) {
    alone.outputs.push_back(name);
    nodes.push_back(node);
  }
  graph::Graph g = graph::extract(tracer->graph(), nodes);
  for (size_t i = 0; i < g.outputs.size(); ++i) g.outputs[i].name = alone.outputs[i];
  for (auto& input : g.inputs) {
    if (input.name.starts_with(kInputPrefix)) input.name = input.name.substr(kInputPrefix.size());
    else if (!session.params().find(input.name)) {
      lang::fail(kModelNotAlone, {},
                 fmt::format("a model run alone reads only its inputs and parameters; it reads `{}`",
                             lang::shown_in_message(input.name)),
                 "random numbers (dropout, say) belong to the training step, not the model");
    }
  }
  alone.graph = session.under_precision(std::move(g));
  return alone;
}

nlohmann::json model_json(const ModelAlone& model, const Session& session, const std::string& slug, int64_t step) {
  auto describe = [&](const std::string& name, bool input) {
    const auto& named = input ? model.graph.inputs : model.graph.outputs;
    for (const auto& n : named) {
      if (n.name != name) continue;
      const graph::Node& node = model.graph.node(n.node);
      return nlohmann::json{{"name", name}, {"shape", node.shape}, {"dtype", graph::dtype_name(node.dtype)}};
    }
    return nlohmann::json{{"name", name}};
  };
  nlohmann::json inputs = nlohmann::json::array(), outputs = nlohmann::json::array();
  for (const auto& name : model.inputs) inputs.push_back(describe(name, true));
  for (const auto& name : model.outputs) outputs.push_back(describe(name, false));
  nlohmann::json parameters = nlohmann::json::array();
  for (const auto& input : model.graph.inputs) {
    if (!session.params().find(input.name)) continue;
    const graph::Node& node = model.graph.node(input.node);
    // As params.safetensors holds it, and the graph reads it.
    parameters.push_back({{"path", input.name}, {"shape", node.shape}, {"dtype", graph::dtype_name(node.dtype)}});
  }
  // A node's origin indexes the spans of the process that traced it, so it means nothing
  // in a file, and would make a checkpoint's model and its export differ.
  graph::Graph graph = model.graph;
  for (graph::Node& node : graph.nodes) node.origin = 0;
  return {{"format", "sexpgpu-model"},
          {"version", 1},
          {"checkpoint", fmt::format("step-{:08}", step)},
          {"step", step},
          {"slug", slug},
          {"precision", session.settings().precision()},
          {"inputs", inputs},
          {"outputs", outputs},
          {"parameters", parameters},
          {"graph", graph::graph_to_json(graph)}};
}

}  // namespace sx::train
