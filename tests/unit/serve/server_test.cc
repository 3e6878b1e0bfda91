// The server on a real Unix socket, in this process: the handshake, calls and answers,
// the refusals that close a connection, clients that leave or stall mid-frame, clients
// beyond the cap, stopping, an idle server asleep, and the socket paths it replaces or
// refuses.
#include "serve/server.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <condition_variable>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "forwarding_device.h"
#include "serve/errors.h"
#include "serve/fixture.h"

namespace sx::serve {
namespace {

using testing::TempDir;

int connect_to(const std::string& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.data(), path.size());
  EXPECT_EQ(::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address), 0) << std::strerror(errno);
  return fd;
}

void send_bytes(int fd, std::string_view bytes) {
  ASSERT_EQ(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size()));
}

// The next frame's body; nullopt when the server closed the connection first.
std::optional<std::string> read_frame(int fd) {
  uint8_t header[8];
  if (read_exact(fd, header, 8) != ReadResult::whole) return std::nullopt;
  std::string body(frame_length(std::span<const uint8_t, 8>(header)), '\0');
  if (read_exact(fd, body.data(), body.size()) != ReadResult::whole) return std::nullopt;
  return body;
}

std::string at_call(uint32_t seed, int32_t place) {
  graph::Tensor at(graph::DType::i32, {1});
  at.data<int32_t>()[0] = place;
  return testing::call_body({testing::ids(seed), at});
}

// A device that holds every run until the test lets it go, so that calls are known to
// arrive while it is busy.
class GatedDevice : public sx::testing::ForwardingDevice {
 public:
  using ForwardingDevice::ForwardingDevice;
  std::unique_ptr<device::Plan> compile(const graph::Graph& graph) override {
    return std::make_unique<GatedPlan>(*this, graph, inner_.compile(graph));
  }

  void wait_until_busy() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return runs_ > 0; });
  }
  void open() {
    std::lock_guard lock(mutex_);
    open_ = true;
    changed_.notify_all();
  }

 private:
  class GatedPlan : public device::Plan {
   public:
    GatedPlan(GatedDevice& device, const graph::Graph& graph, std::unique_ptr<device::Plan> inner)
        : Plan(device, graph), gated_(device), inner_(std::move(inner)) {}
    using Plan::run;
    void run(std::span<const device::Buffer* const> inputs, std::span<device::Buffer* const> outputs) override {
      {
        std::unique_lock lock(gated_.mutex_);
        ++gated_.runs_;
        gated_.changed_.notify_all();
        gated_.changed_.wait(lock, [&] { return gated_.open_; });
      }
      inner_->run(inputs, outputs);
    }

   private:
    GatedDevice& gated_;
    std::unique_ptr<device::Plan> inner_;
  };

  std::mutex mutex_;
  std::condition_variable changed_;
  int runs_ = 0;
  bool open_ = false;
};

// A tiny model served with --at and --batch 4 on tmp/s.sock; each test starts it on the
// cpu device or another.
class ServeServer : public ::testing::Test {
 protected:
  void SetUp() override {
    auto m = testing::tiny_lm();
    testing::write_checkpoint(tmp_.path(), m);
    model_ = open_model(resolve_operand(tmp_.path()), {.at = true});
    device_ = device::make_device("cpu", {.cpu_cores = 1});
  }
  void start(device::Device& device, size_t max_connections = client_limit()) {
    batcher_ = std::make_unique<Batcher>(device, model_, 4);
    server_ = std::make_unique<Server>(*batcher_, handshake_json(model_.about), model_.at_limit,
                                       std::make_unique<ListeningSocket>(path_), max_connections);
    running_ = std::thread([this] { server_->run(); });
  }
  void start() { start(*device_); }
  void TearDown() override {
    if (running_.joinable()) stop();
  }
  void stop() {
    server_->request_stop();
    running_.join();
  }
  // A connection whose handshake was read.
  int client() {
    int fd = connect_to(path_);
    auto handshake = read_frame(fd);
    EXPECT_TRUE(handshake);
    return fd;
  }
  // The answer of a call run alone, on a batcher of its own.
  std::string alone(const std::string& call) {
    Batcher one(*device_, model_, 1);
    return one.run({&call, 1}).at(0);
  }

  TempDir tmp_;
  std::string path_ = tmp_ / "s.sock";
  ServedModel model_;
  std::unique_ptr<device::Device> device_;
  std::unique_ptr<Batcher> batcher_;
  std::unique_ptr<Server> server_;
  std::thread running_;
};

