// `sexpgpu check FILE.sx`: read and evaluate a file, compile the tensors its top level
// defines and its run's step, passes and model for the device, run nothing, report every
// problem. With --graph, print the run's training step after the passes, each composite
// one node (a file without a run: the graph that compile made of its tensors), so the
// passes are seen from the command line.
#include <fmt/format.h>

#include <cstdio>

#include "cli/common.h"
#include "cli/device_flags.h"
#include "graph/text.h"
#include "lang/tracer.h"
#include "train/trainer.h"

namespace sx::cli {
namespace {

// Makes each traced tensor in `value` (at any depth of lists and vectors) an output of
// `graph`: `name` for the value itself, `name.0`, `name.1`, ... for the items inside.
void add_outputs(const lang::Value& value, const std::string& name, graph::Graph& graph) {
  if (const auto* t = lang::as_tensor(value)) {
    graph.outputs.push_back({name, t->node});
  } else if (value.is(lang::Type::Cons)) {
    size_t i = 0;
    for (lang::Cons* c = lang::as_cons(value); c; c = lang::next(c))
      add_outputs(c->car, fmt::format("{}.{}", name, i++), graph);
  } else if (value.is(lang::Type::Vector)) {
    const auto& items = value.as<lang::Vector>()->items;
    for (size_t i = 0; i < items.size(); ++i) add_outputs(items[i], fmt::format("{}.{}", name, i), graph);
  }
}

// The file's whole trace, whose outputs are the tensors its top level defines (not those
// a `require` brought in), compiled for `device` by the one compile path: returns the
// optimized graph, from which what none of them needs is dropped.
graph::Graph compiled_graph(train::Session& session, device::Device& device) {
  graph::Graph trace = session.interp().tracer()->graph();
  trace.outputs.clear();
  for (const auto& [symbol, value] : session.top().bindings()) {
    if (!session.top().imported(symbol)) add_outputs(value, symbol->name, trace);
  }
  return session.compile(trace, device);
}

}  // namespace

void add_check_command(CLI::App& app, std::function<int()>& action) {
  auto* command = app.add_subcommand("check", "Read and evaluate FILE.sx and report its errors; run nothing");
  auto file = std::make_shared<std::string>();
  auto flags = std::make_shared<EvalFlags>();
  auto device = std::make_shared<DeviceFlags>();
  auto print_graph = std::make_shared<bool>(false);
  command->add_option("file", *file, "The run file")->required();
  command->add_flag("--graph", *print_graph,
                    "Print, as text, instead of `FILE: ok`: the training step after the passes, each composite one "
                    "node, for a file whose defrun has :data; else the optimized graph of the tensors it defines");
  flags->add_to(*command);
  device->add_to(*command);
  command->callback([&action, file, flags, device, print_graph] {
    action = [file, flags, device, print_graph] {
      return run_on_large_stack([&] {
        if (!resolve_run_file(*file, *flags)) return kExitDiagnosed;
        // Outlives the try: a diagnostic's spans point into the interpreter's sources.
        train::Session session(session_options(*flags));
        try {
          std::unique_ptr<device::Device> on = device->make();
          session.load(*file);
          graph::Graph compiled = compiled_graph(session, *on);
          std::optional<graph::Graph> step = train::compile_run(session, *on);
          if (*print_graph) {
            std::fputs(graph::graph_to_text(step ? *step : compiled).c_str(), stdout);
          } else {
            std::printf("%s: ok\n", file->c_str());
          }
          return kExitOk;
        } catch (const lang::Error& e) {
          return report(e);
        }
      });
    };
  });
}

}  // namespace sx::cli
