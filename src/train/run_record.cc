// Reading a checkpoint's experiment.json.
#include "train/run_record.h"

#include <fmt/format.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>

#include "graph/shape.h"
#include "io/checkpoint.h"
#include "io/load_record.h"
#include "io/safetensors.h"
#include "lang/diagnostic.h"
#include "model/load.h"
#include "model/model.h"
#include "train/codes.h"
#include "train/session.h"

namespace sx::train {

using nlohmann::json;

// The differences a refusal shows before it says how many more there are.
constexpr size_t kDifferencesShown = 8;

KnobChoices RunRecord::choices() const {
  KnobChoices out;
  out.variant = variant;
  // Quoted, so that a value is read back as the value it was and never evaluated: a list
  // knob `(1 2)` is not a call.
  for (const auto& [name, value] : knobs) out.knobs[name] = "'" + value;
  return out;
}

io::CheckpointReader open_checkpoint_files(const io::Checkpoint& local) {
  io::CheckpointReader files(local);
  // Once a process: a run that resumes from a checkpoint and hands it to `:after` reads it twice.
  static std::set<std::string> warned;
  if (!files.checked() && warned.insert(local.path).second) {
    lang::Diagnostic d;
    d.severity = lang::Severity::Warning;
    d.code = io::kCheckpointUnchecked;
    d.message = files.unchecked_message();
    d.helps.push_back("a run resumed from it writes its next checkpoints with checksums");
    std::fflush(stdout);
    std::fputs(lang::render(d, lang::stderr_wants_color()).c_str(), stderr);
  }
  return files;
}

RunRecord read_run_record(const std::string& location) {
  RunRecord record;
  json saved;
  try {
    record.checkpoint = io::resolve_checkpoint(location);
    record.files = open_checkpoint_files(record.checkpoint);
    saved = record.files->read_json("experiment.json");
  } catch (const io::CheckpointError& e) {
    lang::fail(e.code(), {}, record.checkpoint.named_as_written(e.what()),
               e.code() == io::kCheckpointMismatch
                   ? "a checkpoint holds the experiment.json its run wrote; export a checkpoint `sexpgpu run` wrote"
                   : "");
  }
  auto refuse = [&](const std::string& why) -> void {
    lang::fail(io::kCheckpointMismatch, {},
               fmt::format("{}/experiment.json: {}", lang::shown_in_message(record.checkpoint.written), why),
               "a checkpoint holds the experiment.json its run wrote; export a checkpoint `sexpgpu run` wrote");
  };
  try {
    record.slug = saved.at("slug").get<std::string>();
    record.variant = saved.value("variant", "");
    const json knobs = saved.value("knobs", json::object());
    for (const auto& [name, value] : knobs.items()) {
      record.knobs[name] = value.get<std::string>();
    }
    for (const auto& source : saved.at("sources")) {
      RunRecord::Source s{source.at("path").get<std::string>(), source.at("sha256").get<std::string>(), {}};
      if (source.contains("text")) s.text = source.at("text").get<std::string>();
      record.sources.push_back(std::move(s));
    }
    for (const auto& p : saved.at("parameters")) {
      RunRecord::Parameter& param =
          record.parameters.emplace_back(RunRecord::Parameter{p.at("path").get<std::string>(),
                                                              p.at("shape").get<std::vector<int64_t>>(),
                                                              p.at("dtype").get<std::string>(),
                                                              {},
                                                              {}});
      if (p.contains("loaded_from")) {
        param.load_file = p.at("loaded_from").at("file").get<std::string>();
        param.load_tensor = p.at("loaded_from").at("tensor").get<std::string>();
      }
    }
  } catch (const json::exception& e) {
    refuse(fmt::format("not what a run writes: {}", e.what()));
  }
  if (record.sources.empty()) refuse("it records no source file");
  return record;
}

std::vector<std::string> parameter_differences(const RunRecord& record, const model::ParameterTable& params) {
  std::vector<std::string> out;
  std::map<std::string, const RunRecord::Parameter*> recorded;
  for (const auto& p : record.parameters) recorded[p.path] = &p;
  for (const auto& p : params.params) {
    auto it = recorded.find(p.path);
    const std::string here = fmt::format("{}{}", graph::dtype_name(p.decl->dtype), graph::shape_str(p.decl->shape));
    if (it == recorded.end()) {
      out.push_back(fmt::format("`{}` ({}) is a parameter of the file but not of the checkpoint",
                                lang::shown_in_message(p.path), here));
      continue;
    }
    const std::string there =
        fmt::format("{}{}", lang::shown_in_message(it->second->dtype), graph::shape_str(it->second->shape));
    if (here != there)
      out.push_back(
          fmt::format("`{}` is {} in the file but {} in the checkpoint", lang::shown_in_message(p.path), here, there));
    recorded.erase(it);
  }
  for (const auto& p : record.parameters) {
    if (recorded.count(p.path)) {
      out.push_back(fmt::format("`{}` ({}{}) is a parameter of the checkpoint but not of the file",
                                lang::shown_in_message(p.path), lang::shown_in_message(p.dtype),
                                graph::shape_str(p.shape)));
    }
  }
  return out;
}

void load_as_recorded(Session& session, const RunRecord& record, const std::string& file, std::string_view command) {
  try {
    session.load(file);
  } catch (lang::Error& e) {
    auto& d = e.diagnostic();
    if (d.code == kUnknownKnob || d.code == kUnknownVariant) {
      d.notes.push_back(fmt::format("{} compiles the file under the variant and knobs {}/experiment.json records",
                                    command, lang::shown_in_message(record.checkpoint.written)));
    }
    throw;
  }
}

void refuse_other_parameters(const RunRecord& record, const Session& session, const std::string& file,
                             std::string_view command) {
  std::vector<std::string> differences = parameter_differences(record, session.params());
  if (differences.empty()) return;
  lang::Diagnostic d;
  d.code = io::kCheckpointMismatch;
  d.message = fmt::format("the parameters of {} are not those of the checkpoint {}: {}", lang::shown_in_message(file),
                          lang::shown_in_message(record.checkpoint.written), differences.front());
  for (size_t i = 1; i < differences.size() && i < kDifferencesShown; ++i) d.notes.push_back(differences[i]);
  if (differences.size() > kDifferencesShown) {
    d.notes.push_back(fmt::format("and {} more differences", differences.size() - kDifferencesShown));
  }
  d.helps.push_back(fmt::format("{} the checkpoint with the file its run trained; {}/experiment.json holds its text",
                                command, lang::shown_in_message(record.checkpoint.written)));
  throw lang::Error(std::move(d));
}

std::vector<std::pair<std::string, graph::Tensor>> read_checkpoint_values(const RunRecord& record,
                                                                          const model::ParameterTable& table,
                                                                          const std::vector<WantedParameter>& wanted,
                                                                          bool averages) {
  const io::Checkpoint& checkpoint = record.checkpoint;
  std::vector<std::pair<std::string, graph::Tensor>> values;
  model::ParameterTable from_files;
  std::map<std::string, graph::DType> file_dtypes;
  try {
    const io::CheckpointReader& files = *record.files;
    model::check_load_record(table, io::read_load_record(files), checkpoint.written);
    auto params = files.read_tensors("params.safetensors");
    std::shared_ptr<const io::SafetensorsFile> ema;
    if (averages && files.has("ema.safetensors")) ema = files.read_tensors("ema.safetensors");
    for (const WantedParameter& w : wanted) {
      const std::string& path = w.param->path;
      if (model::is_frozen_load(*w.param)) {
        from_files.params.push_back(*w.param);
        file_dtypes[path] = w.dtype;
        continue;
      }
      // As the run writes it: a bf16 weight as F32. The trained weight must be whole where
      // its average is read too.
      const graph::DType dtype = w.param->decl->dtype == graph::DType::bf16 ? graph::DType::f32 : w.param->decl->dtype;
      const std::string declared =
          fmt::format("{} {}", io::safetensors_dtype_name(dtype), graph::shape_str(w.param->decl->shape));
      auto fitting = [&](const io::SafetensorsFile& file) {
        const io::TensorInfo* info = file.find(path);
        const std::string shown_file = lang::shown_in_message(checkpoint.named_as_written(file.path()));
        if (!info) {
          lang::fail(io::kCheckpointMismatch, w.param->decl->span,
                     fmt::format("{} holds no `{}`", shown_file, lang::shown_in_message(path)));
        }
        const std::string found = fmt::format("{} {}", info->dtype, graph::shape_str(info->shape));
        if (found != declared) {
          lang::fail(io::kCheckpointMismatch, w.param->decl->span,
                     fmt::format("`{}` in {} is {}, the file's is {}", lang::shown_in_message(path), shown_file, found,
                                 declared));
        }
        return info;
      };
      const io::TensorInfo* info = fitting(*params);
      const bool averaged = ema && ema->find(path);
      if (averaged) info = fitting(*ema);
      values.emplace_back(path, io::read_tensor(averaged ? *ema : *params, *info, w.dtype));
    }
  } catch (const io::LoadError& e) {
    lang::fail(io::kCheckpointMismatch, {}, checkpoint.named_as_written(e.what()));
  } catch (const io::CheckpointError& e) {
    lang::fail(e.code(), {}, checkpoint.named_as_written(e.what()));
  }
  for (auto& [path, value] : model::loaded_values(from_files, file_dtypes)) values.emplace_back(path, std::move(value));
  return values;
}

}  // namespace sx::train
