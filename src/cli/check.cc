// `sexpgpu check FILE.sx`: read and evaluate a file, compile the tensors its top level
// defines and its run's step, passes and model for the device, run nothing, report every
// problem. With --graph, print the run's training step after the passes, each composite
// one node (a file without a run: the graph that compile made of its tensors), so the
// passes are seen from the command line; with --schedule, the cpu device's schedule of
// that graph and how each of its composites runs.
#include <fmt/format.h>

#include <cstdio>

#include "cli/common.h"
#include "cli/device_flags.h"
#include "device/cpu/cpu.h"
#include "device/cpu/schedule.h"
#include "graph/text.h"
#include "lang/tracer.h"
#include "runtime/compile.h"
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
// a `require` brought in).
graph::Graph defined_tensors(train::Session& session) {
  graph::Graph trace = session.interp().tracer()->graph();
  trace.outputs.clear();
  for (const auto& [symbol, value] : session.top().bindings()) {
    if (!session.top().imported(symbol)) add_outputs(value, symbol->name, trace);
  }
  return trace;
}

// The cpu schedule of `compiled` (what the plan runs), then how each composite of
// `given` (the graph with its composites kept) runs.
void print_cpu_schedule(device::Device& device, const graph::Graph& given, const graph::Graph& compiled) {
  const auto& cpu = dynamic_cast<const device::CpuDevice&>(device);
  std::fputs(device::cpu::print_schedule(cpu.schedule(compiled)).c_str(), stdout);
  std::fputs("composites:\n", stdout);
  std::fputs(device::cpu::print_composites(given, cpu).c_str(), stdout);
}

}  // namespace

void add_check_command(CLI::App& app, std::function<int()>& action) {
  auto* command = app.add_subcommand("check", "Read and evaluate FILE.sx and report its errors; run nothing");
  auto file = std::make_shared<std::string>();
  auto flags = std::make_shared<EvalFlags>();
  auto device = std::make_shared<DeviceFlags>();
  auto print_graph = std::make_shared<bool>(false);
  auto schedule = std::make_shared<bool>(false);
  command->add_option("file", *file, "The run file")->required();
  command->add_flag("--graph", *print_graph,
                    "Print, as text, instead of `FILE: ok`: the training step after the passes, each composite one "
                    "node, for a file whose defrun has :data; else the optimized graph of the tensors it defines");
  command->add_flag("--schedule", *schedule,
                    "Print, as text, instead of `FILE: ok`: the cpu device's schedule of what --graph shows (checked "
                    "on the cpu device whatever --device says), a step a line with where its outputs lie in the "
                    "arena, then each composite's kernel or its fallback to its decomposition");
  flags->add_to(*command);
  device->add_to(*command);
  command->callback([&action, file, flags, device, print_graph, schedule] {
    action = [file, flags, device, print_graph, schedule] {
      return run_on_large_stack([&] {
        if (!resolve_run_file(*file, *flags)) return kExitDiagnosed;
        // Outlives the try: a diagnostic's spans point into the interpreter's sources.
        train::Session session(session_options(*flags));
        try {
          if (*schedule) device->device = "cpu";
          std::unique_ptr<device::Device> on = device->make();
          session.load(*file);
          const graph::Graph trace = defined_tensors(session);
          // Compiled by the one compile path, from which what no defined tensor needs is dropped.
          const graph::Graph compiled = session.compile(trace, *on);
          const std::optional<train::CheckedStep> step = train::compile_run(session, *on);
          if (*print_graph) std::fputs(graph::graph_to_text(step ? step->with_composites : compiled).c_str(), stdout);
          if (*schedule) {
            if (step) print_cpu_schedule(*on, step->with_composites, step->compiled);
            else print_cpu_schedule(*on, runtime::optimized_with_composites(*on, trace), compiled);
          }
          if (!*print_graph && !*schedule) std::printf("%s: ok\n", file->c_str());
          return kExitOk;
        } catch (const lang::Error& e) {
          return report(e);
        }
      });
    };
  });
}

}  // namespace sx::cli
