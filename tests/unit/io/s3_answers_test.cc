// How the S3 client takes a server's bad answers, from a loopback server that gives canned
// ones: 403 and 404 are E-LOC codes naming the URL, the HTTP status and S3's error code
// (never the secret, nor a signature), a failed HEAD asks a GET for that code, 5xx is retried and
// then E-LOC-005, a body cut short is retried, a server that is down is E-LOC-005, an
// object shorter than the range asked is E-LOC-006.
#include <arpa/inet.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "io/location.h"
#include "io/s3.h"
#include "io/safetensors.h"
#include "test_util.h"

namespace sx::io {
namespace {

// Answers the i-th request with answers[i] (the last one repeated), then closes the
// connection.
class CannedServer {
 public:
  explicit CannedServer(std::vector<std::string> answers) : answers_(std::move(answers)) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    if (::bind(listener_, reinterpret_cast<sockaddr*>(&address), length) != 0 || ::listen(listener_, 16) != 0 ||
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      throw std::runtime_error("cannot listen on loopback");
    }
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~CannedServer() {
    ::shutdown(listener_, SHUT_RDWR);
    ::close(listener_);
    thread_.join();
  }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int requests() const { return requests_; }
  // The first line of each request so far ("PUT /bucket/key?... HTTP/1.1").
  std::vector<std::string> request_lines() {
    std::lock_guard lock(mutex_);
    std::vector<std::string> lines;
    for (const std::string& request : requests_seen_) lines.push_back(request.substr(0, request.find("\r\n")));
    return lines;
  }
  // Each request's line and headers so far.
  std::vector<std::string> requests_seen() {
    std::lock_guard lock(mutex_);
    return requests_seen_;
  }

 private:
  void serve() {
    while (true) {
      int connection = ::accept(listener_, nullptr, nullptr);
      if (connection < 0) return;
      std::string request;
      char buffer[4096];
      while (request.find("\r\n\r\n") == std::string::npos) {
        ssize_t n = ::read(connection, buffer, sizeof buffer);
        if (n <= 0) break;
        request.append(buffer, static_cast<size_t>(n));
      }
      {
        std::lock_guard lock(mutex_);
        requests_seen_.push_back(request);
      }
      int index = requests_++;
      const std::string& answer = answers_[std::min<size_t>(index, answers_.size() - 1)];
      (void)!::write(connection, answer.data(), answer.size());
      ::close(connection);
    }
  }

