// Writing a run's checkpoints (see run_checkpoints.h).
#include "train/run_checkpoints.h"

#include <fmt/format.h>

#include <deque>
#include <filesystem>
#include <fstream>
#include <memory>

#include "io/checkpoint.h"
#include "io/identity.h"
#include "lang/printer.h"
#include "lang/tracer.h"
#include "model/load.h"

namespace sx::train {
namespace {

using nlohmann::json;

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

// A weight as a checkpoint stores it: bf16 as f32 (docs/serving.md), exactly, since
// every bf16 value is an f32; model.json and experiment.json say the dtype the run
// reads it as.
graph::Tensor as_stored(graph::Tensor weight) {
  if (weight.dtype() != graph::DType::bf16) return weight;
  std::vector<double> values = weight.to_doubles();
  return graph::Tensor::from_doubles(graph::DType::f32, weight.shape(), values);
}

// Where a fresh run goes when `location` holds another run's checkpoints: the first of
// LOC-2, LOC-3, ... that holds none.
std::string fresh_location(const std::string& location) {
  for (int n = 2;; ++n) {
    std::string candidate = fmt::format("{}-{}", location, n);
    if (io::list_checkpoints(candidate).empty()) return candidate;
  }
}

}  // namespace

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

RunPlace place_run(const TrainOptions& options) {
  RunPlace place;
  place.slug = run_slug(options);
  place.location = options.checkpoint_dir.empty() ? "runs/" + place.slug : options.checkpoint_dir;
  place.newest = io::newest_checkpoint(place.location);
  if (place.newest && options.fresh) {
    place.location = fresh_location(place.location);
    place.newest.reset();
  }
  return place;
}

CheckpointPolicy::CheckpointPolicy(Session& session, const TrainOptions& options, const RunPlace& place,
                                   io::LoadRecord loads, CheckpointTables tables,
                                   const std::optional<ModelAlone>& alone, int64_t every, int64_t keep, int64_t total)
    : session_(session),
      options_(options),
      slug_(place.slug),
      location_(place.location),
      loads_(std::move(loads)),
      tables_(std::move(tables)),
      alone_(alone ? &*alone : nullptr),
      every_(every),
      keep_(keep),
      total_(total),
      sources_(sources_json(session, options)) {}

json CheckpointPolicy::experiment_json(int64_t step) const {
  json knobs = json::object();
  for (const Knob& knob : session_.knobs().knobs) knobs[knob.name] = lang::print(knob.value);
  json parameters = json::array();
  for (const auto& p : session_.params().params) {
    const graph::Node& node = session_.interp().tracer()->graph().node(p.decl->node);
    json& entry = parameters.emplace_back(json{{"path", p.path},
                                               {"shape", node.shape},
                                               {"dtype", graph::dtype_name(node.dtype)},
                                               {"trainable", p.decl->trainable}});
    if (p.decl->load) entry["loaded_from"] = {{"file", p.decl->load->first}, {"tensor", p.decl->load->second}};
  }
  return {{"slug", slug_},
          {"file", std::filesystem::path(options_.file).filename().string()},
          {"sources", sources_},
          {"variant", options_.variant},
          {"knobs", knobs},
          {"seed", session_.seed()},
          {"step", step},
          {"parameters", parameters},
          {"loads", io::load_record_json(loads_)}};
}

void CheckpointPolicy::write(const runtime::Store& store, int64_t done, double loss,
                             const std::map<std::string, double>& counters) {
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
  std::vector<io::TensorRef> params = refs(tables_.params), optimizer = refs(tables_.optimizer),
                             ema = refs(tables_.ema);
  std::vector<io::CheckpointFile> files{
      // A source edited into invalid UTF-8 since the run read it must not stop the run.
      io::CheckpointFile::bytes("experiment.json",
                                experiment_json(done).dump(2, ' ', false, json::error_handler_t::replace) + "\n"),
      io::CheckpointFile::tensor_refs("params.safetensors", std::move(params), copies),
      io::CheckpointFile::tensor_refs("optimizer.safetensors", std::move(optimizer), copies),
      io::CheckpointFile::bytes("state.json",
                                json{{"step", done}, {"loss", loss}, {"counters", counters}}.dump(2) + "\n")};
  if (!ema.empty()) files.push_back(io::CheckpointFile::tensor_refs("ema.safetensors", std::move(ema), copies));
  if (alone_) {
    files.push_back(io::CheckpointFile::bytes("model.json", model_json(*alone_, session_, slug_, done).dump() + "\n"));
  }
  try {
    // The log first: a run resumed from this checkpoint finds every line up to it (and
    // drops those of steps after it).
    io::publish_side_file(location_, "metrics.jsonl");
    io::write_checkpoint(location_, done, files);
    io::prune_checkpoints(location_, keep_);
  } catch (const io::CheckpointError& e) {
    lang::fail(e.code(), {}, e.what());
  }
}

}  // namespace sx::train
