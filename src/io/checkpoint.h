// Checkpoint folders (docs/training.md): LOC/step-00000020/ holding experiment.json,
// model.json, params.safetensors, ema.safetensors, optimizer.safetensors, state.json and,
// written last, manifest.json, which records each other file's size and checksum
// (checkpoint_files.h reads the files back checked against it).
//
// A checkpoint is written into a temporary folder, LOC/.step-00000020.tmp-PID-N-HOST
// (hidden, and never of the form step-%08d), each file flushed to disk, then renamed to
// LOC/step-00000020 in one step; a checkpoint removed by prune_checkpoints is first
// renamed to such a temporary name. So a crash at any point leaves only complete
// checkpoints under checkpoint names, and temporaries that remove_stale_temporaries (and
// the next writer) clear away. `LOC` alone means its newest complete checkpoint.
//
// A location is any kind io/location.h resolves: a local folder (a path, file://, an
// o41:// under a local root) as above, or a storage location (s3://, an o41:// under an
// s3:// root), where a completion marker written last stands for the rename
// (storage_checkpoint.h). Every function here takes the location as written.
//
// Errors are CheckpointError with an E-CKPT code and a message naming the path.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "graph/tensor.h"
#include "io/checksum.h"
#include "io/location.h"
#include "io/safetensors.h"

namespace sx::io {

inline constexpr const char* kCheckpointUnwritable = "E-CKPT-001";    // creating, writing, flushing, renaming
inline constexpr const char* kCheckpointUnreadable = "E-CKPT-002";    // a location that cannot be listed
inline constexpr const char* kNoCheckpoint = "E-CKPT-003";            // no complete checkpoint at LOC
inline constexpr const char* kCheckpointLocation = "E-CKPT-004";      // a scheme that is not a location
inline constexpr const char* kCheckpointOfAnotherRun = "E-CKPT-005";  // a location holding another file's run
inline constexpr const char* kCheckpointMismatch = "E-CKPT-006";      // does not fit the run file, or malformed
inline constexpr const char* kCheckpointIncomplete = "E-CKPT-007";    // storage: files not as the marker says
inline constexpr const char* kCheckpointDamaged = "E-CKPT-008";       // a file not as written: checksum, size, gone
inline constexpr const char* kCheckpointUnchecked = "W-CKPT-001";     // a checkpoint that records no checksums

class CheckpointError : public std::runtime_error {
 public:
  CheckpointError(std::string code, std::string message);
  const std::string& code() const { return code_; }

 private:
  std::string code_;
};

// "step-00000020": the folder name of the checkpoint after `step` steps (>= 0).
std::string checkpoint_name(int64_t step);
// The step a folder name stands for, when it is exactly checkpoint_name(step); nullopt for
// any other name (a temporary, "step-20", "step-00000020.bak").
std::optional<int64_t> checkpoint_step(std::string_view name);

struct Checkpoint {
  int64_t step = 0;
  std::string path;     // LOC/step-00000020; on storage its s3:// URL, or (local_checkpoint) its local copy
  std::string written;  // LOC/step-00000020 with LOC as the user wrote it (o41://team/run/step-...): what
                        // messages, banners and records name, never the cache's copy

  // `message`, from a reader of the files at `path`, naming the checkpoint as written.
  std::string named_as_written(std::string_view message) const;

  bool operator==(const Checkpoint&) const = default;
};

// `message`, from a reader of the files in the local folder `local`, naming that folder
// `written` instead: a checkpoint's copy in the cache as the user named the checkpoint. An
// occurrence of `written` itself stays (a file:// location holds its local path).
std::string named_as_written(std::string_view message, std::string_view local, std::string_view written);

// For Checkpoint::written: the location as written without a trailing '/' ("." for ""),
// and "LOC/step-00000020", the checkpoint of `step` there.
std::string written_folder(std::string_view location);
std::string written_checkpoint(std::string_view location, int64_t step);
// A file of a checkpoint as its manifest.json records it (checkpoint_files.h).
struct ManifestEntry {
  std::string name;
  uint64_t size = 0;
  uint64_t checksum = 0;

  bool operator==(const ManifestEntry&) const = default;
};

// Writes one checkpoint: construct it (which creates LOC if needed, clears LOC's stale
// temporaries and creates the temporary folder), write its files, commit(). Destroyed
// without commit() (an exception on the way), it removes the temporary folder, so nothing
// is left under the checkpoint's name.
class CheckpointWriter {
 public:
  CheckpointWriter(const std::string& location, int64_t step);
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;
  ~CheckpointWriter();

  // Each writes the file `name` (a plain file name: no '/', not "." or "..", not
  // manifest.json, once each; else std::invalid_argument) into the checkpoint, and keeps
  // its size and checksum for the manifest. Throws CheckpointError (E-CKPT-001) naming
  // the file when it cannot be written.
  void write_bytes(std::string_view name, std::string_view bytes);
  void write_tensors(std::string_view name, std::span<const TensorRef> tensors,
                     const std::map<std::string, std::string>& metadata = {});
  // `writer` writes the file at the path it is given; its LoadError or filesystem error
  // becomes E-CKPT-001, any other exception passes through. The file is flushed to disk
  // on commit(), and read back for its checksum (write_bytes and write_tensors take it as
  // they write).
  void write_with(std::string_view name, const std::function<void(const std::string& path)>& writer);

