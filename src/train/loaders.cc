// The four loaders and their sampling (see loaders.h): windows of a text or token file,
// rows of a safetensors file, lines of a jsonl file.
#include "train/loaders.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>

#include "graph/philox.h"
#include "io/location.h"
#include "io/s3.h"
#include "io/safetensors.h"
#include "io/storage_cache.h"
#include "lang/diagnostic.h"

namespace sx::train {
namespace {

using graph::DType;
using graph::Tensor;

// Philox streams: counter[3] tells the loaders' draws apart.
constexpr uint32_t kWindowStream = 1u << 8;
constexpr uint32_t kPermutationStream = 2u << 8;

uint32_t lo32(uint64_t v) { return static_cast<uint32_t>(v); }
uint32_t hi32(uint64_t v) { return static_cast<uint32_t>(v >> 32); }
graph::PhiloxKey key_of(uint64_t seed) { return {lo32(seed), hi32(seed)}; }

[[noreturn]] void fail(const LoaderSpec& spec, std::string code, std::string message, std::string help = {}) {
  lang::fail(std::move(code), spec.span, std::move(message), std::move(help));
}

std::string shown_path(const LoaderSpec& spec) { return lang::shown_in_message(spec.path); }

// Whether the spec's data is an object on S3 (its path an s3:// URL, as loader_forms
// resolved it), read from a downloaded copy.
bool is_storage_object(const LoaderSpec& spec) { return io::scheme_of(spec.path) == "s3"; }

// Why a file cannot be opened, after "PATH: ".
std::string open_failure(int err) {
  switch (err) {
    case ENOENT: return "the file does not exist";
    case EACCES: return "permission denied";
    case EISDIR: return "a directory, not a file";
    case ENOTDIR: return "a folder on its path is a file";
    case ENAMETOOLONG: return "the name is too long for the system";
    default: return fmt::format("cannot open it: {}", std::strerror(err));
  }
}

// The index of the run's sample `i` of step `step`: step * batch_size + i, checked.
void check_batch_arguments(int64_t step, int64_t batch_size) {
  if (step < 0) throw std::invalid_argument(fmt::format("a loader's step is not negative, not {}", step));
  if (batch_size < 1) throw std::invalid_argument(fmt::format("a batch holds one record or more, not {}", batch_size));
  int64_t first, end;
  if (__builtin_mul_overflow(step, batch_size, &first) || __builtin_add_overflow(first, batch_size, &end)) {
    throw std::invalid_argument(fmt::format("step {} of batches of {} counts past 2^63 records", step, batch_size));
  }
}

// --- Windows of a text or token file ---------------------------------------------------

class WindowLoader final : public Loader {
 public:
  WindowLoader(const LoaderSpec& spec, const std::string& file) : Loader(spec) {
    token_bytes_ = spec.kind == LoaderKind::TextWindows ? 1 : spec.format == TokenFormat::u16 ? 2 : 4;
    fd_ = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) fail(spec, kLoaderFile, fmt::format("{}: {}", shown_path(spec), open_failure(errno)));
    struct stat st {};
    if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd_);
      fail(spec, kLoaderFile, fmt::format("{}: not a regular file", shown_path(spec)));
    }
    uint64_t bytes = static_cast<uint64_t>(st.st_size);
    std::string what = spec.kind == LoaderKind::TextWindows ? "bytes" : fmt::format("{} tokens", tokens_name());
    if (bytes % token_bytes_ != 0) {
      ::close(fd_);
      fail(spec, kTokenData,
           fmt::format("{}: the file is {} bytes, not a whole number of {}-byte {} tokens: it is cut short, or "
                       "holds another dtype",
                       shown_path(spec), bytes, token_bytes_, tokens_name()),
           "write the tokens as little-endian u16, u32 or i32 and say which with :dtype");
    }
    tokens_ = static_cast<int64_t>(bytes / token_bytes_);
    int64_t record = spec.window + 1;
    if (tokens_ < record) {
      ::close(fd_);
      fail(spec, kTokenData,
           fmt::format("{}: the file holds {} {}, fewer than one window of {} (:window {} and the target after it)",
                       shown_path(spec), tokens_, spec.kind == LoaderKind::TextWindows ? "bytes" : "tokens", record,
                       spec.window),
           "use a smaller :window, or a longer file");
    }
    size_ = tokens_ - record + 1;
    fields_.push_back(FieldInfo{"ids", DType::i32, {record}});
  }
  ~WindowLoader() override { ::close(fd_); }

  Batch batch(uint64_t seed, int64_t step, int64_t batch_size) const override {
    check_batch_arguments(step, batch_size);
    const int64_t record = spec_.window + 1;
    Tensor ids(DType::i32, {batch_size, record});
    std::vector<uint8_t> buffer(static_cast<size_t>(record) * token_bytes_);
    for (int64_t i = 0; i < batch_size; ++i) {
      uint64_t sample = static_cast<uint64_t>(step * batch_size + i);
      auto drawn = graph::philox4x32_10({lo32(sample), hi32(sample), 0, kWindowStream}, key_of(seed));
      uint64_t random = static_cast<uint64_t>(drawn[1]) << 32 | drawn[0];
      int64_t start = static_cast<int64_t>(random % static_cast<uint64_t>(size_));
      read_at(buffer, static_cast<uint64_t>(start) * token_bytes_);
      int32_t* out = ids.data<int32_t>() + i * record;
      for (int64_t t = 0; t < record; ++t) out[t] = token(buffer.data() + t * token_bytes_, start + t);
    }
    return Batch{{{"ids", std::move(ids)}}};
  }

 private:
  std::string_view tokens_name() const {
    return spec_.kind == LoaderKind::TextWindows ? "u8" : token_format_name(spec_.format);
  }

  void read_at(std::vector<uint8_t>& buffer, uint64_t offset) const {
    size_t done = 0;
    while (done < buffer.size()) {
      ssize_t got = ::pread(fd_, buffer.data() + done, buffer.size() - done, static_cast<off_t>(offset + done));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) {
        fail(spec_, kLoaderFile,
             fmt::format("{}: cannot read at byte {}: {}", shown_path(spec_), offset + done, std::strerror(errno)));
      }
      if (got == 0) {
        fail(spec_, kTokenData,
             fmt::format("{}: the file ends at byte {}, before the window at bytes {}..{}: it was cut short since "
                         "the run opened it",
                         shown_path(spec_), offset + done, offset, offset + buffer.size()),
             "do not change a loader's file while a run reads it");
      }
      done += static_cast<size_t>(got);
    }
  }

  // Token `index` of the file, whose bytes start at p.
  int32_t token(const uint8_t* p, int64_t index) const {
    if (token_bytes_ == 1) return p[0];
    if (token_bytes_ == 2) return static_cast<int32_t>(p[0] | p[1] << 8);
    uint32_t v = static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 | static_cast<uint32_t>(p[2]) << 16 |
                 static_cast<uint32_t>(p[3]) << 24;
    if (v > static_cast<uint32_t>(std::numeric_limits<int32_t>::max())) {
      std::string value =
          spec_.format == TokenFormat::u32 ? std::to_string(v) : std::to_string(static_cast<int32_t>(v));
      fail(spec_, kTokenData,
           fmt::format("{}: token {} (at byte {}) is {}, which is not a token id: ids run from 0 to 2147483647",
                       shown_path(spec_), index, index * 4, value),
           fmt::format("check that the file holds {} tokens", token_format_name(spec_.format)));
    }
    return static_cast<int32_t>(v);
  }

  int fd_ = -1;
  size_t token_bytes_ = 1;
  int64_t tokens_ = 0;
};

