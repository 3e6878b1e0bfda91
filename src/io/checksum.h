// The checksums a checkpoint records of its files: XXH3-64 (the xxhash library), fed piece
// by piece as a file is written, or over a whole file read back. Fast enough (several GB/s
// a core) that checking a checkpoint costs about what reading it does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

struct XXH3_state_s;

namespace sx::io {

class Checksum {
 public:
  Checksum();
  Checksum(const Checksum&) = delete;
  Checksum& operator=(const Checksum&) = delete;
  ~Checksum();

  void update(const void* data, size_t size);
  // Of every byte given so far; more may follow.
  uint64_t value() const;

 private:
  struct Free {
    void operator()(XXH3_state_s* state) const;
  };
  std::unique_ptr<XXH3_state_s, Free> state_;
};

uint64_t checksum_of(std::span<const uint8_t> bytes);
uint64_t checksum_of(std::string_view bytes);
// Of the file at `path`, read to its end; LoadError (E-LOAD-002) when it cannot be read.
uint64_t checksum_of_file(const std::string& path);

// 16 lower-case hex digits, as a manifest records a checksum; and back (nullopt for any
// other text).
std::string checksum_hex(uint64_t checksum);
std::optional<uint64_t> parse_checksum_hex(std::string_view hex);

}  // namespace sx::io
