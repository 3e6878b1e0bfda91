// Reading, validating and writing safetensors files (see safetensors.h). The header is
// checked in full when a file is opened, so a SafetensorsFile that exists describes its
// bytes: every tensor's offsets lie in the data section, match its dtype and shape, and
// the tensors tile the data section exactly.
#include "io/safetensors.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <unordered_set>

#include "graph/errors.h"
#include "graph/shape.h"
#include "graph/shown.h"
#include "io/json_checked.h"
#include "io/util.h"

namespace sx::io {

static_assert(std::endian::native == std::endian::little,
              "safetensors is little-endian; so is every host we build for");

LoadError::LoadError(std::string code, std::string message)
    : std::runtime_error(std::move(message)), code_(std::move(code)) {}

namespace {

using nlohmann::json;

struct DTypeRow {
  std::string_view name;
  size_t size;
};

constexpr DTypeRow kDTypes[] = {
    {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"U16", 2}, {"I16", 2}, {"F16", 2},     {"BF16", 2},    {"U32", 4},
    {"I32", 4},  {"F32", 4}, {"U64", 8}, {"I64", 8}, {"F64", 8}, {"F8_E4M3", 1}, {"F8_E5M2", 1},
};

std::string known_dtypes() {
  std::string out;
  for (const auto& row : kDTypes) out += (out.empty() ? "" : " ") + std::string(row.name);
  return out;
}

uint64_t read_le64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = v << 8 | p[i];
  return v;
}

// A JSON value's kind, for messages: "a string", "an array", ...
std::string_view kind_of(const json& value) {
  switch (value.type()) {
    case json::value_t::null: return "null";
    case json::value_t::object: return "an object";
    case json::value_t::array: return "an array";
    case json::value_t::string: return "a string";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "an integer";
    case json::value_t::number_float: return "a number";
    default: return "a value";
  }
}

// A JSON value as it appears in the header, cut short when long.
std::string shown_json(const json& value) {
  return graph::shown_in_message(value.dump(-1, ' ', false, json::error_handler_t::replace));
}

// Non-negative integer of a JSON value, or nullopt.
std::optional<uint64_t> as_unsigned(const json& value) {
  if (value.is_number_unsigned()) return value.get<uint64_t>();
  if (value.is_number_integer() && value.get<int64_t>() >= 0) return static_cast<uint64_t>(value.get<int64_t>());
  return std::nullopt;
}

std::string offsets_str(const TensorInfo& t) { return fmt::format("[{}, {}]", t.begin, t.end); }

}  // namespace

size_t safetensors_dtype_size(std::string_view dtype) {
  for (const auto& row : kDTypes) {
    if (row.name == dtype) return row.size;
  }
  return 0;
}

std::string_view safetensors_dtype_name(graph::DType dtype) {
  switch (dtype) {
    case graph::DType::f32: return "F32";
    case graph::DType::bf16: return "BF16";
    case graph::DType::f64: return "F64";
    case graph::DType::i32: return "I32";
    case graph::DType::i64: return "I64";
    case graph::DType::boolean: return "BOOL";
    case graph::DType::u8: return "U8";
    case graph::DType::u16: return "U16";
  }
  return "F32";
}

bool is_lfs_pointer(std::span<const uint8_t> bytes) {
  constexpr std::string_view kMagic = "version https://git-lfs.github.com/spec/v1";
  return bytes.size() >= kMagic.size() && std::equal(kMagic.begin(), kMagic.end(), bytes.begin());
}

LoadError lfs_pointer_error(const std::string& path, std::span<const uint8_t> bytes) {
  // The pointer's "size N" line says how big the real file is.
  std::string text(reinterpret_cast<const char*>(bytes.data()), std::min<size_t>(bytes.size(), 1024));
  std::string real_size;
  if (auto pos = text.find("\nsize "); pos != std::string::npos) {
    size_t start = pos + 6, stop = start;
    while (stop < text.size() && std::isdigit(static_cast<unsigned char>(text[stop]))) ++stop;
    if (stop > start) real_size = fmt::format(" of {} bytes", text.substr(start, stop - start));
  }
  std::string name = std::filesystem::path(path).filename().string();
  return LoadError(kLfsPointer,
                   fmt::format("{}: this is a git-lfs pointer ({} bytes), not the file{} it stands for; fetch the "
                               "file with `git lfs pull --include=\"{}\"` (or `git lfs pull`) in its repository",
                               path, bytes.size(), real_size, graph::shown_in_message(name)));
}