  std::vector<std::string> answers_;
  int listener_ = -1, port_ = 0;
  std::atomic<int> requests_{0};
  std::mutex mutex_;
  std::vector<std::string> requests_seen_;
  std::thread thread_;
};

std::string answer(int status, std::string_view reason, std::string_view body, std::string_view extra = "") {
  return fmt::format("HTTP/1.1 {} {}\r\nContent-Length: {}\r\nConnection: close\r\n{}\r\n{}", status, reason,
                     body.size(), extra, body);
}

S3Config config_for(const std::string& endpoint) {
  S3Config config;
  config.endpoint = endpoint;
  config.region = "us-east-1";
  config.credentials = {"AKIDTEST", "very-secret-key", ""};
  config.attempts = 3;
  config.first_wait_ms = 1;
  return config;
}

// The error `call` throws: its code and message.
template <typename F>
std::pair<std::string, std::string> error_of(F call) {
  try {
    call();
  } catch (const LoadError& e) {
    return {e.code(), e.what()};
  }
  return {"", ""};
}

// S3's answer to a wrong secret, as AWS gives it: the request it refused echoed back.
constexpr std::string_view kSignatureRefused =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>SignatureDoesNotMatch</Code><Message>The request "
    "signature we calculated does not match the signature you provided. Check your key and signing method.</Message>"
    "<AWSAccessKeyId>AKIDTEST</AWSAccessKeyId><StringToSign>AWS4-HMAC-SHA256\n20240101T000000Z</StringToSign>"
    "<SignatureProvided>0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef</SignatureProvided>"
    "<CanonicalRequest>GET\n/bucket/k</CanonicalRequest></Error>";

TEST(S3Answers, ForbiddenNamesTheUrlNotTheSecret) {
  CannedServer server({answer(403, "Forbidden", kSignatureRefused)});
  S3Client client(config_for(server.endpoint()));
  auto [code, message] = error_of([&] { client.get("bucket", "w/model.safetensors"); });
  EXPECT_EQ(code, "E-LOC-003");
  EXPECT_NE(message.find("s3://bucket/w/model.safetensors"), std::string::npos) << message;
  EXPECT_NE(message.find("(HTTP 403, SignatureDoesNotMatch: The request signature we calculated does not match the "
                         "signature you provided. Check your key and signing method.)"),
            std::string::npos)
      << message;
  for (const char* hidden : {"very-secret-key", "0123456789abcdef", "StringToSign", "AWS4-HMAC", "CanonicalRequest"}) {
    EXPECT_EQ(message.find(hidden), std::string::npos) << hidden << " in " << message;
  }
  EXPECT_EQ(server.requests(), 1);  // a refusal is not retried
}

// A server that quotes a secret or a signature in its message: neither is shown.
TEST(S3Answers, AMessageQuotingASecretIsNotEchoed) {
  CannedServer server({answer(400, "Bad Request",
                              "<Error><Code>InvalidRequest</Code><Message>key very-secret-key, signature "
                              "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef, token token-123 "
                              "\x1b[2J</Message></Error>")});
  S3Config config = config_for(server.endpoint());
  config.credentials.session_token = "token-123";
  S3Client client(config);
  auto [code, message] = error_of([&] { client.put("bucket", "k", "x"); });
  EXPECT_EQ(code, kStorageAnswer);
  EXPECT_NE(message.find("answered PUT with HTTP 400, InvalidRequest: key (secret), signature (signature), token "
                         "(secret) \\u{1b}[2J"),
            std::string::npos)
      << message;
}

// A HEAD's answer has no body: a GET of the object's first byte asks for S3's error code.
TEST(S3Answers, AFailedHeadAsksForTheCode) {
  CannedServer server({answer(403, "Forbidden", ""),
                       answer(403, "Forbidden",
                              "<Error><Code>InvalidAccessKeyId</Code><Message>The AWS Access Key Id you provided "
                              "does not exist in our records.</Message></Error>")});
  S3Client client(config_for(server.endpoint()));
  auto [code, message] = error_of([&] { client.head_if_exists("bucket", "runs/step-00000008.complete"); });
  EXPECT_EQ(code, kStorageRefused);
  EXPECT_NE(message.find("s3://bucket/runs/step-00000008.complete"), std::string::npos) << message;
  EXPECT_NE(message.find("(HTTP 403, InvalidAccessKeyId: The AWS Access Key Id you provided does not exist in our "
                         "records.)"),
            std::string::npos)
      << message;
  std::vector<std::string> requests = server.requests_seen();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[1].substr(0, requests[1].find("\r\n")), "GET /bucket/runs/step-00000008.complete HTTP/1.1");
  EXPECT_NE(requests[1].find("range: bytes=0-0\r\n"), std::string::npos) << requests[1];
}

// Where the GET names no code either, the status alone.
TEST(S3Answers, AFailedHeadWithoutACode) {
  CannedServer server({answer(403, "Forbidden", "")});
  S3Client client(config_for(server.endpoint()));
  auto [code, message] = error_of([&] { client.head("bucket", "k"); });
  EXPECT_EQ(code, kStorageRefused);
  EXPECT_NE(message.find("refused access (HTTP 403); check"), std::string::npos) << message;
}

TEST(S3Answers, NotFound) {
  constexpr std::string_view kNoBucket =
      "<Error><Code>NoSuchBucket</Code><Message>The specified bucket does not exist</Message></Error>";
  CannedServer server({answer(404, "Not Found", kNoBucket)});
  S3Client client(config_for(server.endpoint()));
  auto [code, message] = error_of([&] { client.get("bucket", "k"); });
  EXPECT_EQ(code, "E-LOC-004");
  EXPECT_NE(message.find("there is no such bucket on the storage server " + server.endpoint() +
                         " (HTTP 404, NoSuchBucket: The specified bucket does not exist)"),
            std::string::npos)
      << message;
  EXPECT_FALSE(client.head_if_exists("bucket", "k"));
  // head() of what is not there asks a GET why: no such key, or no such bucket.
  CannedServer head_server({answer(404, "Not Found", ""), answer(404, "Not Found", kNoBucket)});
  S3Client head_client(config_for(head_server.endpoint()));
  auto [head_code, head_message] = error_of([&] { head_client.head("bucket", "k"); });
  EXPECT_EQ(head_code, kStorageNotFound);
  EXPECT_NE(head_message.find("there is no such bucket"), std::string::npos) << head_message;
  EXPECT_NE(head_message.find("(HTTP 404, NoSuchBucket: "), std::string::npos) << head_message;
}

TEST(S3Answers, ServerErrorsAreRetriedThenReported) {
  CannedServer server({answer(503, "Slow Down", "<Error><Code>SlowDown</Code><Message>m</Message></Error>")});
  S3Client client(config_for(server.endpoint()));
  auto [code, message] = error_of([&] { client.get("bucket", "k"); });
  EXPECT_EQ(code, "E-LOC-005");
  EXPECT_NE(message.find("answered GET with HTTP 503, SlowDown: m, 3 attempts"), std::string::npos) << message;
  EXPECT_EQ(server.requests(), 3);
}

TEST(S3Answers, ARetryThatSucceeds) {
  CannedServer server({answer(500, "Internal", ""), answer(200, "OK", "hello")});
  S3Client client(config_for(server.endpoint()));
  EXPECT_EQ(client.get("bucket", "k"), "hello");
  EXPECT_EQ(server.requests(), 2);
}

TEST(S3Answers, ABodyCutShortIsRetried) {
  std::string cut = "HTTP/1.1 200 OK\r\nContent-Length: 100\r\nConnection: close\r\n\r\nonly this";
  CannedServer server({cut, answer(200, "OK", "whole")});
  S3Client client(config_for(server.endpoint()));
  EXPECT_EQ(client.get("bucket", "k"), "whole");
  CannedServer always_cut({cut});
  S3Client cut_client(config_for(always_cut.endpoint()));
  EXPECT_EQ(error_of([&] { cut_client.get("bucket", "k"); }).first, kStorageUnreachable);
}

TEST(S3Answers, AServerThatIsDown) {
  std::string endpoint;
  { endpoint = CannedServer({answer(200, "OK", "")}).endpoint(); }  // its port, now closed
  S3Client client(config_for(endpoint));
  auto [code, message] = error_of([&] { client.list("bucket", "runs/"); });
  EXPECT_EQ(code, "E-LOC-005");
  EXPECT_NE(message.find(endpoint), std::string::npos) << message;
  EXPECT_NE(message.find("3 attempts"), std::string::npos) << message;
  EXPECT_EQ(message.rfind("s3://bucket/runs/: ", 0), 0u) << "a listing names its prefix: " << message;
}

TEST(S3Answers, AnObjectShorterThanTheRange) {
  CannedServer server({answer(206, "Partial Content", "abc")});
  S3Client client(config_for(server.endpoint()));
  auto [code, message] = error_of([&] { client.get_range("bucket", "k", 10, 8); });
  EXPECT_EQ(code, "E-LOC-006");
  EXPECT_NE(message.find("s3://bucket/k"), std::string::npos) << message;
}

// A download from a server that dies mid-way, every time: E-LOC-005 after the retries, and
// no file at the path (nor a temporary beside it); a file that was there stays as it was.
TEST(S3Answers, ADownloadCutShortLeavesNoFile) {
  CannedServer server({"HTTP/1.1 200 OK\r\nContent-Length: 100\r\nConnection: close\r\n\r\nonly this"});
  S3Client client(config_for(server.endpoint()));
  testing::TempDir dir;
  auto [code, message] = error_of([&] { client.get_to_file("bucket", "k", dir.file("f"), {100, "e", ""}); });
  EXPECT_EQ(code, kStorageUnreachable);
  EXPECT_NE(message.find("s3://bucket/k"), std::string::npos) << message;
  EXPECT_EQ(server.requests(), 3);
  EXPECT_TRUE(std::filesystem::is_empty(dir.file(""))) << "a file is left";
  testing::write_file(dir.file("f"), "before");
  error_of([&] { client.get_to_file("bucket", "k", dir.file("f"), {100, "e", ""}); });
  EXPECT_EQ(testing::read_file(dir.file("f")), "before");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.file("")), {}), 1);
}

