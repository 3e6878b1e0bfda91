// bench/cuda_products: what pinning the cuda device's products costs (issue 43, item 3).
// The device runs each product with the algorithm it pinned for (N, K, dtype), rebuilt
// for every M, so that a row's bits do not depend on how many rows run with it
// (products.h). Its peer is cuBLASLt left to itself: its heuristic's first choice for each
// M, with 32 MiB of workspace (split-K and reduction schemes allowed). Both on GPT-2
// small's products (K x N of 768 x 2304, 768 x 768, 768 x 3072, 3072 x 768), M from 1 to
// 8192 in powers of two, f32 (TF32 off) and bf16 (summed in f32):
//
//   build/bench/cuda_products [--dtypes f32,bf16] [--max-m 8192] [--rounds 5] [--json FILE]
//
// Each side's products are captured in a CUDA graph of kRepeats launches, so that the
// host's cost of describing a product (the device's steps run captured too) is not timed;
// the two graphs are timed in turns, `--rounds` times, by events on one stream, and each
// side's figure is its median round. The table gives each case's pinned time over the
// peer's, and the geometric mean of those ratios per dtype: the price of invariance
// (the goal: under 1.10). Without a usable GPU it says why and exits 2.
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "device/cuda/cuda_device.h"
#include "device/cuda/products.h"
#include "device/device.h"

namespace {

using sx::device::cuda::PinnedProducts;
using sx::device::cuda::ProductKey;
using sx::graph::DType;

constexpr int kRepeats = 20;
constexpr size_t kWorkspaceBytes = size_t{32} << 20;

struct Shape {
  int64_t k, n;
};
constexpr Shape kShapes[] = {{768, 2304}, {768, 768}, {768, 3072}, {3072, 768}};

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    throw sx::device::DeviceError(fmt::format("bench/cuda_products: {} failed: {}", what, cudaGetErrorString(status)),
                                  "E-DEVICE-006");
  }
}

// A graph of kRepeats launches of `launch` on `stream`, captured once.
template <class Launch>
cudaGraphExec_t captured(cudaStream_t stream, Launch launch) {
  cudaGraph_t graph = nullptr;
  check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "beginning a capture");
  for (int r = 0; r < kRepeats; ++r) launch();
  check(cudaStreamEndCapture(stream, &graph), "ending a capture");
  cudaGraphExec_t exec = nullptr;
  check(cudaGraphInstantiate(&exec, graph, 0), "instantiating a graph");
  check(cudaGraphDestroy(graph), "freeing a graph");
  return exec;
}

// Milliseconds one launch of `exec` takes on `stream`.
float timed(cudaGraphExec_t exec, cudaStream_t stream, cudaEvent_t start, cudaEvent_t stop) {
  check(cudaEventRecord(start, stream), "recording an event");
  check(cudaGraphLaunch(exec, stream), "launching a graph");
  check(cudaEventRecord(stop, stream), "recording an event");
  check(cudaEventSynchronize(stop), "waiting for the GPU");
  float ms = 0;
  check(cudaEventElapsedTime(&ms, start, stop), "reading an event");
  return ms / kRepeats;
}

float median(std::vector<float> xs) {
  std::sort(xs.begin(), xs.end());
  return xs[xs.size() / 2];
}

