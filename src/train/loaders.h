// Loaders (docs/training.md): records of named, fixed-shape fields read from a file,
// batched on a new leading axis. Which records a batch holds is a function of the seed,
// the step and the batch size alone, so a resumed run sees the batches an unbroken one saw.
//
//   (text-windows PATH :window N)                 field `ids`, i32 [N+1]: the file's bytes
//   (token-windows PATH :window N :dtype :u16)    field `ids`, i32 [N+1]: little-endian
//                                                 u16, u32 or i32 tokens
//   (records PATH)                                a safetensors file whose tensors share
//                                                 their first axis: one field a tensor, one
//                                                 record a row, each in its stored dtype
//   (jsonl PATH :fields [:x :y])                  one JSON object a line; each field a
//                                                 number or a fixed-shape array of them:
//                                                 i32 when all its values are integers,
//                                                 else f32
//     :tokenize (:field :text :with TK :length N) and a string field read through a
//                                                 tokenizer (docs/tokenizers.md): field
//                                                 `text`, i32 [N], the ids cut or padded,
//                                                 and `text-mask`, i32 [N], 1 on tokens
//                                                 and 0 on padding
//
// A window is N+1 tokens so that a language model reads N inputs and N targets shifted by
// one from one record: inputs (slice ids 0 N), targets (slice ids 1 N+1). Window starts are
// uniform over the file (any offset, not only multiples of N). Tokens are i32, the
// language's integer, so that ids index an embedding and take arithmetic without the
// wrap-around of u8 or u16.
//
// Records and jsonl lines are read as epochs: sample g of the run (g = step * batch + i)
// is row perm_e(g mod rows) of epoch e = g / rows, perm_e a permutation drawn from the
// seed and e, so each epoch reads every row once. Windows draw sample g's start from the
// seed and g. Both use the Philox generator (graph/philox.h).
//
// PATH is any location (docs/locations.md): a path, file://, s3://, o41://. An object on
// S3 is checked (HEAD) when the constructor is called and downloaded into the local
// cache when the loader is opened (io/storage_cache.h: once per version of the object);
// the loader reads that copy as a local file.
//
// Errors are lang::Error with an E-RUN code and the span of the loader's call: arguments
// when the constructor is called (E-RUN-020), a file that cannot be read when it is
// called and when it is opened (E-RUN-021), and data that is not what the loader reads
// when it is opened or read (E-RUN-022, E-RUN-023, E-RUN-024). A faulty safetensors file
// keeps its E-LOAD code, and a storage location its E-LOC code, naming its URL.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "graph/dtype.h"
#include "graph/shape.h"
#include "graph/tensor.h"
#include "lang/interp.h"
#include "lang/value.h"
#include "text/tokenizer.h"

namespace sx::train {

inline constexpr const char* kLoaderArguments = "E-RUN-020";  // a loader's arguments
inline constexpr const char* kLoaderFile = "E-RUN-021";       // its file cannot be read
inline constexpr const char* kTokenData = "E-RUN-022";        // a text or token file
inline constexpr const char* kRecordsData = "E-RUN-023";      // a records (safetensors) file
inline constexpr const char* kJsonlData = "E-RUN-024";        // a jsonl file

enum class LoaderKind { TextWindows, TokenWindows, Records, Jsonl };
// "text-windows", "token-windows", "records", "jsonl": the constructor's name.
std::string_view loader_kind_name(LoaderKind kind);

// How token-windows reads its file: each token 2 or 4 little-endian bytes.
enum class TokenFormat { u16, u32, i32 };
std::string_view token_format_name(TokenFormat format);  // "u16", ...

// A jsonl string field read through a tokenizer: fields NAME (the ids) and NAME-mask.
struct TokenizedField {
  std::string field;
  std::shared_ptr<const text::Tokenizer> tokenizer;
  std::string tokenizer_written;   // the tokenizer's path as its call wrote it, for printing
  std::string tokenizer_location;  // and resolved (what `export` copies)
  int64_t length = 0;
  bool special = true;  // with the special tokens the post-processor adds

