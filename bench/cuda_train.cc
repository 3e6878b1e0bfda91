// bench/cuda_train: a training step of GPT-2 small (bench/cuda_gpt2.sx: 124M parameters,
// context 1024, bf16 products, f32 master weights, AdamW, clipping at 1.0) on the cuda
// device, in tokens/s and model FLOPs utilization, beside the same model and batch in
// PyTorch on the same GPU (bench/torch_train_peer.py --model gpt2 --compile) and beside
// llm.c's published figure:
//
//   build/bench/cuda_train [--device cuda|cpu] [--model gpt2|tiny] [--batch ROWS]
//                          [--seconds S] [--quick] [--peer-limit S] [--json PATH]
//
// Ours is the run's step as `sexpgpu run` compiles it (train/step.h), its parameters and
// optimizer state in a store on the device, fed batches of the file's loader made before
// the timing; a step is timed until its loss is back on the host. Three steps warm up
// (the first compiles the kernels and captures the step), then steps for S seconds (at
// least 3). PyTorch's runs in a process of its own after ours: torch.compile'd on cuda
// (eager, saying why, where torch.compile is missing or fails), its AdamW fused.
//
// A step's model FLOPs are llm.c's count: tokens x (6 x parameters + 12 x layers x width x
// context), the second term attention's; the utilization is those FLOPs a second over
// the GPU's dense bf16 peak, looked up by the name nvidia-smi gives (the table names the
// peak used; none is known for the cpu).
//
// --model tiny (width 64, 2 blocks, vocabulary 512, context 64) with --device cpu runs
// in seconds: the CTest bench.cuda_train_cpu keeps the program working where no GPU is.
// --quick times 2 seconds a side instead of 10. --peer-limit stops PyTorch's process after
// S seconds (300), its compile included. With --json the table's figures are also written
// to PATH after each row (scripts/gpu-check keeps them). SEXPGPU_SOURCE_DIR and
// SEXPGPU_TORCH_PYTHON say where the source tree and PyTorch's Python are on a machine
// the program was carried to, as for bench/forward.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "device/device.h"
#include "lang/diagnostic.h"
#include "runtime/program.h"
#include "train/loaders.h"
#include "train/run_start.h"
#include "train/session.h"
#include "train/step.h"
#include "train/step_feed.h"
#include "train/step_results.h"
#include "train/step_runner.h"

