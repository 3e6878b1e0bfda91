// The listening socket and whole reads and writes.
#include "serve/socket.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "serve/errors.h"
#include "serve/protocol.h"

namespace sx::serve {
namespace {

[[noreturn]] void unusable(const std::string& path, std::string what, std::string help = {}) {
  throw ServeError(kSocketUnusable, fmt::format("--socket {}: {}", path, what), std::move(help));
}

sockaddr_un address_of(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.empty()) unusable(path, "an empty path");
  if (path.size() >= sizeof address.sun_path) {
    unusable(
        path,
        fmt::format("a socket's path has at most {} bytes; this one has {}", sizeof address.sun_path - 1, path.size()),
        "choose a shorter path, under /tmp say");
  }
  if (path.find('\0') != std::string::npos) unusable(path, "the path holds a NUL byte");
  std::memcpy(address.sun_path, path.data(), path.size());
  return address;
}

// Whether a server answers on the socket at `address`.
bool answers(const sockaddr_un& address, const std::string& path) {
  int probe = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (probe < 0) unusable(path, fmt::format("cannot make a socket: {}", std::strerror(errno)));
  int rc = ::connect(probe, reinterpret_cast<const sockaddr*>(&address), sizeof address);
  int err = errno;
  ::close(probe);
  if (rc == 0 || err == EAGAIN) return true;  // EAGAIN: a listener whose queue is full
  if (err == ECONNREFUSED) return false;
  unusable(path, fmt::format("cannot tell whether another server listens on it: {}", std::strerror(err)));
}

}  // namespace

ListeningSocket::ListeningSocket(std::string path) : path_(std::move(path)) {
  sockaddr_un address = address_of(path_);
  struct stat st {};
  if (::lstat(path_.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      unusable(path_, "the path holds something other than a socket",
               "choose another path; serve replaces only a "
               "socket a stopped server left behind");
    }
    if (answers(address, path_)) {
      unusable(path_, "another server answers on this socket", "stop that server, or choose another path for this one");
    }
    if (::unlink(path_.c_str()) != 0 && errno != ENOENT) {
      unusable(path_, fmt::format("cannot remove the stale socket: {}", std::strerror(errno)));
    }
  } else if (errno != ENOENT) {
    unusable(path_, fmt::format("cannot look at it: {}", std::strerror(errno)));
  }
  fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) unusable(path_, fmt::format("cannot make a socket: {}", std::strerror(errno)));
  if (::bind(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0 || ::listen(fd_, SOMAXCONN) != 0 ||
      ::stat(path_.c_str(), &st) != 0) {
    int err = errno;
    ::close(fd_);
    fd_ = -1;
    unusable(path_, fmt::format("cannot listen on it: {}", std::strerror(err)));
  }
  device_ = st.st_dev;
  inode_ = st.st_ino;
}

void ListeningSocket::close() {
  if (fd_ < 0) return;
  ::close(fd_);
  fd_ = -1;
  // Another process may have put something else at the path since: leave that alone.
  struct stat st {};
  if (::lstat(path_.c_str(), &st) == 0 && st.st_dev == device_ && st.st_ino == inode_) ::unlink(path_.c_str());
}

ReadResult read_exact(int fd, void* data, size_t size) {
  auto* out = static_cast<char*>(data);
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::recv(fd, out + done, size - done, 0);
    if (n > 0) {
      done += static_cast<size_t>(n);
    } else if (n == 0) {
      return ReadResult::ended;
    } else if (errno != EINTR) {
      return ReadResult::failed;
    }
  }
  return ReadResult::whole;
}

bool write_frame(int fd, std::string_view body) {
  auto header = frame_header(body.size());
  iovec parts[2] = {{header.data(), header.size()}, {const_cast<char*>(body.data()), body.size()}};
  size_t first = 0;
  while (first < 2) {
    msghdr message{};
    message.msg_iov = parts + first;
    message.msg_iovlen = 2 - first;
    ssize_t n = ::sendmsg(fd, &message, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    auto sent = static_cast<size_t>(n);
    while (first < 2 && sent >= parts[first].iov_len) {
      sent -= parts[first].iov_len;
      ++first;
    }
    if (first < 2) {
      parts[first].iov_base = static_cast<char*>(parts[first].iov_base) + sent;
      parts[first].iov_len -= sent;
    }
  }
  return true;
}

}  // namespace sx::serve