// --- Rows: records and jsonl -----------------------------------------------------------

// A field whose rows lie one after another, `row_bytes` each.
struct RowField {
  const uint8_t* data = nullptr;
  size_t row_bytes = 0;
};

// Batches of rows drawn epoch by epoch (see loaders.h).
Batch row_batch(const std::vector<FieldInfo>& infos, const std::vector<RowField>& rows_of, int64_t rows, uint64_t seed,
                int64_t step, int64_t batch_size) {
  check_batch_arguments(step, batch_size);
  Batch batch;
  std::vector<int64_t> picked(static_cast<size_t>(batch_size));
  for (int64_t i = 0; i < batch_size; ++i) {
    uint64_t sample = static_cast<uint64_t>(step * batch_size + i);
    picked[i] = shuffled_row(seed, sample / static_cast<uint64_t>(rows), static_cast<int64_t>(sample % rows), rows);
  }
  for (size_t f = 0; f < infos.size(); ++f) {
    graph::Shape shape = infos[f].shape;
    shape.insert(shape.begin(), batch_size);
    Tensor t(infos[f].dtype, shape);
    const size_t n = rows_of[f].row_bytes;
    for (int64_t i = 0; i < batch_size; ++i) {
      if (n) std::memcpy(t.bytes().data() + i * n, rows_of[f].data + picked[i] * n, n);
    }
    batch.fields.emplace_back(infos[f].name, std::move(t));
  }
  return batch;
}