// "On connecting, the client reads one frame ... as JSON, as the flags left them."
TEST_F(ServeServer, HandshakeIsTheFirstFrame) {
  start();
  int fd = connect_to(path_);
  auto handshake = read_frame(fd);
  ASSERT_TRUE(handshake);
  auto doc = nlohmann::json::parse(*handshake);
  EXPECT_EQ(doc["inputs"].dump(),
            R"([{"dtype":"i32","name":"inputs","shape":[1,8]},{"dtype":"i32","name":"at","shape":[1]}])");
  EXPECT_EQ(doc["outputs"].dump(), R"([{"dtype":"f32","name":"output","shape":[1,1,32]}])");
  EXPECT_EQ(doc["step"], 20);
  ::close(fd);
}

// "Each call is one frame ... Its answer is one frame starting with a status byte"
TEST_F(ServeServer, CallsAreAnsweredAndAnAtOffTheAxisIsAnErrorThatKeepsTheConnection) {
  start();
  int fd = client();
  send_bytes(fd, frame(at_call(3, 7)));
  auto answer = read_frame(fd);
  ASSERT_TRUE(answer);
  EXPECT_EQ(*answer, alone(at_call(3, 7)));
  EXPECT_EQ((*answer)[0], 0);
  EXPECT_EQ(answer->size(), 1u + 4 * testing::kVocab);
  send_bytes(fd, frame(at_call(3, 8)));
  answer = read_frame(fd);
  ASSERT_TRUE(answer);
  EXPECT_EQ((*answer)[0], 1);
  EXPECT_NE(answer->find("E-SERVE-008"), std::string::npos) << *answer;
  send_bytes(fd, frame(at_call(3, 0)));
  answer = read_frame(fd);
  ASSERT_TRUE(answer);
  EXPECT_EQ((*answer)[0], 0);
  ::close(fd);
}

// Calls sent back to back in one write are each read whole, and no further: each gets
// its own answer, in order. (A header is read with a call's worth of body at once.)
TEST_F(ServeServer, CallsSentBackToBackAreEachAnswered) {
  start();
  int fd = client();
  std::string both = frame(at_call(3, 7)) + frame(at_call(5, 2)) + frame(at_call(1, 0));
  send_bytes(fd, both);
  for (const std::string& call : {at_call(3, 7), at_call(5, 2), at_call(1, 0)}) {
    auto answer = read_frame(fd);
    ASSERT_TRUE(answer);
    EXPECT_EQ(*answer, alone(call));
  }
  ::close(fd);
}

// The loop polls for a client's next call for a moment after answering (server.cc), then
// sleeps: an idle server takes no processor time.
TEST_F(ServeServer, AnIdleServerSleepsAfterItsLastAnswer) {
  start();
  int fd = client();
  send_bytes(fd, frame(at_call(3, 7)));
  ASSERT_TRUE(read_frame(fd));
  clockid_t clock;
  ASSERT_EQ(::pthread_getcpuclockid(running_.native_handle(), &clock), 0);
  auto cpu_seconds = [&] {
    timespec t{};
    ::clock_gettime(clock, &t);
    return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
  };
  const double before = cpu_seconds();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_LT(cpu_seconds() - before, 0.05);
  ::close(fd);
}

// "A call frame of another length than the inputs take is answered with an error, and the connection closed."
TEST_F(ServeServer, CallOfTheWrongLengthIsAnsweredThenClosed) {
  start();
  int fd = client();
  send_bytes(fd, frame("short"));
  auto answer = read_frame(fd);
  ASSERT_TRUE(answer);
  EXPECT_EQ((*answer)[0], 1);
  EXPECT_NE(answer->find("E-SERVE-007"), std::string::npos) << *answer;
  EXPECT_NE(answer->find("a call is 36 bytes"), std::string::npos) << *answer;
  EXPECT_FALSE(read_frame(fd));
  ::close(fd);
}

// A frame length larger than any call is refused before its bytes are read: the answer
// comes though none were sent.
TEST_F(ServeServer, HugeLengthIsRefusedBeforeReadingIt) {
  start();
  int fd = client();
  auto header = frame_header(uint64_t{1} << 62);
  send_bytes(fd, std::string_view(reinterpret_cast<const char*>(header.data()), header.size()));
  auto answer = read_frame(fd);
  ASSERT_TRUE(answer);
  EXPECT_NE(answer->find("E-SERVE-007"), std::string::npos) << *answer;
  EXPECT_FALSE(read_frame(fd));
  ::close(fd);
}

