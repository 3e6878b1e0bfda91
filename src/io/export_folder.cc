// The export folder: written under a temporary name and renamed when complete (see
// export_folder.h).
#include "io/export_folder.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>

#include "graph/shown.h"
#include "io/safetensors.h"
#include "io/util.h"

namespace sx::io {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void cannot_write(const std::string& path, std::string_view doing, int err) {
  throw ExportError(kExportUnwritable,
                    fmt::format("{}: cannot {}: {}", graph::shown_in_message(path), doing, std::strerror(err)));
}

[[noreturn]] void exists(const std::string& path) {
  throw ExportError(kExportExists,
                    fmt::format("{}: it exists; export writes a new folder", graph::shown_in_message(path)));
}

// ".NAME.export-": what the temporary folders of exports to NAME start with.
std::string temporary_prefix(const fs::path& path) { return "." + path.filename().string() + ".export-"; }

// The process id of a temporary folder's name when this host made it: PREFIX PID-N-HOST.
std::optional<long> owner_here(std::string_view name, std::string_view prefix, const std::string& host) {
  if (!name.starts_with(prefix)) return std::nullopt;
  std::string_view rest = name.substr(prefix.size());
  size_t dash = rest.find('-');
  if (dash == std::string_view::npos || dash == 0 || dash > 10) return std::nullopt;
  long pid = 0;
  for (char c : rest.substr(0, dash)) {
    if (c < '0' || c > '9') return std::nullopt;
    pid = pid * 10 + (c - '0');
  }
  rest = rest.substr(dash + 1);
  dash = rest.find('-');
  if (dash == std::string_view::npos || rest.substr(dash + 1) != host) return std::nullopt;
  return pid;
}

// The folder as named, without a trailing slash: `out/` is the folder `out`.
std::string without_trailing_slash(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

void flush(const std::string& path, const std::string& shown_as) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) cannot_write(shown_as, "open it to flush it to disk", errno);
  if (::fsync(fd) != 0 && errno != EINVAL && errno != ENOTSUP) {
    int err = errno;
    ::close(fd);
    cannot_write(shown_as, "flush it to disk", err);
  }
  ::close(fd);
}

}  // namespace

ExportError::ExportError(std::string code, std::string message)
    : std::runtime_error(std::move(message)), code_(std::move(code)) {}

int remove_stale_exports(const std::string& path) {
  fs::path target(without_trailing_slash(path));
  fs::path parent = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  const std::string prefix = temporary_prefix(target), host = host_name();
  std::error_code ec;
  fs::directory_iterator it(parent, ec);
  if (ec) return 0;
  std::vector<fs::path> stale;
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    auto pid = owner_here(it->path().filename().string(), prefix, host);
    // This process writes one export at a time, so its own are stale too.
    if (pid && (*pid == ::getpid() || !process_alive(*pid))) stale.push_back(it->path());
  }
  int removed = 0;
  for (const auto& doomed : stale) {
    std::error_code remove_ec;
    fs::remove_all(doomed, remove_ec);
    if (!remove_ec) ++removed;
  }
  return removed;
}

void refuse_existing_export(const std::string& path) {
  const std::string folder = without_trailing_slash(path);
  struct stat st {};
  if (::lstat(folder.c_str(), &st) == 0) exists(folder);
  if (errno != ENOENT) cannot_write(folder, "look at it", errno);
}

ExportFolderWriter::ExportFolderWriter(std::string path) : path_(without_trailing_slash(std::move(path))) {
  refuse_existing_export(path_);
  fs::path target(path_);
  fs::path parent = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  std::error_code ec;
  fs::create_directories(parent, ec);
  if (ec) {
    throw ExportError(kExportUnwritable, fmt::format("{}: cannot create the folder it goes in: {}",
                                                     graph::shown_in_message(path_), ec.message()));
  }
  remove_stale_exports(path_);
  static std::atomic<uint64_t> counter{0};
  temp_ = (parent / fmt::format("{}{}-{}-{}", temporary_prefix(target), ::getpid(), counter++, host_name())).string();
  if (::mkdir(temp_.c_str(), 0777) != 0) cannot_write(path_, "create its temporary folder beside it", errno);
}

ExportFolderWriter::~ExportFolderWriter() {
  if (committed_) return;
  std::error_code ec;
  fs::remove_all(temp_, ec);
}

std::string ExportFolderWriter::file_path(std::string_view name) const {
  if (committed_) throw std::logic_error("ExportFolderWriter: a file written after commit()");
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string_view::npos) {
    throw std::invalid_argument(
        fmt::format("an export's file has a plain name, not `{}`", graph::shown_in_message(name)));
  }
  return (fs::path(temp_) / std::string(name)).string();
}

void ExportFolderWriter::write_bytes(std::string_view name, std::string_view bytes) {
  std::string file = file_path(name);
  try {
    AtomicFile out(file);
    out.write(bytes.data(), bytes.size());
    out.commit();
  } catch (const LoadError& e) {
    std::string message = e.what();
    if (size_t at = message.find(file); at != std::string::npos) {
      message.replace(at, file.size(), (fs::path(path_) / std::string(name)).string());
    }
    throw ExportError(kExportUnwritable, message);
  }
}

void ExportFolderWriter::write_tensors(std::string_view name,
                                       const std::vector<std::pair<std::string, graph::Tensor>>& tensors,
                                       const std::map<std::string, std::string>& metadata) {
  std::string file = file_path(name);
  try {
    write_safetensors(file, tensors, metadata);
  } catch (const LoadError& e) {
    std::string message = e.what();
    if (size_t at = message.find(file); at != std::string::npos) {
      message.replace(at, file.size(), (fs::path(path_) / std::string(name)).string());
    }
    throw ExportError(kExportUnwritable, message);
  }
}

void ExportFolderWriter::commit() {
  if (committed_) throw std::logic_error("ExportFolderWriter: commit() twice");
  flush(temp_, path_);
  if (::renameat2(AT_FDCWD, temp_.c_str(), AT_FDCWD, path_.c_str(), RENAME_NOREPLACE) != 0) {
    int err = errno;
    if (err == EEXIST || err == ENOTEMPTY) exists(path_);
    if (err != EINVAL && err != ENOSYS) cannot_write(path_, "rename its temporary folder into place", err);
    // No renameat2 flags on this file system: a plain rename, which would replace an empty
    // folder that appeared since the constructor looked, so look again first.
    struct stat st {};
    if (::lstat(path_.c_str(), &st) == 0) exists(path_);
    if (::rename(temp_.c_str(), path_.c_str()) != 0) {
      err = errno;
      if (err == EEXIST || err == ENOTEMPTY) exists(path_);
      cannot_write(path_, "rename its temporary folder into place", err);
    }
  }
  committed_ = true;
  // The rename is durable once the parent is flushed; the folder is whole either way, so
  // a failure here is no error.
  fs::path parent = fs::path(path_).parent_path();
  int fd = ::open(parent.empty() ? "." : parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    (void)::fsync(fd);
    ::close(fd);
  }
}

}  // namespace sx::io
