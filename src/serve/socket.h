// The Unix socket serve listens on, and whole reads and writes on a connection.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <string_view>

namespace sx::serve {

// A listening Unix stream socket at a path. A path that holds a socket nothing answers on
// (one a stopped server left behind) is replaced; a socket another process still serves
// is refused, and so is a path that holds anything but a socket (ServeError E-SERVE-006,
// naming the path).
class ListeningSocket {
 public:
  explicit ListeningSocket(std::string path);
  ListeningSocket(const ListeningSocket&) = delete;
  ListeningSocket& operator=(const ListeningSocket&) = delete;
  ~ListeningSocket() { close(); }

  int fd() const { return fd_; }
  const std::string& path() const { return path_; }
  // Stops listening and removes the path, when it is still this socket's.
  void close();

 private:
  std::string path_;
  int fd_ = -1;
  dev_t device_ = 0;
  ino_t inode_ = 0;
};

enum class ReadResult { whole, ended, failed };
// Reads exactly `size` bytes: whole, or ended when the peer closed first (at a frame's
// start or within it), or failed on an error (a reset, a timeout).
ReadResult read_exact(int fd, void* data, size_t size);
// Writes a frame (the length, then `body`) whole; false when the peer is gone or the
// write timed out. Never raises SIGPIPE.
bool write_frame(int fd, std::string_view body);

}  // namespace sx::serve