std::optional<DType> graph_dtype_of(std::string_view safetensors_dtype) {
  for (DType d : graph::kAllDTypes) {
    if (io::safetensors_dtype_name(d) == safetensors_dtype) return d;
  }
  return std::nullopt;
}

class RecordsLoader final : public Loader {
 public:
  RecordsLoader(const LoaderSpec& spec, const std::string& file) : Loader(spec) {
    try {
      file_ = io::SafetensorsFile::open(file);
    } catch (const io::LoadError& e) {
      // A downloaded copy's faults are the object's: named by its URL, not the cache's path.
      std::string message = e.what();
      if (file != spec.path && message.starts_with(file)) message = spec.path + message.substr(file.size());
      fail(spec, e.code(), message);
    }
    const auto& tensors = file_->tensors();
    if (tensors.empty()) {
      fail(spec, kRecordsData, fmt::format("{}: the file holds no tensors, so no fields", shown_path(spec)),
           "records reads a safetensors file whose tensors share their first axis, one record a row");
    }
    const io::TensorInfo* first = nullptr;
    for (const auto& t : tensors) {
      std::string name = lang::shown_in_message(t.name);
      auto dtype = graph_dtype_of(t.dtype);
      if (!dtype) {
        fail(spec, kRecordsData,
             fmt::format("{}: tensor `{}` is {}, which no field holds: fields are F32, BF16, F64, I32, I64, BOOL, U8 "
                         "or U16",
                         shown_path(spec), name, t.dtype),
             "convert the tensor when writing the file (ids as I32 or I64, values as F32)");
      }
      if (t.shape.empty()) {
        fail(spec, kRecordsData,
             fmt::format("{}: tensor `{}` is a scalar; every tensor of a records file has a first axis of one entry a "
                         "record",
                         shown_path(spec), name));
      }
      if (!first) first = &t;
      if (t.shape[0] != first->shape[0]) {
        fail(spec, kRecordsData,
             fmt::format("{}: tensor `{}` has {} rows but `{}` has {}; the tensors of a records file share their "
                         "first axis",
                         shown_path(spec), name, t.shape[0], lang::shown_in_message(first->name), first->shape[0]));
      }
      graph::Shape shape(t.shape.begin() + 1, t.shape.end());
      fields_.push_back(FieldInfo{t.name, *dtype, shape});
      auto bytes = file_->bytes(t);
      rows_of_.push_back(RowField{bytes.data(), static_cast<size_t>(graph::numel(shape)) * graph::dtype_size(*dtype)});
    }
    size_ = first->shape[0];
    if (size_ == 0) fail(spec, kRecordsData, fmt::format("{}: the tensors have no rows", shown_path(spec)));
  }

  Batch batch(uint64_t seed, int64_t step, int64_t batch_size) const override {
    return row_batch(fields_, rows_of_, size_, seed, step, batch_size);
  }

