// File helpers of the bundle's writers (files.h).
#include "bundle/files.h"

#include <fmt/format.h>
#include <unistd.h>

#include <fstream>

#include "bundle/codes.h"
#include "bundle/manifest.h"
#include "lang/diagnostic.h"

namespace sx::bundle {
namespace fs = std::filesystem;

namespace {

[[noreturn]] void fail_file(const fs::path& path, std::string_view why) {
  fail_bundle(kCannotWrite, fmt::format("{}: {}", lang::shown_in_message(path.string()), why));
}

}  // namespace

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail_file(path, "cannot be read");
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_file(const fs::path& path, const std::string& text) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec) fail_file(path.parent_path(), ec.message());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.close();
  if (!out) fail_file(path, "cannot be written");
}

std::string relative_path(const fs::path& target, const fs::path& from) {
  if (from.empty()) return target.lexically_normal().generic_string();
  return target.lexically_normal().lexically_relative(from.lexically_normal()).generic_string();
}

std::string without_trailing_slash(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

fs::path absolute_of(const fs::path& path) {
  std::error_code ec;
  fs::path absolute = fs::absolute(without_trailing_slash(path.string()), ec).lexically_normal();
  fs::path out = fs::weakly_canonical(absolute, ec);
  return ec ? absolute : out;
}

bool lies_under(const fs::path& path, const fs::path& folder) {
  fs::path relative = path.lexically_relative(folder);
  return !relative.empty() && *relative.begin() != "..";
}

void refuse_existing(const std::string& path, std::string_view what) {
  std::error_code ec;
  if (fs::symlink_status(path, ec).type() != fs::file_type::not_found) {
    fail_bundle(kPlaceTaken, fmt::format("{}: it exists, and {} writes a new one", lang::shown_in_message(path), what),
                "name another, or remove this one first");
  }
}

ScratchFolder::ScratchFolder(const fs::path& beside)
    : path_(fmt::format("{}.tmp-{}", absolute_of(beside).string(), getpid())) {
  std::error_code ec;
  fs::remove_all(path_, ec);
  fs::create_directories(path_, ec);
  if (ec) fail_file(path_, ec.message());
}

ScratchFolder::~ScratchFolder() {
  std::error_code ec;
  if (!kept_) fs::remove_all(path_, ec);
}

void ScratchFolder::keep_as(const fs::path& to) {
  std::error_code ec;
  fs::rename(path_, to, ec);
  if (ec) fail_file(to, ec.message());
  kept_ = true;
}

}  // namespace sx::bundle
