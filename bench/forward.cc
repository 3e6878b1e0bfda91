// bench/forward: the forward and the gradient of three GPTs (bench/gpt.sx) on the cpu
// device against the same models in PyTorch (bench/torch_train_peer.py --mode), on 1 and
// on 2 threads, measured in one run, as ratios (issue 15's table):
//
//   gpt-tiny   width 64, 2 blocks, 4 heads, 64 bytes a row, batch 8
//   gpt-small  width 256, 4 blocks, 4 heads, 128 bytes a row, batch 8
//   gpt-large  width 768, 12 blocks, 12 heads, 128 bytes a row, batch 1
//
//   build/bench/forward [--models tiny,small,large] [--passes forward,gradient]
//                       [--threads 1,2] [--seconds S] [--precision f32,bf16]
//
// The forward is the logits of a batch of byte ids; the gradient is that of the mean
// cross-entropy of the next byte with respect to every parameter. Each is one program
// compiled once (runtime::Program, parameters in a store on the device, the batch fed
// each run); its time is the mean of the runs in S seconds after two to warm up.
// PyTorch's is the same mean, in a process of its own per setting, on the BLAS it runs
// (torch_blas.py: it refuses a reference BLAS, and no ratio is given then); on 2 threads
// the fastest of its thread settings (torch_settings), which the table names.
//
// With --precision bf16, every matrix product runs on bf16 operands, summed in f32 (the
// policy of `defrun :precision :bf16`, graph::bf16_products), and PyTorch's runs under
// torch.autocast("cpu", bfloat16), which does the same to its products. Our products run
// on the device's kernels: SEXPGPU_CPU_ISA=amx puts them on AMX tiles, where the host has
// them (docs/performance.md).
//
// Beside the times, the memory a run needs beyond the parameters and the batch: ours is
// the compiled plan's arena (every activation, gradient and temporary of a run lives
// there, and a run allocates nothing else) and the buffers the program returns its
// results in; PyTorch's is how far its process's peak resident memory rose above what
// it held before its first run.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "graph/autodiff.h"
#include "graph/passes.h"
#include "lang/tracer.h"
#include "model/values.h"
#include "runtime/program.h"
#include "train/session.h"
#include "train/step.h"

