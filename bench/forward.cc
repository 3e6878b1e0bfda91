// bench/forward: the forward and the gradient of three GPTs (bench/gpt.sx) on the cpu
// device against the same models in PyTorch (bench/torch_train_peer.py --mode), on 1 and
// on 2 threads, measured in one run, as ratios (issue 15's table):
//
//   gpt-tiny   width 64, 2 blocks, 4 heads, 64 bytes a row, batch 8
//   gpt-small  width 256, 4 blocks, 4 heads, 128 bytes a row, batch 8
//   gpt-large  width 768, 12 blocks, 12 heads, 128 bytes a row, batch 1
//
//   build/bench/forward [--models tiny,small,large] [--passes forward,gradient]
//                       [--threads 1,2] [--seconds S] [--precision f32,bf16] [--rounds N]
//                       [--floors] [--device cpu|cuda]
//
// The forward is the logits of a batch of byte ids; the gradient is that of the mean
// cross-entropy of the next byte with respect to every parameter. Each is one program
// compiled once (runtime::Program, parameters in a store on the device, the batch fed
// each run), after two runs to warm up. PyTorch's runs in a process of its own per
// setting, on the BLAS it runs (torch_blas.py: it refuses a reference BLAS, and no ratio
// is given then); on 2 threads the fastest of its thread settings (torch_settings), which
// the table names. The two are timed in turns: N rounds (--rounds, 5) of S / N seconds
// each, ours then PyTorch's, so that a host that slows down for a while (a virtual machine
// beside busy neighbours) slows both alike. A round's figure is the mean of its runs; the
// table gives the median round of each, the median of the rounds' ratios, and the range
// of those ratios: a wide range says the host was not steady.
//
// With --precision bf16, every matrix product runs on bf16 operands, summed in f32 (the
// policy of `defrun :precision :bf16`, graph::bf16_products), and PyTorch's runs under
// torch.autocast("cpu", bfloat16), which does the same to its products. Our products run
// on the device's kernels: on AMX tiles where the host has them, unless SEXPGPU_CPU_ISA
// names other kernels (docs/performance.md).
//
// Beside the times, the memory a run needs beyond the parameters and the batch: ours is
// the compiled plan's arena (every activation, gradient and temporary of a run lives
// there, and a run allocates nothing else) and the buffers the program returns its
// results in; PyTorch's is how far its process's peak resident memory rose above what
// it held before its first run.
//
// And the floor: the time our products alone would take at the peak of the instruction
// that multiplies in them (the f32 FMA, or VDPBF16PS or TDPBF16PS for bf16 where the
// device runs them; multiply_peak.h), measured in the same run, and that time over
// PyTorch's. No run of the same products on this host, ours or anyone's on the same
// instruction, gets a ratio below it: where it exceeds a goal, the goal needs another
// host. --floors prints only the floors, a line each ("floor gpt-small gradient f32 1
// 115.00"), timing nothing: bench/train.py's floor column (a training step's products
// are its gradient's). The first line is the host's cpuid model name and kernels.
//
// With --device cuda, ours runs on the cuda device and PyTorch's on the GPU too (its
// runs synchronized, as ours are: each waits for the GPU), at one thread, with no floor.
// On a machine where the source tree is not where it was built (the GPU machine that
// scripts/gpu-check runs on), SEXPGPU_SOURCE_DIR names it, and SEXPGPU_TORCH_PYTHON the
// Python that has PyTorch (else /usr/bin/python3).
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "device/cpu/isa.h"
#include "graph/autodiff.h"
#include "graph/passes.h"
#include "lang/tracer.h"
#include "model/values.h"
#include "multiply_peak.h"
#include "runtime/program.h"
#include "train/session.h"
#include "train/step.h"

