// The local cache of storage objects (see storage_cache.h).
#include "io/storage_cache.h"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>

#include "graph/shown.h"
#include "io/identity.h"
#include "io/s3.h"
#include "io/safetensors.h"
#include "io/util.h"

namespace sx::io {

std::string cache_root() {
  if (const char* dir = std::getenv("SEXPGPU_CACHE_DIR"); dir && *dir) return dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::string(xdg) + "/sexpgpu";
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.cache/sexpgpu";
  return (std::filesystem::temp_directory_path() / "sexpgpu-cache").string();
}

std::string cache_key(std::string_view text) { return sha256_hex(text).substr(0, 24); }

std::string cached_object(const ResolvedLocation& location) {
  S3Client s3(S3Config::from_environment());
  const ObjectInfo info = s3.head(location.bucket, location.key);
  const std::string folder = fmt::format("{}/objects/{}", cache_root(),
                                         cache_key(fmt::format("{}\n{}\n{}", location.url(), info.size, info.etag)));
  const std::string path = folder + "/" + location.key.substr(location.key.rfind('/') + 1);  // npos + 1 == 0
  std::error_code ec;
  // get_to_file renames a copy into place only when whole, so one that is there is.
  if (std::filesystem::is_regular_file(path, ec)) return path;
  std::filesystem::create_directories(folder, ec);
  if (ec) {
    throw LoadError(kUnreadable, fmt::format("{}: cannot create the local cache folder to download {} into: {}",
                                             graph::shown_in_message(folder), location.url(), ec.message()));
  }
  s3.get_to_file(location.bucket, location.key, path, info);
  return path;
}

}  // namespace sx::io