namespace {

using Clock = std::chrono::steady_clock;
using namespace sx;

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

struct Measured {
  double ms;          // a run's mean
  double memory_mib;  // what a run needs beyond the parameters and the batch
};

// The mean ms of a run of the program over `seconds`, after two runs to warm up, and its memory.
Measured ours(const Model& model, bool gradient, bool bf16, int cores, double seconds, const std::string& run_file) {
  train::SessionOptions options;
  options.interpreter.library_dirs = {SEXPGPU_LIB_DIR};
  options.choices = model.choices;
  train::Session session(std::move(options));
  session.load(run_file);
  auto device = device::make_device("cpu", {.cpu_cores = cores});
  Traced traced = trace(session, model, gradient, bf16);
  runtime::Store store(*device);
  for (auto& [path, value] : model::initial_values(session.params(), session.seed(), *device)) {
    store.put(path, std::move(value));
  }
  runtime::Program program(*device, traced.graph, traced.inputs, traced.outputs);
  std::mt19937 rng(1);
  std::vector<device::Buffer> fed_buffers;  // the ids, and the targets of a gradient: random bytes
  while (fed_buffers.size() < program.fed_inputs().size()) {
    graph::Tensor bytes(graph::DType::i32, {model.rows, model.window});
    for (int64_t j = 0; j < bytes.numel(); ++j) bytes.data<int32_t>()[j] = static_cast<int32_t>(rng() % 256);
    fed_buffers.push_back(device->upload(std::move(bytes)));
  }
  std::vector<const device::Buffer*> fed;
  for (const auto& buffer : fed_buffers) fed.push_back(&buffer);
  for (int i = 0; i < 2; ++i) program.run(store, fed);
  int runs = 0;
  auto start = Clock::now();
  double elapsed = 0;
  while (elapsed < seconds || runs < 3) {
    program.run(store, fed);
    ++runs;
    elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  }
  double bytes = static_cast<double>(program.memory().arena_bytes + program.memory().scratch_bytes);
  for (const graph::NamedNode& output : program.graph().outputs) {
    const graph::Node& node = program.graph().node(output.node);
    bytes += static_cast<double>(graph::numel(node.shape)) * static_cast<double>(graph::dtype_size(node.dtype));
  }
  return {.ms = 1e3 * elapsed / runs, .memory_mib = bytes / (1 << 20)};
}

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

// PyTorch's mean ms and memory in one setting (the peer's figures: mean ms, best ms, runs,
// MiB), or the reason there are none (the peer's `refuse`).
std::string torch_figures(const Model& model, bool gradient, bool bf16, const TorchSetting& setting, double seconds,
                          const std::string& text) {
  std::string command = fmt::format(
      "OPENBLAS_NUM_THREADS={} {}/usr/bin/python3 {}/bench/torch_train_peer.py --model {} --mode {} --text {} "
      "--threads {} --seconds {} --precision {} 2>&1",
      setting.blas_threads, setting.passive ? "OMP_WAIT_POLICY=passive " : "", SEXPGPU_SOURCE_DIR, model.name,
      gradient ? "gradient" : "forward", text, setting.torch_threads, seconds, bf16 ? "bf16" : "f32");
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return "refuse cannot start /usr/bin/python3";
  std::string out;
  char line[1024];
  while (fgets(line, sizeof line, pipe)) out += line;
  int status = pclose(pipe);
  std::istringstream lines(out);
  std::string header, value;
  std::getline(lines, header);
  if (header.starts_with("refuse")) return header;
  if (status != 0 || !std::getline(lines, value)) return "refuse the PyTorch peer failed: " + out.substr(0, 300);
  return value;
}

// PyTorch's figures in its fastest thread setting, or why there are none.
struct Peer {
  double ms = 0, mib = 0;
  std::string setting, refusal;
};

Peer fastest_torch(const Model& model, bool gradient, bool bf16, int threads, double seconds, const std::string& text) {
  Peer fastest;
  for (const TorchSetting& setting : torch_settings(threads)) {
    std::string figures = torch_figures(model, gradient, bf16, setting, seconds, text);
    if (figures.starts_with("refuse")) return {0, 0, "", figures.substr(7)};
    double ms = 0, best = 0, runs = 0, mib = 0;
    std::istringstream(figures) >> ms >> best >> runs >> mib;
    if (fastest.setting.empty() || ms < fastest.ms) fastest = {ms, mib, setting.label(), ""};
  }
  return fastest;
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
    } else {
      std::puts(
          "usage: forward [--models tiny,small,large] [--passes forward,gradient] [--threads 1,2] [--seconds S]\n"
          "               [--precision f32,bf16]");
      return std::strcmp(argv[i], "--help") == 0 ? 0 : 2;
    }
  }
  // gpt.sx beside the text its defrun names (which its loader checks when it is read),
  // from which the PyTorch peer takes its batches.
  const std::filesystem::path where =
      std::filesystem::temp_directory_path() / fmt::format("bench-forward-{}", getpid());
  std::filesystem::create_directories(where);
  const std::string run_file = (where / "gpt.sx").string(), text = (where / "text.txt").string();
  std::filesystem::copy_file(std::string(SEXPGPU_SOURCE_DIR) + "/bench/gpt.sx", run_file);
  {
    std::ofstream out(text, std::ios::binary);
    std::mt19937 rng(2);
    for (int i = 0; i < 1 << 16; ++i) out.put(static_cast<char>('a' + rng() % 26));
  }
  fmt::print("load average before: {}\n", load_average());
  fmt::print(
      "| model | pass | precision | threads | SexpGPU ms | PyTorch ms | SexpGPU / PyTorch | SexpGPU MiB | PyTorch MiB "
      "| memory ratio |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
  for (const Model& model : kModels) {
    if (!listed(models, model.name)) continue;
    for (bool gradient : {false, true}) {
      if (!listed(passes, gradient ? "gradient" : "forward")) continue;
      for (int threads : {1, 2}) {
        if (!listed(threads_list, std::to_string(threads))) continue;
        for (bool bf16 : {false, true}) {
          if (!listed(precisions, bf16 ? "bf16" : "f32")) continue;
          Measured mine = ours(model, gradient, bf16, threads, seconds, run_file);
          Peer theirs = fastest_torch(model, gradient, bf16, threads, seconds, text);
          bool peer = theirs.refusal.empty();
          fmt::print("| gpt-{} | {} | {} | {} | {:.2f} | {} | {} | {:.1f} | {} | {} |\n", model.name,
                     gradient ? "gradient" : "forward", bf16 ? "bf16" : "f32", threads, mine.ms,
                     peer ? fmt::format("{:.2f} ({})", theirs.ms, theirs.setting) : theirs.refusal,
                     peer ? fmt::format("{:.2f}", mine.ms / theirs.ms) : "-", mine.memory_mib,
                     peer ? fmt::format("{:.1f}", theirs.mib) : "-",
                     peer && theirs.mib > 0 ? fmt::format("{:.2f}", mine.memory_mib / theirs.mib) : "-");
          std::fflush(stdout);
        }
      }
    }
  }
  fmt::print("load average after: {}\n", load_average());
  std::filesystem::remove_all(where);
  return 0;
}
