// bench/serve: what `sexpgpu serve` adds to a call beyond the model's forward (issue 11).
//
//   build/bench/serve_bench [--program build/sexpgpu] [--cores N] [--seconds S]
//
// examples/tiny-lm, trained one step by `sexpgpu run` (the weights do not change the
// time), served with --at --batch 16 on the cpu device:
// 1. In process, no socket: the forward of one call (upload its inputs, run the batch-1
//    program, download its row), and of 16 calls as one run: latency p50/p99, calls/s.
// 2. Through `sexpgpu serve`: 1, 4 and 16 clients, each on its own connection calling as
//    fast as answers come: latency p50/p99 and calls/s. Then one client that waits for
//    its answers without sleeping (recv without waiting, again and again): on a virtual
//    machine, waking a client whose core halted costs tens of microseconds that are not
//    the server's, and this row leaves them out.
// The ratios: the socket and scheduling overhead of one call at p50 (goal: under 30 us),
// and the calls/s of 16 clients over 1 (goal: at least 4x with --batch 16).
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "graph/passes.h"
#include "runtime/program.h"
#include "serve/model.h"
#include "serve/protocol.h"
#include "serve/socket.h"

namespace {

using Clock = std::chrono::steady_clock;
using namespace sx;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct Timing {
  double p50_us = 0, p99_us = 0, calls_per_second = 0;
};

Timing summarize(std::vector<double> latencies, size_t calls, double wall) {
  std::sort(latencies.begin(), latencies.end());
  auto at = [&](double q) {
    return 1e6 * latencies[static_cast<size_t>(q * static_cast<double>(latencies.size() - 1))];
  };
  return {at(0.5), at(0.99), static_cast<double>(calls) / wall};
}

// A call of the served tiny-lm: a window of bytes and the place to read.
std::string call_body(const serve::CallLayout& layout, int seed) {
  std::string body(layout.call_bytes(), '\0');
  const serve::TensorSpec& window = layout.inputs()[0];
  auto n = static_cast<size_t>(graph::numel(window.shape));
  for (size_t i = 0; i < n; ++i) {
    int32_t token = static_cast<int32_t>((seed * 31 + i * 7) % 256);
    std::memcpy(body.data() + 4 * i, &token, 4);
  }
  int32_t place = static_cast<int32_t>(seed % static_cast<int>(n));
  std::memcpy(body.data() + layout.offset(1), &place, 4);
  return body;
}

// The forward in process: `batch` calls stacked, run, and their rows downloaded.
Timing in_process(const serve::ServedModel& model, int cores, int batch, double seconds) {
  auto device = device::make_device("cpu", {.cpu_cores = cores});
  runtime::Store store(*device);
  for (const auto& [path, value] : model.weights) store.put(path, value);
  std::vector<std::string> data;
  for (const auto& s : model.about.inputs) data.push_back(s.name);
  graph::Graph g = graph::vmap(model.graph, data, batch);
  std::vector<runtime::Binding> inputs, outputs;
  for (const auto& in : g.inputs) {
    bool fed = std::find(data.begin(), data.end(), in.name) != data.end();
    inputs.push_back({fed ? runtime::Role::data : runtime::Role::parameter, in.name});
  }
  for (const auto& out : g.outputs) outputs.push_back({runtime::Role::value, out.name});
  runtime::Program program(*device, std::move(g), inputs, outputs);
  serve::CallLayout layout(model.about.inputs);
  std::vector<std::string> bodies;
  for (int i = 0; i < batch; ++i) bodies.push_back(call_body(layout, i));
  std::vector<std::string_view> views(bodies.begin(), bodies.end());
  std::vector<double> latencies;
  auto start = Clock::now();
  size_t runs = 0;
  while (since(start) < seconds || runs < 20) {
    auto t0 = Clock::now();
    std::vector<device::Buffer> fed;
    for (size_t k = 0; k < data.size(); ++k) fed.push_back(device->upload(serve::stack_input(layout, k, views)));
    std::vector<const device::Buffer*> pointers;
    for (const auto& b : fed) pointers.push_back(&b);
    auto results = program.run(store, pointers);
    std::vector<graph::Tensor> out;
    for (const auto& r : results) out.push_back(device->download(r));
    for (int i = 0; i < batch; ++i) serve::ok_answer(out, static_cast<size_t>(i));
    latencies.push_back(since(t0));
    ++runs;
  }
  return summarize(latencies, runs * static_cast<size_t>(batch), since(start));
}

int connect_to(const std::string& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.data(), path.size());
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    std::fprintf(stderr, "serve_bench: cannot connect to %s: %s\n", path.c_str(), std::strerror(errno));
    std::exit(1);
  }
  return fd;
}

// `size` bytes from `fd` without sleeping: recv without waiting, again until they came.
bool read_polling(int fd, void* data, size_t size) {
  auto* out = static_cast<char*>(data);
  for (size_t done = 0; done < size;) {
    ssize_t n = ::recv(fd, out + done, size - done, MSG_DONTWAIT);
    if (n > 0) done += static_cast<size_t>(n);
    else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) return false;
  }
  return true;
}

// A frame's body; a client that `polls` waits for it without sleeping.
bool read_frame(int fd, std::string& body, bool polls = false) {
  auto read = [&](void* data, size_t size) {
    return polls ? read_polling(fd, data, size) : serve::read_exact(fd, data, size) == serve::ReadResult::whole;
  };
  uint8_t header[8];
  if (!read(header, 8)) return false;
  body.resize(serve::frame_length(std::span<const uint8_t, 8>(header)));
  return read(body.data(), body.size());
}

