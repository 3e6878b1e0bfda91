// Locations: where a file named in a program (a `:load`, a `with-loaded`) or a checkpoint
// lives. A
// location's scheme is recognized before anything else, so that `file:///w.safetensors`
// is never taken for a relative path. A scheme is a letter, then letters, digits, `+`,
// `-` or `.`, followed by `://`:
//
//   no scheme        a local path, as written (a relative one is the caller's to resolve)
//   file://          a local path: file:///ABSOLUTE/PATH or file://localhost/ABSOLUTE/PATH,
//                    with %XX escapes decoded
//   s3://, o41://    storage locations, which resolve_location takes; where only a local
//                    file is read (local_path) they are E-LOAD-010
//   anything else    refused by its name (E-LOAD-013)
//
// resolve_location takes every kind: s3://bucket/key is an object (or a prefix) on an
// S3-compatible store (s3.h), and o41://team/run/... is the same path under the root that
// SEXPGPU_O41_ROOT names, itself a local path or an s3:// URL.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace sx::io {

inline constexpr const char* kStorageLocation = "E-LOAD-010";    // s3:// or o41:// where only a local file is read
inline constexpr const char* kUnknownScheme = "E-LOAD-013";      // a scheme that is not read
inline constexpr const char* kBadLocation = "E-LOC-001";         // s3:// or o41:// not in its form
inline constexpr const char* kNoO41Root = "E-LOC-002";           // o41:// without SEXPGPU_O41_ROOT
inline constexpr const char* kStorageRefused = "E-LOC-003";      // 403, or no credentials
inline constexpr const char* kStorageNotFound = "E-LOC-004";     // 404: no such key or bucket
inline constexpr const char* kStorageUnreachable = "E-LOC-005";  // cannot connect, times out, 5xx
inline constexpr const char* kStorageAnswer = "E-LOC-006";       // any other answer, or a short object

// The location's scheme in lower case ("file", "s3", "https"), or "" for a plain path.
std::string scheme_of(std::string_view location);

// Whether the scheme is one of the storage locations (s3, o41) that come with checkpoints.
bool is_storage_scheme(std::string_view scheme);

// The local path a location names: a plain path as it is, a file:// location's absolute
// path. Throws LoadError: E-LOAD-010 for s3:// and o41://, E-LOAD-013 for any other
// scheme and for a file:// location that names another host or no absolute path; each
// message shows the location as written.
std::string local_path(std::string_view location);

// A location of any kind, resolved: a local path, or a bucket and a key on S3.
struct ResolvedLocation {
  std::string written;  // as the user wrote it, for messages
  std::string path;     // a local location's path
  std::string bucket;   // an S3 location's bucket ("" for a local one)
  std::string key;      // and its key or prefix, without a trailing '/'

  bool is_s3() const { return !bucket.empty(); }
  // "s3://bucket/key", or the local path.
  std::string url() const;
  // The location `name` below this one (a file of a checkpoint, a shard beside its index).
  ResolvedLocation child(std::string_view name) const;
};

// Any location: a plain path, file://, s3://bucket/key, o41://team/run/... under
// SEXPGPU_O41_ROOT. Throws LoadError: E-LOAD-013 as local_path has it, E-LOC-001 for an
// s3:// URL without a bucket or an o41:// one without a team and a run, E-LOC-002 when
// SEXPGPU_O41_ROOT is unset or is neither a local path nor an s3:// URL.
ResolvedLocation resolve_location(std::string_view location);

// The whole of a small file at a resolved location, local or on S3. Throws LoadError:
// E-LOAD-002 when a local one cannot be read, the S3 client's (E-LOC-...), and
// `too_big_code` when it is longer than `limit` bytes.
std::string read_small_location(const ResolvedLocation& location, size_t limit, const char* too_big_code);
// Whether something exists at the location (a HEAD on S3). Throws the S3 client's errors.
bool location_exists(const ResolvedLocation& location);

}  // namespace sx::io
