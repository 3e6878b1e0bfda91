// The server: clients on a Unix socket, each call answered through the batcher.
//
// A thread per connection. A connection spends nearly all its time blocked in one read
// or waiting for the device, so a thread each keeps its code a plain read-call-write loop;
// the clients of `serve` are a few programs being built and tried, not thousands, and the
// device thread is where the work is. A connection's thread ends when its client leaves,
// mid-frame or not, and takes nothing with it but its own call.
#pragma once

#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "serve/batcher.h"
#include "serve/socket.h"

namespace sx::serve {

class Server {
 public:
  // Serves the batcher's model on `socket` (already listening); `handshake` is the JSON
  // each client reads first; `at_limit`, with --at, the bound each call's `at` is held to.
  Server(Batcher& batcher, std::string handshake, std::optional<int64_t> at_limit,
         std::unique_ptr<ListeningSocket> socket);
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;
  ~Server();

  // Accepts clients until request_stop(); then stops accepting, removes the socket,
  // answers the calls already received, closes every connection and returns.
  void run();
  // Safe from any thread and from a signal handler: it writes one byte to a pipe.
  void request_stop();

 private:
  struct Connection {
    int fd;
    std::thread thread;
    bool done = false;  // under connections_mutex_: the thread has closed fd and is ending
  };
  void serve(Connection& connection);
  void reap_finished();

  Batcher& batcher_;
  std::string handshake_;
  std::optional<int64_t> at_limit_;
  std::unique_ptr<ListeningSocket> socket_;
  int stop_read_ = -1, stop_write_ = -1;
  std::mutex connections_mutex_;
  std::list<Connection> connections_;
};

}  // namespace sx::serve
