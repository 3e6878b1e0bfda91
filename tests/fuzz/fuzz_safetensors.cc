// libFuzzer target: arbitrary bytes as a safetensors file. The header is parsed and
// validated (SafetensorsFile::from_bytes, the same parser open() runs on a mapping), and
// every tensor of a file that opens is viewed and read as f32 and as bf16. A LoadError is
// the expected answer to bad input; anything else (a crash, a sanitizer report, another
// exception, a hang) is a bug.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    auto file = sx::io::SafetensorsFile::from_bytes("<fuzz>", std::vector<uint8_t>(data, data + size));
    for (const auto& tensor : file->tensors()) {
      if (file->find(tensor.name) == nullptr) __builtin_trap();  // every listed tensor is found
      auto bytes = file->bytes(tensor);
      if (bytes.size() != tensor.end - tensor.begin) __builtin_trap();
      for (auto want : {sx::graph::DType::f32, sx::graph::DType::bf16}) {
        try {
          (void)sx::io::read_tensor(*file, tensor, want);
        } catch (const sx::io::LoadError&) {
        }
      }
    }
    (void)file->metadata();
  } catch (const sx::io::LoadError&) {
  }
  return 0;
}
