// File identities: size and SHA-256 (see identity.h).
#include "io/identity.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "io/location.h"
#include "io/s3.h"
#include "io/safetensors.h"
#include "io/util.h"

namespace sx::io {
namespace {

// One SHA-256 computation; throws std::runtime_error if libcrypto fails (it does not).
class Sha256 {
 public:
  Sha256() : ctx_(EVP_MD_CTX_new(), EVP_MD_CTX_free) {
    if (!ctx_ || EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr) != 1) throw std::runtime_error("sha256: init");
  }
  void update(const void* data, size_t size) {
    if (EVP_DigestUpdate(ctx_.get(), data, size) != 1) throw std::runtime_error("sha256: update");
  }
  std::string hex() {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    if (EVP_DigestFinal_ex(ctx_.get(), digest, &length) != 1) throw std::runtime_error("sha256: final");
    std::string out;
    for (unsigned int i = 0; i < length; ++i) out += fmt::format("{:02x}", digest[i]);
    return out;
  }

 private:
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx_;
};

}  // namespace

FileIdentity identify(const std::string& location) {
  ResolvedLocation resolved = resolve_location(location);
  if (resolved.is_s3()) {
    ObjectInfo info = S3Client(S3Config::from_environment()).head(resolved.bucket, resolved.key);
    return {info.size, "", info.etag, info.version_id};
  }
  const std::string& path = resolved.path;
  Sha256 hash;
  FileIdentity out;
  read_chunks(open_regular_file(path).fd, path, [&](const char* data, size_t n) {
    hash.update(data, n);
    out.size += n;
  });
  out.sha256 = hash.hex();
  return out;
}

void check_unchanged(const std::string& path, const FileIdentity& recorded) {
  FileIdentity now = identify(path);
  if (now == recorded) return;
  std::string what =
      now.size != recorded.size       ? fmt::format("it is {} bytes, and was {} bytes", now.size, recorded.size)
      : now.sha256 != recorded.sha256 ? fmt::format("its sha256 is {}, and was {}", now.sha256, recorded.sha256)
      : now.etag != recorded.etag
          ? fmt::format("its ETag is {}, and was {}", now.etag, recorded.etag)
          : fmt::format("its version id is {}, and was {}", now.version_id, recorded.version_id);
  throw LoadError(kFileChanged, fmt::format("{}: the file changed since the checkpoint recorded it: {}", path, what));
}

std::string sha256_hex(std::span<const uint8_t> bytes) {
  Sha256 hash;
  hash.update(bytes.data(), bytes.size());
  return hash.hex();
}

}  // namespace sx::io
