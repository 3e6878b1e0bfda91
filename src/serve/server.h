// The server: clients on a Unix socket, their calls run through the batcher.
//
// One thread does it all: an epoll loop accepts clients, reads their frames as the bytes
// come (a connection keeps its partial frame), runs the calls that are waiting as one
// batch on the device and writes the answers. A call so passes no thread hand-off between
// its arrival and its answer, and calls that arrive while the device runs wait in their
// sockets and make up the next batch, up to --batch. A connection has at most one call in
// the server at a time: its next frame is read once its answer is written, so a client
// makes the server hold at most one call and one answer for it.
//
// Up to a limit of clients at once (client_limit()); one more is answered E-SERVE-011 in
// place of its handshake and closed, so that clients that hold their connections keep no
// other from a clear answer. A client that takes no answer, or sends part of a frame and
// then nothing, for kStalledSeconds is disconnected (one mid-frame is answered E-SERVE-012
// first), and one that leaves, mid-frame or not, takes nothing with it but its own call. A
// connection holds the bytes its client sent, never more.
#pragma once

#include <sys/epoll.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "serve/batcher.h"
#include "serve/socket.h"

namespace sx::serve {

inline constexpr size_t kMaxConnections = 65536;
// Open files kept for the model, the device and the server's own (its socket, epoll, pipe).
inline constexpr size_t kReservedFiles = 64;
inline constexpr int kStalledSeconds = 10;

// Raises this process's soft limit on open files to its hard limit, and returns how many
// clients a server may hold: kMaxConnections, or the limit less kReservedFiles where that
// is lower.
size_t client_limit();

class Server {
 public:
  // Serves the batcher's model on `socket` (already listening); `handshake` is the JSON
  // each client reads first; `at_limit`, with --at, the bound each call's `at` is held to;
  // `max_connections` the clients served at once (client_limit() for the process's own).
  Server(Batcher& batcher, std::string handshake, std::optional<int64_t> at_limit,
         std::unique_ptr<ListeningSocket> socket, size_t max_connections);
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;
  ~Server();

  // Serves until request_stop(); then stops accepting, removes the socket, answers the
  // calls already received, closes every connection and returns.
  void run();
  // Safe from any thread and from a signal handler: it writes one byte to a pipe.
  void request_stop();

 private:
  using Clock = std::chrono::steady_clock;
  struct Connection {
    int fd = -1;
    std::string frame;                               // the frame being read: its header, then its body
    size_t frame_bytes = 0;                          // how long `frame` is when whole: the header's, then the frame's
    bool queued = false;                             // its call waits for the device
    std::string out;                                 // answers not yet written
    size_t written = 0;                              // of `out`
    std::optional<Clock::time_point> stalled_since;  // it takes no more of its answer, or sends no more of a frame
    bool close_when_written = false;                 // a refused frame: answered, then closed
    bool ended = false;                              // the client left, or its socket failed
    uint32_t watched = 0;                            // the epoll events asked for now
  };
  struct Call {
    uint64_t connection;
    std::string body;
  };

  void accept_clients();
  // Answers a client beyond the cap E-SERVE-011 in place of its handshake, and closes it.
  void refuse(int fd);
  // Reads the connection's bytes up to the end of its next call, which joins the calls
  // waiting; answers a frame it refuses.
  void read_from(uint64_t id, Connection& c);
  // Writes what the socket takes; false when the connection is to be closed.
  bool flush(Connection& c);
  // Writes what the client takes, reads what it sent, and closes the connection when it
  // is done with.
  void exchange(uint64_t id, Connection& c);
  void watch(uint64_t id, Connection& c);
  void close(uint64_t id);
  // Closes the clients that took no answer, or sent no more of their frame, for too long.
  void drop_stalled(Clock::time_point now);
  void run_waiting_calls();
  void stop_accepting();
  void set_listening(bool on);

  Batcher& batcher_;
  std::string handshake_;
  std::optional<int64_t> at_limit_;
  std::unique_ptr<ListeningSocket> socket_;
  int stop_read_ = -1, stop_write_ = -1, epoll_ = -1;
  bool listening_ = false, stopping_ = false;
  Clock::time_point retry_accept_at_{};
  Clock::time_point next_stall_check_{};  // stalls are looked for once a tick, not per event
  Clock::time_point answered_at_{};       // the last batch's answers were sent
  size_t max_connections_;
  bool poll_between_calls_;  // another core is free for the clients (server.cc)
  uint64_t next_id_;
  std::map<uint64_t, Connection> connections_;
  std::deque<Call> waiting_;
  std::string received_;    // what one receive took: a header and a call's body at most
  std::string refusal_;     // the frame a client beyond the cap gets
  std::string unfinished_;  // the frame a client silent mid-frame gets
};

}  // namespace sx::serve
