// What a checkpoint records of its frozen `:load` parameters instead of holding their
// values (docs/models.md): each one's file and tensor, and the size
// and SHA-256 of every file they read, shards included. experiment.json keeps it under
// "loads":
//
//   {"parameters": [{"path": "teacher.q", "file": "w/model.safetensors.index.json",
//                    "tensor": "model.layers.0.self_attn.q_proj.weight"}],
//    "files": [{"file": "w/model.safetensors.index.json", "size": 812, "sha256": "..."},
//              {"file": "w/model-00001-of-00002.safetensors", ...},
//              {"file": "s3://bucket/w.safetensors", "size": 96, "etag": "...", "version_id": "..."}]}
//
// A file is named as the run read it, so a relative one is read from the directory a
// command runs in. Reading a parameter back checks every recorded file first: a file
// whose bytes changed is E-LOAD-001, never a mix of two files' weights.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "graph/tensor.h"
#include "io/identity.h"

namespace sx::io {

class CheckpointReader;

struct LoadReference {
  std::string path;  // the parameter's
  std::string file;
  std::string tensor;

  bool operator==(const LoadReference&) const = default;
};

struct LoadRecord {
  std::vector<LoadReference> parameters;
  std::map<std::string, FileIdentity> files;

  const LoadReference* find(std::string_view path) const;
  bool operator==(const LoadRecord&) const = default;
};

nlohmann::json load_record_json(const LoadRecord& record);
// The record in a checkpoint's parsed experiment.json; an empty one where it has no
// "loads" (its run loaded no frozen parameter). Throws CheckpointError (E-CKPT-006)
// naming `where` and the field when "loads" is malformed.
LoadRecord parse_load_record(const nlohmann::json& experiment, const std::string& where);
// The same from the checkpoint's experiment.json, read checked (E-CKPT-008 when damaged);
// E-CKPT-006 when the checkpoint has none or it is not a JSON object.
LoadRecord read_load_record(const CheckpointReader& checkpoint);

// Throws LoadError: E-LOAD-001 for the first recorded file whose size or hash is not the
// recorded one, E-LOAD-002 for one that cannot be read.
void check_files_unchanged(const LoadRecord& record);

// The tensor a reference names, converted to `dtype`, read without checking identities
// (check_files_unchanged does). Throws LoadError: the file's own errors, and E-LOAD-011
// when it no longer holds the tensor.
graph::Tensor read_reference(const LoadReference& reference, graph::DType dtype);

}  // namespace sx::io
