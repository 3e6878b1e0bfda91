// Checking and reading loaded parameters.
#include "model/load.h"

#include <fmt/format.h>

#include "graph/shape.h"
#include "io/checkpoint.h"
#include "io/location.h"
#include "io/safetensors.h"
#include "io/tensor_source.h"
#include "lang/diagnostic.h"

namespace sx::model {
namespace {

// Opens each file once per call.
class Sources {
 public:
  io::TensorSource& get(const Parameter& param) {
    const std::string& file = param.decl->load->first;
    auto it = sources_.find(file);
    if (it != sources_.end()) return *it->second;
    // The scheme before anything else; the location is shown as written. s3:// and o41://
    // files are read by TensorSource, whose errors name them.
    std::string scheme = io::scheme_of(file);
    if (!scheme.empty() && !io::is_storage_scheme(scheme)) {
      lang::fail(
          io::kUnknownScheme, param.decl->span,
          fmt::format("`{}` loads from {}, and SexpGPU does not read {}:// locations",
                      lang::shown_in_message(param.path), lang::shown_in_message(file), lang::shown_in_message(scheme)),
          "a location is a local path, file:///absolute/path, s3://bucket/key or o41://team/run; download the "
          "file and load it by its local path");
    }
    try {
      return *sources_.emplace(file, io::TensorSource::open(file)).first->second;
    } catch (const io::LoadError& e) {
      fail_for(param, e);
    }
  }

  // The tensor `param` loads, when its file holds it. An index opens the shard here, so a
  // malformed shard is reported as the parameter's error, like a malformed single file.
  std::optional<std::pair<std::shared_ptr<const io::SafetensorsFile>, io::TensorInfo>> find(const Parameter& param) {
    io::TensorSource& source = get(param);
    try {
      return source.find(param.decl->load->second);
    } catch (const io::LoadError& e) {
      fail_for(param, e);
    }
  }

  [[noreturn]] static void fail_for(const Parameter& param, const io::LoadError& e) {
    lang::Diagnostic d;
    d.code = e.code();
    d.span = param.decl->span;
    d.message = e.what();
    d.notes.push_back(fmt::format("while loading `{}` from tensor `{}`", lang::shown_in_message(param.path),
                                  lang::shown_in_message(param.decl->load->second)));
    throw lang::Error(std::move(d));
  }

