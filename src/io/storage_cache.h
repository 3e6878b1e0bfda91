// The local cache of what is read from storage locations: $SEXPGPU_CACHE_DIR, else
// $XDG_CACHE_HOME/sexpgpu, else ~/.cache/sexpgpu. Checkpoints are copied into it
// (storage_checkpoint.h), and so are the files of data loaders, under a key that says
// which version of an object a copy is, so nothing in it is ever stale: remove it
// whenever no command runs, and what is gone is downloaded again.
//
//   CACHE/objects/KEY/NAME   an object downloaded whole; KEY hashes its URL, size and ETag
#pragma once

#include <string>
#include <string_view>

#include "io/location.h"

namespace sx::io {

// The cache's folder (which may not exist yet).
std::string cache_root();
// A cache folder's name for `text`: the start of its SHA-256.
std::string cache_key(std::string_view text);

// A local copy of the object at `location` (an S3 one), downloaded on first use with
// S3Client::get_to_file into CACHE/objects/KEY/NAME: a changed object (another size or
// ETag) is downloaded again, an unchanged one is not. Throws LoadError: the S3 client's
// (E-LOC-..., naming the s3:// URL), E-LOAD-002 when the cache cannot be written.
std::string cached_object(const ResolvedLocation& location);

}  // namespace sx::io
