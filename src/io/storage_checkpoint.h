// Checkpoints at a storage location: s3://bucket/prefix, or an o41:// location under an
// s3:// root. S3 has no rename, so the promise of docs/training.md (a crash never leaves a checkpoint
// that looks whole) is kept by a completion marker written last:
//
//   P/.step-00000020.tmp-PID-N-HOST   put first: an upload of step 20 is under way
//   P/step-00000020/params.safetensors, experiment.json, ...   the files
//   P/step-00000020.complete          put last: {"step", "files": [{"name", "size", "etag"}]}
//
// A checkpoint exists only where its marker does, and listing reads the markers alone (one
// listing of P's own objects, not of the files). Replacing a step removes its old marker
// before the first file is put; pruning removes the marker before the files. The writer's
// temporary object is removed after the marker; one left by a writer of this host whose
// process is gone is stale, and its files without a marker are removed with it.
//
// A checkpoint is read from a copy in the local cache (storage_cache.h), under
// checkpoints/KEY/step-N, KEY a hash of the marker's URL and bytes: downloaded once (each
// file streamed to disk, never held whole), every file checked against the marker's size
// and ETag (E-CKPT-007 when one is missing or differs), and renamed into place when
// complete.
//
// Errors are CheckpointError: the S3 client's E-LOC codes as they are, E-CKPT-003 and
// E-CKPT-007. Internal to src/io: checkpoint.cc calls these for storage locations.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "io/checkpoint.h"
#include "io/location.h"

namespace sx::io::storage {

// The local folder a writer stages a checkpoint of `location` in before uploading it.
std::string staging_folder(const ResolvedLocation& location);
// Uploads the files `names` of folder `staged` as the checkpoint of `step`, marker last.
Checkpoint upload(const ResolvedLocation& location, int64_t step, const std::string& staged,
                  const std::vector<std::string>& names);

// The complete checkpoints, by rising step; their paths are s3:// URLs, and each is
// written (Checkpoint::written) below the location as written.
std::vector<Checkpoint> list(const ResolvedLocation& location);
// The location itself, when it names a complete checkpoint (…/step-N).
std::optional<Checkpoint> named(const ResolvedLocation& location);
// The checkpoint (a path from list or named) with its path a local copy in the cache.
Checkpoint local_copy(const Checkpoint& checkpoint);
// Removes a checkpoint: its marker first, then its files.
void remove(const Checkpoint& checkpoint);
// Removes the stale temporaries of uploads (see above); returns how many.
int remove_stale(const ResolvedLocation& location);

// The local folder that files kept beside the checkpoints are written in, holding a copy
// of each of `fetch` the location has; publish copies one of them to the location.
std::string side_folder(const ResolvedLocation& location, const std::vector<std::string>& fetch);
void publish(const ResolvedLocation& location, const std::string& name);

}  // namespace sx::io::storage