  // Writes manifest.json, flushes every file and the folder to disk and renames the
  // folder to LOC/step-N, replacing a checkpoint of the same step atomically where the
  // file system can swap two folders (Linux renameat2). At a storage location the files
  // were written to a local staging folder, and commit uploads them, then the completion
  // marker. Returns the checkpoint.
  Checkpoint commit();

  // Where the files go until commit().
  const std::string& temporary_path() const { return temp_; }

 private:
  // The path `name` is written to, once its name is checked; its entry joins files_.
  std::string file_path(std::string_view name);
  // write_with's work: `streamed`, when given, was fed the file's bytes as they were written.
  void write_file(std::string_view name, const std::function<void(const std::string& path)>& writer,
                  const Checksum* streamed);
  // Writes `bytes` to `path`, the file `name` (files_'s last), manifest.json too.
  void put_bytes(const std::string& path, std::string_view name, std::string_view bytes);

  std::string dir_, final_, temp_;
  std::string written_;                      // the checkpoint as written (Checkpoint::written)
  std::optional<ResolvedLocation> storage_;  // where commit() uploads, for a storage location
  int64_t step_;
  std::vector<ManifestEntry> files_;  // in the order written; manifest.json last
  bool committed_ = false;
};

// A file of a checkpoint: its name and what writes it.
struct CheckpointFile {
  std::string name;
  std::function<void(CheckpointWriter&)> write;

  static CheckpointFile bytes(std::string name, std::string content);
  static CheckpointFile tensors(std::string name, std::vector<std::pair<std::string, graph::Tensor>> tensors,
                                std::map<std::string, std::string> metadata = {});
  // Tensors held elsewhere, which must outlive the file's write: a device's buffers,
  // written where they lie. `keep` holds any the caller does not (copies made for the
  // file) for as long as the file lives.
  static CheckpointFile tensor_refs(std::string name, std::vector<TensorRef> tensors, std::shared_ptr<const void> keep,
                                    std::map<std::string, std::string> metadata = {});
};

// The whole of a checkpoint in one call: a CheckpointWriter, each file, commit().
Checkpoint write_checkpoint(const std::string& location, int64_t step, const std::vector<CheckpointFile>& files);

// The complete checkpoints at the location, by rising step: folders named exactly
// step-%08d. A location that does not exist holds none; one that cannot be listed is
// E-CKPT-002.
std::vector<Checkpoint> list_checkpoints(const std::string& location);
std::optional<Checkpoint> newest_checkpoint(const std::string& location);
// What a location given to a command means: a checkpoint folder itself (LOC/step-N), or
// LOC's newest complete checkpoint; E-CKPT-003 when it holds none. find_checkpoint's path
// is where the checkpoint is (an s3:// URL on storage); resolve_checkpoint's a local
// folder: a checkpoint on storage is downloaded into the local cache (local_checkpoint).
// Either way `written` names it as `location` does: LOC/step-N with LOC as written.
Checkpoint find_checkpoint(const std::string& location);
Checkpoint resolve_checkpoint(const std::string& location);
// The checkpoint with a local folder for its path: itself when local; for one on storage
// a copy in the cache, downloaded once (E-CKPT-007 when its files are not as its
// completion marker says).
Checkpoint local_checkpoint(const Checkpoint& checkpoint);

// Removes the oldest checkpoints beyond the newest `keep` (>= 1, else
// std::invalid_argument), each renamed to a temporary name before it is removed; returns
// those removed. The newest is never removed.
std::vector<Checkpoint> prune_checkpoints(const std::string& location, int64_t keep);

// Removes the temporaries a writer on this host left behind when its process died (or this
// process's own, not being written now): checkpoint folders, and files written beside them
// (".loss.svg.tmp-PID-N-HOST"); those of live processes and of other hosts stay. Returns
// how many it removed.
int remove_stale_temporaries(const std::string& location);

// Writes a file beside the checkpoints (the loss curve) under a temporary name and
// renames it into place; E-CKPT-001 naming the path when it cannot.
void write_file_atomically(const std::string& path, std::string_view bytes);

// The local folder where files kept beside the checkpoints (metrics.jsonl, loss.svg) are
// written, cleared of the stale temporaries a killed writer left there: the location
// itself when local (created); for a storage location a folder in the local cache,
// holding a copy of each file of `fetch` the location has (and no other of `fetch`).
// publish_side_file copies one of them to a storage location (nothing to do for a local one).
std::string side_folder(const std::string& location, const std::vector<std::string>& fetch);
void publish_side_file(const std::string& location, const std::string& name);

}  // namespace sx::io
