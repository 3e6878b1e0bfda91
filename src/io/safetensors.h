// The safetensors format: reading a file (memory-mapped, its header validated in full on
// open), converting a tensor into a graph::Tensor, and writing a file atomically.
//
// A safetensors file is an 8-byte little-endian header length N, N bytes of UTF-8 JSON,
// then the data section. The JSON maps each tensor name to {"dtype", "shape",
// "data_offsets": [begin, end]} (offsets relative to the data section), plus an optional
// "__metadata__" object of strings. Everything else is refused with a LoadError whose code
// (E-LOAD-00N, explained by `sexpgpu explain-error`) says what kind of fault it is and
// whose message names the file and exactly what is wrong.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "graph/dtype.h"
#include "graph/tensor.h"
#include "io/checksum.h"

namespace sx::io {

// One tensor of a file's header.
struct TensorInfo {
  std::string name;
  std::string dtype;  // "F32", "BF16", ... as in the file
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // byte offsets within the data section

  bool operator==(const TensorInfo&) const = default;
};

// Every fault of a file the io layer reads: the code ("E-LOAD-00N") and a message that
// names the file and what is wrong with it.
class LoadError : public std::runtime_error {
 public:
  LoadError(std::string code, std::string message);
  const std::string& code() const { return code_; }

 private:
  std::string code_;
};

// The codes, one per kind of fault (their explanations are in src/io/codes.cc).
inline constexpr const char* kFileChanged = "E-LOAD-001";       // a :load file whose bytes changed
inline constexpr const char* kUnreadable = "E-LOAD-002";        // missing, unreadable or unwritable
inline constexpr const char* kLfsPointer = "E-LOAD-003";        // a git-lfs pointer, not the file
inline constexpr const char* kTruncated = "E-LOAD-004";         // shorter than its header says
inline constexpr const char* kBadHeader = "E-LOAD-005";         // a header not in the format
inline constexpr const char* kUnknownDType = "E-LOAD-006";      // a dtype safetensors does not define
inline constexpr const char* kBadOffsets = "E-LOAD-007";        // offsets that do not describe the bytes
inline constexpr const char* kDTypeDoesNotLoad = "E-LOAD-008";  // read_tensor: not F32/BF16 into f32/bf16
inline constexpr const char* kBadIndex = "E-LOAD-009";          // a sharded checkpoint's index.json
inline constexpr const char* kMissingTensor = "E-LOAD-011";     // a :load tensor the file does not hold
inline constexpr const char* kShapeDiffers = "E-LOAD-012";      // a :load tensor of another shape

// The largest header accepted, as the reference implementation has it.
inline constexpr uint64_t kMaxHeaderBytes = 100'000'000;

class SafetensorsFile {
 public:
  // Maps the file and validates its header; throws LoadError. As with any mapping, the file
  // must not be truncated while open (a read past its new end is SIGBUS); replace it by
  // renaming a new file over it, as write_safetensors does.
  static std::shared_ptr<const SafetensorsFile> open(const std::string& path);
  // The same from bytes in memory (tests, the fuzzer); `name` stands for the path in
  // messages. Throws LoadError.
  static std::shared_ptr<const SafetensorsFile> from_bytes(std::string name, std::vector<uint8_t> bytes);
  // A file read by ranges, as from an object store: `read(offset, length)` returns exactly
  // those bytes (or throws). The header is read and validated now (one read, two when it
  // is longer than the first); each tensor's bytes are read when bytes() first asks for
  // them and kept while the file is open. `name` stands for the file in messages.
  using RangeReader = std::function<std::string(uint64_t offset, uint64_t length)>;
  static std::shared_ptr<const SafetensorsFile> from_ranges(std::string name, uint64_t size, RangeReader read);

  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;
  ~SafetensorsFile();

  const std::string& path() const { return path_; }
  uint64_t file_size() const { return size_; }
  // Where the data section starts: 8 + the header length.
  uint64_t data_offset() const { return data_offset_; }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }  // in header order
  const TensorInfo* find(std::string_view name) const;                 // nullptr when absent
  // A view into the mapping, no copy (or into the bytes read for it, from_ranges). Throws
  // LoadError when `t` is not within this file's data section (a TensorInfo of another file).
  std::span<const uint8_t> bytes(const TensorInfo& t) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // The whole file's bytes (a view into the mapping, or the bytes given); std::logic_error
  // for a file read by ranges, which holds only what was read.
  std::span<const uint8_t> contents() const;

 private:
  SafetensorsFile() = default;
  void parse();

  std::string path_;
  const uint8_t* data_ = nullptr;  // the whole file
  uint64_t size_ = 0;
  bool mapped_ = false;         // data_ is an mmap of size_ bytes
  std::vector<uint8_t> owned_;  // from_bytes; from_ranges: the 8 bytes of length and the header
  RangeReader read_;            // from_ranges
  mutable std::mutex read_mutex_;
  mutable std::map<uint64_t, std::string> read_tensors_;  // from_ranges: by offset in the data section
  uint64_t data_offset_ = 0;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> by_name_;
  std::map<std::string, std::string> metadata_;
};

// The byte size of one element of a safetensors dtype ("F32" -> 4); 0 when unknown.
size_t safetensors_dtype_size(std::string_view dtype);
// The safetensors name of a graph dtype: f32 -> "F32", bf16 -> "BF16", bool -> "BOOL", ...
std::string_view safetensors_dtype_name(graph::DType dtype);

// The tensor converted to `want`: F32 and BF16 load into f32 or bf16 (bf16 from f32 rounds
// to nearest even); any other stored dtype, or `want` other than f32/bf16, is a LoadError
// (E-LOAD-008) naming the tensor and both dtypes. Where the stored dtype is the wanted one
// the bytes are copied once (into the graph::Tensor), never converted.
graph::Tensor read_tensor(const SafetensorsFile& file, const TensorInfo& tensor, graph::DType want);

// Writes tensors (in the given order) and string metadata as a safetensors file; the header
// is padded with spaces so the data starts 8-byte aligned; written to a temporary name in
// the same directory and renamed when complete, so a crash never leaves a half file.
// Throws LoadError (E-LOAD-002) when the file cannot be written, std::invalid_argument for
// two tensors of one name, a name "__metadata__" or a name or metadata that is not UTF-8.
void write_safetensors(const std::string& path, const std::vector<std::pair<std::string, graph::Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

// A tensor by name that its owner holds until a write of it returns: a device's own
// buffer, say, which a checkpoint writes without a copy.
struct TensorRef {
  std::string name;
  const graph::Tensor* tensor = nullptr;
};
// As write_safetensors, of tensors held elsewhere; `checksum`, when given, is fed every
// byte written, in order, as it is written.
void write_safetensors_refs(const std::string& path, std::span<const TensorRef> tensors,
                            const std::map<std::string, std::string>& metadata = {}, Checksum* checksum = nullptr);

// Whether bytes start like a git-lfs pointer file ("version https://git-lfs.github.com/spec/v1").
bool is_lfs_pointer(std::span<const uint8_t> bytes);
// The E-LOAD-003 error for a pointer file at `path` whose first bytes are `bytes`.
LoadError lfs_pointer_error(const std::string& path, std::span<const uint8_t> bytes);

}  // namespace sx::io
