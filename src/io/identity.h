// What a checkpoint records of a :load file to notice later that it changed: its size and
// the SHA-256 of its bytes (hashed in chunks with OpenSSL's libcrypto).
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace sx::io {

struct FileIdentity {
  uint64_t size = 0;
  std::string sha256;  // lowercase hex

  bool operator==(const FileIdentity&) const = default;
};

// Throws LoadError (E-LOAD-002) when the file cannot be read.
FileIdentity identify(const std::string& path);
// Throws LoadError (E-LOAD-001) naming the file and what differs when its identity now is
// not `recorded`, and E-LOAD-002 when it cannot be read.
void check_unchanged(const std::string& path, const FileIdentity& recorded);
// The SHA-256 of bytes in memory, lowercase hex.
std::string sha256_hex(std::span<const uint8_t> bytes);

}  // namespace sx::io