// --- SafetensorsFile ------------------------------------------------------------------

SafetensorsFile::~SafetensorsFile() {
  if (mapped_) munmap(const_cast<uint8_t*>(data_), size_);
}

std::shared_ptr<const SafetensorsFile> SafetensorsFile::open(const std::string& path) {
  std::shared_ptr<SafetensorsFile> file(new SafetensorsFile());
  file->path_ = path;
  auto [fd, size] = open_regular_file(path);
  file->size_ = size;
  if (file->size_ > 0) {
    void* p = mmap(nullptr, file->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      throw LoadError(kUnreadable, fmt::format("{}: cannot map it into memory: {}", path, std::strerror(err)));
    }
    file->data_ = static_cast<const uint8_t*>(p);
    file->mapped_ = true;
  }
  ::close(fd);
  file->parse();
  return file;
}

std::shared_ptr<const SafetensorsFile> SafetensorsFile::from_bytes(std::string name, std::vector<uint8_t> bytes) {
  std::shared_ptr<SafetensorsFile> file(new SafetensorsFile());
  file->path_ = std::move(name);
  file->owned_ = std::move(bytes);
  file->data_ = file->owned_.data();
  file->size_ = file->owned_.size();
  file->parse();
  return file;
}

std::shared_ptr<const SafetensorsFile> SafetensorsFile::from_ranges(std::string name, uint64_t size, RangeReader read) {
  // Most headers fit in the first read; a longer one is read in a second.
  constexpr uint64_t kFirstRead = 64 << 10;
  std::shared_ptr<SafetensorsFile> file(new SafetensorsFile());
  file->path_ = std::move(name);
  std::string start = read(0, std::min(size, kFirstRead));
  if (start.size() >= 8) {
    uint64_t wanted = 8 + std::min(read_le64(reinterpret_cast<const uint8_t*>(start.data())), kMaxHeaderBytes);
    if (wanted > start.size() && wanted <= size) start += read(start.size(), wanted - start.size());
    if (start.size() > wanted) start.resize(wanted);
  }
  file->owned_.assign(start.begin(), start.end());
  file->data_ = file->owned_.data();
  file->size_ = size;  // parse() reads no further than the header, which owned_ holds
  file->read_ = std::move(read);
  file->parse();
  return file;
}