  bool operator==(const TokenizedField& other) const;
};

// What a loader's constructor was called with: the value `:data` holds.
struct LoaderSpec {
  LoaderKind kind = LoaderKind::TextWindows;
  std::string written;                    // the path as the run file wrote it
  std::string path;                       // resolved: relative to the run file's folder; or an
                                          // s3:// URL (s3://, or o41:// under an s3:// root)
  int64_t window = 0;                     // text-windows, token-windows: a record is window+1 tokens
  TokenFormat format = TokenFormat::u16;  // token-windows
  std::vector<std::string> fields;        // jsonl: the keys, in the order written
  std::vector<TokenizedField> tokenize;   // jsonl: string fields read through a tokenizer
  lang::Span span;                        // the constructor's call, for errors

  // The call that makes this spec again: (text-windows "data.txt" :window 64).
  std::string print() const;
  // The same loader (the span aside).
  bool same(const LoaderSpec& other) const;
};

// The Lisp value of a loader: its spec. It prints as its call.
class LoaderValue final : public lang::Opaque {
 public:
  explicit LoaderValue(LoaderSpec spec) : spec(std::move(spec)) {}
  std::string type_label() const override { return "a loader"; }
  std::string print() const override { return spec.print(); }
  bool equal(const lang::Opaque& other) const override;

  const LoaderSpec spec;
};

// The spec a value holds, or nullptr when it is not a loader.
const LoaderSpec* as_loader_spec(const lang::Value& value);

// Installs text-windows, token-windows, records and jsonl.
void install_loaders(lang::Interpreter& interp);

// One field of a loader's records: its name (what `(field batch :NAME)` reads), its dtype
// and the shape of one record's value, without the batch axis.
struct FieldInfo {
  std::string name;
  graph::DType dtype = graph::DType::i32;
  graph::Shape shape;

  bool operator==(const FieldInfo&) const = default;
};

// One batch: a host tensor per field, in the order of Loader::fields(), each of shape
// [batch_size, ...the field's shape].
struct Batch {
  std::vector<std::pair<std::string, graph::Tensor>> fields;

  // The tensor of a field; nullptr when there is none of that name.
  const graph::Tensor* find(std::string_view name) const;
};

class Loader {
 public:
  virtual ~Loader() = default;

  const LoaderSpec& spec() const { return spec_; }
  const std::vector<FieldInfo>& fields() const { return fields_; }
  // How many distinct records there are: rows (records, jsonl), or window starts
  // (text-windows, token-windows).
  int64_t size() const { return size_; }

  // The batch of `step`: records step*batch_size ... step*batch_size + batch_size - 1 of
  // the run. A pure function of (seed, step, batch_size) and the file: the same arguments
  // give the same bytes, whatever was asked before. Safe to call from several threads.
  // Throws lang::Error (E-RUN-02N) when the file holds what cannot be read (a token out of
  // range, a file cut short since it was opened); std::invalid_argument when step < 0,
  // batch_size < 1 or step * batch_size overflows.
  virtual Batch batch(uint64_t seed, int64_t step, int64_t batch_size) const = 0;

 protected:
  explicit Loader(LoaderSpec spec) : spec_(std::move(spec)) {}

  LoaderSpec spec_;
  std::vector<FieldInfo> fields_;
  int64_t size_ = 0;
};

// E-RUN-021 naming the file when the spec's path is not a readable regular file: a stat,
// cheap enough for the constructors (and so `sexpgpu check`) to call. An object on S3
// is asked for its size (HEAD), not downloaded: E-LOC-004 when it is not there.
void check_loader_file(const LoaderSpec& spec);

// Opens the spec's file and checks what it holds: E-RUN-021 when it cannot be read,
// E-RUN-022/023/024 (or the E-LOAD code of a faulty safetensors file) when it does not
// hold what the loader reads, each naming the file and where (line, byte offset, tensor).
std::unique_ptr<Loader> open_loader(const LoaderSpec& spec);

// The row of sample `index` (< rows) of epoch `epoch`: a permutation of [0, rows) for each
// (seed, epoch), computed alone (a Feistel network over Philox, cycle-walked to [0, rows)).
int64_t shuffled_row(uint64_t seed, uint64_t epoch, int64_t index, int64_t rows);

}  // namespace sx::train
