// The accept loop and each connection's loop.
#include "serve/server.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

#include "serve/protocol.h"

namespace sx::serve {
namespace {

// A client that takes no answer for this long is disconnected, so that one that stopped
// reading cannot hold its thread, or a stopping server, for ever.
constexpr time_t kSendTimeoutSeconds = 10;
// How often the accept loop wakes to join the threads of connections that ended.
constexpr int kReapMilliseconds = 1000;

}  // namespace

Server::Server(Batcher& batcher, std::string handshake, std::optional<int64_t> at_limit,
               std::unique_ptr<ListeningSocket> socket)
    : batcher_(batcher), handshake_(std::move(handshake)), at_limit_(at_limit), socket_(std::move(socket)) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) throw std::system_error(errno, std::generic_category(), "pipe2");
  stop_read_ = fds[0];
  stop_write_ = fds[1];
}

Server::~Server() {
  ::close(stop_read_);
  ::close(stop_write_);
}

void Server::request_stop() {
  char byte = 1;
  // Full pipe: a stop is already pending, which is all this says.
  [[maybe_unused]] ssize_t n = ::write(stop_write_, &byte, 1);
}

void Server::reap_finished() {
  std::lock_guard lock(connections_mutex_);
  for (auto it = connections_.begin(); it != connections_.end();) {
    if (it->done) {
      it->thread.join();
      it = connections_.erase(it);
    } else {
      ++it;
    }
  }
}

void Server::run() {
  pollfd watched[2] = {{socket_->fd(), POLLIN, 0}, {stop_read_, POLLIN, 0}};
  for (;;) {
    // Only a stop ends the loop: a failed poll (a signal, no memory for a moment) is tried again.
    int ready = ::poll(watched, 2, kReapMilliseconds);
    reap_finished();
    if (ready <= 0) continue;
    if (watched[1].revents) break;
    if (!(watched[0].revents & POLLIN)) continue;
    int fd = ::accept4(socket_->fd(), nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;  // the client left already, or no descriptor is free now: the next one may fare better
    std::lock_guard lock(connections_mutex_);
    Connection& c = connections_.emplace_back(Connection{fd, {}, false});
    try {
      c.thread = std::thread([this, &c] { serve(c); });
    } catch (const std::system_error&) {
      // No thread to be had now: this client is turned away, the next may fare better.
      ::close(fd);
      connections_.pop_back();
    }
  }
  socket_->close();
  // Every call already read is answered; a connection waiting for its next frame sees the
  // end of its input (what is queued is still read) and ends.
  {
    std::lock_guard lock(connections_mutex_);
    for (Connection& c : connections_) {
      if (!c.done) ::shutdown(c.fd, SHUT_RD);
    }
  }
  for (Connection& c : connections_) c.thread.join();
  connections_.clear();
}

void Server::serve(Connection& connection) {
  int fd = connection.fd;
  timeval timeout{kSendTimeoutSeconds, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  const CallLayout& layout = batcher_.layout();
  bool open = write_frame(fd, handshake_);
  while (open) {
    uint8_t header[kFrameHeaderBytes];
    if (read_exact(fd, header, sizeof header) != ReadResult::whole) break;
    uint64_t length = frame_length(std::span<const uint8_t, kFrameHeaderBytes>(header));
    // Refused before a byte of its body is read: no client makes the server hold more
    // than one call's bytes.
    if (auto why = check_call_length(layout, length)) {
      write_frame(fd, error_answer(*why));
      break;
    }
    std::string body(layout.call_bytes(), '\0');
    if (read_exact(fd, body.data(), body.size()) != ReadResult::whole) break;
    std::optional<std::string> why = check_call_values(layout, body, at_limit_);
    open = write_frame(fd, why ? error_answer(*why) : batcher_.call(std::move(body)));
  }
  std::lock_guard lock(connections_mutex_);
  ::close(fd);
  connection.done = true;
}

}  // namespace sx::serve