 private:
  std::shared_ptr<const io::SafetensorsFile> file_;
  std::vector<RowField> rows_of_;
};

class JsonlLoader final : public Loader {
 public:
  JsonlLoader(const LoaderSpec& spec, const std::string& file) : Loader(spec) {
    std::string text = read_whole(spec, file);
    std::vector<Collected> collected(spec.fields.size());
    std::vector<std::pair<std::vector<int32_t>, std::vector<int32_t>>> tokenized(spec.tokenize.size());
    int64_t line = 0;
    size_t begin = 0;
    while (begin < text.size()) {
      size_t end = text.find('\n', begin);
      if (end == std::string::npos) end = text.size();
      std::string_view content(text.data() + begin, end - begin);
      begin = end + 1;
      ++line;
      if (content.find_first_not_of(" \t\r") == std::string_view::npos) continue;
      nlohmann::json object;
      try {
        object = nlohmann::json::parse(content);
      } catch (const nlohmann::json::parse_error& e) {
        std::string reason = e.what();
        size_t cut = reason.find("] ");
        if (cut != std::string::npos) reason = reason.substr(cut + 2);
        fail(spec, kJsonlData, fmt::format("{}:{}: not JSON: {}", shown_path(spec), line, reason),
             "each line of a jsonl file is one JSON object, such as {\"x\": [1, 2], \"y\": 0}");
      }
      if (!object.is_object()) {
        fail(spec, kJsonlData, fmt::format("{}:{}: {} is not a JSON object", shown_path(spec), line, kind_of(object)),
             "each line of a jsonl file is one JSON object, such as {\"x\": [1, 2], \"y\": 0}");
      }
      ++size_;
      for (size_t t = 0; t < spec.tokenize.size(); ++t) take_tokens(object, line, spec.tokenize[t], tokenized[t]);
      for (size_t f = 0; f < spec.fields.size(); ++f) {
        const std::string& name = spec.fields[f];
        auto it = object.find(name);
        if (it == object.end()) {
          fail(spec, kJsonlData,
               fmt::format("{}:{}: the object has no field `{}`{}", shown_path(spec), line,
                           lang::shown_in_message(name), keys_note(object)));
        }
        Collected& c = collected[f];
        graph::Shape shape = shape_of(*it, line, name);
        if (c.first_line == 0) {
          c.shape = shape;
          c.first_line = line;
        } else if (shape != c.shape) {
          fail(spec, kJsonlData,
               fmt::format("{}:{}: field `{}` has the shape {} here but {} at line {}; a field has one shape in every "
                           "line",
                           shown_path(spec), line, lang::shown_in_message(name), graph::shape_str(shape),
                           graph::shape_str(c.shape), c.first_line),
               "pad or cut the arrays to one length when writing the file");
        }
        take_values(*it, 0, shape, c, line, name);
      }
    }
    if (size_ == 0) {
      fail(spec, kJsonlData, fmt::format("{}: the file holds no lines, so no records", shown_path(spec)));
    }
    data_.reserve(spec.fields.size() + 2 * spec.tokenize.size());
    for (size_t f = 0; f < spec.fields.size(); ++f) {
      Collected& c = collected[f];
      if (c.integers && c.out_of_i32_line) {
        fail(spec, kJsonlData,
             fmt::format("{}:{}: field `{}` holds an integer outside i32 (-2147483648 to 2147483647); a field of "
                         "integers is i32",
                         shown_path(spec), c.out_of_i32_line, lang::shown_in_message(spec.fields[f])),
             "write it as a float (3e9) to make the field f32");
      }
      DType dtype = c.integers ? DType::i32 : DType::f32;
      Tensor values = Tensor::from_doubles(dtype, {static_cast<int64_t>(c.values.size())}, c.values);
      fields_.push_back(FieldInfo{spec.fields[f], dtype, c.shape});
      data_.emplace_back(values.bytes().begin(), values.bytes().end());
      rows_of_.push_back(
          RowField{data_.back().data(), static_cast<size_t>(graph::numel(c.shape)) * graph::dtype_size(dtype)});
    }
    // Each tokenized field's ids, then its mask.
    for (size_t t = 0; t < spec.tokenize.size(); ++t) {
      const TokenizedField& field = spec.tokenize[t];
      for (auto* values : {&tokenized[t].first, &tokenized[t].second}) {
        fields_.push_back(
            FieldInfo{values == &tokenized[t].first ? field.field : field.field + "-mask", DType::i32, {field.length}});
        data_.emplace_back(reinterpret_cast<const uint8_t*>(values->data()),
                           reinterpret_cast<const uint8_t*>(values->data() + values->size()));
        rows_of_.push_back(RowField{data_.back().data(), static_cast<size_t>(field.length) * sizeof(int32_t)});
      }
    }
  }

