// Checkpoints at a storage location, a completion marker written last (see
// storage_checkpoint.h).
#include "io/storage_checkpoint.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "graph/shown.h"
#include "io/checkpoint_internal.h"
#include "io/s3.h"
#include "io/safetensors.h"
#include "io/storage_cache.h"
#include "io/util.h"

namespace sx::io::storage {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr std::string_view kMarkerSuffix = ".complete";

// The S3 client's errors (LoadError, E-LOC-...) as a checkpoint's, code kept.
template <typename F>
auto as_checkpoint_error(F call) {
  try {
    return call();
  } catch (const LoadError& e) {
    throw CheckpointError(e.code(), e.what());
  }
}

S3Client client() {
  return S3Client(as_checkpoint_error([] { return S3Config::from_environment(); }));
}

// "P/" for the location's key P, "" for a bucket's root.
std::string folder_prefix(const ResolvedLocation& location) { return location.key.empty() ? "" : location.key + "/"; }

std::string create_folder(const std::string& path) {
  std::error_code ec;
  fs::create_directories(path, ec);
  if (ec) {
    throw CheckpointError(kCheckpointUnwritable, fmt::format("{}: cannot create the local cache folder: {}",
                                                             graph::shown_in_message(path), ec.message()));
  }
  return path;
}

// Where the files kept beside a location's checkpoints are written locally.
std::string side_path(const ResolvedLocation& location) {
  return fmt::format("{}/runs/{}", cache_root(), cache_key(location.url()));
}

// Removes the stale temporaries (checkpoint_internal.h) of a local folder.
void remove_stale_in(const std::string& folder) {
  std::error_code ec;
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    if (is_stale_temporary(it->path().filename().string())) {
      std::error_code ignored;
      fs::remove_all(it->path(), ignored);
    }
  }
}

struct MarkedFile {
  std::string name;
  uint64_t size = 0;
  std::string etag;
};

[[noreturn]] void bad_marker(const std::string& url, std::string_view why) {
  throw CheckpointError(kCheckpointIncomplete, fmt::format("{}: {}", url, why));
}

std::vector<MarkedFile> parse_marker(const std::string& text, const std::string& url) {
  json marker = json::parse(text, nullptr, false);
  if (marker.is_discarded() || !marker.is_object() || !marker.contains("files") || !marker["files"].is_array()) {
    bad_marker(url, "the completion marker is not a JSON object with a list `files`");
  }
  std::vector<MarkedFile> files;
  for (const json& entry : marker["files"]) {
    if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string() || !entry.contains("size") ||
        !entry["size"].is_number_unsigned() || !entry.contains("etag") || !entry["etag"].is_string()) {
      bad_marker(url, "an entry of the completion marker's `files` is not {\"name\", \"size\", \"etag\"}");
    }
    MarkedFile file{entry["name"].get<std::string>(), entry["size"].get<uint64_t>(), entry["etag"].get<std::string>()};
    if (file.name.empty() || file.name.find('/') != std::string::npos || file.name == "." || file.name == "..") {
      bad_marker(url, fmt::format("the completion marker names the file `{}`, which is not a plain name",
                                  graph::shown_in_message(file.name)));
    }
    files.push_back(std::move(file));
  }
  return files;
}

}  // namespace

std::string staging_folder(const ResolvedLocation& location) {
  return create_folder(fmt::format("{}/uploads/{}", cache_root(), cache_key(location.url())));
}

Checkpoint upload(const ResolvedLocation& location, int64_t step, const std::string& staged,
                  const std::vector<std::string>& names) {
  return as_checkpoint_error([&] {
    S3Client s3 = client();
    const std::string prefix = folder_prefix(location), name = checkpoint_name(step);
    const std::string writing = temporary_name(step, "tmp");
    set_live(writing, true);
    try {
      s3.put(location.bucket, prefix + writing, "");
      // A checkpoint of this step written before is no longer complete once a file changes.
      s3.remove(location.bucket, prefix + name + std::string(kMarkerSuffix));
      json files = json::array();
      for (const std::string& file : names) {
        std::string path = staged + "/" + file;
        std::string etag = s3.put_file(location.bucket, prefix + name + "/" + file, path);
        files.push_back({{"name", file}, {"size", fs::file_size(path)}, {"etag", etag}});
      }
      s3.put(location.bucket, prefix + name + std::string(kMarkerSuffix),
             json{{"step", step}, {"files", files}}.dump(2) + "\n");
      s3.remove(location.bucket, prefix + writing);
    } catch (...) {
      set_live(writing, false);  // stale now: the next writer clears it
      throw;
    }
    set_live(writing, false);
    return Checkpoint{step, s3_url(location.bucket, prefix + name), written_checkpoint(location.written, step)};
  });
}

std::vector<Checkpoint> list(const ResolvedLocation& location) {
  const std::string prefix = folder_prefix(location);
  std::vector<ListedObject> objects =
      as_checkpoint_error([&] { return client().list(location.bucket, prefix, /*below=*/false); });
  std::vector<Checkpoint> out;
  for (const ListedObject& object : objects) {
    std::string_view name = std::string_view(object.key).substr(prefix.size());
    if (!name.ends_with(kMarkerSuffix)) continue;
    name.remove_suffix(kMarkerSuffix.size());
    if (auto step = checkpoint_step(name)) {
      out.push_back(
          {*step, s3_url(location.bucket, prefix + std::string(name)), written_checkpoint(location.written, *step)});
    }
  }
  std::sort(out.begin(), out.end(), [](const Checkpoint& a, const Checkpoint& b) { return a.step < b.step; });
  return out;
}

