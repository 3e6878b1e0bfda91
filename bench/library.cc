// bench/library: what a call through libsexpgpu adds to the model's own run, against the
// same call through `sexpgpu serve`'s socket (issue 44).
//
//   build/bench/library_bench [--calls N]
//
// A model of one [1, 16] f32 input (x -> tanh(x W), W [16, 16]), exported to a temporary
// folder, on the cpu device with one core and --batch 1, called by one thread:
// 1. the model's own run: serve's Batcher::run of the call (its input uploaded, the
//    program run, its output downloaded into the answer's bytes);
// 2. sexpgpu_run through libsexpgpu.so: the same run, behind the C API;
// 3. the same call through serve's socket server (serve::Server in this process, on a
//    thread of its own, the client in this thread): a frame out, a frame back.
// Each is the median of N calls (10,000 without --calls), after 1,000 to warm up. The
// overheads are the library's and the socket's medians less the model's (goal: the
// library adds under 5 us).
#include <fmt/format.h>
#include <sexpgpu.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "device/device.h"
#include "graph/builder.h"
#include "serve/batcher.h"
#include "serve/fixture.h"
#include "serve/model.h"
#include "serve/server.h"
#include "serve/socket.h"

namespace {

using namespace sx;
using Clock = std::chrono::steady_clock;

constexpr int kWarmUp = 1000;

// x [1, 16] f32 -> tanh(x W) [1, 16] f32.
serve::testing::TestModel one_row_model() {
  serve::testing::TestModel m;
  graph::Builder b(m.graph);
  const graph::Shape square = {16, 16}, row = {1, 16};
  m.parameters.push_back({"model.weight", square, graph::DType::f32});
  m.weights.emplace_back("model.weight", serve::testing::pseudo_random(square, 1));
  graph::NodeId weight = b.input("model.weight", square, graph::DType::f32);
  graph::NodeId x = b.input("inputs", row, graph::DType::f32);
  m.inputs.push_back({"inputs", row, graph::DType::f32});
  b.output("output", b.tanh(b.matmul(x, weight)));
  m.outputs.push_back({"output", row, graph::DType::f32});
  return m;
}

// The median, in microseconds, of `calls` calls of `call`, after kWarmUp of them.
template <class Call>
double median_us(int calls, Call&& call) {
  for (int i = 0; i < kWarmUp; ++i) call();
  std::vector<double> took(static_cast<size_t>(calls));
  for (double& t : took) {
    auto t0 = Clock::now();
    call();
    t = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
  }
  std::nth_element(took.begin(), took.begin() + calls / 2, took.end());
  return took[static_cast<size_t>(calls / 2)];
}

[[noreturn]] void fail(const std::string& why) {
  fmt::print(stderr, "library_bench: {}\n", why);
  std::exit(1);
}

int connect_to(const std::string& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.data(), path.size());
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) fail("cannot connect");
  return fd;
}

// The next frame's body from `fd`.
void read_frame(int fd, std::string& body) {
  uint8_t header[serve::kFrameHeaderBytes];
  if (serve::read_exact(fd, header, sizeof header) != serve::ReadResult::whole) fail("the server closed");
  body.resize(serve::frame_length(std::span<const uint8_t, serve::kFrameHeaderBytes>(header)));
  if (serve::read_exact(fd, body.data(), body.size()) != serve::ReadResult::whole) fail("the server closed");
}

}  // namespace

int main(int argc, char** argv) {
  int calls = 10000;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--calls" && i + 1 < argc) calls = std::max(1, std::atoi(argv[++i]));
    else fail(fmt::format("usage: {} [--calls N]", argv[0]));
  }
  serve::testing::TempDir tmp;
  const std::string folder = tmp / "model";
  serve::testing::write_model(folder, one_row_model());
  const std::string call = serve::encode_tensor(serve::testing::pseudo_random({1, 16}, 7));
  serve::ServedModel model = serve::open_model(serve::resolve_operand(folder), {});

  // 1. The model's own run.
  auto device = device::make_device("cpu", {.cpu_cores = 1});
  serve::Batcher own(*device, model, 1);
  const std::string answer = own.run({&call, 1}).at(0);
  const double own_us = median_us(calls, [&] { own.run({&call, 1}); });

  // 2. Through the library.
  sexpgpu_options options;
  sexpgpu_options_init(&options);
  options.cpu_cores = 1;
  sexpgpu_model* library = nullptr;
  if (sexpgpu_error* error = sexpgpu_open(folder.c_str(), &options, &library)) fail(sexpgpu_error_message(error));
  std::string out(answer.size() - 1, '\0');
  const sexpgpu_const_buffer in = {call.data(), call.size()};
  const sexpgpu_buffer written = {out.data(), out.size()};
  const double library_us = median_us(calls, [&] {
    if (sexpgpu_error* error = sexpgpu_run(library, &in, 1, &written, 1)) fail(sexpgpu_error_message(error));
  });
  if (out != answer.substr(1)) fail("the library's bits are not the model's");
  sexpgpu_close(library);

  // 3. Through the socket.
  auto served_device = device::make_device("cpu", {.cpu_cores = 1});
  serve::Batcher served(*served_device, model, 1);
  const std::string path = tmp / "s.sock";
  serve::Server server(served, serve::handshake_json(model.about), model.at_limit,
                       std::make_unique<serve::ListeningSocket>(path), 16);
  std::thread loop([&] { server.run(); });
  int fd = connect_to(path);
  std::string body;
  read_frame(fd, body);
  const std::string framed = serve::frame(call);
  const double socket_us = median_us(calls, [&] {
    if (::send(fd, framed.data(), framed.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(framed.size())) {
      fail("cannot send");
    }
    read_frame(fd, body);
  });
  if (body != answer) fail("the socket's bits are not the model's");
  ::close(fd);
  server.request_stop();
  loop.join();

  fmt::print("one call of x [1, 16] f32 -> tanh(x W) [1, 16] f32, cpu, 1 core, one thread: median of {} calls\n",
             calls);
  fmt::print("  {:<26} {:8.2f} us\n", "the model's own run", own_us);
  fmt::print("  {:<26} {:8.2f} us   +{:.2f} us\n", "through libsexpgpu", library_us, library_us - own_us);
  fmt::print("  {:<26} {:8.2f} us   +{:.2f} us\n", "through serve's socket", socket_us, socket_us - own_us);
  fmt::print("the library adds {:.2f} us to a call: {} (goal: under 5 us)\n", library_us - own_us,
             library_us - own_us < 5 ? "met" : "NOT MET");
  return 0;
}