namespace {

using Clock = std::chrono::steady_clock;
using namespace sx;

// The device ours runs on: cpu, or cuda (--device).
std::string device_name = "cpu";

// Where the source tree was moved (SEXPGPU_SOURCE_DIR), if it was.
std::optional<std::string> moved_source() {
  const char* moved = std::getenv("SEXPGPU_SOURCE_DIR");
  return moved && *moved ? std::optional<std::string>(moved) : std::nullopt;
}
// The source tree (bench/gpt.sx and the PyTorch peer) and its Lisp library.
std::string source_dir() { return moved_source().value_or(SEXPGPU_SOURCE_DIR); }
std::string lib_dir() { return moved_source() ? *moved_source() + "/lib" : SEXPGPU_LIB_DIR; }

struct Model {
  std::string name;
  train::KnobChoices choices;  // over gpt.sx's knobs
  int64_t rows, window;
};

const Model kModels[] = {
    {"tiny", {}, 8, 64},
    {"small", {.variant = "small", .knobs = {}}, 8, 128},
    {"large",
     {.variant = "", .knobs = {{"width", "768"}, {"depth", "12"}, {"heads", "12"}, {"window", "128"}, {"rows", "1"}}},
     1,
     128},
};

// The forward's logits, or the gradients of the loss, as a program of the traced model.
struct Traced {
  graph::Graph graph;
  std::vector<runtime::Binding> inputs, outputs;
};

Traced trace(train::Session& session, const Model& model, bool gradient, bool bf16) {
  const auto& tracer = session.interp().tracer();
  graph::Builder& b = tracer->builder();
  lang::Value ids = lang::make_tensor(tracer, b.input("data.ids", {model.rows, model.window}, graph::DType::i32));
  lang::Value logits = train::call(session, train::required_definition(session, "model", "the benchmark"), {ids});
  std::vector<graph::NodeId> outputs;
  if (!gradient) {
    outputs.push_back(lang::as_tensor(logits)->node);
  } else {
    lang::Value targets =
        lang::make_tensor(tracer, b.input("data.targets", {model.rows, model.window}, graph::DType::i32));
    lang::Value loss = train::call(session, *session.top().lookup(lang::intern("cross-entropy")), {logits, targets});
    std::vector<graph::NodeId> wrt;
    for (const auto& p : session.params().params) wrt.push_back(p.decl->node);
    outputs = graph::gradients(b, lang::as_tensor(loss)->node, wrt);
  }
  graph::Graph extracted = graph::extract(tracer->graph(), outputs);
  Traced traced{bf16 ? graph::bf16_products(extracted) : std::move(extracted), {}, {}};
  for (const auto& input : traced.graph.inputs) {
    traced.inputs.push_back(
        {input.name.starts_with("data.") ? runtime::Role::data : runtime::Role::parameter, input.name});
  }
  for (const auto& output : traced.graph.outputs) traced.outputs.push_back({runtime::Role::value, output.name});
  return traced;
}

train::SessionOptions session_options(const Model& model) {
  train::SessionOptions options;
  options.interpreter.library_dirs = {lib_dir()};
  options.choices = model.choices;
  return options;
}

// The GFLOP of a graph's matrix products, an attention node's two (q k^T, then the
// weights times v) included where the device runs it as one node.
double product_gflop(const graph::Graph& graph) {
  double flops = 0;
  for (const graph::Node& node : graph.nodes) {
    if (node.op() == graph::PrimId::attention) {
      const graph::Shape& keys = graph.node(node.inputs[1]).shape;
      flops += 2.0 * static_cast<double>(graph::numel(graph.node(node.inputs[0]).shape) + graph::numel(node.shape)) *
               static_cast<double>(keys[keys.size() - 2]);
    }
    if (node.op() != graph::PrimId::matmul) continue;
    flops += 2.0 * static_cast<double>(graph::numel(node.shape)) *
             static_cast<double>(graph.node(node.inputs[0]).shape.back());
  }
  return flops / 1e9;
}

// The ms the products of a pass would take at the peak of the instruction that
// multiplies them, on this host's default kernels; none for the scalar kernels.
std::optional<double> floor_ms(double gflop, bool bf16, int threads) {
  if (device_name != "cpu") return std::nullopt;
  std::optional<double> peak =
      bench::multiply_peak(device::cpu::choose_isa(""), bf16 ? graph::DType::bf16 : graph::DType::f32, threads, 0.5);
  if (!peak) return std::nullopt;
  return 1e3 * gflop / *peak;
}

// Our side: the program compiled once, its inputs on the device, timed in rounds.
class Ours {
 public:
  Ours(const Model& model, bool gradient, bool bf16, int cores, const std::string& run_file)
      : session_(session_options(model)), device_(device::make_device(device_name, {.cpu_cores = cores})) {
    session_.load(run_file);
    Traced traced = trace(session_, model, gradient, bf16);
    store_ = std::make_unique<runtime::Store>(*device_);
    for (auto& [path, value] : model::initial_values(session_.params(), session_.seed(), *device_)) {
      store_->put(path, std::move(value));
    }
    program_ = std::make_unique<runtime::Program>(*device_, traced.graph, traced.inputs, traced.outputs);
    std::mt19937 rng(1);
    while (fed_buffers_.size() < program_->fed_inputs().size()) {  // the ids, and a gradient's targets
      graph::Tensor bytes(graph::DType::i32, {model.rows, model.window});
      for (int64_t j = 0; j < bytes.numel(); ++j) bytes.data<int32_t>()[j] = static_cast<int32_t>(rng() % 256);
      fed_buffers_.push_back(device_->upload(std::move(bytes)));
    }
    for (const auto& buffer : fed_buffers_) fed_.push_back(&buffer);
    for (int i = 0; i < 2; ++i) program_->run(*store_, fed_);  // to warm up
    device_->synchronize();
  }