std::optional<Checkpoint> named(const ResolvedLocation& location) {
  std::string_view name = std::string_view(location.key).substr(location.key.rfind('/') + 1);  // npos + 1 == 0
  std::optional<int64_t> step = checkpoint_step(name);
  if (!step) return std::nullopt;
  bool complete = as_checkpoint_error(
      [&] { return client().head_if_exists(location.bucket, location.key + std::string(kMarkerSuffix)).has_value(); });
  if (!complete) return std::nullopt;
  return Checkpoint{*step, location.url(), written_folder(location.written)};
}

Checkpoint local_copy(const Checkpoint& checkpoint) {
  const ResolvedLocation where = resolve_location(checkpoint.path);
  const std::string marker_url = checkpoint.path + std::string(kMarkerSuffix);
  S3Client s3 = client();
  std::string marker;
  try {
    marker = s3.get(where.bucket, where.key + std::string(kMarkerSuffix));
  } catch (const LoadError& e) {
    if (e.code() != kStorageNotFound) throw CheckpointError(e.code(), e.what());
    throw CheckpointError(kNoCheckpoint, fmt::format("{}: no complete checkpoint here: its completion marker {} is "
                                                     "gone (pruned, or being replaced)",
                                                     checkpoint.written, marker_url));
  }
  std::vector<MarkedFile> files = parse_marker(marker, marker_url);
  const std::string parent =
      create_folder(fmt::format("{}/checkpoints/{}", cache_root(), cache_key(marker_url + "\n" + marker)));
  const std::string folder = parent + "/" + checkpoint_name(checkpoint.step);
  std::error_code ec;
  if (fs::is_directory(folder, ec)) return {checkpoint.step, folder, checkpoint.written};

  remove_stale_in(parent);
  const std::string temp_name = temporary_name(checkpoint.step, "tmp");
  const std::string temp = parent + "/" + temp_name;
  set_live(temp_name, true);
  try {
    create_folder(temp);
    for (const MarkedFile& file : files) {
      const std::string key = where.key + "/" + file.name;
      std::optional<ObjectInfo> info = as_checkpoint_error([&] { return s3.head_if_exists(where.bucket, key); });
      if (!info || info->etag != file.etag || info->size != file.size) {
        bad_marker(marker_url,
                   fmt::format("the completion marker names {} ({} bytes, ETag {}), but {}; the checkpoint is not "
                               "whole",
                               s3_url(where.bucket, key), file.size, file.etag,
                               !info ? "it is not there"
                                     : fmt::format("the storage holds {} bytes, ETag {}", info->size, info->etag)));
      }
      as_checkpoint_error([&] { s3.get_to_file(where.bucket, key, temp + "/" + file.name, *info); });
    }
    if (::rename(temp.c_str(), folder.c_str()) != 0 && !fs::is_directory(folder, ec)) {
      throw CheckpointError(kCheckpointUnwritable, fmt::format("{}: cannot rename the downloaded checkpoint into "
                                                               "place",
                                                               folder));
    }
  } catch (...) {
    set_live(temp_name, false);
    fs::remove_all(temp, ec);
    throw;
  }
  set_live(temp_name, false);
  fs::remove_all(temp, ec);  // another process renamed its copy first
  return {checkpoint.step, folder, checkpoint.written};
}

void remove(const Checkpoint& checkpoint) {
  const ResolvedLocation where = resolve_location(checkpoint.path);
  as_checkpoint_error([&] {
    S3Client s3 = client();
    s3.remove(where.bucket, where.key + std::string(kMarkerSuffix));
    for (const ListedObject& object : s3.list(where.bucket, where.key + "/")) s3.remove(where.bucket, object.key);
    return 0;
  });
}

int remove_stale(const ResolvedLocation& location) {
  return as_checkpoint_error([&] {
    S3Client s3 = client();
    const std::string prefix = folder_prefix(location);
    std::set<std::string> names;
    for (const ListedObject& object : s3.list(location.bucket, prefix, /*below=*/false)) {
      names.insert(object.key.substr(prefix.size()));
    }
    int removed = 0;
    for (const std::string& name : names) {
      // ".step-00000020.tmp-...": the files of step-00000020 stay if its marker says they are whole.
      std::string checkpoint = name.substr(1, name.find('.', 1) - 1);
      if (!checkpoint_step(checkpoint) || !is_stale_temporary(name)) continue;
      if (!names.count(checkpoint + std::string(kMarkerSuffix))) {
        for (const ListedObject& object : s3.list(location.bucket, prefix + checkpoint + "/")) {
          s3.remove(location.bucket, object.key);
        }
      }
      s3.remove(location.bucket, prefix + name);
      ++removed;
    }
    return removed;
  });
}

std::string side_folder(const ResolvedLocation& location, const std::vector<std::string>& fetch) {
  const std::string folder = create_folder(side_path(location));
  remove_stale_in(folder);
  S3Client s3 = client();
  for (const std::string& name : fetch) {
    const std::string key = folder_prefix(location) + name;
    std::optional<std::string> bytes = as_checkpoint_error([&]() -> std::optional<std::string> {
      if (!s3.head_if_exists(location.bucket, key)) return std::nullopt;
      return s3.get(location.bucket, key);
    });
    if (bytes) {
      write_file_atomically(folder + "/" + name, *bytes);
    } else {
      std::error_code ec;
      fs::remove(folder + "/" + name, ec);  // a copy of another run that was here before
    }
  }
  return folder;
}

void publish(const ResolvedLocation& location, const std::string& name) {
  const std::string path = side_path(location) + "/" + name;
  as_checkpoint_error([&] { return client().put_file(location.bucket, folder_prefix(location) + name, path); });
}

}  // namespace sx::io::storage
