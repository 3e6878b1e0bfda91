// Resuming a run, or starting it (see run_start.h).
#include "train/run_start.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "io/checkpoint.h"
#include "io/checkpoint_files.h"
#include "io/safetensors.h"
#include "lang/printer.h"
#include "lang/tracer.h"
#include "model/load.h"
#include "model/values.h"
#include "train/run_record.h"

namespace sx::train {
namespace {

using nlohmann::json;

constexpr const char* kResumeHelp = "remove the checkpoint to resume from the one before it, or --fresh to start over";

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

// The newest checkpoint's files, checked to be this file's run before any weight is
// read; its frozen :load files, checked unchanged, are recorded again as they were.
io::CheckpointReader open_resumable(Session& session, const RunPlace& place, io::LoadRecord& loads) {
  std::optional<io::CheckpointReader> resumed;
  try {
    resumed = open_checkpoint_files(io::local_checkpoint(*place.newest));
    json saved = resumed->read_json("experiment.json");
    check_resumable(session, saved, place.slug, place.location);
    loads = io::parse_load_record(saved, resumed->checkpoint().written + "/experiment.json");
  } catch (const io::CheckpointError& e) {
    lang::fail(e.code(), {}, e.what(), kResumeHelp);
  }
  model::check_load_record(session.params(), loads, resumed->checkpoint().written);
  return std::move(*resumed);
}

}  // namespace

RunStart resume_or_start(Session& session, runtime::Store& store, const StepGraph& step, const CheckpointTables& tables,
                         const RunPlace& place) {
  RunStart start;
  std::optional<io::CheckpointReader> resumed;
  if (place.newest) resumed.emplace(open_resumable(session, place, start.loads));
  else start.loads = model::frozen_load_record(session.params());
  auto stored = model::store_frozen_parameters(session.params(), session.interp().tracer()->graph());
  for (auto& [path, value] : model::initial_values(session.params(), session.seed(), store.device(), stored)) {
    store.put(path, std::move(value));
  }
  for (const StateTensor& s : step.state) store.put(s.name, graph::Tensor(s.dtype, s.shape));
  if (!resumed) return start;
  try {
    restore(store, *resumed, "params.safetensors", tables.params);
    restore(store, *resumed, "optimizer.safetensors", tables.optimizer);
    if (!tables.ema.empty()) restore(store, *resumed, "ema.safetensors", tables.ema);
    start.counters = restore_counters(*resumed, step.counters);
  } catch (const io::LoadError& e) {
    lang::fail(io::kCheckpointMismatch, {}, resumed->checkpoint().named_as_written(e.what()), kResumeHelp);
  } catch (const io::CheckpointError& e) {
    lang::fail(e.code(), {}, resumed->checkpoint().named_as_written(e.what()), kResumeHelp);
  }
  start.step = place.newest->step;
  start.resumed_from = resumed->checkpoint().written;
  return start;
}

}  // namespace sx::train
