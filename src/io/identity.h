// What a checkpoint records of a :load file to notice later that it changed: its size and
// the SHA-256 of its bytes (hashed in chunks with OpenSSL's libcrypto). A file on S3
// (s3://, an o41:// under an s3:// root) is not read whole to hash it: its identity is
// its size, its ETag and, where the bucket keeps versions, its version id, from one HEAD.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace sx::io {

struct FileIdentity {
  uint64_t size = 0;
  std::string sha256;      // lowercase hex; "" for a file on S3
  std::string etag;        // a file on S3's
  std::string version_id;  // a file on S3's, where its bucket keeps versions

  bool operator==(const FileIdentity&) const = default;
};

// The identity of the file at a location (location.h). Throws LoadError: E-LOAD-002 when
// a local file cannot be read, the location's and S3's own errors (E-LOC-...).
FileIdentity identify(const std::string& location);
// Throws LoadError (E-LOAD-001) naming the file and what differs when its identity now is
// not `recorded`, and identify's errors.
void check_unchanged(const std::string& location, const FileIdentity& recorded);
// The SHA-256 of bytes in memory, lowercase hex.
std::string sha256_hex(std::span<const uint8_t> bytes);
inline std::string sha256_hex(std::string_view text) {
  return sha256_hex(std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

}  // namespace sx::io