 private:
  std::map<std::string, std::shared_ptr<io::TensorSource>> sources_;
};

}  // namespace

void check_loads(const ParameterTable& table) {
  Sources sources;
  for (const auto& param : table.params) {
    if (!param.decl->load) continue;
    const auto& [file, tensor] = *param.decl->load;
    auto found = sources.find(param);
    if (!found) {
      lang::fail(io::kMissingTensor, param.decl->span,
                 fmt::format("`{}` loads tensor `{}`, which {} does not hold", lang::shown_in_message(param.path),
                             lang::shown_in_message(tensor), lang::shown_in_message(file)),
                 "list the file's tensors to find the name (python: safetensors.safe_open(...).keys())");
    }
    const io::TensorInfo& info = found->second;
    if (info.shape != param.decl->shape) {
      lang::fail(io::kShapeDiffers, param.decl->span,
                 fmt::format("`{}` is {} but tensor `{}` of {} is {}", lang::shown_in_message(param.path),
                             graph::shape_str(param.decl->shape, " "), lang::shown_in_message(tensor),
                             lang::shown_in_message(file), graph::shape_str(info.shape, " ")),
                 "make the initializer state the tensor's shape; a Hugging Face weight is [out in]: multiply by its "
                 "transpose");
    }
    if (param.decl->dtype != graph::DType::f32 && param.decl->dtype != graph::DType::bf16) {
      lang::fail(
          io::kDTypeDoesNotLoad, param.decl->span,
          fmt::format("`{}` is {}, and tensor `{}` of {} ({}) cannot load into it: tensors load into f32 or "
                      "bf16 parameters only",
                      lang::shown_in_message(param.path), graph::dtype_name(param.decl->dtype),
                      lang::shown_in_message(tensor), lang::shown_in_message(file), lang::shown_in_message(info.dtype)),
          "make the initializer f32 or bf16, and cast where an integer is needed");
    }
    if (info.dtype != "F32" && info.dtype != "BF16") {
      lang::fail(io::kDTypeDoesNotLoad, param.decl->span,
                 fmt::format("`{}` loads tensor `{}` of {}, stored as {}: only F32 and BF16 tensors load",
                             lang::shown_in_message(param.path), lang::shown_in_message(tensor),
                             lang::shown_in_message(file), lang::shown_in_message(info.dtype)),
                 "convert the tensor to float32 or bfloat16 before saving it");
    }
  }
}

std::map<std::string, graph::Tensor> loaded_values(const ParameterTable& table,
                                                   const std::map<std::string, graph::DType>& stored) {
  Sources sources;
  std::map<std::string, graph::Tensor> values;
  for (const auto& param : table.params) {
    if (!param.decl->load) continue;
    auto found = sources.find(param);
    if (!found) continue;  // check_loads reports it
    try {
      auto dtype = stored.find(param.path);
      values[param.path] =
          io::read_tensor(*found->first, found->second, dtype == stored.end() ? param.decl->dtype : dtype->second);
    } catch (const io::LoadError& e) {
      Sources::fail_for(param, e);
    }
  }
  return values;
}

namespace {

// The identity of every file the parameters `chosen` picks read, each hashed once.
std::map<std::string, io::FileIdentity> identities_of(const ParameterTable& table, bool (*chosen)(const Parameter&)) {
  Sources sources;
  std::map<std::string, io::FileIdentity> identities;
  for (const auto& param : table.params) {
    if (!param.decl->load || !chosen(param)) continue;
    for (const auto& file : sources.get(param).files()) {
      if (identities.count(file)) continue;
      try {
        identities[file] = io::identify(file);
      } catch (const io::LoadError& e) {
        Sources::fail_for(param, e);
      }
    }
  }
  return identities;
}

}  // namespace

std::map<std::string, io::FileIdentity> load_identities(const ParameterTable& table) {
  return identities_of(table, [](const Parameter&) { return true; });
}

bool is_frozen_load(const Parameter& param) { return param.decl->load && !param.decl->trainable; }

io::LoadRecord frozen_load_record(const ParameterTable& table) {
  io::LoadRecord record;
  for (const auto& param : table.params) {
    if (is_frozen_load(param))
      record.parameters.push_back({param.path, param.decl->load->first, param.decl->load->second});
  }
  record.files = identities_of(table, is_frozen_load);
  return record;
}

void check_load_reference(const Parameter& param, const io::LoadRecord& recorded, const std::string& where) {
  const auto& [file, tensor] = *param.decl->load;
  const io::LoadReference* reference = recorded.find(param.path);
  if (!reference) {
    lang::fail(
        io::kCheckpointMismatch, param.decl->span,
        fmt::format("`{}` is loaded frozen from {} here, but the checkpoint {} holds its own value",
                    lang::shown_in_message(param.path), lang::shown_in_message(file), lang::shown_in_message(where)),
        "keep the parameter as the run declared it, or --fresh to start over");
  }
  if (reference->file != file || reference->tensor != tensor) {
    lang::fail(io::kCheckpointMismatch, param.decl->span,
               fmt::format("`{}` loads tensor `{}` of {} here, but the run of the checkpoint {} loaded `{}` of {}",
                           lang::shown_in_message(param.path), lang::shown_in_message(tensor),
                           lang::shown_in_message(file), lang::shown_in_message(where),
                           lang::shown_in_message(reference->tensor), lang::shown_in_message(reference->file)),
               "load what the run loaded, or --fresh to start over");
  }
}

void check_recorded_files(const io::LoadRecord& recorded, const std::string& where) {
  try {
    io::check_files_unchanged(recorded);
  } catch (const io::LoadError& e) {
    lang::fail(e.code(), {}, e.what(),
               fmt::format("the checkpoint {} names this file instead of holding its weights: put the file back as "
                           "it was, or start the run again from the new file",
                           lang::shown_in_message(where)));
  }
}

void check_load_record(const ParameterTable& table, const io::LoadRecord& recorded, const std::string& where) {
  for (const auto& param : table.params) {
    if (is_frozen_load(param)) check_load_reference(param, recorded, where);
  }
  for (const io::LoadReference& reference : recorded.parameters) {
    const Parameter* param = table.find(reference.path);
    if (!param || !is_frozen_load(*param)) {
      lang::fail(io::kCheckpointMismatch, param ? param->decl->span : lang::Span{},
                 fmt::format("the checkpoint {} does not hold `{}`: its run loaded it frozen from {}, and here it {}",
                             lang::shown_in_message(where), lang::shown_in_message(reference.path),
                             lang::shown_in_message(reference.file),
                             param ? (param->decl->trainable ? "trains" : "has an initializer") : "does not exist"),
                 "load it frozen as the run did, or --fresh to start over");
    }
  }
  check_recorded_files(recorded, where);
}

}  // namespace sx::model
