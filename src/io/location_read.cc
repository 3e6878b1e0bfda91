// Small files read whole from any location, and whether one exists (location.h).
#include <fmt/format.h>
#include <sys/stat.h>

#include "io/location.h"
#include "io/s3.h"
#include "io/safetensors.h"
#include "io/util.h"

namespace sx::io {

std::string read_small_location(const ResolvedLocation& location, size_t limit, const char* too_big_code) {
  if (!location.is_s3()) return read_small_file(location.path, limit, too_big_code);
  S3Client client(S3Config::from_environment());
  ObjectInfo info = client.head(location.bucket, location.key);
  if (info.size > limit) {
    throw LoadError(too_big_code,
                    fmt::format("{}: {} bytes, more than the limit of {}", location.url(), info.size, limit));
  }
  return client.get(location.bucket, location.key);
}

bool location_exists(const ResolvedLocation& location) {
  if (location.is_s3())
    return S3Client(S3Config::from_environment()).head_if_exists(location.bucket, location.key).has_value();
  struct stat st {};
  return ::stat(location.path.c_str(), &st) == 0;
}

}  // namespace sx::io