  // A run's mean ms over `seconds` of runs (at least 3).
  double time(double seconds) {
    int runs = 0;
    double elapsed = 0;
    const auto start = Clock::now();
    while (elapsed < seconds || runs < 3) {
      program_->run(*store_, fed_);
      device_->synchronize();  // a run is done when the device is (cuda's runs return at once)
      ++runs;
      elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    }
    return 1e3 * elapsed / runs;
  }

  // The GFLOP of a run's matrix products: two a multiply-add.
  double product_gflop() const { return ::product_gflop(program_->graph()); }

  // What a run needs beyond the parameters and the batch.
  double memory_mib() const {
    double bytes = static_cast<double>(program_->memory().arena_bytes + program_->memory().scratch_bytes);
    for (const graph::NamedNode& output : program_->graph().outputs) {
      const graph::Node& node = program_->graph().node(output.node);
      bytes += static_cast<double>(graph::numel(node.shape)) * static_cast<double>(graph::dtype_size(node.dtype));
    }
    return bytes / (1 << 20);
  }

 private:
  train::Session session_;
  std::unique_ptr<device::Device> device_;
  std::unique_ptr<runtime::Store> store_;
  std::unique_ptr<runtime::Program> program_;
  std::vector<device::Buffer> fed_buffers_;
  std::vector<const device::Buffer*> fed_;
};

// How PyTorch is run on `threads` cores: OpenBLAS's threads, PyTorch's own (OpenMP,
// for what is not a product) and whether those wait passively. On 2 cores two pools that
// spin (the default) fight over them: each setting is tried and the fastest kept.
struct TorchSetting {
  int blas_threads, torch_threads;
  bool passive;
  std::string label() const {
    return fmt::format("OpenBLAS {}, torch {}{}", blas_threads, torch_threads, passive ? ", passive" : "");
  }
};

std::vector<TorchSetting> torch_settings(int threads) {
  if (threads == 1) return {{1, 1, false}};
  return {{threads, threads, false}, {threads, threads, true}, {threads, 1, false}};
}

// The PyTorch peer in one setting, in its `--rounds` mode: a process whose standard
// input and output are pipes of ours. `refusal` says why it cannot time (the peer's
// `refuse` line, or that it failed); then it times nothing.
class TorchPeer {
 public:
  TorchPeer(const Model& model, bool gradient, bool bf16, const TorchSetting& setting, const std::string& text)
      : setting_(setting) {
    const char* python = std::getenv("SEXPGPU_TORCH_PYTHON");
    const std::string command = fmt::format(
        "OPENBLAS_NUM_THREADS={} {}exec {} {}/bench/torch_train_peer.py --model {} --mode {} --text {} "
        "--threads {} --precision {} --device {} --rounds 2>&1",
        setting.blas_threads, setting.passive ? "OMP_WAIT_POLICY=passive " : "",
        python && *python ? python : "/usr/bin/python3", source_dir(), model.name, gradient ? "gradient" : "forward",
        text, setting.torch_threads, bf16 ? "bf16" : "f32", device_name);
    // Close-on-exec: a peer started later must not hold this one's input open after we
    // close it (it would never see its end, and never exit).
    int to[2], from[2];
    if (::pipe2(to, O_CLOEXEC) != 0 || ::pipe2(from, O_CLOEXEC) != 0) {
      refusal_ = "cannot make pipes for the PyTorch peer";
      return;
    }
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(to[0], 0);
      ::dup2(from[1], 1);
      for (int fd : {to[0], to[1], from[0], from[1]}) ::close(fd);
      ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(to[0]);
    ::close(from[1]);
    to_ = ::fdopen(to[1], "w");
    from_ = ::fdopen(from[0], "r");
    const std::string header = read_line();
    if (header.starts_with("refuse ")) refusal_ = header.substr(7);
    else if (!header.starts_with("torch ")) refusal_ = "the PyTorch peer failed: " + header.substr(0, 300);
  }
  ~TorchPeer() {
    if (to_) std::fclose(to_);  // the end of its input: it exits
    if (from_) std::fclose(from_);
    if (pid_ > 0) ::waitpid(pid_, nullptr, 0);
  }
  TorchPeer(const TorchPeer&) = delete;
  TorchPeer& operator=(const TorchPeer&) = delete;