  Batch batch(uint64_t seed, int64_t step, int64_t batch_size) const override {
    return row_batch(fields_, rows_of_, size_, seed, step, batch_size);
  }

 private:
  // Deeper arrays than this are refused (and never recursed into).
  static constexpr size_t kMaxDepth = 32;

  // The ids and mask of a line's string field, appended to `out`.
  void take_tokens(const nlohmann::json& object, int64_t line, const TokenizedField& field,
                   std::pair<std::vector<int32_t>, std::vector<int32_t>>& out) const {
    auto it = object.find(field.field);
    if (it == object.end()) {
      fail(spec_, kJsonlData,
           fmt::format("{}:{}: the object has no field `{}`{}", shown_path(spec_), line,
                       lang::shown_in_message(field.field), keys_note(object)));
    }
    if (!it->is_string()) {
      fail(spec_, kJsonlData,
           fmt::format("{}:{}: field `{}` holds {}; a field read through a tokenizer is a string", shown_path(spec_),
                       line, lang::shown_in_message(field.field), kind_of(*it)));
    }
    text::Encoding encoding;
    try {
      encoding = field.tokenizer->encode(it->get_ref<const std::string&>(), {field.special, field.length});
    } catch (const text::TokenizerError& e) {
      fail(
          spec_, e.code(),
          fmt::format("{}:{}: field `{}`: {}", shown_path(spec_), line, lang::shown_in_message(field.field), e.what()));
    }
    out.first.insert(out.first.end(), encoding.ids.begin(), encoding.ids.end());
    out.second.insert(out.second.end(), encoding.mask.begin(), encoding.mask.end());
  }

  // A field's values over the lines read so far.
  struct Collected {
    graph::Shape shape;
    std::vector<double> values;
    bool integers = true;
    int64_t first_line = 0;       // the line that fixed the shape
    int64_t out_of_i32_line = 0;  // the first line with an integer outside i32, or 0
  };

  // The shape a value claims, read down its first elements: [] for a number.
  graph::Shape shape_of(const nlohmann::json& value, int64_t line, const std::string& name) const {
    graph::Shape shape;
    const nlohmann::json* v = &value;
    while (v->is_array()) {
      if (shape.size() == kMaxDepth) {
        fail(spec_, kJsonlData,
             fmt::format("{}:{}: field `{}` nests arrays deeper than {}", shown_path(spec_), line,
                         lang::shown_in_message(name), kMaxDepth));
      }
      shape.push_back(static_cast<int64_t>(v->size()));
      if (v->empty()) break;
      v = &(*v)[0];
    }
    if (!v->is_array() && !v->is_number()) not_a_number(*v, line, name);
    return shape;
  }

