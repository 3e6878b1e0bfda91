// Tensor sources: a safetensors file or a sharded checkpoint's index (see tensor_source.h).
#include "io/tensor_source.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "graph/shown.h"
#include "io/json_checked.h"
#include "io/location.h"
#include "io/s3.h"
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

// A safetensors file at a resolved location: mapped when local, read by ranges from S3.
std::shared_ptr<const SafetensorsFile> open_file(const ResolvedLocation& location) {
  if (!location.is_s3()) return SafetensorsFile::open(location.path);
  auto client = std::make_shared<S3Client>(S3Config::from_environment());
  ObjectInfo info = client->head(location.bucket, location.key);
  return SafetensorsFile::from_ranges(location.url(), info.size,
                                      [client, bucket = location.bucket, key = location.key](uint64_t at, uint64_t n) {
                                        return client->get_range(bucket, key, at, n);
                                      });
}

// An index's text, at most kMaxHeaderBytes; E-LOAD-009 when longer.
std::string read_index(const ResolvedLocation& location) {
  return read_small_location(location, kMaxHeaderBytes, kBadIndex);
}

// Why the shard at `location` cannot be opened ("cannot be found", "is not a file"), or "".
std::string missing_shard(const ResolvedLocation& location) {
  if (location.is_s3()) {
    return S3Client(S3Config::from_environment()).head_if_exists(location.bucket, location.key) ? ""
                                                                                                : "cannot be found";
  }
  struct stat st {};
  if (stat(location.path.c_str(), &st) != 0) return "cannot be found";
  return S_ISREG(st.st_mode) ? "" : "is not a file";
}

}  // namespace

std::shared_ptr<TensorSource> TensorSource::open(const std::string& location) {
  // The scheme first: https://, ... are refused here; s3:// and o41:// are resolved.
  const ResolvedLocation resolved = resolve_location(location);
  const std::string path = resolved.url();
  std::shared_ptr<TensorSource> source(new TensorSource());
  source->path_ = path;
  if (!ends_with(path, ".json")) {
    source->single_ = open_file(resolved);
    return source;
  }

  std::string text = read_index(resolved);
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
                                             path, graph::shown_in_message(key)));
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
  // The index's folder: its local parent folder, or its key's prefix on S3.
  ResolvedLocation folder = resolved;
  if (resolved.is_s3()) {
    size_t slash = resolved.key.rfind('/');
    folder.key = slash == std::string::npos ? "" : resolved.key.substr(0, slash);
  } else {
    folder.path = std::filesystem::path(resolved.path).parent_path().string();
  }
  std::map<std::string, std::string> shard_path_of;  // shard name -> its path
  for (const auto& [tensor, shard] : weight_map.items()) {
    if (!shard.is_string()) {
      throw LoadError(kBadIndex,
                      fmt::format("{}: the `weight_map` entry of tensor `{}` is not a shard file name "
                                  "(a string) but {}",
                                  path, graph::shown_in_message(tensor),
                                  graph::shown_in_message(shard.dump(-1, ' ', false, json::error_handler_t::replace))));
    }
    const std::string& name = shard.get_ref<const std::string&>();
    auto [it, fresh] = shard_path_of.emplace(name, "");
    if (fresh) {
      if (std::string why = unsafe_shard_name(name); !why.empty()) {
        throw LoadError(kBadIndex,
                        fmt::format("{}: the shard `{}` of tensor `{}` {}; a shard must be a file in the "
                                    "index's folder",
                                    path, graph::shown_in_message(name), graph::shown_in_message(tensor), why));
      }
      // The name as checked: `sub/../a` opens folder/a, never a `..` taken through a link.
      ResolvedLocation shard_location = folder.child(std::filesystem::path(name).lexically_normal().string());
      it->second = shard_location.url();
      if (std::string why = missing_shard(shard_location); !why.empty()) {
        throw LoadError(kUnreadable,
                        fmt::format("{}: the index names the shard `{}`, but {} {}", path,
                                    graph::shown_in_message(name), graph::shown_in_message(it->second), why));
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
    if (!slot) slot = open_file(resolve_location(entry->second));
    shard = slot;
  }
  const TensorInfo* info = shard->find(name);
  if (!info) {
    throw LoadError(kBadIndex, fmt::format("{}: the index puts tensor `{}` in {}, which has no tensor of that name",
                                           path_, graph::shown_in_message(name), shard->path()));
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
