// Where :load and with-loaded read tensors from: one .safetensors file, or a sharded
// Hugging Face checkpoint named by its .index.json
//   {"metadata": {...}, "weight_map": {"tensor name": "shard file name", ...}}
// whose shards lie in the index's folder; each shard is opened once, when a tensor in it
// is first asked for. A shard name that is absolute, or whose `..` leads out of the
// index's folder, is refused (checked on the name, before following links); links inside
// the folder are followed wherever they point.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "io/safetensors.h"

namespace sx::io {

class TensorSource {
 public:
  // A location (location.h: a local path or file://; any other scheme is refused), then
  // by extension: ".json" is an index, anything else a safetensors file (opened and
  // validated now). An index is validated now, and every shard it names must exist; a
  // shard's header is validated when the shard is opened. Throws LoadError.
  static std::shared_ptr<TensorSource> open(const std::string& location);

  // The tensor's file and header entry, or nullopt when no shard/file has it. Throws
  // LoadError when its shard is not a valid file, or the index names a shard that does not
  // hold the tensor (E-LOAD-009).
  std::optional<std::pair<std::shared_ptr<const SafetensorsFile>, TensorInfo>> find(std::string_view name);
  // The file itself, or the index and every shard it names, each once, sorted by name
  // (for bundles and checkpoints).
  std::vector<std::string> files() const;

  const std::string& path() const { return path_; }
  bool is_index() const { return !single_; }
  // Every tensor name the file or index has, sorted (for "did you mean" messages).
  std::vector<std::string> tensor_names() const;

 private:
  TensorSource() = default;

  std::string path_;
  std::shared_ptr<const SafetensorsFile> single_;                       // a .safetensors file
  std::map<std::string, std::string, std::less<>> weight_map_;          // index: tensor -> shard path
  std::vector<std::string> shard_paths_;                                // index: each once, sorted
  std::map<std::string, std::shared_ptr<const SafetensorsFile>> open_;  // index: shards opened so far
  std::mutex mutex_;
};

}  // namespace sx::io
