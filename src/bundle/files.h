// File helpers the bundle's writers share: text in and out, relative paths, a folder
// written under a temporary name and renamed when whole.
#pragma once

#include <filesystem>
#include <string>

namespace sx::bundle {

// The whole of a file (E-BUNDLE-004 when it cannot be read).
std::string read_file(const std::filesystem::path& path);
// Writes `text` to `path`, making its folders (E-BUNDLE-004 on a failure).
void write_file(const std::filesystem::path& path, const std::string& text);
// `target` relative to the folder `from`, both relative to one root or both absolute:
// "data/x" from "", "../data/x" from "exp".
std::string relative_path(const std::filesystem::path& target, const std::filesystem::path& from);
// `path` without the slashes that end it ("b/" is "b"), as a folder to write is named.
std::string without_trailing_slash(std::string path);
// The absolute path of `path` with its links resolved; `path` itself need not exist.
std::filesystem::path absolute_of(const std::filesystem::path& path);
// Whether `path` lies under `folder` (or is it), both absolute and normal.
bool lies_under(const std::filesystem::path& path, const std::filesystem::path& folder);
// Refuses, E-BUNDLE-003, a place that exists.
void refuse_existing(const std::string& path, std::string_view what);

// A folder made under a temporary name beside `path` and removed when dropped, unless
// kept: the bundle's folder is never seen half written.
class ScratchFolder {
 public:
  explicit ScratchFolder(const std::filesystem::path& beside);
  ScratchFolder(const ScratchFolder&) = delete;
  ScratchFolder& operator=(const ScratchFolder&) = delete;
  ~ScratchFolder();

  const std::filesystem::path& path() const { return path_; }
  // Renames the folder to `to`; it is no longer removed.
  void keep_as(const std::filesystem::path& to);

 private:
  std::filesystem::path path_;
  bool kept_ = false;
};

}  // namespace sx::bundle