// A body that is not the size HEAD gave: E-LOC-006, and no file.
TEST(S3Answers, ADownloadOfAnotherSize) {
  CannedServer server({answer(200, "OK", "shorter")});
  S3Client client(config_for(server.endpoint()));
  testing::TempDir dir;
  EXPECT_EQ(error_of([&] { client.get_to_file("bucket", "k", dir.file("f"), {100, "", ""}); }).first, kStorageAnswer);
  EXPECT_EQ(error_of([&] { client.get_to_file("bucket", "k", dir.file("f"), {3, "", ""}); }).first, kStorageAnswer);
  EXPECT_TRUE(std::filesystem::is_empty(dir.file("")));
  std::string request = server.requests_seen().at(0);
  EXPECT_EQ(request.find("if-match"), std::string::npos) << "no ETag, no If-Match";
}

TEST(S3Answers, AMultipartUploadThatFailsIsAborted) {
  CannedServer server({answer(200, "OK",
                              "<InitiateMultipartUploadResult><UploadId>u1</UploadId>"
                              "</InitiateMultipartUploadResult>"),
                       answer(500, "Internal", "")});
  S3Config config = config_for(server.endpoint());
  config.part_bytes = 1024;
  config.transfer_threads = 2;
  S3Client client(config);
  testing::TempDir dir;
  testing::write_file(dir.file("f"), std::string(3000, 'x'));  // three parts
  EXPECT_EQ(error_of([&] { client.put_file("bucket", "k", dir.file("f")); }).first, "E-LOC-005");
  std::vector<std::string> lines = server.request_lines();
  EXPECT_EQ(lines.front(), "POST /bucket/k?uploads= HTTP/1.1");
  EXPECT_NE(std::find(lines.begin(), lines.end(), "DELETE /bucket/k?uploadId=u1 HTTP/1.1"), lines.end());
}

// Temporary credentials: the session token is sent, and signed with the rest.
TEST(S3Answers, ASessionTokenIsSentAndSigned) {
  CannedServer server({answer(200, "OK", "hello")});
  S3Config config = config_for(server.endpoint());
  config.credentials.session_token = "token-123";
  S3Client client(config);
  EXPECT_EQ(client.get("bucket", "k"), "hello");
  std::string request = server.requests_seen().at(0);
  EXPECT_NE(request.find("x-amz-security-token: token-123\r\n"), std::string::npos) << request;
  EXPECT_NE(request.find("SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token,"), std::string::npos)
      << request;
  EXPECT_EQ(request.find("very-secret-key"), std::string::npos) << request;
}

TEST(S3Answers, NoCredentials) {
  const char* saved = getenv("AWS_ACCESS_KEY_ID");
  std::string old = saved ? saved : "";
  unsetenv("AWS_ACCESS_KEY_ID");
  EXPECT_EQ(error_of([] { S3Config::from_environment(); }).first, kStorageRefused);
  if (saved) setenv("AWS_ACCESS_KEY_ID", old.c_str(), 1);
}

}  // namespace
}  // namespace sx::io
