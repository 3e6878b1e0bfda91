// The event loop.
#include "serve/server.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>
#include <vector>

#include "serve/errors.h"
#include "serve/protocol.h"

namespace sx::serve {
namespace {

constexpr uint64_t kListenId = 0;
constexpr uint64_t kStopId = 1;
// How often an idle loop wakes to drop stalled clients and retry a refused accept.
constexpr int kTickMilliseconds = 200;
constexpr int kEventsAtOnce = 64;
// Clients accepted, or refused, at one turn of the loop: a flood of them leaves it time
// for the calls, the rest waiting in the backlog for the next turn.
constexpr int kAcceptsAtOnce = 64;
// A client's next call mostly comes within this long of its answer. The loop polls for
// it that long before it sleeps: a sleeping thread woken by a call takes 20-30 us more
// to answer on a VM's virtual processors (a socket round trip here, 2 processes: 44 us
// with the server asleep, 14 us with it polling). Only where the process may run on
// two processors or more, so that polling never takes the clients' processor.
constexpr auto kPollAfterAnswers = std::chrono::microseconds(200);

bool runs_on_several_processors() {
  cpu_set_t set;
  return ::sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) >= 2;
}

}  // namespace

size_t client_limit() {
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) != 0) return kMaxConnections;
  if (files.rlim_cur < files.rlim_max) {
    rlimit raised{files.rlim_max, files.rlim_max};
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) files = raised;
  }
  if (files.rlim_cur == RLIM_INFINITY) return kMaxConnections;
  if (files.rlim_cur <= kReservedFiles + 1) return 1;
  return std::min<size_t>(kMaxConnections, files.rlim_cur - kReservedFiles);
}

Server::Server(Batcher& batcher, std::string handshake, std::optional<int64_t> at_limit,
               std::unique_ptr<ListeningSocket> socket, size_t max_connections)
    : batcher_(batcher),
      handshake_(std::move(handshake)),
      at_limit_(at_limit),
      socket_(std::move(socket)),
      max_connections_(max_connections),
      poll_between_calls_(runs_on_several_processors()),
      next_id_(kStopId + 1),
      received_(kFrameHeaderBytes + batcher.layout().call_bytes(), '\0'),
      refusal_(frame(
          error_answer(fmt::format("error[{}]: the server holds {} clients, its most; connect again once one has left",
                                   kTooManyClients, max_connections)))),
      unfinished_(
          frame(error_answer(fmt::format("error[{}]: no byte of the call came for {} seconds; the connection is closed",
                                         kFrameUnfinished, kStalledSeconds)))) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) throw std::system_error(errno, std::generic_category(), "pipe2");
  stop_read_ = fds[0];
  stop_write_ = fds[1];
  epoll_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (epoll_ < 0) throw std::system_error(errno, std::generic_category(), "epoll_create1");
  epoll_event stop{EPOLLIN, {.u64 = kStopId}};
  ::epoll_ctl(epoll_, EPOLL_CTL_ADD, stop_read_, &stop);
  int flags = ::fcntl(socket_->fd(), F_GETFL);
  ::fcntl(socket_->fd(), F_SETFL, flags | O_NONBLOCK);
  epoll_event listen{0, {.u64 = kListenId}};
  ::epoll_ctl(epoll_, EPOLL_CTL_ADD, socket_->fd(), &listen);
  set_listening(true);
}

Server::~Server() {
  for (auto& [id, c] : connections_) ::close(c.fd);
  ::close(epoll_);
  ::close(stop_read_);
  ::close(stop_write_);
}

void Server::request_stop() {
  char byte = 1;
  // Full pipe: a stop is already pending, which is all this says.
  [[maybe_unused]] ssize_t n = ::write(stop_write_, &byte, 1);
}

void Server::set_listening(bool on) {
  if (on == listening_ || stopping_) return;
  epoll_event listen{on ? static_cast<uint32_t>(EPOLLIN) : 0u, {.u64 = kListenId}};
  ::epoll_ctl(epoll_, EPOLL_CTL_MOD, socket_->fd(), &listen);
  listening_ = on;
}