  // Appends the numbers of `value`, which must have `shape` from `depth` on.
  void take_values(const nlohmann::json& value, size_t depth, const graph::Shape& shape, Collected& c, int64_t line,
                   const std::string& name) const {
    if (depth == shape.size()) {
      if (value.is_array()) ragged(line, name);
      if (!value.is_number()) not_a_number(value, line, name);
      if (value.is_number_float()) {
        c.integers = false;
        c.values.push_back(value.get<double>());
        return;
      }
      bool fits = value.is_number_unsigned()
                      ? value.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int32_t>::max())
                      : value.get<int64_t>() >= std::numeric_limits<int32_t>::min() &&
                            value.get<int64_t>() <= std::numeric_limits<int32_t>::max();
      if (!fits && c.out_of_i32_line == 0) c.out_of_i32_line = line;
      c.values.push_back(value.is_number_unsigned() ? static_cast<double>(value.get<uint64_t>())
                                                    : static_cast<double>(value.get<int64_t>()));
      return;
    }
    if (!value.is_array()) {
      if (!value.is_number()) not_a_number(value, line, name);
      ragged(line, name);
    }
    if (static_cast<int64_t>(value.size()) != shape[depth]) ragged(line, name);
    for (const auto& item : value) take_values(item, depth + 1, shape, c, line, name);
  }

  [[noreturn]] void not_a_number(const nlohmann::json& value, int64_t line, const std::string& name) const {
    fail(spec_, kJsonlData,
         fmt::format("{}:{}: field `{}` holds {}; a field is a number or an array of numbers", shown_path(spec_), line,
                     lang::shown_in_message(name), kind_of(value)));
  }

  [[noreturn]] void ragged(int64_t line, const std::string& name) const {
    fail(spec_, kJsonlData,
         fmt::format("{}:{}: field `{}` is a ragged array: its rows differ in length or depth", shown_path(spec_), line,
                     lang::shown_in_message(name)),
         "a field is a number or an array of numbers of one fixed shape");
  }

  static std::string_view kind_of(const nlohmann::json& value) {
    switch (value.type()) {
      case nlohmann::json::value_t::null: return "null";
      case nlohmann::json::value_t::object: return "an object";
      case nlohmann::json::value_t::array: return "an array";
      case nlohmann::json::value_t::string: return "a string";
      case nlohmann::json::value_t::boolean: return "a boolean";
      default: return "a number";
    }
  }

  // "; it has the fields `a`, `b`" (at most 8 named), or "; it has no fields".
  static std::string keys_note(const nlohmann::json& object) {
    if (object.empty()) return "; it has no fields";
    std::string out;
    size_t n = 0;
    for (auto it = object.begin(); it != object.end() && n < 8; ++it, ++n) {
      out += fmt::format("{}`{}`", out.empty() ? "" : ", ", lang::shown_in_message(it.key()));
    }
    if (object.size() > n) out += fmt::format(" and {} more", object.size() - n);
    return "; it has " + out;
  }

  static std::string read_whole(const LoaderSpec& spec, const std::string& file) {
    int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail(spec, kLoaderFile, fmt::format("{}: {}", shown_path(spec), open_failure(errno)));
    std::string text;
    char chunk[1 << 16];
    while (true) {
      ssize_t got = ::read(fd, chunk, sizeof chunk);
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) {
        int err = errno;
        ::close(fd);
        fail(spec, kLoaderFile, fmt::format("{}: cannot read it: {}", shown_path(spec), std::strerror(err)));
      }
      if (got == 0) break;
      text.append(chunk, static_cast<size_t>(got));
    }
    ::close(fd);
    return text;
  }

  std::vector<std::vector<uint8_t>> data_;
  std::vector<RowField> rows_of_;
};

}  // namespace

std::string_view loader_kind_name(LoaderKind kind) {
  switch (kind) {
    case LoaderKind::TextWindows: return "text-windows";
    case LoaderKind::TokenWindows: return "token-windows";
    case LoaderKind::Records: return "records";
    case LoaderKind::Jsonl: return "jsonl";
  }
  return "text-windows";
}

std::string_view token_format_name(TokenFormat format) {
  switch (format) {
    case TokenFormat::u16: return "u16";
    case TokenFormat::u32: return "u32";
    case TokenFormat::i32: return "i32";
  }
  return "u16";
}

bool LoaderSpec::same(const LoaderSpec& other) const {
  return kind == other.kind && path == other.path && window == other.window && format == other.format &&
         fields == other.fields && tokenize == other.tokenize;
}

