// Helpers the io files share (see util.h).
#include "io/util.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "graph/shown.h"
#include "io/checkpoint_internal.h"
#include "io/safetensors.h"

namespace sx::io {

std::optional<size_t> find_invalid_utf8(std::string_view text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    unsigned char c = s[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    uint32_t cp;
    if ((c & 0xe0) == 0xc0) {
      len = 2, cp = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
      len = 3, cp = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
      len = 4, cp = c & 0x07;
    } else {
      return i;
    }
    if (n - i < len) return i;
    for (size_t k = 1; k < len; ++k) {
      if ((s[i + k] & 0xc0) != 0x80) return i;
      cp = cp << 6 | (s[i + k] & 0x3f);
    }
    static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return i;
    i += len;
  }
  return std::nullopt;
}

std::string open_failure(int err) {
  switch (err) {
    case ENOENT: return "the file does not exist";
    case EACCES: return "permission denied";
    case EISDIR: return "a directory, not a file";
    case ENAMETOOLONG: return "the name is too long for the system";
    default: return fmt::format("cannot open it: {}", std::strerror(err));
  }
}

OpenFile open_regular_file(const std::string& path) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever. It
  // changes nothing for the regular file, the only kind taken.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  // A name too long for the system (ENAMETOOLONG) is shown cut, as any name is.
  if (fd < 0) throw LoadError(kUnreadable, fmt::format("{}: {}", graph::shown_in_message(path), open_failure(errno)));
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    bool dir = S_ISDIR(st.st_mode);
    ::close(fd);
    throw LoadError(kUnreadable, fmt::format("{}: {}", path, dir ? "a directory, not a file" : "not a regular file"));
  }
  return {fd, static_cast<uint64_t>(st.st_size)};
}

void read_chunks(int fd, const std::string& path, const std::function<void(const char*, size_t)>& take) {
  struct Close {
    int fd;
    ~Close() { ::close(fd); }
  } close_at_end{fd};
  std::vector<char> buffer(1 << 20);
  while (true) {
    ssize_t got = ::read(fd, buffer.data(), buffer.size());
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw LoadError(kUnreadable, fmt::format("{}: cannot read it: {}", path, std::strerror(errno)));
    if (got == 0) return;
    take(buffer.data(), static_cast<size_t>(got));
  }
}

std::string read_small_file(const std::string& path, size_t limit, const char* too_big_code) {
  auto [fd, size] = open_regular_file(path);
  if (size > limit) {
    ::close(fd);
    throw LoadError(too_big_code,
                    fmt::format("{}: the file is {} bytes, more than the limit of {}", path, size, limit));
  }
  std::string out;
  read_chunks(fd, path, [&](const char* data, size_t n) {
    out.append(data, n);
    if (out.size() > limit) {
      throw LoadError(too_big_code, fmt::format("{}: the file is more than the limit of {} bytes", path, limit));
    }
  });
  return out;
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "host";
  std::string out(name);
  for (char& c : out) {
    if (c == '/') c = '_';
  }
  return out;
}

bool process_alive(long pid) { return pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM); }

// --- AtomicFile -------------------------------------------------------------------------

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  static std::atomic<uint64_t> counter{0};
  std::filesystem::path target(path_);
  // Named as a checkpoint's temporaries are, so that the next writer removes one a killed
  // process left (remove_stale_temporaries); live while this one writes it.
  std::string name = fmt::format(".{}.tmp-{}-{}-{}", target.filename().string(), getpid(), counter++, host_name());
  temp_ = (target.parent_path() / name).string();
  set_live(name, true);
  fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd_ < 0) fail("create a temporary file in its directory", errno);
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  drop_temporary();
}

void AtomicFile::drop_temporary() {
  if (temp_.empty()) return;
  ::unlink(temp_.c_str());
  set_live(std::filesystem::path(temp_).filename().string(), false);
  temp_.clear();
}

void AtomicFile::fail(std::string_view doing, int err) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  drop_temporary();
  throw LoadError(kUnreadable, fmt::format("{}: cannot write it: could not {}: {}", path_, doing, std::strerror(err)));
}

void AtomicFile::write(const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t put = ::write(fd_, p, size);
    if (put < 0 && errno == EINTR) continue;
    if (put < 0) fail("write", errno);
    p += put;
    size -= static_cast<size_t>(put);
  }
}

void AtomicFile::write_at(uint64_t offset, const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t put = ::pwrite(fd_, p, size, static_cast<off_t>(offset));
    if (put < 0 && errno == EINTR) continue;
    if (put < 0) {
      throw LoadError(kUnreadable, fmt::format("{}: cannot write it: could not write at byte {}: {}", path_, offset,
                                               std::strerror(errno)));
    }
    p += put;
    offset += static_cast<uint64_t>(put);
    size -= static_cast<size_t>(put);
  }
}

void AtomicFile::commit() {
  if (::fsync(fd_) != 0) fail("flush it to disk", errno);
  if (::close(fd_) != 0) {
    fd_ = -1;
    fail("close it", errno);
  }
  fd_ = -1;
  if (::rename(temp_.c_str(), path_.c_str()) != 0) fail("rename it into place", errno);
  set_live(std::filesystem::path(temp_).filename().string(), false);
  temp_.clear();
  // The rename is durable once the directory is flushed; a failure here loses nothing.
  std::string dir = std::filesystem::path(path_).parent_path().string();
  int dir_fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    (void)::fsync(dir_fd);
    ::close(dir_fd);
  }
}

}  // namespace sx::io
