// A checkpoint's manifest, and its files read checked against it (see checkpoint_files.h).
#include "io/checkpoint_files.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "graph/shown.h"
#include "io/checksum.h"
#include "io/util.h"

namespace sx::io {
namespace {

using nlohmann::json;

// A manifest names a handful of files; a JSON file of a checkpoint holds the run file's
// sources and the model's graph, far below this.
constexpr size_t kManifestLimit = 1 << 20;
constexpr size_t kJsonFileLimit = size_t{1} << 31;

[[noreturn]] void damaged(const std::string& path, std::string_view why) {
  throw CheckpointError(kCheckpointDamaged, fmt::format("{}: {}; the checkpoint is damaged, and is not read",
                                                        graph::shown_in_message(path), why));
}

bool is_plain_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos;
}

}  // namespace

std::string manifest_text(const std::vector<ManifestEntry>& files) {
  json entries = json::array();
  for (const ManifestEntry& file : files) {
    entries.push_back({{"name", file.name}, {"size", file.size}, {"xxh3", checksum_hex(file.checksum)}});
  }
  return json{{"format", kCheckpointFormat}, {"files", entries}}.dump(2) + "\n";
}

CheckpointReader::CheckpointReader(Checkpoint local) : checkpoint_(std::move(local)) {
  const std::string manifest_path = path(kManifestName);
  struct stat st {};
  if (::stat(manifest_path.c_str(), &st) != 0 && errno == ENOENT) return;
  std::string text;
  try {
    text = read_small_file(manifest_path, kManifestLimit, kCheckpointDamaged);
  } catch (const LoadError& e) {
    throw CheckpointError(kCheckpointDamaged, e.what());
  }
  json manifest = json::parse(text, nullptr, false);
  if (manifest.is_discarded() || !manifest.is_object() || !manifest.contains("format") ||
      !manifest["format"].is_number_unsigned() || manifest["format"].get<uint64_t>() < 2) {
    damaged(manifest_path, "not a manifest: a JSON object with a whole-number `format` from 2 up");
  }
  if (manifest["format"].get<uint64_t>() > static_cast<uint64_t>(kCheckpointFormat)) {
    throw CheckpointError(
        kCheckpointMismatch,
        fmt::format("{}: format {} of checkpoints is newer than this build reads (up to {})",
                    graph::shown_in_message(manifest_path), manifest["format"].get<uint64_t>(), kCheckpointFormat));
  }
  if (!manifest.contains("files") || !manifest["files"].is_array()) damaged(manifest_path, "it has no list `files`");
  manifest_.emplace();
  for (const json& entry : manifest["files"]) {
    std::optional<uint64_t> checksum;
    if (entry.is_object() && entry.contains("xxh3") && entry["xxh3"].is_string())
      checksum = parse_checksum_hex(entry["xxh3"].get<std::string>());
    if (!checksum || !entry.contains("name") || !entry["name"].is_string() ||
        !is_plain_name(entry["name"].get<std::string>()) || !entry.contains("size") ||
        !entry["size"].is_number_unsigned()) {
      damaged(manifest_path,
              fmt::format("the entry {} of `files` is not {{\"name\", \"size\", \"xxh3\"}}",
                          graph::shown_in_message(entry.dump(-1, ' ', false, json::error_handler_t::replace))));
    }
    ManifestEntry file{entry["name"].get<std::string>(), entry["size"].get<uint64_t>(), *checksum};
    std::string name = file.name;
    if (!manifest_->emplace(name, std::move(file)).second)
      damaged(manifest_path, fmt::format("it names `{}` twice", graph::shown_in_message(name)));
  }
}

std::string CheckpointReader::path(std::string_view name) const { return fmt::format("{}/{}", checkpoint_.path, name); }

std::string CheckpointReader::unchecked_message() const {
  return fmt::format(
      "{}: the checkpoint records no checksums (it has no {}: an earlier version wrote it), so its "
      "files are read unchecked",
      graph::shown_in_message(checkpoint_.path), kManifestName);
}

bool CheckpointReader::has(std::string_view name) const {
  if (manifest_) return manifest_->find(name) != manifest_->end();
  struct stat st {};
  return ::stat(path(name).c_str(), &st) == 0;
}

const ManifestEntry* CheckpointReader::require(std::string_view name) const {
  if (!has(name)) {
    throw CheckpointError(kCheckpointMismatch,
                          fmt::format("{}: the checkpoint holds no {}, which every checkpoint of its run holds",
                                      graph::shown_in_message(checkpoint_.path), name));
  }
  return manifest_ ? &manifest_->find(name)->second : nullptr;
}

void CheckpointReader::verify(const ManifestEntry& entry, uint64_t size, uint64_t checksum) const {
  if (size != entry.size) {
    damaged(path(entry.name), fmt::format("it is {} bytes, but was written as {}", size, entry.size));
  }
  if (checksum != entry.checksum) {
    damaged(path(entry.name), fmt::format("its bytes are not those written (checksum {}, written as {})",
                                          checksum_hex(checksum), checksum_hex(entry.checksum)));
  }
}

void CheckpointReader::verify_file(const ManifestEntry& entry) const {
  const std::string file = path(entry.name);
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) {
    int err = errno;
    damaged(file, err == ENOENT ? fmt::format("it is missing, though {} names it", kManifestName)
                                : fmt::format("cannot read it: {}", std::strerror(err)));
  }
  uint64_t checksum = 0;
  try {
    checksum = checksum_of_file(file);
  } catch (const LoadError& e) {
    throw CheckpointError(kCheckpointDamaged, e.what());
  }
  verify(entry, static_cast<uint64_t>(st.st_size), checksum);
}

std::string CheckpointReader::read_text(std::string_view name) const {
  const ManifestEntry* entry = require(name);
  if (entry) verify_file(*entry);
  try {
    return read_small_file(path(name), kJsonFileLimit, kCheckpointMismatch);
  } catch (const LoadError& e) {
    throw CheckpointError(kCheckpointMismatch, e.what());
  }
}

json CheckpointReader::read_json(std::string_view name) const {
  json value = json::parse(read_text(name), nullptr, false);
  if (value.is_discarded() || !value.is_object()) {
    throw CheckpointError(kCheckpointMismatch,
                          fmt::format("{}: not a JSON object", graph::shown_in_message(path(name))));
  }
  return value;
}

std::shared_ptr<const SafetensorsFile> CheckpointReader::read_tensors(std::string_view name) const {
  const ManifestEntry* entry = require(name);
  std::shared_ptr<const SafetensorsFile> file;
  try {
    file = SafetensorsFile::open(path(name));
  } catch (const LoadError&) {
    // A damaged file is refused as such, not for the header its damage left.
    if (entry) verify_file(*entry);
    throw;
  }
  // Over the mapping, which the tensors are then read from: the file is read once.
  if (entry) verify(*entry, file->file_size(), checksum_of(file->contents()));
  return file;
}

std::string CheckpointReader::checked_path(std::string_view name) const {
  if (const ManifestEntry* entry = require(name)) verify_file(*entry);
  return path(name);
}

}  // namespace sx::io