void SafetensorsFile::parse() {
  std::span<const uint8_t> all(data_, read_ ? owned_.size() : size_);  // from_ranges: what was read
  if (is_lfs_pointer(all)) throw lfs_pointer_error(path_, all);
  if (size_ < 8) {
    throw LoadError(kTruncated, fmt::format("{}: the file is {} byte{}, too short for the 8-byte header length a "
                                            "safetensors file starts with",
                                            path_, size_, size_ == 1 ? "" : "s"));
  }
  uint64_t header_size = read_le64(data_);
  if (header_size > kMaxHeaderBytes) {
    throw LoadError(kTruncated, fmt::format("{}: the first 8 bytes give a header length of {} bytes, more than the "
                                            "limit of {}; this is not a safetensors file, or its start is damaged",
                                            path_, header_size, kMaxHeaderBytes));
  }
  if (header_size > size_ - 8) {
    throw LoadError(kTruncated, fmt::format("{}: the header length is {} bytes but only {} bytes follow it; the "
                                            "file is truncated or not a safetensors file",
                                            path_, header_size, size_ - 8));
  }
  data_offset_ = 8 + header_size;
  const uint64_t data_size = size_ - data_offset_;
  std::string_view text(reinterpret_cast<const char*>(data_ + 8), header_size);
  if (auto bad = find_invalid_utf8(text)) {
    throw LoadError(
        kBadHeader,
        fmt::format("{}: the header is not valid UTF-8: byte {} of the header (0x{:02x}) "
                    "after `{}`",
                    path_, *bad, static_cast<unsigned>(static_cast<uint8_t>(text[*bad])),
                    graph::shown_in_message(text.substr(*bad >= 40 ? *bad - 40 : 0, std::min<size_t>(*bad, 40)))));
  }
  const std::string what = path_ + ": the header";
  CheckedJson parsed = parse_json_checked(text, what, kBadHeader, 3);
  const json& header = parsed.value;
  if (!header.is_object()) {
    throw LoadError(kBadHeader, fmt::format("{}: the header is {}, not an object of tensors", path_, kind_of(header)));
  }

  for (const std::string& key : parsed.top_keys) {
    const json& entry = header.at(key);
    if (key == "__metadata__") {
      if (!entry.is_object()) {
        throw LoadError(kBadHeader,
                        fmt::format("{}: `__metadata__` is {}, not an object of strings", path_, kind_of(entry)));
      }
      for (const auto& [mkey, mvalue] : entry.items()) {
        if (!mvalue.is_string()) {
          throw LoadError(kBadHeader, fmt::format("{}: `__metadata__` entry `{}` is {} ({}), not a string", path_,
                                                  graph::shown_in_message(mkey), kind_of(mvalue), shown_json(mvalue)));
        }
        metadata_[mkey] = mvalue.get<std::string>();
      }
      continue;
    }
    const std::string name = graph::shown_in_message(key);
    if (!entry.is_object()) {
      throw LoadError(kBadHeader, fmt::format("{}: the entry of tensor `{}` is {}, not an object with dtype, shape "
                                              "and data_offsets",
                                              path_, name, kind_of(entry)));
    }
    for (const auto& [field, value] : entry.items()) {
      if (field != "dtype" && field != "shape" && field != "data_offsets") {
        throw LoadError(kBadHeader, fmt::format("{}: tensor `{}` has the key `{}`; a tensor has only dtype, shape and "
                                                "data_offsets",
                                                path_, name, graph::shown_in_message(field)));
      }
    }
    for (const char* field : {"dtype", "shape", "data_offsets"}) {
      if (!entry.contains(field)) {
        throw LoadError(kBadHeader, fmt::format("{}: tensor `{}` has no `{}`", path_, name, field));
      }
    }
    TensorInfo info;
    info.name = key;
    const json& dtype = entry["dtype"];
    if (!dtype.is_string()) {
      throw LoadError(kBadHeader, fmt::format("{}: the dtype of tensor `{}` is {} ({}), not a string such as \"F32\"",
                                              path_, name, kind_of(dtype), shown_json(dtype)));
    }
    info.dtype = dtype.get<std::string>();
    const size_t element_size = safetensors_dtype_size(info.dtype);
    if (element_size == 0) {
      throw LoadError(kUnknownDType, fmt::format("{}: tensor `{}` has the dtype `{}`, which safetensors does not "
                                                 "define; the dtypes are {}",
                                                 path_, name, graph::shown_in_message(info.dtype), known_dtypes()));
    }
    const json& shape = entry["shape"];
    if (!shape.is_array()) {
      throw LoadError(kBadHeader, fmt::format("{}: the shape of tensor `{}` is {} ({}), not a list of sizes", path_,
                                              name, kind_of(shape), shown_json(shape)));
    }
    for (const json& dim : shape) {
      auto size = as_unsigned(dim);
      if (!size || *size > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        throw LoadError(kBadHeader,
                        fmt::format("{}: the shape of tensor `{}` is {}, and {} is not a size (a non-negative integer)",
                                    path_, name, shown_json(shape), shown_json(dim)));
      }
      info.shape.push_back(static_cast<int64_t>(*size));
    }
    const json& offsets = entry["data_offsets"];
    std::optional<uint64_t> begin, end;
    if (offsets.is_array() && offsets.size() == 2) begin = as_unsigned(offsets[0]), end = as_unsigned(offsets[1]);
    if (!begin || !end) {
      throw LoadError(kBadHeader, fmt::format("{}: the data_offsets of tensor `{}` are {}, not two non-negative "
                                              "integers [begin, end]",
                                              path_, name, shown_json(offsets)));
    }
    info.begin = *begin;
    info.end = *end;
    if (info.end < info.begin) {
      throw LoadError(kBadOffsets, fmt::format("{}: the data_offsets of tensor `{}` are {}: it ends before it begins",
                                               path_, name, offsets_str(info)));
    }
    // The byte count the dtype and shape need, refusing overflow rather than wrapping, by
    // the rule every tensor's shape follows.
    uint64_t need = 0;
    try {
      need = static_cast<uint64_t>(graph::checked_bytes(info.shape, static_cast<int64_t>(element_size)));
    } catch (const graph::ShapeError&) {
      throw LoadError(kBadOffsets, fmt::format("{}: tensor `{}` is {} {}, more bytes than a tensor can hold (2^63)",
                                               path_, name, info.dtype, graph::shape_str(info.shape)));
    }
    if (need != info.end - info.begin) {
      throw LoadError(kBadOffsets, fmt::format("{}: tensor `{}` is {} {}, which is {} bytes, but its data_offsets {} "
                                               "span {} bytes",
                                               path_, name, info.dtype, graph::shape_str(info.shape), need,
                                               offsets_str(info), info.end - info.begin));
    }
    if (info.end > data_size) {
      throw LoadError(kTruncated, fmt::format("{}: tensor `{}` says its data ends at byte {} but the data section is "
                                              "{} bytes; the file is truncated, or its header is wrong",
                                              path_, name, info.end, data_size));
    }
    by_name_.emplace(key, tensors_.size());
    tensors_.push_back(std::move(info));
  }

  // The tensors must tile the data section: sorted by offset, each begins where the last ended.
  std::vector<size_t> order(tensors_.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::pair(tensors_[a].begin, tensors_[a].end) < std::pair(tensors_[b].begin, tensors_[b].end);
  });
  uint64_t covered = 0;
  const TensorInfo* previous = nullptr;
  for (size_t i : order) {
    const TensorInfo& t = tensors_[i];
    if (t.begin < covered) {
      throw LoadError(kBadOffsets, fmt::format("{}: tensor `{}` (data_offsets {}) overlaps tensor `{}` (data_offsets "
                                               "{})",
                                               path_, graph::shown_in_message(t.name), offsets_str(t),
                                               graph::shown_in_message(previous->name), offsets_str(*previous)));
    }
    if (t.begin > covered) {
      throw LoadError(kBadOffsets,
                      fmt::format("{}: bytes {} to {} of the data section belong to no tensor (a gap "
                                  "before tensor `{}`, data_offsets {})",
                                  path_, covered, t.begin, graph::shown_in_message(t.name), offsets_str(t)));
    }
    covered = t.end;
    previous = &t;
  }
  if (covered != data_size) {
    throw LoadError(kBadOffsets, fmt::format("{}: the data section is {} bytes but the tensors end at byte {}; bytes "
                                             "{} to {} belong to no tensor",
                                             path_, data_size, covered, covered, data_size));
  }
}