// A client that disconnects mid-frame costs the server nothing: the others go on.
TEST_F(ServeServer, ClientsLeavingMidFrameCostNothing) {
  start();
  int steady = client();
  for (int i = 0; i < 50; ++i) {
    int fd = client();
    std::string call = frame(at_call(1, 1));
    send_bytes(fd, call.substr(0, i % 2 ? 4 : 20));  // in the header, or in the body
    ::close(fd);
  }
  int silent = connect_to(path_);  // leaves without reading its handshake
  ::close(silent);
  send_bytes(steady, frame(at_call(2, 2)));
  auto answer = read_frame(steady);
  ASSERT_TRUE(answer);
  EXPECT_EQ((*answer)[0], 0);
  ::close(steady);
  stop();
  EXPECT_EQ(batcher_->calls(), 1u);
}

// Stopping: no more connections, the socket removed, and a connected client sees the end.
TEST_F(ServeServer, StopRemovesTheSocketAndEndsConnections) {
  start();
  int fd = client();
  stop();
  EXPECT_FALSE(std::filesystem::exists(path_));
  EXPECT_FALSE(read_frame(fd));
  ::close(fd);
}

// "Calls that arrive while the device is busy run together as one batch when it is free
// ... so a call that arrives alone runs at once": the first call runs by itself; the three
// sent while it runs go together, and each answer is its call's bits alone.
TEST_F(ServeServer, CallsThatArriveWhileTheDeviceIsBusyRunTogether) {
  GatedDevice gated(*device_);
  start(gated);
  std::vector<int> fds;
  for (int i = 0; i < 4; ++i) fds.push_back(client());
  send_bytes(fds[0], frame(at_call(0, 0)));
  gated.wait_until_busy();
  for (int i = 1; i < 4; ++i) send_bytes(fds[i], frame(at_call(static_cast<uint32_t>(i), i)));
  gated.open();
  std::vector<std::string> answers;
  for (int fd : fds) {
    auto answer = read_frame(fd);
    ASSERT_TRUE(answer);
    answers.push_back(*answer);
    ::close(fd);
  }
  stop();
  EXPECT_EQ(batcher_->calls(), 4u);
  EXPECT_EQ(batcher_->runs(), 2u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(answers[i], alone(at_call(static_cast<uint32_t>(i), i))) << "call " << i;
}

// At the cap, a new client is answered E-SERVE-011 in place of its handshake, at once, and
// closed; once another has left, the next is served.
TEST_F(ServeServer, ClientsBeyondTheCapAreRefusedAtOnce) {
  start(*device_, 2);
  int first = client();
  int second = client();
  int third = connect_to(path_);
  pollfd refused{third, POLLIN, 0};
  ASSERT_EQ(::poll(&refused, 1, 1000), 1) << "the third client got no answer at a cap of two";
  auto answer = read_frame(third);
  ASSERT_TRUE(answer);
  EXPECT_EQ((*answer)[0], 1);
  EXPECT_NE(answer->find("error[E-SERVE-011]: the server holds 2 clients, its most"), std::string::npos) << *answer;
  EXPECT_FALSE(read_frame(third));
  ::close(third);
  // A refused frame closes `first` from the server's side: its end comes once it is gone.
  send_bytes(first, frame("short"));
  ASSERT_TRUE(read_frame(first));
  EXPECT_FALSE(read_frame(first));
  ::close(first);
  int fourth = client();
  send_bytes(fourth, frame(at_call(5, 1)));
  answer = read_frame(fourth);
  ASSERT_TRUE(answer);
  EXPECT_EQ((*answer)[0], 0);
  ::close(second);
  ::close(fourth);
}

// 2,000 clients that each send 4 bytes of a frame's length and stop hold no one out: a
// new client gets its handshake within a second, and its call is answered.
TEST_F(ServeServer, ClientsStalledMidFrameHoldNoOneOut) {
  constexpr size_t kStalled = 2000;
  // The clients' descriptors and the server's are this one process's.
  if (client_limit() < 2 * kStalled + kReservedFiles) GTEST_SKIP() << "the hard open-file limit is below 4,064";
  start();
  std::vector<int> stalled;
  const std::string header_half = frame(at_call(1, 1)).substr(0, 4);
  for (size_t i = 0; i < kStalled; ++i) {
    stalled.push_back(connect_to(path_));
    send_bytes(stalled.back(), header_half);
  }
  // Each was let in (its handshake came), so that the second below is the new client's.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (int s : stalled) {
    pollfd handshake{s, POLLIN, 0};
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    ASSERT_EQ(::poll(&handshake, 1, static_cast<int>(std::max<int64_t>(left.count(), 0))), 1)
        << "a stalled client got no handshake";
  }
  int fd = connect_to(path_);
  pollfd handshake{fd, POLLIN, 0};
  ASSERT_EQ(::poll(&handshake, 1, 1000), 1) << "no handshake within a second";
  ASSERT_TRUE(read_frame(fd));
  send_bytes(fd, frame(at_call(3, 7)));
  auto answer = read_frame(fd);
  ASSERT_TRUE(answer);
  EXPECT_EQ(*answer, alone(at_call(3, 7)));
  ::close(fd);
  for (int s : stalled) ::close(s);
}

