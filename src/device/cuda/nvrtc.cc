// NVRTC's compilation of the generated kernels, and their cache on disk.
#include "device/cuda/nvrtc.h"

#include <fmt/format.h>
#include <nvrtc.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>

#include "device/cuda/nvrtc_headers.h"
#include "device/device.h"

namespace sx::device::cuda {
namespace {

namespace fs = std::filesystem;

void check_nvrtc(nvrtcResult result, const char* what) {
  if (result != NVRTC_SUCCESS) {
    throw DeviceError(fmt::format("NVRTC failed {}: {}", what, nvrtcGetErrorString(result)), "E-DEVICE-009");
  }
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return in ? std::string(std::istreambuf_iterator<char>(in), {}) : std::string();
}

// Writes through a temporary file renamed into place, so that a reader (another process
// compiling the same kernel) never sees half a file. A cache that cannot be written is
// no error: the kernel is compiled again next time.
void write_file(const fs::path& path, std::string_view bytes) {
  fs::path temporary = path;
  temporary += fmt::format(".{}.tmp", static_cast<long>(::getpid()));
  {
    std::ofstream out(temporary, std::ios::binary);
    if (!out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()))) return;
  }
  std::error_code ignored;
  fs::rename(temporary, path, ignored);
  if (ignored) fs::remove(temporary, ignored);
}

}  // namespace

uint64_t text_hash(std::string_view text) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (unsigned char c : text) hash = (hash ^ c) * 0x100000001b3ull;
  return hash;
}

std::string gpu_architecture(int major, int minor) {
  // 9.0's architecture-specific features (wgmma, setmaxnreg) are in sm_90a only.
  return fmt::format("sm_{}{}{}", major, minor, major == 9 && minor == 0 ? "a" : "");
}

std::string nvrtc_version() {
  int major = 0, minor = 0;
  check_nvrtc(nvrtcVersion(&major, &minor), "to give its version");
  return fmt::format("{}.{}", major, minor);
}

std::vector<uint8_t> compile_cubin(std::string_view source, std::string_view architecture) {
  std::vector<const char*> names, texts;
  for (const EmbeddedHeader& header : nvrtc_headers()) {
    names.push_back(header.name);
    texts.push_back(header.text);
  }
  std::string text(source);
  nvrtcProgram program = nullptr;
  check_nvrtc(nvrtcCreateProgram(&program, text.c_str(), "generated.cu", static_cast<int>(names.size()), texts.data(),
                                 names.data()),
              "to take a kernel's source");
  std::unique_ptr<nvrtcProgram, void (*)(nvrtcProgram*)> owned(&program,
                                                               [](nvrtcProgram* p) { nvrtcDestroyProgram(p); });
  std::string arch_option = fmt::format("--gpu-architecture={}", architecture);
  // -default-device: scalar.h's host-only functions, which the kernels never call, parse.
  const char* options[] = {arch_option.c_str(), "-std=c++20", "-fmad=false", "-default-device"};
  nvrtcResult result = nvrtcCompileProgram(program, std::size(options), options);
  if (result != NVRTC_SUCCESS) {
    size_t size = 0;
    nvrtcGetProgramLogSize(program, &size);
    std::string log(size, '\0');
    nvrtcGetProgramLog(program, log.data());
    throw DeviceError(fmt::format("NVRTC could not compile a generated kernel for {}: {}\n{}", architecture,
                                  nvrtcGetErrorString(result), log),
                      "E-DEVICE-009");
  }
  size_t size = 0;
  check_nvrtc(nvrtcGetCUBINSize(program, &size), "to give a cubin's size");
  std::vector<uint8_t> cubin(size);
  check_nvrtc(nvrtcGetCUBIN(program, reinterpret_cast<char*>(cubin.data())), "to give a cubin");
  return cubin;
}

std::string kernel_cache_dir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return (fs::path(xdg) / "sexpgpu/kernels").string();
  if (const char* home = std::getenv("HOME"); home && *home)
    return (fs::path(home) / ".cache/sexpgpu/kernels").string();
  return "";
}

std::vector<uint8_t> cached_cubin(std::string_view source, std::string_view architecture, bool* compiled) {
  std::string key = fmt::format("{}\n{}\n{}", architecture, nvrtc_version(), source);
  fs::path dir = kernel_cache_dir();
  fs::path base = dir / fmt::format("{:016x}", text_hash(key));
  if (compiled) *compiled = false;
  if (!dir.empty() && read_file(fs::path(base).replace_extension(".key")) == key) {
    std::string cubin = read_file(fs::path(base).replace_extension(".cubin"));
    if (!cubin.empty()) return {cubin.begin(), cubin.end()};
  }
  std::vector<uint8_t> cubin = compile_cubin(source, architecture);
  if (compiled) *compiled = true;
  std::error_code ignored;
  if (dir.empty()) return cubin;
  fs::create_directories(dir, ignored);
  if (!ignored) {
    write_file(fs::path(base).replace_extension(".cubin"),
               std::string_view(reinterpret_cast<const char*>(cubin.data()), cubin.size()));
    write_file(fs::path(base).replace_extension(".key"), key);
  }
  return cubin;
}

}  // namespace sx::device::cuda