std::span<const uint8_t> SafetensorsFile::contents() const {
  if (read_) throw std::logic_error(fmt::format("{}: a file read by ranges has no contents in memory", path_));
  return {data_, static_cast<size_t>(size_)};
}

const TensorInfo* SafetensorsFile::find(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &tensors_[it->second];
}

std::span<const uint8_t> SafetensorsFile::bytes(const TensorInfo& t) const {
  const uint64_t data_size = size_ - data_offset_;
  if (t.begin > t.end || t.end > data_size) {
    throw LoadError(kBadOffsets, fmt::format("{}: tensor `{}` (data_offsets {}) is not within this file's data "
                                             "section of {} bytes",
                                             path_, graph::shown_in_message(t.name), offsets_str(t), data_size));
  }
  if (!read_) return {data_ + data_offset_ + t.begin, static_cast<size_t>(t.end - t.begin)};
  std::lock_guard lock(read_mutex_);
  auto [it, fresh] = read_tensors_.try_emplace(t.begin);
  if (fresh || it->second.size() < t.end - t.begin) {
    try {
      it->second = read_(data_offset_ + t.begin, t.end - t.begin);
    } catch (...) {
      read_tensors_.erase(it);
      throw;
    }
  }
  return {reinterpret_cast<const uint8_t*>(it->second.data()), static_cast<size_t>(t.end - t.begin)};
}

// --- Reading a tensor -------------------------------------------------------------------

