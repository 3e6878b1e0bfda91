// A checkpoint's files read back as they were written. Each checkpoint holds
// manifest.json, which its writer adds after every other file:
//
//   {"format": 2, "files": [{"name": "params.safetensors", "size": 4620, "xxh3": "8f3a..."}, ...]}
//
// naming every other file with its size and its XXH3-64 checksum (checksum.h), computed as
// the file was written. A CheckpointReader checks each file against it when the file is
// read: a file the manifest names that is missing, of another size or of another checksum
// is E-CKPT-008 naming it, never read. A checkpoint without manifest.json (format 1, written
// before checksums were recorded) is read unchecked; checked() says so, and the command
// warns W-CKPT-001 with unchecked_message().
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "io/checkpoint.h"
#include "io/safetensors.h"

namespace sx::io {

inline constexpr int kCheckpointFormat = 2;
inline constexpr const char* kManifestName = "manifest.json";

// The text of manifest.json for these files, in their order.
std::string manifest_text(const std::vector<ManifestEntry>& files);

class CheckpointReader {
 public:
  // Reads the manifest of `local`, a checkpoint whose path is a local folder (as
  // resolve_checkpoint and local_checkpoint give). E-CKPT-008 for a manifest.json that
  // cannot be read or is not one; E-CKPT-006 for one of a format newer than this build's.
  explicit CheckpointReader(Checkpoint local);

  const Checkpoint& checkpoint() const { return checkpoint_; }
  const std::string& folder() const { return checkpoint_.path; }
  // FOLDER/name.
  std::string path(std::string_view name) const;

  // Whether the checkpoint records checksums; one that does not is read as it is.
  bool checked() const { return manifest_.has_value(); }
  // What W-CKPT-001 says of a checkpoint that is not checked().
  std::string unchecked_message() const;

  // Whether the checkpoint holds the file: its manifest names it (unchecked: it exists).
  bool has(std::string_view name) const;

  // Each reads a file the checkpoint holds, checked against the manifest: E-CKPT-006 when
  // the checkpoint holds no such file, E-CKPT-008 when it is not as it was written (its
  // message names the file).
  std::string read_text(std::string_view name) const;
  // A JSON object; E-CKPT-006 when the file is not one.
  nlohmann::json read_json(std::string_view name) const;
  // The file opened (memory-mapped); its header's faults are the LoadError's of
  // SafetensorsFile::open, for a file that is as it was written.
  std::shared_ptr<const SafetensorsFile> read_tensors(std::string_view name) const;
  // The file's path once its bytes are checked, for a reader that opens it itself.
  std::string checked_path(std::string_view name) const;

 private:
  // The manifest's entry of `name` (nullptr when unchecked); E-CKPT-006 when the
  // checkpoint holds no such file.
  const ManifestEntry* require(std::string_view name) const;
  // E-CKPT-008 unless `size` and `checksum` are what `entry` records.
  void verify(const ManifestEntry& entry, uint64_t size, uint64_t checksum) const;
  // Checks the file on disk, read whole; E-CKPT-008 for one missing or changed.
  void verify_file(const ManifestEntry& entry) const;

  Checkpoint checkpoint_;
  std::optional<std::map<std::string, ManifestEntry, std::less<>>> manifest_;
};

}  // namespace sx::io