namespace {

using Clock = std::chrono::steady_clock;
using namespace sx;

// bench/cuda_gpt2.sx's knobs for each model; the PyTorch peer's model of the same shape.
struct Model {
  std::string name, peer;
  int64_t vocab, width, depth, heads, window, rows;
};
const Model kModels[] = {
    {"gpt2", "gpt2", 50304, 768, 12, 12, 1024, 8},
    {"tiny", "gpt2-tiny", 512, 64, 2, 4, 64, 4},
};

// llm.c's record: 8 H100s trained GPT-2 small at 140 ms per 524,288-token step
// (github.com/karpathy/llm.c, discussion #481, "Reproducing GPT-2 (124M) in llm.c in 90
// minutes for $20"): per GPU, 524288 / 0.140 / 8 tokens/s.
constexpr double kLlmcTokensPerSecond = 524288.0 / 0.140 / 8.0;

// Dense bf16 peaks (TFLOP/s, without sparsity) by a part of the GPU's name, the first
// that matches: NVIDIA's data sheets.
struct Peak {
  const char* name_part;
  double tflops;
};
const Peak kPeaks[] = {{"H100 PCIe", 756}, {"H100 NVL", 835}, {"H100", 989}, {"H200", 989}, {"A100", 312}};

std::string source_dir() {
  const char* moved = std::getenv("SEXPGPU_SOURCE_DIR");
  return moved && *moved ? moved : SEXPGPU_SOURCE_DIR;
}
std::string lib_dir() {
  const char* moved = std::getenv("SEXPGPU_SOURCE_DIR");
  return moved && *moved ? std::string(moved) + "/lib" : SEXPGPU_LIB_DIR;
}

// The first line a shell command prints, or "" when it prints nothing.
std::string first_line_of(const std::string& command) {
  std::string line;
  if (FILE* out = ::popen(command.c_str(), "r")) {
    char chunk[512];
    if (std::fgets(chunk, sizeof chunk, out)) line = chunk;
    ::pclose(out);
  }
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  return line;
}

// What a side measured, or why it could not.
struct Side {
  double ms = 0, first_loss = 0, last_loss = 0;
  int64_t steps = 0, parameters = 0;
  std::string note, refusal;
};

// Our step on `device_name`, timed for `seconds`.
Side time_ours(const Model& model, const std::string& device_name, double seconds, const std::string& run_file) {
  train::SessionOptions options;
  options.interpreter.library_dirs = {lib_dir()};
  for (const auto& [knob, value] : {std::pair{"vocab", model.vocab},
                                    {"width", model.width},
                                    {"depth", model.depth},
                                    {"heads", model.heads},
                                    {"window", model.window},
                                    {"rows", model.rows}}) {
    options.choices.knobs[knob] = std::to_string(value);
  }
  train::Session session(options);
  session.load(run_file);
  auto device = device::make_device(device_name, {});
  auto loader = train::open_loader(*train::as_loader_spec(*session.settings().find("data")));
  const train::StepGraph step = train::trace_step(session, *loader, {.batch = model.rows, .total_steps = 1 << 20});
  runtime::Store store(*device);
  train::resume_or_start(session, store, step, train::checkpoint_tables(session, step), train::RunPlace{});
  runtime::Program program = train::compile_step(session, *device, step.graph, step.inputs, step.outputs);
  train::StepFeed feed(*device, program, session.seed(), train::kDataPrefix);
  Side ours;
  for (size_t i = 0; i < step.inputs.size(); ++i) {
    if (step.inputs[i].role == runtime::Role::parameter)
      ours.parameters += graph::numel(step.graph.node(step.graph.inputs[i].node).shape);
  }
  std::vector<train::Batch> batches;  // made before the timing: the loader's time is not the step's
  for (int64_t s = 0; s < 4; ++s) batches.push_back(loader->batch(session.seed(), s, model.rows));
  auto run = [&](int64_t s) {
    train::StepResults results = train::run_step(session, program, store, feed.fill(batches[s % batches.size()], s), s);
    train::check_step(results, step, s);
    return results.loss;
  };
  constexpr int64_t kWarmup = 3;
  ours.first_loss = run(0);
  for (int64_t s = 1; s < kWarmup; ++s) run(s);
  const auto start = Clock::now();
  double elapsed = 0;
  while (elapsed < seconds || ours.steps < 3) {
    ours.last_loss = run(kWarmup + ours.steps++);
    elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  }
  ours.ms = 1e3 * elapsed / static_cast<double>(ours.steps);
  ours.note = fmt::format("loss {:.3f} -> {:.3f}", ours.first_loss, ours.last_loss);
  return ours;
}

// PyTorch's step of the same model and batch, in a process of its own.
// The peer is stopped after `limit` seconds (its compile included), giving no figures.
Side time_peer(const Model& model, const std::string& device_name, double seconds, double limit,
               const std::string& tokens) {
  const char* python = std::getenv("SEXPGPU_TORCH_PYTHON");
  const std::string command = fmt::format(
      "timeout {} {} {}/bench/torch_train_peer.py --model {} --tokens {} --rows {} --device {} --precision bf16 "
      "--seconds {} {}2>&1",
      limit, python && *python ? python : "/usr/bin/python3", source_dir(), model.peer, tokens, model.rows, device_name,
      seconds, device_name == "cuda" ? "--compile " : "");
  Side peer;
  std::vector<std::string> lines;
  if (FILE* out = ::popen(command.c_str(), "r")) {
    char chunk[4096];
    while (std::fgets(chunk, sizeof chunk, out)) lines.emplace_back(chunk);
    ::pclose(out);
  }
  for (auto& line : lines) {
    while (!line.empty() && line.back() == '\n') line.pop_back();
  }
  // Its standard error comes too (the compiler's warnings, a traceback): the first line
  // that is its own says what it is, and the figures follow it.
  const auto said = std::find_if(lines.begin(), lines.end(), [](const std::string& line) {
    return line.starts_with("torch ") || line.starts_with("refuse ");
  });
  if (said != lines.end() && said->starts_with("refuse ")) {
    peer.refusal = said->substr(7);
    return peer;
  }
  const auto figures =
      said == lines.end() ? lines.end() : std::find_if(said + 1, lines.end(), [&](const std::string& line) {
        double best = 0, mib = 0;
        return static_cast<bool>(std::istringstream(line) >> peer.ms >> best >> peer.steps >> mib);
      });
  if (figures == lines.end()) {
    peer.refusal = fmt::format("the PyTorch peer failed or ran past its {} s: {}", limit,
                               lines.empty() ? std::string("no output") : lines.back().substr(0, 300));
    return peer;
  }
  const size_t how = said->find(" compiled") != std::string::npos ? said->find(" compiled") : said->find(" eager");
  peer.note = said->substr(0, said->find(" threads")) +
              (how != std::string::npos ? "," + said->substr(how) : ", eager (torch.compile only on cuda)");
  return peer;
}

// The parameters of bench/cuda_gpt2.sx's model: the token table (the head's too), the
// positions, each block's two norms and four products with biases, the final norm.
int64_t parameter_count(const Model& m) {
  return m.vocab * m.width + m.window * m.width + m.depth * (12 * m.width * m.width + 13 * m.width) + 2 * m.width;
}

// Random tokens below the model's vocabulary, little-endian u16, for both sides' loaders.
void write_tokens(const std::string& path, const Model& model) {
  std::ofstream out(path, std::ios::binary);
  std::mt19937 rng(3);
  const int64_t count = std::max<int64_t>(1 << 16, 64 * (model.window + 1));
  for (int64_t i = 0; i < count; ++i) {
    const auto token = static_cast<uint16_t>(rng() % static_cast<uint32_t>(model.vocab));
    out.put(static_cast<char>(token & 0xff));
    out.put(static_cast<char>(token >> 8));
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string device_name = "cuda", model_name = "gpt2", json_path;
  double seconds = 10, peer_limit = 300;
  std::optional<int64_t> batch;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--device" && i + 1 < argc) {
      device_name = argv[++i];
    } else if (arg == "--model" && i + 1 < argc) {
      model_name = argv[++i];
    } else if (arg == "--batch" && i + 1 < argc) {
      batch = std::atoll(argv[++i]);
    } else if (arg == "--seconds" && i + 1 < argc) {
      seconds = std::atof(argv[++i]);
    } else if (arg == "--peer-limit" && i + 1 < argc) {
      peer_limit = std::atof(argv[++i]);
    } else if (arg == "--quick") {
      seconds = 2;
    } else if (arg == "--json" && i + 1 < argc) {
      json_path = argv[++i];
    } else {
      std::puts(
          "usage: cuda_train [--device cuda|cpu] [--model gpt2|tiny] [--batch ROWS] [--seconds S] [--quick]\n"
          "                  [--peer-limit S] [--json PATH]");
      return arg == "--help" ? 0 : 2;
    }
  }
  const Model* chosen = nullptr;
  for (const Model& m : kModels) {
    if (m.name == model_name) chosen = &m;
  }
  if (!chosen || (device_name != "cuda" && device_name != "cpu") || (batch && *batch < 1) || !(seconds > 0) ||
      !(peer_limit > 0)) {
    fmt::print(stderr,
               "cuda_train: --model is gpt2 or tiny, --device cuda or cpu, --batch, --seconds and --peer-limit "
               "positive\n");
    return 2;
  }
  Model model = *chosen;
  if (batch) model.rows = *batch;
  const std::filesystem::path where =
      std::filesystem::temp_directory_path() / fmt::format("bench-cuda-train-{}", getpid());
  std::filesystem::create_directories(where);
  const std::string run_file = (where / "gpt2.sx").string(), tokens = (where / "tokens.bin").string();
  std::filesystem::copy_file(source_dir() + "/bench/cuda_gpt2.sx", run_file);
  write_tokens(tokens, model);

