// Opening the operand, reading its model and weights, shaping the model by the flags.
#include "serve/model.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "graph/errors.h"
#include "graph/passes.h"
#include "graph/shown.h"
#include "io/checkpoint.h"
#include "io/checkpoint_files.h"
#include "io/load_record.h"
#include "io/location.h"
#include "io/safetensors.h"
#include "serve/errors.h"

namespace sx::serve {
namespace {

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

// The run file a checkpoint's experiment.json names, for the hint that `export` writes a
// model; "FILE" when it names none or cannot be read.
std::string run_file_of(const std::string& folder) {
  std::ifstream in(folder + "/experiment.json");
  nlohmann::json doc = nlohmann::json::parse(in, nullptr, false);
  if (doc.is_object() && doc.contains("file") && doc["file"].is_string()) return doc["file"].get<std::string>();
  return "FILE";
}

// --precision: the one place the graph is rewritten for it.
graph::Graph with_precision(graph::Graph g, const std::string& precision) {
  if (precision.empty()) return g;
  if (precision == "bf16") return graph::bf16_products(g);
  throw ServeError(kFlagDoesNotFit, fmt::format("--precision {}: the only precision serve takes is bf16",
                                                graph::shown_in_message(precision)));
}

constexpr const char* kOneSource = "the weights and model.json must come from one checkpoint or one export";

// E-SERVE-003 unless the tensor `info` of `file` is one the model reads as `parameter`: of
// its shape, in a dtype that loads (F32 or BF16).
void check_fits(const TensorSpec& parameter, const io::SafetensorsFile& file, const io::TensorInfo& info) {
  const graph::Shape shape(info.shape.begin(), info.shape.end());
  if (shape != parameter.shape) {
    throw ServeError(kWeightsDoNotFit,
                     fmt::format("{}: `{}` is {}, but the model reads it as {}", file.path(),
                                 graph::shown_in_message(parameter.name), graph::shape_str(shape),
                                 graph::shape_str(parameter.shape)),
                     kOneSource);
  }
  if (info.dtype != "F32" && info.dtype != "BF16") {
    throw ServeError(
        kWeightsDoNotFit,
        fmt::format("{}: `{}` is stored as {}, but the model reads it as {} (from F32 or BF16)", file.path(),
                    graph::shown_in_message(parameter.name), info.dtype, graph::dtype_name(parameter.dtype)),
        kOneSource);
  }
}

// A parameter's weight: its :ema average where `ema` holds one, else the trained weight,
// else (a frozen :load parameter) the tensor of the file `loads` names. The trained weight
// must fit where its average is read too: a checkpoint holds both whole.
graph::Tensor read_weight(const TensorSpec& parameter, const io::SafetensorsFile& params,
                          const io::SafetensorsFile* ema, const io::LoadRecord& loads) {
  const io::TensorInfo* trained = params.find(parameter.name);
  if (trained) check_fits(parameter, params, *trained);
  if (const io::TensorInfo* averaged = ema ? ema->find(parameter.name) : nullptr) {
    if (!trained) {
      throw ServeError(kWeightsDoNotFit,
                       fmt::format("{}: holds no `{}`, whose average {} holds", params.path(),
                                   graph::shown_in_message(parameter.name), ema->path()),
                       kOneSource);
    }
    check_fits(parameter, *ema, *averaged);
    return io::read_tensor(*ema, *averaged, parameter.dtype);
  }
  if (trained) return io::read_tensor(params, *trained, parameter.dtype);
  const io::LoadReference* reference = loads.find(parameter.name);
  if (!reference) {
    throw ServeError(kWeightsDoNotFit,
                     fmt::format("{}: holds no `{}`, a weight the model reads", params.path(),
                                 graph::shown_in_message(parameter.name)),
                     kOneSource);
  }
  graph::Tensor value = io::read_reference(*reference, parameter.dtype);
  if (value.shape() != parameter.shape) {
    throw ServeError(kWeightsDoNotFit,
                     fmt::format("{}: `{}` is {}, but the model reads it as {}", reference->file,
                                 graph::shown_in_message(parameter.name), graph::shape_str(value.shape()),
                                 graph::shape_str(parameter.shape)),
                     kOneSource);
  }
  return value;
}

}  // namespace

ModelSource resolve_operand(const std::string& operand) {
  std::string folder;
  try {
    io::Checkpoint local = io::local_checkpoint(io::find_checkpoint(operand));
    io::CheckpointReader files(local);
    return {local.path, true, local.written, files};
  } catch (const io::CheckpointError& e) {
    if (e.code() != io::kNoCheckpoint) throw;
    // resolve_checkpoint took the location; on S3 it holds checkpoints only, as what
    // `export` writes is a local folder.
    io::ResolvedLocation resolved = io::resolve_location(operand);
    if (resolved.is_s3()) throw;
    folder = resolved.path;
  }
  if (exists(folder + "/model.json") || exists(folder + "/params.safetensors")) return {folder, false, folder, {}};
  throw io::CheckpointError(io::kNoCheckpoint,
                            fmt::format("{}: neither a checkpoint (a folder step-NNNNNNNN, or a location holding "
                                        "them) nor a directory `sexpgpu export` wrote (model.json, "
                                        "params.safetensors)",
                                        operand));
}

ShapedGraph shape_graph(const graph::Graph& model, const ServeOptions& options) {
  ShapedGraph shaped{model, std::nullopt};
  if (!options.outputs.empty()) {
    std::set<std::string> seen;
    for (const std::string& name : options.outputs) {
      if (!seen.insert(name).second) {
        throw ServeError(kFlagDoesNotFit, fmt::format("--output `{}` is given twice", graph::shown_in_message(name)),
                         "name each output once, in the order the answers should hold them");
      }
    }
    try {
      shaped.graph = graph::select_outputs(shaped.graph, options.outputs);
    } catch (const graph::GraphError& e) {
      throw ServeError(kFlagDoesNotFit, fmt::format("--output: {}", e.what()));
    }
  }
  if (options.at) {
    try {
      graph::Graph taken = graph::take_at(shaped.graph);
      shaped.at_limit = shaped.graph.node(shaped.graph.outputs.front().node).shape.at(1);
      shaped.graph = std::move(taken);
    } catch (const graph::GraphError& e) {
      throw ServeError(kFlagDoesNotFit, fmt::format("--at: {}", e.what()),
                       "--at is for outputs along a sequence: every output's second axis of one length");
    }
  }
  shaped.graph = with_precision(std::move(shaped.graph), options.precision);
  return shaped;
}

namespace {

// open_model's work, whose messages may name the files of a checkpoint's copy in the cache.
ServedModel read_model(const ModelSource& source, const ServeOptions& options) {
  const std::optional<io::CheckpointReader>& checkpoint = source.files;
  const std::string model_path = source.folder + "/model.json";
  struct stat st {};
  if (checkpoint ? !checkpoint->has("model.json") : ::stat(model_path.c_str(), &st) != 0 && errno == ENOENT) {
    if (checkpoint) {
      throw ServeError(kNoModel,
                       fmt::format("{}: the checkpoint holds no model (model.json): its run's model did not run "
                                   "alone, or an earlier version wrote it",
                                   source.shown),
                       fmt::format("`sexpgpu export {} --checkpoint {} -o DIR` writes the model, then serve DIR",
                                   run_file_of(source.folder), source.shown));
    }
    throw ServeError(kNoModel, fmt::format("{}: holds no model.json", source.folder),
                     "serve a checkpoint, or a directory `sexpgpu export` wrote");
  }
  if (options.trained && !source.is_checkpoint) {
    throw ServeError(kFlagDoesNotFit,
                     fmt::format("--trained: {} is an export directory, which holds one set of weights", source.folder),
                     "--trained chooses between a checkpoint's weights and its :ema averages; export with "
                     "--trained to export the trained weights");
  }
  ModelFile file = read_model_file(checkpoint ? checkpoint->checked_path("model.json") : model_path);
  ShapedGraph shaped = shape_graph(file.graph, options);

  std::shared_ptr<const io::SafetensorsFile> params, ema;
  // A checkpoint names its frozen :load files instead of holding their weights; each is
  // read where its run read it once its bytes are checked to be the same (E-LOAD-001).
  io::LoadRecord loads;
  if (checkpoint) {
    params = checkpoint->read_tensors("params.safetensors");
    if (!options.trained && checkpoint->has("ema.safetensors")) ema = checkpoint->read_tensors("ema.safetensors");
    loads = io::read_load_record(*checkpoint);
    io::check_files_unchanged(loads);
  } else {
    params = io::SafetensorsFile::open(source.folder + "/params.safetensors");
  }
  ServedModel served;
  served.source = source;
  for (const TensorSpec& p : file.parameters)
    served.weights.emplace_back(p.name, read_weight(p, *params, ema.get(), loads));
  Handshake& about = served.about;
  about.checkpoint = source.is_checkpoint ? source.shown : file.checkpoint;
  about.step = file.step;
  about.slug = file.slug;
  about.precision = options.precision.empty() ? file.precision : options.precision;
  // A call carries the inputs in model.json's order, then `at`.
  const graph::Graph& g = shaped.graph;
  std::vector<std::string> data;
  for (const TensorSpec& in : file.inputs) data.push_back(in.name);
  if (options.at) data.push_back("at");
  for (const std::string& name : data) {
    const graph::Node& node = g.node(*g.find_input(name));
    about.inputs.push_back({name, node.shape, node.dtype});
  }
  for (const graph::NamedNode& out : g.outputs) {
    about.outputs.push_back({out.name, g.node(out.node).shape, g.node(out.node).dtype});
  }
  served.graph = std::move(shaped.graph);
  served.at_limit = shaped.at_limit;
  return served;
}

}  // namespace

ServedModel open_model(const ModelSource& source, const ServeOptions& options) {
  auto named = [&](std::string_view message) { return io::named_as_written(message, source.folder, source.shown); };
  try {
    return read_model(source, options);
  } catch (const ServeError& e) {
    throw ServeError(e.code(), named(e.what()), named(e.help()));
  } catch (const io::LoadError& e) {
    throw io::LoadError(e.code(), named(e.what()));
  } catch (const io::CheckpointError& e) {
    throw io::CheckpointError(e.code(), named(e.what()));
  }
}

}  // namespace sx::serve