  const std::string& refusal() const { return refusal_; }
  const TorchSetting& setting() const { return setting_; }
  double mib() const { return mib_; }

  // A step's mean ms over `seconds` of steps, or nothing when the peer has failed.
  std::optional<double> time(double seconds) {
    if (!refusal_.empty()) return std::nullopt;
    fmt::print(to_, "{}\n", seconds);
    std::fflush(to_);
    double ms = 0, best = 0, runs = 0;
    const std::string figures = read_line();
    if (!(std::istringstream(figures) >> ms >> best >> runs >> mib_)) {
      refusal_ = "the PyTorch peer failed: " + figures.substr(0, 300);
      return std::nullopt;
    }
    return ms;
  }

 private:
  std::string read_line() {
    std::string line;
    char chunk[1024];
    while (from_ && std::fgets(chunk, sizeof chunk, from_)) {
      line += chunk;
      if (line.ends_with('\n')) {
        line.pop_back();
        break;
      }
    }
    return line;
  }

  TorchSetting setting_;
  pid_t pid_ = -1;
  FILE* to_ = nullptr;
  FILE* from_ = nullptr;
  std::string refusal_;
  double mib_ = 0;
};

// The median of `values` (not empty).
double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

// One row of the table: ours and PyTorch's, timed in `rounds` rounds of seconds / rounds
// each, ours then each of PyTorch's settings in turn. A round's ratio is ours over its
// fastest setting's; the row gives the medians, and the ratios' range.
struct Row {
  double ms = 0, peer_ms = 0, ratio = 0, lowest = 0, highest = 0, mib = 0, peer_mib = 0;
  std::optional<double> floor_ms;  // the products at the multiply's peak (none for scalar kernels)
  std::string setting, refusal;
};

Row refused(std::string why) {
  Row row;
  row.refusal = std::move(why);
  return row;
}

Row measure(const Model& model, bool gradient, bool bf16, int threads, double seconds, int rounds,
            const std::string& run_file, const std::string& text) {
  std::unique_ptr<Ours> made;
  try {
    made = std::make_unique<Ours>(model, gradient, bf16, threads, run_file);
  } catch (const device::DeviceError& e) {
    return refused(fmt::format("{}: {}", e.code(), e.what()));
  }
  Ours& ours = *made;
  std::vector<std::unique_ptr<TorchPeer>> peers;
  for (const TorchSetting& setting : torch_settings(threads)) {
    peers.push_back(std::make_unique<TorchPeer>(model, gradient, bf16, setting, text));
    if (!peers.back()->refusal().empty()) return refused(peers.back()->refusal());
  }
  std::vector<double> mine, theirs, ratios;
  std::map<std::string, int> fastest_setting;  // how many rounds each setting was the fastest
  const TorchPeer* fastest = nullptr;
  for (int round = 0; round < rounds; ++round) {
    mine.push_back(ours.time(seconds / rounds));
    std::optional<double> best;
    for (auto& peer : peers) {
      std::optional<double> ms = peer->time(seconds / rounds);
      if (!ms) return refused(peer->refusal());
      if (!best || *ms < *best) {
        best = ms;
        fastest = peer.get();
      }
    }
    ++fastest_setting[fastest->setting().label()];
    theirs.push_back(*best);
    ratios.push_back(mine.back() / *best);
  }
  const auto most = std::max_element(fastest_setting.begin(), fastest_setting.end(),
                                     [](const auto& a, const auto& b) { return a.second < b.second; });
  double peer_mib = 0;
  for (const auto& peer : peers) {
    if (peer->setting().label() == most->first) peer_mib = peer->mib();
  }
  return {.ms = median(mine),
          .peer_ms = median(theirs),
          .ratio = median(ratios),
          .lowest = *std::min_element(ratios.begin(), ratios.end()),
          .highest = *std::max_element(ratios.begin(), ratios.end()),
          .mib = ours.memory_mib(),
          .peer_mib = peer_mib,
          .floor_ms = floor_ms(ours.product_gflop(), bf16, threads),
          .setting = most->first,
          .refusal = ""};
}

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return fmt::format("{} {} {}", a, b, c);
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 3.0;
  int rounds = 5;
  bool floors_only = false;
  std::string models = "tiny,small,large", passes = "forward,gradient", threads_list = "1,2", precisions = "f32";
  // Whether `name` is in the comma-separated `list`.
  auto listed = [](const std::string& list, const std::string& name) {
    return ("," + list + ",").find("," + name + ",") != std::string::npos;
  };
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
      seconds = std::stod(argv[++i]);
    } else if (std::strcmp(argv[i], "--models") == 0 && i + 1 < argc) {
      models = argv[++i];
    } else if (std::strcmp(argv[i], "--passes") == 0 && i + 1 < argc) {
      passes = argv[++i];
    } else if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      threads_list = argv[++i];
    } else if (std::strcmp(argv[i], "--precision") == 0 && i + 1 < argc) {
      precisions = argv[++i];
    } else if (std::strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
      rounds = std::max(1, std::stoi(argv[++i]));
    } else if (std::strcmp(argv[i], "--floors") == 0) {
      floors_only = true;
    } else if (std::strcmp(argv[i], "--device") == 0 && i + 1 < argc) {
      device_name = argv[++i];
      if (device_name != "cpu" && device_name != "cuda") {
        fmt::print(stderr, "forward: --device is cpu or cuda, not {}\n", device_name);
        return 2;
      }
    } else {
      std::puts(
          "usage: forward [--models tiny,small,large] [--passes forward,gradient] [--threads 1,2] [--seconds S]\n"
          "               [--precision f32,bf16] [--rounds N] [--floors] [--device cpu|cuda]");
      return std::strcmp(argv[i], "--help") == 0 ? 0 : 2;
    }
  }
  // gpt.sx beside the text its defrun names (which its loader checks when it is read),
  // from which the PyTorch peer takes its batches.
  const std::filesystem::path where =
      std::filesystem::temp_directory_path() / fmt::format("bench-forward-{}", getpid());
  std::filesystem::create_directories(where);
  const std::string run_file = (where / "gpt.sx").string(), text = (where / "text.txt").string();
  std::filesystem::copy_file(source_dir() + "/bench/gpt.sx", run_file);
  if (device_name == "cuda") threads_list = "1";  // the GPU's; PyTorch's host threads are not the point
  {
    std::ofstream out(text, std::ios::binary);
    std::mt19937 rng(2);
    for (int i = 0; i < 1 << 16; ++i) out.put(static_cast<char>('a' + rng() % 26));
  }
  std::signal(SIGPIPE, SIG_IGN);  // a peer that dies is then a failed write, and a refusal
  // Each case asked for, in the table's order: f(model, gradient, threads, bf16).
  auto each_case = [&](const auto& f) {
    for (const Model& model : kModels) {
      if (!listed(models, model.name)) continue;
      for (bool gradient : {false, true}) {
        if (!listed(passes, gradient ? "gradient" : "forward")) continue;
        for (int threads : {1, 2}) {
          if (!listed(threads_list, std::to_string(threads))) continue;
          for (bool bf16 : {false, true}) {
            if (listed(precisions, bf16 ? "bf16" : "f32")) f(model, gradient, threads, bf16);
          }
        }
      }
    }
  };
  fmt::print("{}\n", bench::host_line(device::cpu::choose_isa("")));
  if (floors_only) {  // the floors alone (bench/train.py's), a line each, nothing timed
    each_case([&](const Model& model, bool gradient, int threads, bool bf16) {
      train::Session session(session_options(model));
      session.load(run_file);
      std::optional<double> ms = floor_ms(product_gflop(trace(session, model, gradient, bf16).graph), bf16, threads);
      fmt::print("floor gpt-{} {} {} {} {}\n", model.name, gradient ? "gradient" : "forward", bf16 ? "bf16" : "f32",
                 threads, ms ? fmt::format("{:.2f}", *ms) : "-");
    });
    std::filesystem::remove_all(where);
    return 0;
  }
  fmt::print("load average before: {}\n", load_average());
  fmt::print(
      "| model | pass | precision | threads | SexpGPU ms | PyTorch ms | SexpGPU / PyTorch (range) | SexpGPU MiB "
      "| PyTorch MiB | memory ratio | floor ms (ratio) |\n"
      "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
  each_case([&](const Model& model, bool gradient, int threads, bool bf16) {
    Row row = measure(model, gradient, bf16, threads, seconds, rounds, run_file, text);
    const std::string pass = gradient ? "gradient" : "forward", precision = bf16 ? "bf16" : "f32";
    if (!row.refusal.empty()) {
      fmt::print("| gpt-{} | {} | {} | {} | - | {} | - | - | - | - | - |\n", model.name, pass, precision, threads,
                 row.refusal);
      return;
    }
    fmt::print(
        "| gpt-{} | {} | {} | {} | {:.2f} | {:.2f} ({}) | {:.2f} ({:.2f}-{:.2f}) | {:.1f} | {:.1f} | {} | {} |\n",
        model.name, pass, precision, threads, row.ms, row.peer_ms, row.setting, row.ratio, row.lowest, row.highest,
        row.mib, row.peer_mib, row.peer_mib > 0 ? fmt::format("{:.2f}", row.mib / row.peer_mib) : "-",
        row.floor_ms ? fmt::format("{:.1f} ({:.2f})", *row.floor_ms, *row.floor_ms / row.peer_ms) : "-");
    std::fflush(stdout);
  });
  fmt::print("load average after: {}\n", load_average());
  std::filesystem::remove_all(where);
  return 0;
}
