// Tensor sources: a safetensors file or a sharded checkpoint's index (see tensor_source.h).
#include "io/tensor_source.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "io/json_checked.h"
#include "io/location.h"
#include "io/util.h"

namespace sx::io {
namespace {

using nlohmann::json;

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Why a shard name may not be used, or "" when it may: it must name a file inside the
// index's folder, checked on the name alone (lexically), before any link is followed. A
// `..` may step back out of a subfolder (`sub/../a.safetensors`) but not out of the
// folder; a link inside the folder is followed wherever it points (a Hugging Face cache's
// snapshot links every file to ../../blobs/).
std::string unsafe_shard_name(std::string_view name) {
  if (name.empty()) return "is empty";
  if (name.front() == '/') return "is an absolute path";
  if (name.find('\0') != std::string_view::npos) return "contains a NUL character";
  int64_t depth = 0;  // folders below the index's folder
  size_t start = 0;
  while (start <= name.size()) {
    size_t stop = name.find('/', start);
    if (stop == std::string_view::npos) stop = name.size();
    std::string_view segment = name.substr(start, stop - start);
    if (segment == "..") {
      if (--depth < 0) return "has a `..` that leads out of the index's folder";
    } else if (!segment.empty() && segment != ".") {
      ++depth;
    }
    start = stop + 1;
  }
  return "";
}

}  // namespace

std::shared_ptr<TensorSource> TensorSource::open(const std::string& location) {
  const std::string path = local_path(location);  // the scheme first: s3://, https://, ... are refused here
  std::shared_ptr<TensorSource> source(new TensorSource());
  source->path_ = path;
  if (!ends_with(path, ".json")) {
    source->single_ = SafetensorsFile::open(path);
    return source;
  }

  std::string text = read_small_file(path, kMaxHeaderBytes, kBadIndex);
  auto bytes = std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size());
  if (is_lfs_pointer(bytes)) throw lfs_pointer_error(path, bytes);
  if (auto bad = find_invalid_utf8(text)) {
    throw LoadError(kBadIndex, fmt::format("{}: the index is not valid UTF-8 (byte {})", path, *bad));
  }
  json index = parse_json_checked(text, path + ": the index", kBadIndex, 64).value;
  if (!index.is_object()) {
    throw LoadError(kBadIndex, fmt::format("{}: the index is not a JSON object with a `weight_map`", path));
  }
  for (const auto& [key, value] : index.items()) {
    if (key != "metadata" && key != "weight_map") {
      throw LoadError(kBadIndex, fmt::format("{}: the index has the key `{}`; an index has only `metadata` and "
                                             "`weight_map`",
                                             path, shown(key)));
    }
  }
  if (index.contains("metadata") && !index["metadata"].is_object()) {
    throw LoadError(kBadIndex, fmt::format("{}: the index's `metadata` is not an object", path));
  }
  if (!index.contains("weight_map")) {
    throw LoadError(kBadIndex, fmt::format("{}: the index has no `weight_map` naming each tensor's shard", path));
  }
  const json& weight_map = index["weight_map"];
  if (!weight_map.is_object()) {
    throw LoadError(kBadIndex, fmt::format("{}: the index's `weight_map` is not an object of tensor names to shard "
                                           "file names",
                                           path));
  }
  const std::filesystem::path folder = std::filesystem::path(path).parent_path();
  std::map<std::string, std::string> shard_path_of;  // shard name -> its path
  for (const auto& [tensor, shard] : weight_map.items()) {
    if (!shard.is_string()) {
      throw LoadError(kBadIndex, fmt::format("{}: the `weight_map` entry of tensor `{}` is not a shard file name "
                                             "(a string) but {}",
                                             path, shown(tensor),
                                             shown(shard.dump(-1, ' ', false, json::error_handler_t::replace))));
    }
    const std::string& name = shard.get_ref<const std::string&>();
    auto [it, fresh] = shard_path_of.emplace(name, "");
    if (fresh) {
      if (std::string why = unsafe_shard_name(name); !why.empty()) {
        throw LoadError(kBadIndex, fmt::format("{}: the shard `{}` of tensor `{}` {}; a shard must be a file in the "
                                               "index's folder",
                                               path, shown(name), shown(tensor), why));
      }
      // The name as checked: `sub/../a` opens folder/a, never a `..` taken through a link.
      it->second = (folder / std::filesystem::path(name).lexically_normal()).string();
      struct stat st {};
      bool exists = stat(it->second.c_str(), &st) == 0;
      if (!exists || !S_ISREG(st.st_mode)) {
        throw LoadError(kUnreadable, fmt::format("{}: the index names the shard `{}`, but {} {}", path, shown(name),
                                                 shown(it->second), !exists ? "cannot be found" : "is not a file"));
      }
    }
    source->weight_map_.emplace(tensor, it->second);
  }
  // Two names may be one file (`a.safetensors`, `sub/../a.safetensors`): each file once, sorted.
  std::set<std::string> shard_paths;
  for (const auto& [name, shard_path] : shard_path_of) shard_paths.insert(shard_path);
  source->shard_paths_.assign(shard_paths.begin(), shard_paths.end());
  return source;
}

std::optional<std::pair<std::shared_ptr<const SafetensorsFile>, TensorInfo>> TensorSource::find(std::string_view name) {
  if (single_) {
    const TensorInfo* info = single_->find(name);
    if (!info) return std::nullopt;
    return std::pair(single_, *info);
  }
  auto entry = weight_map_.find(name);
  if (entry == weight_map_.end()) return std::nullopt;
  std::shared_ptr<const SafetensorsFile> shard;
  {
    std::lock_guard lock(mutex_);
    auto& slot = open_[entry->second];
    if (!slot) slot = SafetensorsFile::open(entry->second);
    shard = slot;
  }
  const TensorInfo* info = shard->find(name);
  if (!info) {
    throw LoadError(kBadIndex, fmt::format("{}: the index puts tensor `{}` in {}, which has no tensor of that name",
                                           path_, shown(name), shard->path()));
  }
  return std::pair(shard, *info);
}

std::vector<std::string> TensorSource::files() const {
  std::vector<std::string> out{path_};
  out.insert(out.end(), shard_paths_.begin(), shard_paths_.end());
  return out;
}

std::vector<std::string> TensorSource::tensor_names() const {
  std::vector<std::string> out;
  if (single_) {
    for (const auto& t : single_->tensors()) out.push_back(t.name);
    std::sort(out.begin(), out.end());
  } else {
    for (const auto& [name, shard] : weight_map_) out.push_back(name);
  }
  return out;
}

}  // namespace sx::io