void Server::accept_clients() {
  for (int accepted = 0; accepted < kAcceptsAtOnce; ++accepted) {
    int fd = ::accept4(socket_->fd(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      // No descriptor or memory free now: listen again after a tick rather than spin.
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED) {
        set_listening(false);
        retry_accept_at_ = Clock::now() + std::chrono::milliseconds(kTickMilliseconds);
      }
      return;
    }
    if (connections_.size() >= max_connections_) {
      refuse(fd);
      continue;
    }
    uint64_t id = next_id_++;
    Connection& c = connections_[id];
    c.fd = fd;
    c.frame_bytes = kFrameHeaderBytes;
    c.out = frame(handshake_);
    epoll_event event{0, {.u64 = id}};
    ::epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &event);
    if (!flush(c)) close(id);
    else watch(id, c);
  }
}

void Server::refuse(int fd) {
  // A new socket's buffer takes a frame this small at once; a client gone already is told
  // nothing, which is no matter.
  [[maybe_unused]] ssize_t n = ::send(fd, refusal_.data(), refusal_.size(), MSG_NOSIGNAL);
  ::close(fd);
}

void Server::read_from(uint64_t id, Connection& c) {
  const CallLayout& layout = batcher_.layout();
  while (!c.queued && c.out.empty() && !c.ended) {
    if (c.frame.size() < c.frame_bytes) {
      // A header is asked for with the body of a call, in one receive: a frame of any
      // other length is refused and its connection closed, so no byte past a call is
      // taken. The receive goes to the server's one buffer, so that a connection holds
      // only the bytes its client sent.
      const size_t want =
          (c.frame_bytes == kFrameHeaderBytes ? kFrameHeaderBytes + layout.call_bytes() : c.frame_bytes) -
          c.frame.size();
      ssize_t n = ::recv(c.fd, received_.data(), want, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        if (!c.frame.empty() && !c.stalled_since) c.stalled_since = Clock::now();  // a frame begun
        return;
      }
      if (n <= 0) {
        c.ended = true;
        continue;
      }
      c.frame.append(received_.data(), static_cast<size_t>(n));
      c.stalled_since.reset();
      continue;
    }
    if (c.frame_bytes == kFrameHeaderBytes) {
      uint64_t length = frame_length(std::span<const uint8_t, kFrameHeaderBytes>(
          reinterpret_cast<const uint8_t*>(c.frame.data()), kFrameHeaderBytes));
      // Refused before a byte of its body is read: no client makes the server hold more
      // than one call's bytes.
      if (auto why = check_call_length(layout, length)) {
        c.out = frame(error_answer(*why));
        c.close_when_written = true;
        return;
      }
      c.frame_bytes = kFrameHeaderBytes + length;
      continue;
    }
    std::string body = std::move(c.frame);
    body.erase(0, kFrameHeaderBytes);
    c.frame.clear();
    c.frame_bytes = kFrameHeaderBytes;
    if (auto why = check_call_values(layout, body, at_limit_)) {
      c.out = frame(error_answer(*why));
    } else {
      c.queued = true;
      waiting_.push_back({id, std::move(body)});
    }
  }
}

bool Server::flush(Connection& c) {
  while (c.written < c.out.size()) {
    ssize_t n = ::send(c.fd, c.out.data() + c.written, c.out.size() - c.written, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!c.stalled_since) c.stalled_since = Clock::now();
      return true;
    }
    if (n < 0) return false;
    c.written += static_cast<size_t>(n);
    c.stalled_since.reset();
  }
  c.out.clear();
  c.out.shrink_to_fit();  // an idle connection holds no buffer
  c.written = 0;
  c.stalled_since.reset();
  return !c.close_when_written;
}

void Server::exchange(uint64_t id, Connection& c) {
  if (!c.out.empty() && !flush(c)) {
    close(id);
    return;
  }
  read_from(id, c);
  if (c.ended && !c.queued && c.out.empty()) close(id);
  else watch(id, c);
}

void Server::watch(uint64_t id, Connection& c) {
  uint32_t wanted = 0;
  if (!c.out.empty()) wanted |= EPOLLOUT;
  if (!c.queued && c.out.empty()) wanted |= EPOLLIN;
  if (wanted == c.watched) return;
  epoll_event event{wanted, {.u64 = id}};
  ::epoll_ctl(epoll_, EPOLL_CTL_MOD, c.fd, &event);
  c.watched = wanted;
}