// A client that sends part of a frame, in its length or in its call, and then nothing for
// kStalledSeconds is answered E-SERVE-012 and closed. What counts is the time since its
// last byte, and a client idle between frames stays.
TEST_F(ServeServer, AClientSilentMidFrameIsClosedAfterTheStallTime) {
  start();
  const std::string call = frame(at_call(4, 2));
  int in_length = client(), in_call = client(), slow = client(), idle = client();
  const auto began = std::chrono::steady_clock::now();
  send_bytes(in_length, std::string_view(call).substr(0, 4));
  send_bytes(in_call, std::string_view(call).substr(0, 20));
  send_bytes(slow, std::string_view(call).substr(0, 4));
  std::this_thread::sleep_for(std::chrono::seconds(kStalledSeconds / 2 + 1));
  send_bytes(slow, std::string_view(call).substr(4, 8));
  for (int fd : {in_length, in_call}) {
    pollfd closed{fd, POLLIN, 0};
    ASSERT_EQ(::poll(&closed, 1, (kStalledSeconds + 3) * 1000), 1) << "a client silent mid-frame stayed";
    EXPECT_GE(std::chrono::steady_clock::now() - began, std::chrono::seconds(kStalledSeconds));
    auto answer = read_frame(fd);
    ASSERT_TRUE(answer);
    EXPECT_EQ((*answer)[0], 1);
    EXPECT_NE(answer->find("error[E-SERVE-012]: no byte of the call came for 10 seconds"), std::string::npos)
        << *answer;
    EXPECT_FALSE(read_frame(fd));
    ::close(fd);
  }
  send_bytes(slow, std::string_view(call).substr(12));
  auto answer = read_frame(slow);
  ASSERT_TRUE(answer) << "a client that sent a byte within the stall time was closed";
  EXPECT_EQ(*answer, alone(at_call(4, 2)));
  send_bytes(idle, call);
  answer = read_frame(idle);
  ASSERT_TRUE(answer) << "a client idle between frames was closed";
  EXPECT_EQ(*answer, alone(at_call(4, 2)));
  ::close(slow);
  ::close(idle);
}

TEST(ServeSocket, StaleSocketIsReplacedLiveOneAndOtherFilesRefused) {
  TempDir tmp;
  // A socket file nothing listens on: what a killed server leaves.
  std::string stale = tmp / "stale.sock";
  {
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::memcpy(address.sun_path, stale.data(), stale.size());
    ASSERT_EQ(::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address), 0);
    ::close(fd);
  }
  ASSERT_TRUE(std::filesystem::is_socket(stale));
  ListeningSocket replaced(stale);
  auto refused = [](const std::string& path, const std::string& says) {
    try {
      ListeningSocket s(path);
      ADD_FAILURE() << path;
    } catch (const ServeError& e) {
      EXPECT_EQ(e.code(), std::string("E-SERVE-006"));
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  refused(stale, "another server answers");
  testing::write_text(tmp / "file", "keep me");
  refused(tmp / "file", "something other than a socket");
  EXPECT_TRUE(std::filesystem::exists(tmp / "file"));
  refused(tmp / "folder" + std::string(120, 'x'), "at most 107 bytes");
  replaced.close();
  EXPECT_FALSE(std::filesystem::exists(stale));
}

}  // namespace
}  // namespace sx::serve
