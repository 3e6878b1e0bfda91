// The training loop.
#include "train/trainer.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <deque>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "io/checkpoint.h"
#include "io/checkpoint_files.h"
#include "io/identity.h"
#include "io/load_record.h"
#include "io/safetensors.h"
#include "lang/printer.h"
#include "lang/tracer.h"
#include "model/load.h"
#include "model/model.h"
#include "model/values.h"
#include "report/loss_curve.h"
#include "train/codes.h"
#include "train/eval_pass.h"
#include "train/metrics_log.h"
#include "train/model_alone.h"
#include "train/prefetcher.h"
#include "train/run_record.h"
#include "train/step.h"

namespace sx::train {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

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

// Where a fresh run goes when `location` holds another run's checkpoints: the first of
// LOC-2, LOC-3, ... that holds none.
std::string fresh_location(const std::string& location) {
  for (int n = 2;; ++n) {
    std::string candidate = fmt::format("{}-{}", location, n);
    if (io::list_checkpoints(candidate).empty()) return candidate;
  }
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string sha256_of_text(const std::string& text) {
  return io::sha256_hex({reinterpret_cast<const uint8_t*>(text.data()), text.size()});
}

// The run file, then every file it required (the standard library's too), each with its
// SHA-256, as the run read them: taken once, when the run starts.
json sources_json(Session& session, const TrainOptions& options) {
  json sources = json::array();
  std::string text = read_text(options.file);
  // The text too, so that `export` can tell which lines an edit since the run moved.
  sources.push_back({{"path", std::filesystem::path(options.file).filename().string()},
                     {"sha256", sha256_of_text(text)},
                     {"text", text}});
  for (const std::string& file : session.interp().module_files())
    sources.push_back({{"path", file}, {"sha256", sha256_of_text(read_text(file))}});
  return sources;
}

json experiment_json(Session& session, const TrainOptions& options, const std::string& slug, int64_t step,
                     const json& sources, const io::LoadRecord& loads) {
  json knobs = json::object();
  for (const Knob& knob : session.knobs().knobs) knobs[knob.name] = lang::print(knob.value);
  json parameters = json::array();
  for (const auto& p : session.params().params) {
    const graph::Node& node = session.interp().tracer()->graph().node(p.decl->node);
    parameters.push_back({{"path", p.path},
                          {"shape", node.shape},
                          {"dtype", graph::dtype_name(node.dtype)},
                          {"trainable", p.decl->trainable}});
  }
  return {{"slug", slug},
          {"file", std::filesystem::path(options.file).filename().string()},
          {"sources", sources},
          {"variant", options.variant},
          {"knobs", knobs},
          {"seed", session.seed()},
          {"step", step},
          {"parameters", parameters},
          {"loads", io::load_record_json(loads)}};
}

// Refuses to resume from a checkpoint of another file, or of a parameter table whose
// parameters differ in what is trained.
void check_resumable(Session& session, const json& saved, const std::string& slug, const std::string& where) {
  if (saved.value("slug", "") != slug) {
    lang::fail(io::kCheckpointOfAnotherRun, {},
               fmt::format("{} holds checkpoints of `{}`, not of `{}`", lang::shown_in_message(where),
                           lang::shown_in_message(saved.value("slug", "?")), lang::shown_in_message(slug)),
               "give another --checkpoint-dir, or --fresh to start in a location of its own");
  }
  std::map<std::string, bool> trainable;
  for (const auto& p : saved.value("parameters", json::array()))
    trainable[p.value("path", "")] = p.value("trainable", true);
  for (const auto& p : session.params().params) {
    auto it = trainable.find(p.path);
    if (it != trainable.end() && it->second != p.decl->trainable) {
      lang::fail(io::kCheckpointMismatch, {},
                 fmt::format("`{}` is {} in this file but {} in the checkpoint in {}", lang::shown_in_message(p.path),
                             p.decl->trainable ? "trainable" : "frozen", it->second ? "trainable" : "frozen",
                             lang::shown_in_message(where)),
                 "keep what is trained as it was, or --fresh to start over");
    }
  }
}

// A tensor a checkpoint's file holds: its name there, the store's name for it, and
// whether it is a weight (stored bf16 as f32, see as_stored).
struct StoredTensor {
  std::string name, key;
  bool weight = false;
};

// What each tensor file of a checkpoint holds: written so, and read back on resuming.
struct CheckpointTables {
  std::vector<StoredTensor> params, optimizer, ema;
};

CheckpointTables checkpoint_tables(Session& session, const StepGraph& step) {
  CheckpointTables tables;
  for (const auto& p : session.params().params) {
    // A frozen parameter read from a file is named in experiment.json, not copied.
    if (!model::is_frozen_load(p)) tables.params.push_back({p.path, p.path, true});
  }
  for (const StateTensor& st : step.state) {
    if (st.kind == StateTensor::Kind::Ema) tables.ema.push_back({st.path, st.name, true});
    else tables.optimizer.push_back({st.name, st.name, false});
  }
  return tables;
}

constexpr const char* kResumeHelp = "remove the checkpoint to resume from the one before it, or --fresh to start over";

// Reads the tensors of a checkpoint's file into the store: each of `tensors` must be
// there in the dtype and shape the run writes it, else E-CKPT-006 names it.
void restore(runtime::Store& store, const io::CheckpointReader& checkpoint, std::string_view file_name,
             const std::vector<StoredTensor>& tensors) {
  auto file = checkpoint.read_tensors(file_name);
  const std::string shown_file = lang::shown_in_message(checkpoint.checkpoint().named_as_written(file->path()));
  for (const StoredTensor& t : tensors) {
    const device::Buffer& held = store.at(t.key);
    const graph::DType stored = t.weight && held.dtype() == graph::DType::bf16 ? graph::DType::f32 : held.dtype();
    const std::string wanted = fmt::format("{} {}", io::safetensors_dtype_name(stored), graph::shape_str(held.shape()));
    const io::TensorInfo* info = file->find(t.name);
    if (!info) {
      lang::fail(io::kCheckpointMismatch, {},
                 fmt::format("{} holds no `{}` ({}), which the run needs to resume", shown_file,
                             lang::shown_in_message(t.name), wanted),
                 kResumeHelp);
    }
    const std::string found = fmt::format("{} {}", info->dtype, graph::shape_str(info->shape));
    if (found != wanted) {
      lang::fail(
          io::kCheckpointMismatch, {},
          fmt::format("`{}` in {} is {}, the run's is {}", lang::shown_in_message(t.name), shown_file, found, wanted),
          kResumeHelp);
    }
    store.put(t.key, io::read_tensor(*file, *info, held.dtype()));
  }
}

// The counters of a checkpoint's state.json: every counter of the run must be there, and
// the step the checkpoint's, else E-CKPT-006.
std::map<std::string, double> restore_counters(const io::CheckpointReader& checkpoint,
                                               const std::vector<std::string>& names) {
  const json state = checkpoint.read_json("state.json");
  const std::string path =
      lang::shown_in_message(checkpoint.checkpoint().named_as_written(checkpoint.path("state.json")));
  const int64_t step = checkpoint.checkpoint().step;
  if (!state.contains("step") || !state["step"].is_number_integer() || state["step"].get<int64_t>() != step) {
    lang::fail(io::kCheckpointMismatch, {},
               fmt::format("{}: its `step` is {}, not the checkpoint's {}", path,
                           state.contains("step") ? state["step"].dump() : "missing", step),
               kResumeHelp);
  }
  const json counters = state.value("counters", json());
  std::map<std::string, double> out;
  for (const std::string& name : names) {
    if (!counters.is_object() || !counters.contains(name) || !counters[name].is_number()) {
      lang::fail(io::kCheckpointMismatch, {}, fmt::format("{}: holds no number for the counter `{}`", path, name),
                 kResumeHelp);
    }
    out[name] = counters[name].get<double>();
  }
  return out;
}

// A weight as a checkpoint stores it: bf16 as f32 (docs/serving.md), exactly, since
// every bf16 value is an f32; model.json and experiment.json say the dtype the run
// reads it as.
graph::Tensor as_stored(graph::Tensor weight) {
  if (weight.dtype() != graph::DType::bf16) return weight;
  std::vector<double> values = weight.to_doubles();
  return graph::Tensor::from_doubles(graph::DType::f32, weight.shape(), values);
}

// A rate with three significant digits, never in exponent form: 0.852, 41.2, 1234.
std::string three_digits(double rate) {
  if (!std::isfinite(rate)) return "?";
  return fmt::format("{:.{}f}", rate, rate >= 100 ? 0 : rate >= 10 ? 1 : rate >= 1 ? 2 : 3);
}

std::string format_seconds(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  auto t = static_cast<int64_t>(s);
  return t >= 3600 ? fmt::format("{}h{:02}m", t / 3600, t / 60 % 60) : fmt::format("{}m{:02}s", t / 60, t % 60);
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

}  // namespace

std::string run_slug(const TrainOptions& options) {
  // examples/addition/run.sx is "addition": a file named run.sx is named by its folder.
  std::filesystem::path file = std::filesystem::absolute(options.file).lexically_normal();
  std::string stem = file.stem().string();
  if (stem == "run" && !file.parent_path().filename().empty()) stem = file.parent_path().filename().string();
  return options.variant.empty() ? stem : stem + "-" + options.variant;
}

namespace {

// What a run reads of `defrun` before it starts, each checked: its loader, opened, and
// its whole-number settings.
struct RunShape {
  std::shared_ptr<const Loader> loader;
  int64_t batch = 0, total = 0, checkpoint_every = 0, keep = 0, log_every = 0;
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

}  // namespace

void compile_run(Session& session, device::Device& device) {
  const RunSettings& run = session.settings();
  if (!run.find("data")) return;
  RunShape shape = read_run_shape(run, std::nullopt);
  StepGraph step = trace_step(session, *shape.loader, {.batch = shape.batch, .total_steps = shape.total});
  session.compile(session.under_precision(step.graph), device);
  for (const EvalPassSpec* pass : eval_passes(run)) EvalPass(session, *pass, shape.batch, device);
  model_alone_or_note(session, *shape.loader);
}

std::string train(Session& session, device::Device& device, const TrainOptions& options) {
  const RunSettings& run = session.settings();
  const auto [loader, batch, total, checkpoint_every, keep, log_every] = read_run_shape(run, options.steps);
  uint64_t seed = session.seed();

  std::string slug = run_slug(options);
  std::string location = options.checkpoint_dir.empty() ? "runs/" + slug : options.checkpoint_dir;
  std::optional<io::Checkpoint> newest = io::newest_checkpoint(location);
  if (newest && options.fresh) {
    location = fresh_location(location);
    newest.reset();
  }

  StepGraph step = trace_step(session, *loader, {.batch = batch, .total_steps = total});
  std::optional<ModelAlone> alone = model_alone_or_note(session, *loader);
  // A resumed run checks what the checkpoint says of the run before reading any weight;
  // its frozen :load files, checked unchanged, are recorded again as they were.
  io::LoadRecord loads;
  const CheckpointTables tables = checkpoint_tables(session, step);
  // The newest checkpoint's files, read from a local folder (one on storage is downloaded);
  // messages name it as written.
  std::optional<io::CheckpointReader> resumed;
  if (newest) {
    try {
      resumed = open_checkpoint_files(io::local_checkpoint(*newest));
      json saved = resumed->read_json("experiment.json");
      check_resumable(session, saved, slug, location);
      loads = io::parse_load_record(saved, resumed->checkpoint().written + "/experiment.json");
    } catch (const io::CheckpointError& e) {
      lang::fail(e.code(), {}, e.what(), kResumeHelp);
    }
    model::check_load_record(session.params(), loads, resumed->checkpoint().written);
  } else {
    loads = model::frozen_load_record(session.params());
  }
  const json sources = sources_json(session, options);
  runtime::Store store(device);
  auto stored = model::store_frozen_parameters(session.params(), session.interp().tracer()->graph());
  for (auto& [path, value] : model::initial_values(session.params(), seed, device, stored)) {
    store.put(path, std::move(value));
  }
  for (const StateTensor& s : step.state) store.put(s.name, graph::Tensor(s.dtype, s.shape));
  int64_t start = 0;
  std::map<std::string, double> counters;
  if (resumed) {
    try {
      restore(store, *resumed, "params.safetensors", tables.params);
      restore(store, *resumed, "optimizer.safetensors", tables.optimizer);
      if (!tables.ema.empty()) restore(store, *resumed, "ema.safetensors", tables.ema);
      counters = restore_counters(*resumed, step.counters);
    } catch (const io::LoadError& e) {
      lang::fail(io::kCheckpointMismatch, {}, resumed->checkpoint().named_as_written(e.what()), kResumeHelp);
    } catch (const io::CheckpointError& e) {
      lang::fail(e.code(), {}, resumed->checkpoint().named_as_written(e.what()), kResumeHelp);
    }
    start = newest->step;
    std::printf("resuming %s from %s (step %lld of %lld)\n", slug.c_str(), resumed->checkpoint().written.c_str(),
                static_cast<long long>(start), static_cast<long long>(total));
  } else {
    std::printf("training %s: %lld steps of batch %lld on %s, checkpoints in %s\n", slug.c_str(),
                static_cast<long long>(total), static_cast<long long>(batch), device.name().c_str(), location.c_str());
  }
  std::fflush(stdout);
  // metrics.jsonl and loss.svg: beside the checkpoints, or for a storage location in a
  // local folder whose copies are uploaded beside them. A run that finds itself done draws
  // the curve that a run killed before drawing it left missing.
  const bool finished = start >= total;
  std::string side;
  try {
    side = finished ? io::side_folder(location, {"metrics.jsonl", "loss.svg"})
                    : io::side_folder(location, {"metrics.jsonl"});
  } catch (const io::CheckpointError& e) {
    lang::fail(e.code(), {}, e.what());
  }
  if (finished) {
    if (!std::filesystem::exists(side + "/loss.svg")) draw_loss_curve(side, location, slug);
    run_after(session, device, location);
    return location;
  }

  // Compiling folds the step's constants, which may read an index outside its axis.
  runtime::Program program = [&] {
    try {
      return runtime::Program(device, session.under_precision(step.graph), step.inputs, step.outputs);
    } catch (const graph::IndexOutOfRange& e) {
      fail_index_out_of_range(*session.interp().tracer(), e, "the step: ");
    }
  }();
  std::vector<std::unique_ptr<EvalPass>> passes;
  for (const EvalPassSpec* pass : eval_passes(run))
    passes.push_back(std::make_unique<EvalPass>(session, *pass, batch, device));
  // Lines after the step the run starts from are a killed run's, dropped: a run killed
  // before its first checkpoint starts again from step 0, and logs steps 1... once.
  MetricsLog metrics(side + "/metrics.jsonl", start);
  Prefetcher prefetcher(loader, seed, start, batch, {.depth = 2, .end_step = total});
  bool terminal = isatty(STDOUT_FILENO);
  // A language model's loader reads `window` input tokens a row; other records are no tokens.
  const LoaderSpec& data = loader->spec();
  const int64_t tokens_per_step =
      data.kind == LoaderKind::TextWindows || data.kind == LoaderKind::TokenWindows ? batch * data.window : 0;
  auto began = Clock::now();
  double data_seconds = 0;
  double loss_value = 0;
  for (int64_t s = start; s < total; ++s) {
    Prefetcher::Next next = prefetcher.next();
    data_seconds += next.waited_seconds;
    std::vector<device::Buffer> fed_buffers;
    for (size_t i : program.fed_inputs()) {
      const runtime::Binding& input = program.inputs()[i];
      if (input.role == runtime::Role::data) {
        const graph::Tensor* field = next.batch.find(input.name.substr(kDataPrefix.size()));
        fed_buffers.push_back(device.upload(*field));
      } else if (input.role == runtime::Role::random_key) {
        graph::Tensor key(graph::DType::i64, {});
        key.data<int64_t>()[0] =
            static_cast<int64_t>(model::stream_key(seed, input.name, static_cast<uint64_t>(s) + 1));
        fed_buffers.push_back(device.upload(std::move(key)));
      } else {
        fed_buffers.push_back(device.upload(graph::Tensor::scalar(graph::DType::i64, static_cast<double>(s))));
      }
    }
    std::vector<const device::Buffer*> fed;
    for (const auto& b : fed_buffers) fed.push_back(&b);
    std::span<const device::Buffer> results;
    try {
      results = program.run(store, fed);
    } catch (const device::DeviceError& e) {
      lang::fail(e.code(), {}, fmt::format("step {}: {}", s, e.what()));
    } catch (const graph::IndexOutOfRange& e) {
      fail_index_out_of_range(*session.interp().tracer(), e, fmt::format("step {}: ", s), kDataPrefix);
    }
    loss_value = device.download(results[0]).value(0);
    std::vector<std::pair<std::string, double>> logged{{"loss", loss_value}};
    size_t r = 1;
    for (const std::string& name : step.metrics) logged.emplace_back(name, device.download(results[r++]).value(0));
    for (const std::string& name : step.counters) {
      counters[name] += device.download(results[r++]).value(0);
      logged.emplace_back(name, counters[name]);
    }
    for (const auto& guard : step.guards) {
      if (device.download(results[r++]).value(0) == 0) {
        lang::fail(kRunStopped, guard.span, fmt::format("step {}: guard: {}", s, lang::shown_in_message(guard.name)));
      }
    }
    if (!std::isfinite(loss_value)) {
      lang::fail(kRunStopped, {}, fmt::format("the loss is {} at step {}", loss_value, s),
                 "lower the learning rate, clip the gradients (:grad-clip), or guard the loss");
    }
    // Logged, like checkpoints, by the steps done: the first step's loss is step 1's.
    int64_t done = s + 1;
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
    metrics.append(done, logged);
    double elapsed = std::chrono::duration<double>(Clock::now() - began).count();
    double rate = static_cast<double>(done - start) / elapsed;
    std::string line = fmt::format(
        "step {}/{}  loss {:.4f}  {} steps/s{}  data {:.2f} ms/step  eta {}", done, total, loss_value,
        three_digits(rate), tokens_per_step ? fmt::format("  {} tokens/s", three_digits(rate * tokens_per_step)) : "",
        1e3 * data_seconds / static_cast<double>(done - start),
        format_seconds(static_cast<double>(total - done) / rate));
    if (terminal) std::printf("\r%s\033[K", line.c_str());
    if (done % log_every == 0 || done == total || !evaluated.empty()) {
      if (terminal) std::printf("%s\n", evaluated.c_str());
      else std::printf("%s%s\n", line.c_str(), evaluated.c_str());
    }
    std::fflush(stdout);
    if (done % checkpoint_every == 0 || done == total) {
      // The store's tensors where a host device holds them; copies where it does not, and
      // of bf16 weights, which are stored as f32.
      auto copies = std::make_shared<std::deque<graph::Tensor>>();
      auto refs = [&](const std::vector<StoredTensor>& tensors) {
        std::vector<io::TensorRef> file;
        for (const StoredTensor& t : tensors) {
          const graph::Tensor* value = device::host_tensor_if(store.at(t.key));
          if (!value || (t.weight && value->dtype() == graph::DType::bf16))
            value = &copies->emplace_back(t.weight ? as_stored(store.read(t.key)) : store.read(t.key));
          file.push_back({t.name, value});
        }
        return file;
      };
      std::vector<io::TensorRef> params = refs(tables.params), optimizer = refs(tables.optimizer),
                                 ema = refs(tables.ema);
      std::vector<io::CheckpointFile> files{
          // A source edited into invalid UTF-8 since the run read it must not stop the run.
          io::CheckpointFile::bytes("experiment.json", experiment_json(session, options, slug, done, sources, loads)
                                                               .dump(2, ' ', false, json::error_handler_t::replace) +
                                                           "\n"),
          io::CheckpointFile::tensor_refs("params.safetensors", std::move(params), copies),
          io::CheckpointFile::tensor_refs("optimizer.safetensors", std::move(optimizer), copies),
          io::CheckpointFile::bytes("state.json",
                                    json{{"step", done}, {"loss", loss_value}, {"counters", counters}}.dump(2) + "\n")};
      if (!ema.empty()) files.push_back(io::CheckpointFile::tensor_refs("ema.safetensors", std::move(ema), copies));
      if (alone) {
        files.push_back(io::CheckpointFile::bytes("model.json", model_json(*alone, session, slug, done).dump() + "\n"));
      }
      try {
        // The log first: a run resumed from this checkpoint finds every line up to it (and
        // drops those of steps after it).
        io::publish_side_file(location, "metrics.jsonl");
        io::write_checkpoint(location, done, files);
        io::prune_checkpoints(location, keep);
      } catch (const io::CheckpointError& e) {
        lang::fail(e.code(), {}, e.what());
      }
    }
  }
  std::string curve = draw_loss_curve(side, location, slug);
  std::printf("trained %s: loss %.4f after %lld steps; checkpoints in %s, loss curve %s\n", slug.c_str(), loss_value,
              static_cast<long long>(total), location.c_str(), curve.c_str());
  run_after(session, device, location);
  return location;
}

}  // namespace sx::train