void Server::close(uint64_t id) {
  auto it = connections_.find(id);
  ::epoll_ctl(epoll_, EPOLL_CTL_DEL, it->second.fd, nullptr);
  ::close(it->second.fd);
  connections_.erase(it);  // a call of it still waiting is dropped when its batch is made
  set_listening(true);
}

void Server::run_waiting_calls() {
  std::vector<uint64_t> ids;
  std::vector<std::string> calls;
  while (!waiting_.empty() && calls.size() < static_cast<size_t>(batcher_.max_batch())) {
    Call call = std::move(waiting_.front());
    waiting_.pop_front();
    if (!connections_.count(call.connection)) continue;
    ids.push_back(call.connection);
    calls.push_back(std::move(call.body));
  }
  if (calls.empty()) return;
  std::vector<std::string> answers = batcher_.run(calls);
  answered_at_ = Clock::now();
  for (size_t i = 0; i < ids.size(); ++i) {
    Connection& c = connections_.at(ids[i]);
    c.queued = false;
    c.out = frame(answers[i]);
    if (!flush(c)) {
      close(ids[i]);
      continue;
    }
    // A client that sent its next call already gets it read now, for the next batch.
    read_from(ids[i], c);
    if (c.ended && !c.queued && c.out.empty()) close(ids[i]);
    else watch(ids[i], c);
  }
}

void Server::stop_accepting() {
  set_listening(false);
  stopping_ = true;
  ::epoll_ctl(epoll_, EPOLL_CTL_DEL, socket_->fd(), nullptr);
  ::epoll_ctl(epoll_, EPOLL_CTL_DEL, stop_read_, nullptr);
  socket_->close();
  // Every call already sent is answered; a connection then sees the end of its input
  // (what is queued in its socket is still read) and closes.
  for (auto& [id, c] : connections_) ::shutdown(c.fd, SHUT_RD);
}

void Server::drop_stalled(Clock::time_point now) {
  auto too_long = [&](const Connection& c) {
    return c.stalled_since && now - *c.stalled_since > std::chrono::seconds(kStalledSeconds);
  };
  std::vector<uint64_t> stalled;
  for (const auto& [id, c] : connections_) {
    if (too_long(c)) stalled.push_back(id);
  }
  for (uint64_t id : stalled) {
    // The loop may have been running the device for long: what the client did meanwhile
    // counts before it is judged.
    exchange(id, connections_.at(id));
    auto it = connections_.find(id);
    if (it == connections_.end() || !too_long(it->second)) continue;
    // One mid-frame is told why; one that takes no answer would not read it.
    if (it->second.out.empty()) {
      [[maybe_unused]] ssize_t n = ::send(it->second.fd, unfinished_.data(), unfinished_.size(), MSG_NOSIGNAL);
    }
    close(id);
  }
}

void Server::run() {
  epoll_event events[kEventsAtOnce];
  for (;;) {
    Clock::time_point now = Clock::now();
    if (now >= next_stall_check_) {
      drop_stalled(now);
      next_stall_check_ = now + std::chrono::milliseconds(kTickMilliseconds);
    }
    if (!listening_ && !stopping_ && now >= retry_accept_at_) set_listening(true);
    if (stopping_ && connections_.empty()) break;
    // Calls waiting: look for more without blocking, then run them all together. Just
    // after answers: look without blocking too, for the clients' next calls.
    const bool poll = !waiting_.empty() || (poll_between_calls_ && now - answered_at_ < kPollAfterAnswers);
    int ready = ::epoll_wait(epoll_, events, kEventsAtOnce, poll ? 0 : kTickMilliseconds);
    for (int i = 0; i < ready; ++i) {
      uint64_t id = events[i].data.u64;
      if (id == kListenId) {
        if (!stopping_) accept_clients();
        continue;
      }
      if (id == kStopId) {
        stop_accepting();
        continue;
      }
      auto it = connections_.find(id);
      if (it != connections_.end()) exchange(id, it->second);
    }
    run_waiting_calls();
  }
}

}  // namespace sx::serve