graph::Tensor read_tensor(const SafetensorsFile& file, const TensorInfo& tensor, graph::DType want) {
  std::optional<graph::DType> stored;
  if (tensor.dtype == "F32") stored = graph::DType::f32;
  if (tensor.dtype == "BF16") stored = graph::DType::bf16;
  if (want != graph::DType::f32 && want != graph::DType::bf16) {
    throw LoadError(kDTypeDoesNotLoad, fmt::format("{}: tensor `{}` ({}) cannot load into {}: tensors load into f32 "
                                                   "or bf16 only",
                                                   file.path(), graph::shown_in_message(tensor.name),
                                                   graph::shown_in_message(tensor.dtype), graph::dtype_name(want)));
  }
  if (!stored) {
    throw LoadError(kDTypeDoesNotLoad, fmt::format("{}: tensor `{}` is stored as {}, which does not load into {}: "
                                                   "only F32 and BF16 tensors load, into f32 or bf16",
                                                   file.path(), graph::shown_in_message(tensor.name),
                                                   graph::shown_in_message(tensor.dtype), graph::dtype_name(want)));
  }
  std::span<const uint8_t> src = file.bytes(tensor);
  graph::Shape shape(tensor.shape.begin(), tensor.shape.end());
  if (*stored == want) return graph::Tensor(want, std::move(shape), src);

  const size_t n = src.size() / graph::dtype_size(*stored);
  graph::Tensor out(want, std::move(shape));
  std::span<uint8_t> dst = out.bytes();
  if (want == graph::DType::bf16) {  // F32 -> bf16, rounded to nearest even
    for (size_t i = 0; i < n; ++i) {
      float value;
      std::memcpy(&value, src.data() + 4 * i, 4);
      uint16_t bits = graph::Bf16(value).bits;
      std::memcpy(dst.data() + 2 * i, &bits, 2);
    }
  } else {  // BF16 -> f32, exact
    for (size_t i = 0; i < n; ++i) {
      uint16_t bits;
      std::memcpy(&bits, src.data() + 2 * i, 2);
      uint32_t wide = static_cast<uint32_t>(bits) << 16;
      std::memcpy(dst.data() + 4 * i, &wide, 4);
    }
  }
  return out;
}

// --- Writing --------------------------------------------------------------------------

void write_safetensors(const std::string& path, const std::vector<std::pair<std::string, graph::Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  std::vector<TensorRef> refs;
  refs.reserve(tensors.size());
  for (const auto& [name, tensor] : tensors) refs.push_back({name, &tensor});
  write_safetensors_refs(path, refs, metadata);
}

void write_safetensors_refs(const std::string& path, std::span<const TensorRef> tensors,
                            const std::map<std::string, std::string>& metadata, Checksum* checksum) {
  // The header, built as text so that its keys keep the given order.
  auto quoted = [](const std::string& s, std::string_view what) {
    try {
      return json(s).dump();
    } catch (const json::type_error&) {
      throw std::invalid_argument(
          fmt::format("write_safetensors: {} `{}` is not valid UTF-8", what, graph::shown_in_message(s)));
    }
  };
  std::string header = "{";
  if (!metadata.empty()) {
    header += "\"__metadata__\":{";
    bool first = true;
    for (const auto& [key, value] : metadata) {
      header += (first ? "" : ",") + quoted(key, "the metadata key") + ":" + quoted(value, "the metadata value");
      first = false;
    }
    header += "}";
  }
  std::unordered_set<std::string_view> names;
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    if (name == "__metadata__")
      throw std::invalid_argument("write_safetensors: a tensor may not be named __metadata__");
    if (!names.insert(name).second) {
      throw std::invalid_argument(
          fmt::format("write_safetensors: two tensors are named `{}`", graph::shown_in_message(name)));
    }
    const uint64_t size = tensor->bytes().size();
    header +=
        fmt::format("{}{}:{{\"dtype\":\"{}\",\"shape\":{},\"data_offsets\":[{},{}]}}", header.size() > 1 ? "," : "",
                    quoted(name, "the tensor name"), safetensors_dtype_name(tensor->dtype()),
                    graph::shape_str(tensor->shape(), ","), offset, offset + size);
    offset += size;
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');  // the data starts 8-byte aligned

  std::string prefix(8, '\0');
  for (int i = 0; i < 8; ++i) prefix[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);

  AtomicFile out(path);
  auto put = [&](const void* data, size_t size) {
    out.write(data, size);
    if (checksum) checksum->update(data, size);
  };
  put(prefix.data(), prefix.size());
  put(header.data(), header.size());
  for (const auto& [name, tensor] : tensors) put(tensor->bytes().data(), tensor->bytes().size());
  out.commit();
}

}  // namespace sx::io
