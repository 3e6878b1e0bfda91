// XXH3-64 checksums (see checksum.h).
#include "io/checksum.h"

#include <fmt/format.h>
#include <xxhash.h>

#include <new>

#include "io/util.h"

namespace sx::io {

void Checksum::Free::operator()(XXH3_state_s* state) const { XXH3_freeState(state); }

Checksum::Checksum() : state_(XXH3_createState()) {
  if (!state_ || XXH3_64bits_reset(state_.get()) != XXH_OK) throw std::bad_alloc();
}

Checksum::~Checksum() = default;

void Checksum::update(const void* data, size_t size) { XXH3_64bits_update(state_.get(), data, size); }

uint64_t Checksum::value() const { return XXH3_64bits_digest(state_.get()); }

uint64_t checksum_of(std::span<const uint8_t> bytes) { return XXH3_64bits(bytes.data(), bytes.size()); }

uint64_t checksum_of(std::string_view bytes) { return XXH3_64bits(bytes.data(), bytes.size()); }

uint64_t checksum_of_file(const std::string& path) {
  Checksum checksum;
  read_chunks(open_regular_file(path).fd, path, [&](const char* data, size_t n) { checksum.update(data, n); });
  return checksum.value();
}

std::string checksum_hex(uint64_t checksum) { return fmt::format("{:016x}", checksum); }

std::optional<uint64_t> parse_checksum_hex(std::string_view hex) {
  if (hex.size() != 16) return std::nullopt;
  uint64_t value = 0;
  for (char c : hex) {
    int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (digit < 0) return std::nullopt;
    value = value << 4 | static_cast<uint64_t>(digit);
  }
  return value;
}

}  // namespace sx::io