bool TokenizedField::operator==(const TokenizedField& other) const {
  return field == other.field && tokenizer_location == other.tokenizer_location && length == other.length &&
         special == other.special;
}

bool LoaderValue::equal(const lang::Opaque& other) const {
  const auto* loader = dynamic_cast<const LoaderValue*>(&other);
  return loader && spec.same(loader->spec);
}

const LoaderSpec* as_loader_spec(const lang::Value& value) {
  if (!value.is(lang::Type::Opaque)) return nullptr;
  const auto* loader = dynamic_cast<const LoaderValue*>(value.as<lang::Opaque>());
  return loader ? &loader->spec : nullptr;
}

const graph::Tensor* Batch::find(std::string_view name) const {
  for (const auto& [field, tensor] : fields) {
    if (field == name) return &tensor;
  }
  return nullptr;
}

void check_loader_file(const LoaderSpec& spec) {
  if (is_storage_object(spec)) {
    try {
      io::ResolvedLocation where = io::resolve_location(spec.path);
      io::S3Client(io::S3Config::from_environment()).head(where.bucket, where.key);
    } catch (const io::LoadError& e) {
      fail(spec, e.code(), e.what());
    }
    return;
  }
  struct stat st {};
  if (::stat(spec.path.c_str(), &st) != 0) {
    fail(spec, kLoaderFile, fmt::format("{}: {}", shown_path(spec), open_failure(errno)),
         spec.written.starts_with("/") ? std::string()
                                       : "a relative path is relative to the run file's folder, as :load's is");
  }
  if (S_ISDIR(st.st_mode)) fail(spec, kLoaderFile, fmt::format("{}: a directory, not a file", shown_path(spec)));
  if (!S_ISREG(st.st_mode)) fail(spec, kLoaderFile, fmt::format("{}: not a regular file", shown_path(spec)));
}

std::unique_ptr<Loader> open_loader(const LoaderSpec& spec) {
  std::string file = spec.path;
  if (is_storage_object(spec)) {
    try {
      file = io::cached_object(io::resolve_location(spec.path));
    } catch (const io::LoadError& e) {
      fail(spec, e.code(), e.what());
    }
  } else {
    check_loader_file(spec);
  }
  switch (spec.kind) {
    case LoaderKind::TextWindows:
    case LoaderKind::TokenWindows: return std::make_unique<WindowLoader>(spec, file);
    case LoaderKind::Records: return std::make_unique<RecordsLoader>(spec, file);
    case LoaderKind::Jsonl: return std::make_unique<JsonlLoader>(spec, file);
  }
  throw std::logic_error("open_loader: an unknown loader kind");
}

int64_t shuffled_row(uint64_t seed, uint64_t epoch, int64_t index, int64_t rows) {
  if (rows < 1 || rows > (int64_t{1} << 62) || index < 0 || index >= rows) {
    throw std::invalid_argument(fmt::format("shuffled_row: index {} of {} rows", index, rows));
  }
  // A balanced Feistel network permutes [0, 2^bits); walking the cycle from `index` until
  // it lands below `rows` permutes [0, rows). 2^bits < 4 * rows, so a few steps suffice.
  int bits = 2;
  while ((uint64_t{1} << bits) < static_cast<uint64_t>(rows)) bits += 2;
  const int half = bits / 2;
  const uint64_t mask = (uint64_t{1} << half) - 1;
  const graph::PhiloxKey key = key_of(seed);
  uint64_t y = static_cast<uint64_t>(index);
  do {
    uint64_t left = y >> half, right = y & mask;
    for (uint32_t round = 0; round < 6; ++round) {
      auto drawn = graph::philox4x32_10(
          {static_cast<uint32_t>(right), lo32(epoch), hi32(epoch), kPermutationStream | round}, key);
      uint64_t next = left ^ (drawn[0] & mask);
      left = right;
      right = next;
    }
    y = left << half | right;
  } while (y >= static_cast<uint64_t>(rows));
  return static_cast<int64_t>(y);
}

}  // namespace sx::train
