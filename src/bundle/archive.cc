// Bundle archives through libarchive (archive.h).
#include "bundle/archive.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <vector>

#include "bundle/codes.h"
#include "bundle/manifest.h"
#include "lang/diagnostic.h"

namespace sx::bundle {
namespace fs = std::filesystem;

namespace {

struct FreeWriter {
  void operator()(archive* a) const { archive_write_free(a); }
};
struct FreeReader {
  void operator()(archive* a) const { archive_read_free(a); }
};
struct FreeEntry {
  void operator()(archive_entry* e) const { archive_entry_free(e); }
};

[[noreturn]] void fail_archive(const std::string& path, std::string_view why) {
  fail_bundle(kCannotWrite, fmt::format("{}: {}", lang::shown_in_message(path), why));
}

std::string error_of(archive* a) {
  const char* text = archive_error_string(a);
  return text ? text : "the archive library failed";
}

// Whether this libarchive writes zstd: asked of a writer that is then dropped.
bool has_zstd() {
  std::unique_ptr<archive, FreeWriter> probe(archive_write_new());
  return archive_write_add_filter_zstd(probe.get()) == ARCHIVE_OK;
}

// Whether an entry's name stays inside the folder it is unpacked into.
bool safe_name(const std::string& name) {
  fs::path p(name);
  if (name.empty() || p.is_absolute()) return false;
  return std::none_of(p.begin(), p.end(), [](const fs::path& part) { return part == ".."; });
}

}  // namespace

bool is_archive_name(const std::string& path) { return path.ends_with(".tar") || path.ends_with(".tar.zst"); }

std::string archive_extension() { return has_zstd() ? ".tar.zst" : ".tar"; }

void write_archive(const std::string& folder, const std::string& out) {
  std::vector<fs::path> entries;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    entries.push_back(it->path());
  }
  if (ec) fail_archive(folder, ec.message());
  std::sort(entries.begin(), entries.end());
  std::string temp = fmt::format("{}.part-{}", out, getpid());
  std::unique_ptr<archive, FreeWriter> writer(archive_write_new());
  archive_write_set_format_pax_restricted(writer.get());
  if (out.ends_with(".zst") && archive_write_add_filter_zstd(writer.get()) != ARCHIVE_OK) {
    fail_archive(out, "this build's libarchive does not write zstd: name the archive .tar");
  }
  if (archive_write_open_filename(writer.get(), temp.c_str()) != ARCHIVE_OK) fail_archive(out, error_of(writer.get()));
  auto fail_writing = [&](const std::string& why) {
    writer.reset();
    fs::remove(temp, ec);
    fail_archive(out, why);
  };
  std::vector<char> buffer(size_t{1} << 20);
  for (const fs::path& path : entries) {
    std::unique_ptr<archive_entry, FreeEntry> entry(archive_entry_new());
    std::string name = path.lexically_relative(folder).generic_string();
    archive_entry_set_pathname(entry.get(), name.c_str());
    bool is_folder = fs::is_directory(path, ec);
    archive_entry_set_filetype(entry.get(), is_folder ? AE_IFDIR : AE_IFREG);
    archive_entry_set_perm(entry.get(), is_folder ? 0755 : 0644);
    uintmax_t size = is_folder ? 0 : fs::file_size(path, ec);
    if (ec) fail_writing(fmt::format("{}: {}", path.string(), ec.message()));
    archive_entry_set_size(entry.get(), static_cast<la_int64_t>(size));
    if (archive_write_header(writer.get(), entry.get()) != ARCHIVE_OK) fail_writing(error_of(writer.get()));
    if (is_folder) continue;
    std::ifstream in(path, std::ios::binary);
    if (!in.is_open()) fail_writing(fmt::format("{}: cannot be read", path.string()));
    while (in) {
      in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
      if (in.gcount() > 0 && archive_write_data(writer.get(), buffer.data(), static_cast<size_t>(in.gcount())) < 0) {
        fail_writing(error_of(writer.get()));
      }
    }
    if (in.bad()) fail_writing(fmt::format("{}: cannot be read", path.string()));
  }
  if (archive_write_close(writer.get()) != ARCHIVE_OK) fail_writing(error_of(writer.get()));
  fs::rename(temp, out, ec);
  if (ec) fail_writing(ec.message());
}

void extract_archive(const std::string& archive_path, const std::string& folder) {
  std::unique_ptr<archive, FreeReader> reader(archive_read_new());
  archive_read_support_format_tar(reader.get());
  archive_read_support_filter_all(reader.get());
  if (archive_read_open_filename(reader.get(), archive_path.c_str(), size_t{1} << 20) != ARCHIVE_OK) {
    fail_archive(archive_path, error_of(reader.get()));
  }
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec) fail_archive(folder, ec.message());
  archive_entry* entry = nullptr;
  for (;;) {
    int status = archive_read_next_header(reader.get(), &entry);
    if (status == ARCHIVE_EOF) break;
    if (status != ARCHIVE_OK) fail_archive(archive_path, error_of(reader.get()));
    std::string name = archive_entry_pathname(entry) ? archive_entry_pathname(entry) : "";
    auto type = archive_entry_filetype(entry);
    if (!safe_name(name) || (type != AE_IFREG && type != AE_IFDIR)) {
      fail_archive(archive_path, fmt::format("the entry `{}` is not a plain file or folder inside the archive",
                                             lang::shown_in_message(name)));
    }
    fs::path target = fs::path(folder) / name;
    if (type == AE_IFDIR) {
      fs::create_directories(target, ec);
      if (ec) fail_archive(target.string(), ec.message());
      continue;
    }
    fs::create_directories(target.parent_path(), ec);
    int fd = ::open(target.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) fail_archive(target.string(), std::strerror(errno));
    int copied = archive_read_data_into_fd(reader.get(), fd);
    bool closed = ::close(fd) == 0;
    if (copied != ARCHIVE_OK || !closed) fail_archive(target.string(), error_of(reader.get()));
  }
}

}  // namespace sx::bundle
