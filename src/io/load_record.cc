// The record of frozen :load parameters a checkpoint keeps (see load_record.h).
#include "io/load_record.h"

#include <fmt/format.h>

#include "io/checkpoint.h"
#include "io/checkpoint_files.h"
#include "io/safetensors.h"
#include "io/tensor_source.h"

namespace sx::io {
namespace {

using nlohmann::json;

// The string field `key` of `entry`; E-CKPT-006 naming `where` and `list` otherwise.
std::string string_field(const json& entry, const char* key, const std::string& where, const char* list) {
  if (!entry.is_object() || !entry.contains(key) || !entry[key].is_string()) {
    throw CheckpointError(kCheckpointMismatch,
                          fmt::format("{}: an entry of loads.{} has no string `{}`", where, list, key));
  }
  return entry[key].get<std::string>();
}

const json& list_field(const json& loads, const char* key, const std::string& where) {
  if (!loads.contains(key) || !loads[key].is_array()) {
    throw CheckpointError(kCheckpointMismatch, fmt::format("{}: `loads` has no list `{}`", where, key));
  }
  return loads[key];
}

}  // namespace

const LoadReference* LoadRecord::find(std::string_view path) const {
  for (const LoadReference& reference : parameters) {
    if (reference.path == path) return &reference;
  }
  return nullptr;
}

json load_record_json(const LoadRecord& record) {
  json parameters = json::array();
  for (const LoadReference& r : record.parameters)
    parameters.push_back({{"path", r.path}, {"file", r.file}, {"tensor", r.tensor}});
  json files = json::array();
  for (const auto& [file, identity] : record.files) {
    json entry = {{"file", file}, {"size", identity.size}};
    if (identity.etag.empty()) entry["sha256"] = identity.sha256;
    if (!identity.etag.empty()) entry["etag"] = identity.etag;
    if (!identity.version_id.empty()) entry["version_id"] = identity.version_id;
    files.push_back(entry);
  }
  return {{"parameters", parameters}, {"files", files}};
}

LoadRecord parse_load_record(const json& experiment, const std::string& where) {
  LoadRecord record;
  if (!experiment.is_object() || !experiment.contains("loads")) return record;
  const json& loads = experiment["loads"];
  if (!loads.is_object())
    throw CheckpointError(kCheckpointMismatch, fmt::format("{}: `loads` is not an object", where));
  for (const json& entry : list_field(loads, "parameters", where)) {
    record.parameters.push_back({string_field(entry, "path", where, "parameters"),
                                 string_field(entry, "file", where, "parameters"),
                                 string_field(entry, "tensor", where, "parameters")});
  }
  for (const json& entry : list_field(loads, "files", where)) {
    std::string file = string_field(entry, "file", where, "files");
    // A local file is known by its sha256, a file on S3 by its etag (and version_id).
    bool on_s3 = entry.contains("etag");
    FileIdentity identity;
    identity.sha256 = on_s3 ? "" : string_field(entry, "sha256", where, "files");
    identity.etag = on_s3 ? string_field(entry, "etag", where, "files") : "";
    identity.version_id =
        on_s3 && entry.contains("version_id") ? string_field(entry, "version_id", where, "files") : "";
    if (!entry.contains("size") || !entry["size"].is_number_unsigned()) {
      throw CheckpointError(kCheckpointMismatch,
                            fmt::format("{}: the entry of loads.files for {} has no whole-number `size`", where, file));
    }
    identity.size = entry["size"].get<uint64_t>();
    record.files[file] = identity;
  }
  return record;
}

LoadRecord read_load_record(const CheckpointReader& checkpoint) {
  return parse_load_record(checkpoint.read_json("experiment.json"), checkpoint.path("experiment.json"));
}

void check_files_unchanged(const LoadRecord& record) {
  for (const auto& [file, identity] : record.files) check_unchanged(file, identity);
}

graph::Tensor read_reference(const LoadReference& reference, graph::DType dtype) {
  auto source = TensorSource::open(reference.file);
  auto found = source->find(reference.tensor);
  if (!found) {
    throw LoadError(kMissingTensor, fmt::format("{}: holds no tensor `{}`, which `{}` loads", reference.file,
                                                reference.tensor, reference.path));
  }
  return read_tensor(*found->first, found->second, dtype);
}

}  // namespace sx::io
