// The server on a real Unix socket, in this process: the handshake, calls and answers,
// the refusals that close a connection, clients that leave mid-frame, stopping, and the
// socket paths it replaces or refuses.
#include "serve/server.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <set>
#include <thread>

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

// A tiny model served with --at and --batch 4 on the cpu device, on tmp/s.sock.
class ServeServer : public ::testing::Test {
 protected:
  void SetUp() override {
    auto m = testing::tiny_lm();
    testing::write_checkpoint(tmp_.path(), m);
    model_ = open_model(resolve_operand(tmp_.path()), {.at = true});
    device_ = device::make_device("cpu", {.cpu_cores = 1});
    batcher_ = std::make_unique<Batcher>(*device_, model_, 4);
    server_ = std::make_unique<Server>(*batcher_, handshake_json(model_.about), model_.at_limit,
                                       std::make_unique<ListeningSocket>(path_));
    running_ = std::thread([this] { server_->run(); });
  }
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
  int fd = client();
  send_bytes(fd, frame(at_call(3, 7)));
  auto answer = read_frame(fd);
  ASSERT_TRUE(answer);
  EXPECT_EQ(*answer, batcher_->call(at_call(3, 7)));
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

// "A call frame of another length than the inputs take is answered with an error, and the connection closed."
TEST_F(ServeServer, CallOfTheWrongLengthIsAnsweredThenClosed) {
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
  int fd = client();
  stop();
  EXPECT_FALSE(std::filesystem::exists(path_));
  EXPECT_FALSE(read_frame(fd));
  ::close(fd);
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