struct Case {
  std::string dtype;
  Shape shape;
  int64_t m;
  float pinned_us, peer_us;
};

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at <= list.size()) {
    size_t comma = std::min(list.find(',', at), list.size());
    out.push_back(list.substr(at, comma - at));
    at = comma + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> dtypes = {"f32", "bf16"};
  int64_t max_m = 8192;
  int rounds = 5;
  std::string json_path;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (i + 1 >= argc) {
      fmt::print(stderr, "usage: cuda_products [--dtypes f32,bf16] [--max-m M] [--rounds N] [--json FILE]\n");
      return 2;
    }
    std::string value = argv[++i];
    if (arg == "--dtypes") {
      dtypes = split(value);
    } else if (arg == "--max-m") {
      max_m = std::stoll(value);
    } else if (arg == "--rounds") {
      rounds = std::max(1, std::stoi(value));
    } else if (arg == "--json") {
      json_path = value;
    } else {
      fmt::print(stderr, "cuda_products: unknown option {}\n", arg);
      return 2;
    }
  }
  if (std::string reason = sx::device::gpu_unusable_reason(); !reason.empty()) {
    fmt::print(stderr, "cuda_products: no usable GPU: {}\n", reason);
    return 2;
  }
  try {
    int64_t max_k = 0, max_n = 0;
    for (const Shape& s : kShapes) max_k = std::max(max_k, s.k), max_n = std::max(max_n, s.n);
    void *a = nullptr, *b = nullptr, *c = nullptr, *workspace = nullptr;
    check(cudaMalloc(&a, static_cast<size_t>(max_m * max_k) * 4), "allocating A");
    check(cudaMalloc(&b, static_cast<size_t>(max_k * max_n) * 4), "allocating B");
    check(cudaMalloc(&c, static_cast<size_t>(max_m * max_n) * 4), "allocating C");
    check(cudaMalloc(&workspace, kWorkspaceBytes), "allocating the workspace");
    // Every byte 0x3c: small values (about 0.0115 in f32 and bf16) that no sum overflows.
    check(cudaMemset(a, 0x3c, static_cast<size_t>(max_m * max_k) * 4), "filling A");
    check(cudaMemset(b, 0x3c, static_cast<size_t>(max_k * max_n) * 4), "filling B");
    cudaStream_t stream = nullptr;
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "creating a stream");
    cudaEvent_t start = nullptr, stop = nullptr;
    check(cudaEventCreate(&start), "creating an event");
    check(cudaEventCreate(&stop), "creating an event");
    PinnedProducts products;

    std::vector<Case> cases;
    for (const std::string& name : dtypes) {
      DType dtype = name == "bf16" ? DType::bf16 : DType::f32;
      for (const Shape& shape : kShapes) {
        ProductKey key{.n = shape.n, .k = shape.k, .dtype = dtype};
        for (int64_t m = 1; m <= max_m; m *= 2) {
          cudaGraphExec_t pinned = captured(stream, [&] { products.run(key, 1, m, a, b, c, stream); });
          cudaGraphExec_t peer =
              captured(stream, [&] { products.run_unpinned(key, 1, m, a, b, c, workspace, kWorkspaceBytes, stream); });
          timed(pinned, stream, start, stop);
          timed(peer, stream, start, stop);
          std::vector<float> ours, theirs;
          for (int r = 0; r < rounds; ++r) {
            ours.push_back(timed(pinned, stream, start, stop));
            theirs.push_back(timed(peer, stream, start, stop));
          }
          cases.push_back({name, shape, m, median(ours) * 1000, median(theirs) * 1000});
          check(cudaGraphExecDestroy(pinned), "freeing a graph");
          check(cudaGraphExecDestroy(peer), "freeing a graph");
        }
      }
    }

    fmt::print("{:<5} {:>11} {:>6} {:>11} {:>11} {:>6}\n", "dtype", "K x N", "M", "pinned us", "cuBLASLt us", "ratio");
    std::string json = "{\"cases\": [";
    for (size_t i = 0; i < cases.size(); ++i) {
      const Case& x = cases[i];
      fmt::print("{:<5} {:>11} {:>6} {:>11.2f} {:>11.2f} {:>6.3f}\n", x.dtype,
                 fmt::format("{}x{}", x.shape.k, x.shape.n), x.m, x.pinned_us, x.peer_us, x.pinned_us / x.peer_us);
      json += fmt::format(
          "{}{{\"dtype\": \"{}\", \"k\": {}, \"n\": {}, \"m\": {}, \"pinned_us\": {:.3f}, "
          "\"cublaslt_us\": {:.3f}}}",
          i ? ", " : "", x.dtype, x.shape.k, x.shape.n, x.m, x.pinned_us, x.peer_us);
    }
    json += "], \"geomean\": {";
    for (size_t d = 0; d < dtypes.size(); ++d) {
      double log_sum = 0;
      int count = 0;
      for (const Case& x : cases) {
        if (x.dtype != dtypes[d]) continue;
        log_sum += std::log(static_cast<double>(x.pinned_us) / x.peer_us);
        ++count;
      }
      double geomean = count ? std::exp(log_sum / count) : 0.0;
      fmt::print("{}: the pinned products take {:.3f}x cuBLASLt's own choice's time (geometric mean of {})\n",
                 dtypes[d], geomean, count);
      json += fmt::format("{}\"{}\": {:.4f}", d ? ", " : "", dtypes[d], geomean);
    }
    json += "}}\n";
    if (!json_path.empty()) std::ofstream(json_path) << json;
    cudaFree(a), cudaFree(b), cudaFree(c), cudaFree(workspace);
    return 0;
  } catch (const sx::device::DeviceError& e) {
    fmt::print(stderr, "cuda_products: {}\n", e.what());
    return 1;
  }
}
