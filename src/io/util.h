// Helpers the io files share: UTF-8 checks, reading a whole small file, writing a file
// atomically (a temporary name in the same directory, renamed when complete), and telling
// whose a temporary name is. Internal to src/io. Names in messages go through
// graph::shown_in_message, as every part's do.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace sx::io {

// The byte offset of the first byte that is not part of valid UTF-8 (overlong forms,
// surrogates and code points past U+10FFFF are invalid), or nullopt when all are valid.
std::optional<size_t> find_invalid_utf8(std::string_view text);
// Why open() failed, for a message after "PATH: ": "the file does not exist", ...
std::string open_failure(int err);
// A regular file opened for reading: its descriptor (the caller closes it) and its size.
// Throws LoadError (E-LOAD-002) naming the path when it cannot be opened, or is a
// directory or anything but a regular file.
struct OpenFile {
  int fd;
  uint64_t size;
};
OpenFile open_regular_file(const std::string& path);
// Reads `fd` to its end, handing each chunk to `take`, and closes it (also when `take`
// throws). Throws LoadError (E-LOAD-002) naming `path` when a read fails.
void read_chunks(int fd, const std::string& path, const std::function<void(const char*, size_t)>& take);
// The whole of a regular file, at most `limit` bytes; throws LoadError (E-LOAD-002) when it
// cannot be read, and `too_big_code` when it is longer than `limit`.
std::string read_small_file(const std::string& path, size_t limit, const char* too_big_code);

// This host's name, safe in a file name ('/' replaced), "host" when it has none: part of
// every temporary folder's name, so that only this host's stale ones are removed.
std::string host_name();
// Whether process `pid` of this host still runs (one of another user's counts).
bool process_alive(long pid);

// A file written under a temporary name beside `path`, ".NAME.tmp-PID-N-HOST", and renamed
// to `path` by commit(); destroyed uncommitted, it removes the temporary, and one a killed
// process left is stale (checkpoint_internal.h). Throws LoadError (E-LOAD-002) on any
// failure of the system calls.
class AtomicFile {
 public:
  explicit AtomicFile(std::string path);
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();

  void write(const void* data, size_t size);
  // Writes at `offset` (pwrite), from any thread, beside the others; on a failure it throws
  // and leaves the file open, so that threads still writing never reach a reused descriptor.
  void write_at(uint64_t offset, const void* data, size_t size);
  // Flushes the bytes to disk, renames the file into place and flushes the directory.
  void commit();

 private:
  [[noreturn]] void fail(std::string_view doing, int err);
  // Removes the temporary file, when there is one.
  void drop_temporary();

  std::string path_, temp_;
  int fd_ = -1;
};

}  // namespace sx::io