  const std::string gpu =
      device_name == "cuda" ? first_line_of("nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null") : "";
  std::optional<double> peak;
  for (const Peak& p : kPeaks) {
    if (!peak && gpu.find(p.name_part) != std::string::npos) peak = p.tflops;
  }
  const int64_t tokens_per_step = model.rows * model.window;
  fmt::print("gpt-2 {}: {} rows x {} tokens a step, bf16 products, on {} ({}); dense bf16 peak: {}\n", model.name,
             model.rows, model.window, device_name, gpu.empty() ? "no GPU named" : gpu,
             peak ? fmt::format("{:.0f} TFLOP/s", *peak) : "none known");
  std::fflush(stdout);

  Side ours;
  try {
    ours = time_ours(model, device_name, seconds, run_file);
  } catch (const lang::Error& e) {
    ours.refusal = fmt::format("{}: {}", e.diagnostic().code, e.what());
  } catch (const device::DeviceError& e) {
    ours.refusal = fmt::format("{}: {}", e.code(), e.what());
  } catch (const std::exception& e) {
    ours.refusal = e.what();
  }
  // The model FLOPs of a step, from the parameters our step traced (the peer's model is the
  // same), or where it traced none, from the model's shape.
  const int64_t parameters = ours.parameters ? ours.parameters : parameter_count(model);
  const double step_flops =
      static_cast<double>(tokens_per_step) *
      (6.0 * static_cast<double>(parameters) + 12.0 * static_cast<double>(model.depth * model.width * model.window));
  fmt::print("| side | ms/step | tokens/s | MFU | note |\n| --- | --- | --- | --- | --- |\n");
  auto row = [&](const std::string& side, const Side& s) {
    const double per_second = s.refusal.empty() ? static_cast<double>(tokens_per_step) / (s.ms / 1e3) : 0;
    const std::string mfu =
        s.refusal.empty() && peak ? fmt::format("{:.1f}%", 100 * step_flops / (s.ms / 1e3) / (*peak * 1e12)) : "-";
    if (s.refusal.empty()) {
      fmt::print("| {} | {:.2f} | {:.0f} | {} | {} |\n", side, s.ms, per_second, mfu, s.note);
    } else {
      fmt::print("| {} | - | - | - | {} |\n", side, s.refusal);
    }
    std::fflush(stdout);
    nlohmann::json figures = {{"side", side}, {"note", s.refusal.empty() ? s.note : s.refusal}};
    figures["ms_per_step"] = s.refusal.empty() ? nlohmann::json(s.ms) : nlohmann::json();
    figures["tokens_per_s"] = s.refusal.empty() ? nlohmann::json(per_second) : nlohmann::json();
    figures["mfu"] = mfu == "-" ? nlohmann::json() : nlohmann::json(mfu);
    return figures;
  };
  nlohmann::json report = {
      {"model", model.name},          {"device", device_name},           {"gpu", gpu},
      {"rows", model.rows},           {"window", model.window},          {"parameters", parameters},
      {"flops_per_step", step_flops}, {"sides", nlohmann::json::array()}};
  report["peak_tflops"] = peak ? nlohmann::json(*peak) : nlohmann::json();
  // Written again after each row, so that a run cut short keeps the rows it has.
  auto add = [&](const nlohmann::json& figures) {
    report["sides"].push_back(figures);
    if (!json_path.empty()) std::ofstream(json_path) << report.dump(2) << "\n";
  };
  add(row("SexpGPU", ours));
  add(row("PyTorch", time_peer(model, device_name, seconds, peer_limit, tokens)));
  Side llmc;
  llmc.ms = 1e3 * static_cast<double>(tokens_per_step) / kLlmcTokensPerSecond;
  llmc.note = "llm.c's published figure per H100 (8 GPUs, 140 ms per 524,288 tokens), not run";
  add(row("llm.c", llmc));
  std::filesystem::remove_all(where);
  return ours.refusal.empty() ? 0 : 1;
}