// `clients` connections calling the server for `seconds`; clients that `poll` wait for
// their answers without sleeping.
Timing through_socket(const std::string& path, const serve::CallLayout& layout, int clients, double seconds,
                      bool poll = false) {
  std::vector<std::vector<double>> latencies(static_cast<size_t>(clients));
  std::vector<std::thread> threads;
  auto start = Clock::now();
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      int fd = connect_to(path);
      std::string answer;
      read_frame(fd, answer);  // the handshake
      std::string call = serve::frame(call_body(layout, c));
      while (since(start) < seconds) {
        auto t0 = Clock::now();
        if (::send(fd, call.data(), call.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(call.size()) ||
            !read_frame(fd, answer, poll) || answer[0] != 0) {
          std::fprintf(stderr, "serve_bench: a call failed\n");
          std::exit(1);
        }
        latencies[static_cast<size_t>(c)].push_back(since(t0));
      }
      ::close(fd);
    });
  }
  for (auto& t : threads) t.join();
  double wall = since(start);
  std::vector<double> all;
  for (const auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
  return summarize(all, all.size(), wall);
}

std::string load_average() {
  double load[3] = {};
  return getloadavg(load, 3) == 3 ? fmt::format("{:.2f} {:.2f} {:.2f}", load[0], load[1], load[2]) : "?";
}

}  // namespace

int main(int argc, char** argv) {
  std::string program = "build/sexpgpu";
  int cores = 1;
  double seconds = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--program") program = argv[i + 1];
    else if (flag == "--cores") cores = std::atoi(argv[i + 1]);
    else if (flag == "--seconds") seconds = std::atof(argv[i + 1]);
  }
  std::string tmp = (std::filesystem::temp_directory_path() / fmt::format("serve-bench-{}", getpid())).string();
  std::filesystem::create_directories(tmp);
  std::string run = fmt::format(
      "{} run {}/examples/tiny-lm/run.sx --steps 1 --checkpoint-dir {}/run --cpu-cores {} "
      ">/dev/null",
      program, SEXPGPU_SOURCE_DIR, tmp, cores);
  if (std::system(run.c_str()) != 0) {
    std::fprintf(stderr, "serve_bench: `%s` failed\n", run.c_str());
    return 1;
  }
  std::printf("load average before: %s\n", load_average().c_str());
  serve::ServedModel model = serve::open_model(serve::resolve_operand(tmp + "/run"), {.at = true});
  serve::CallLayout layout(model.about.inputs);
  Timing alone = in_process(model, cores, 1, seconds);
  Timing sixteen = in_process(model, cores, 16, seconds);

  std::string sock = tmp + "/s.sock";
  int out[2];
  if (::pipe(out) != 0) return 1;
  pid_t server = ::fork();
  if (server == 0) {
    ::dup2(out[1], 1);
    std::string cores_text = std::to_string(cores);
    ::execl(program.c_str(), program.c_str(), "serve", (tmp + "/run").c_str(), "--socket", sock.c_str(), "--at",
            "--batch", "16", "--cpu-cores", cores_text.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  ::close(out[1]);
  FILE* banner = ::fdopen(out[0], "r");
  char line[512];
  if (!std::fgets(line, sizeof line, banner)) {
    std::fprintf(stderr, "serve_bench: the server did not start\n");
    return 1;
  }
  std::vector<std::pair<int, Timing>> socket_timings;
  for (int clients : {1, 4, 16}) socket_timings.emplace_back(clients, through_socket(sock, layout, clients, seconds));
  const Timing polling = through_socket(sock, layout, 1, seconds, true);
  ::kill(server, SIGINT);
  std::string stop;
  while (std::fgets(line, sizeof line, banner)) stop = line;
  int status = 0;
  ::waitpid(server, &status, 0);
  std::filesystem::remove_all(tmp);

  std::printf("tiny-lm, --at, --batch 16, --cpu-cores %d, %.0f s each\n", cores, seconds);
  std::printf("%-32s %10s %10s %10s\n", "", "p50 us", "p99 us", "calls/s");
  std::printf("%-32s %10.1f %10.1f %10.0f\n", "in process, 1 call a run", alone.p50_us, alone.p99_us,
              alone.calls_per_second);
  std::printf("%-32s %10.1f %10.1f %10.0f\n", "in process, 16 calls a run", sixteen.p50_us, sixteen.p99_us,
              sixteen.calls_per_second);
  for (const auto& [clients, t] : socket_timings) {
    std::printf("%-32s %10.1f %10.1f %10.0f\n",
                fmt::format("serve, {} client{}", clients, clients > 1 ? "s" : "").c_str(), t.p50_us, t.p99_us,
                t.calls_per_second);
  }
  std::printf("%-32s %10.1f %10.1f %10.0f\n", "serve, 1 client that polls", polling.p50_us, polling.p99_us,
              polling.calls_per_second);
  std::printf("socket and scheduling overhead at p50: %.1f us a call (goal: under 30)\n",
              socket_timings[0].second.p50_us - alone.p50_us);
  std::printf("the same with a client that polls for its answer: %.1f us a call\n", polling.p50_us - alone.p50_us);
  std::printf("16 clients over 1: %.2fx the calls/s (goal: at least 4x)\n",
              socket_timings[2].second.calls_per_second / socket_timings[0].second.calls_per_second);
  std::printf("the server: %s", stop.c_str());
  std::printf("load average after: %s\n", load_average().c_str());
  return 0;
}
