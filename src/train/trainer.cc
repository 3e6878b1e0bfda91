// The training loop: resume or start, then for each step feed its batch, run it, log what
// it returns, and write a checkpoint when one is due.
#include "train/trainer.h"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <memory>

#include "io/checkpoint.h"
#include "lang/printer.h"
#include "lang/tracer.h"
#include "report/loss_curve.h"
#include "runtime/compile.h"
#include "train/codes.h"
#include "train/eval_pass.h"
#include "train/metrics_log.h"
#include "train/model_alone.h"
#include "train/progress.h"
#include "train/run_checkpoints.h"
#include "train/run_start.h"
#include "train/step.h"
#include "train/step_results.h"
#include "train/step_runner.h"

namespace sx::train {
namespace {

int64_t integer_setting(const RunSettings& run, std::string_view key, std::optional<int64_t> fallback) {
  const lang::Value* v = run.find(key);
  if (v && v->is(lang::Type::Int) && v->as_int() > 0) return v->as_int();
  if (v) {
    lang::fail(kRunSettingMissing, run.span,
               fmt::format("`:{}` must be a whole number above 0, not {}", key, lang::printed_in_message(*v)));
  }
  if (fallback) return *fallback;
  lang::fail(kRunSettingMissing, run.span, fmt::format("`defrun` has no `:{}`, which a run needs", key),
             "see docs/training.md for the settings of a run");
}

// What a run reads of `defrun` before it starts, each checked: its loader, opened, and
// its whole-number settings.
struct RunShape {
  std::shared_ptr<const Loader> loader;
  int64_t batch = 0, total = 0, checkpoint_every = 0, keep = 0, log_every = 0;
  int64_t tokens_per_step = 0;  // a language model's input tokens; 0 where records are no tokens
};

RunShape read_run_shape(const RunSettings& run, std::optional<int64_t> steps) {
  const lang::Value* data = run.find("data");
  const LoaderSpec* spec = data ? as_loader_spec(*data) : nullptr;
  if (!spec) {
    lang::fail(kRunSettingMissing, run.span, "`defrun` has no `:data` loader, which a run needs",
               "add one, e.g. :data (text-windows \"input.txt\" :window 64)");
  }
  RunShape shape;
  shape.batch = integer_setting(run, "batch", std::nullopt);
  shape.total = steps ? *steps : integer_setting(run, "steps", std::nullopt);
  shape.checkpoint_every = integer_setting(run, "checkpoint-every", shape.total);
  shape.keep = integer_setting(run, "keep", 3);
  shape.log_every = integer_setting(run, "log-every", 10);
  shape.loader = open_loader(*spec);
  // A language model's loader reads `window` input tokens a row.
  const LoaderSpec& opened = shape.loader->spec();
  if (opened.kind == LoaderKind::TextWindows || opened.kind == LoaderKind::TokenWindows)
    shape.tokens_per_step = shape.batch * opened.window;
  return shape;
}

// The model alone, traced for checkpoints; nullopt, with a note, for a model whose input
// shapes cannot be found (E-INFER-001): its checkpoints run only from the file.
std::optional<ModelAlone> model_alone_or_note(Session& session, const Loader& loader) {
  try {
    return trace_model_alone(session, loader);
  } catch (const lang::Error& e) {
    if (e.diagnostic().code != kModelNotAlone) throw;
    std::fflush(stdout);
    std::fputs("note: the checkpoints will hold no model, so they run only from the file:\n", stderr);
    std::fputs(lang::render(e.diagnostic(), lang::stderr_wants_color()).c_str(), stderr);
    return std::nullopt;
  }
}

// The workers and micro-batches of a micro-batched run, for the first line it prints.
std::string parallel_note(const std::optional<MicroBatches>& micro, int workers) {
  if (!micro) return "";
  return fmt::format(" ({} worker{}, {} micro-batch{} of {})", workers, workers == 1 ? "" : "s", micro->count,
                     micro->count == 1 ? "" : "es", micro->rows);
}

void announce(const RunStart& start, const RunPlace& place, const RunShape& shape, const device::Device& device,
              const std::string& parallel) {
  if (start.resumed_from) {
    std::printf("resuming %s from %s (step %lld of %lld)%s\n", place.slug.c_str(), start.resumed_from->c_str(),
                static_cast<long long>(start.step), static_cast<long long>(shape.total), parallel.c_str());
  } else {
    std::printf("training %s: %lld steps of batch %lld%s on %s, checkpoints in %s\n", place.slug.c_str(),
                static_cast<long long>(shape.total), static_cast<long long>(shape.batch), parallel.c_str(),
                device.name().c_str(), place.location.c_str());
  }
  std::fflush(stdout);
}

// Where metrics.jsonl and loss.svg are written: beside the checkpoints, or for a storage
// location a local folder whose copies are uploaded beside them. A run that finds itself
// done fetches the curve too, to draw it only when a run killed before drawing it left
// it missing.
std::string side_folder(const std::string& location, bool finished) {
  try {
    return finished ? io::side_folder(location, {"metrics.jsonl", "loss.svg"})
                    : io::side_folder(location, {"metrics.jsonl"});
  } catch (const io::CheckpointError& e) {
    lang::fail(e.code(), {}, e.what());
  }
}

// Draws the loss curve of SIDE/metrics.jsonl (the training loss and each pass's) as
// SIDE/loss.svg and copies it beside the checkpoints; returns its path.
std::string draw_loss_curve(const std::string& side, const std::string& location, const std::string& slug) {
  const std::string curve = side + "/loss.svg";
  try {
    std::vector<report::CurveSeries> series = read_metrics(side + "/metrics.jsonl");
    std::erase_if(series, [](const report::CurveSeries& c) { return c.name != "loss" && !c.name.ends_with("/loss"); });
    report::CurveOptions options;
    options.title = slug + ": loss";
    io::write_file_atomically(curve, report::loss_curve_svg(series, options));
    io::publish_side_file(location, "loss.svg");
  } catch (const io::CheckpointError& e) {
    lang::fail(e.code(), {}, e.what());
  }
  return curve;
}

// `defrun :after`: the function, once the run is done, with the parameters of its newest
// checkpoint as `eval --checkpoint` has them.
void run_after(Session& session, device::Device& device, const std::string& location) {
  const lang::Value* after = session.settings().find("after");
  if (!after || after->is_nil()) return;
  session.use_checkpoint(location);
  session.run_tensors_on(device);
  session.interp().apply(*after, {}, {}, session.settings().span);
  std::fflush(stdout);
}

// The :eval passes due once `done` of `total` steps are done (each every its `:every`
// steps, and all after the last): their results join `logged`, by the pass's name and
// the metric's; returns what the progress line shows of them.
std::string run_due_passes(std::vector<std::unique_ptr<EvalPass>>& passes, runtime::Store& store, uint64_t seed,
                           int64_t done, int64_t total, std::vector<std::pair<std::string, double>>& logged) {
  std::string evaluated;
  for (auto& pass : passes) {
    int64_t every = pass->spec().every;
    if (!(done == total || (every > 0 && done % every == 0))) continue;
    evaluated += fmt::format("  {}:", pass->name());
    for (const auto& [name, value] : pass->run(store, seed)) {
      logged.emplace_back(pass->name() + "/" + name, value);
      evaluated += fmt::format(" {} {:.4g}", name, value);
    }
  }
  return evaluated;
}

}  // namespace

std::string run_slug(const TrainOptions& options) {
  // examples/addition/run.sx is "addition": a file named run.sx is named by its folder.
  std::filesystem::path file = std::filesystem::absolute(options.file).lexically_normal();
  std::string stem = file.stem().string();
  if (stem == "run" && !file.parent_path().filename().empty()) stem = file.parent_path().filename().string();
  return options.variant.empty() ? stem : stem + "-" + options.variant;
}

std::optional<CheckedStep> compile_run(Session& session, device::Device& device) {
  const RunSettings& run = session.settings();
  if (!run.find("data")) return std::nullopt;
  RunShape shape = read_run_shape(run, std::nullopt);
  StepGraph step = trace_step(session, *shape.loader, {.batch = shape.batch, .total_steps = shape.total});
  const graph::Graph under_precision = session.under_precision(step.graph);
  graph::Graph compiled = session.compile(under_precision, device);
  for (const EvalPassSpec* pass : eval_passes(run)) EvalPass(session, *pass, shape.batch, device);
  model_alone_or_note(session, *shape.loader);
  return CheckedStep{.with_composites = runtime::optimized_with_composites(device, under_precision),
                     .compiled = std::move(compiled)};
}

// The micro-batches of a run that has them: one that sets `:micro-batch`, or runs under
// mpirun (even alone, so that its bits are those of any number of workers).
std::optional<MicroBatches> micro_batches_of(const RunSettings& run, int64_t batch, const distributed::World& world) {
  const lang::Value* set = run.find("micro-batch");
  std::optional<int64_t> rows;
  if (set && !set->is_nil()) rows = integer_setting(run, "micro-batch", std::nullopt);
  else if (world.size() == 1 && !distributed::launched_by_mpi()) return std::nullopt;
  return micro_batches(run, rows, batch, world.size());
}

std::string train(Session& session, device::Device& device, const TrainOptions& options) {
  std::unique_ptr<distributed::World> alone = options.world ? nullptr : distributed::world_alone();
  distributed::World& world = options.world ? *options.world : *alone;
  // The first worker alone writes the checkpoints, the logs and the curve, and runs the
  // :eval passes (the parameters are the same bits on every worker).
  const bool lead = world.rank() == 0;
  const RunShape shape = read_run_shape(session.settings(), options.steps);
  const std::optional<MicroBatches> micro = micro_batches_of(session.settings(), shape.batch, world);
  const uint64_t seed = session.seed();
  const RunPlace place = place_run(options);
  const StepGraph step =
      trace_step(session, *shape.loader,
                 {.batch = micro ? micro->rows : shape.batch, .total_steps = shape.total, .split = micro.has_value()});
  const std::optional<ModelAlone> alone_model = model_alone_or_note(session, *shape.loader);
  const CheckpointTables tables = checkpoint_tables(session, step);
  runtime::Store store(device);
  RunStart start = resume_or_start(session, store, step, tables, place);
  if (lead) announce(start, place, shape, device, parallel_note(micro, world.size()));
  if (start.step >= shape.total) {
    if (lead) {
      const std::string side = side_folder(place.location, true);
      if (!std::filesystem::exists(side + "/loss.svg")) draw_loss_curve(side, place.location, place.slug);
      run_after(session, device, place.location);
    }
    return place.location;
  }

  CheckpointPolicy checkpoints(session, options, place, start.loads, tables, alone_model, shape.checkpoint_every,
                               shape.keep, shape.total);
  const StepData data{.loader = shape.loader, .seed = seed, .first = start.step, .end = shape.total};
  std::unique_ptr<StepRunner> steps = micro ? micro_batched_steps(session, device, step, data, *micro, world)
                                            : fused_steps(session, device, step, data, shape.batch);
  std::vector<std::unique_ptr<EvalPass>> passes;
  std::optional<MetricsLog> metrics;
  std::string side;
  if (lead) {
    for (const EvalPassSpec* pass : eval_passes(session.settings()))
      passes.push_back(std::make_unique<EvalPass>(session, *pass, shape.batch, device));
    // Lines after the step the run starts from are a killed run's, dropped: a run killed
    // before its first checkpoint starts again from step 0, and logs steps 1... once.
    side = side_folder(place.location, false);
    metrics.emplace(side + "/metrics.jsonl", start.step);
  }
  ProgressLog progress(start.step, shape.total, shape.tokens_per_step, shape.log_every,
                       !distributed::launched_by_mpi());
  std::map<std::string, double> counters = start.counters;
  double loss = 0;
  for (int64_t s = start.step; s < shape.total; ++s) {
    double waited = 0;
    StepResults results = steps->run(store, s, waited);
    progress.waited(waited);
    std::vector<std::pair<std::string, double>> logged = results.logged(counters);
    check_step(results, step, s);
    loss = results.loss;
    // Logged, like checkpoints, by the steps done: the first step's loss is step 1's.
    const int64_t done = s + 1;
    if (!lead) continue;
    if (micro) {
      logged.emplace_back("batch", static_cast<double>(shape.batch));
      logged.emplace_back("workers", static_cast<double>(world.size()));
      if (shape.tokens_per_step) logged.emplace_back("tokens/s", progress.tokens_per_second(done));
    }
    const std::string evaluated = run_due_passes(passes, store, seed, done, shape.total, logged);
    metrics->append(done, logged);
    progress.print(done, loss, evaluated);
    if (checkpoints.due(done)) checkpoints.write(store, done, loss, counters);
  }
  if (!lead) return place.location;
  const std::string curve = draw_loss_curve(side, place.location, place.slug);
  std::printf("trained %s: loss %.4f after %lld steps; checkpoints in %s, loss curve %s\n", place.slug.c_str(), loss,
              static_cast<long long>(shape.total), place.location.c_str(), curve.c_str());
  run_after(session, device, place.location);
  return place.location;
}

}  // namespace sx::train
