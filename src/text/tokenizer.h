// Hugging Face tokenizers (docs/tokenizers.md): a `tokenizer.json` read into the same
// pipeline the `tokenizers` package runs, so that text gives the ids it gives:
//
//   added tokens  split out of the raw text first (those marked normalized after the
//                 normalizer), each its own id
//   normalizer    BertNormalizer, Lowercase, NFC/NFD/NFKC/NFKD, StripAccents, Strip,
//                 Prepend, Replace, Sequence
//   pre-tokenizer BertPreTokenizer, ByteLevel, Split, Metaspace, Whitespace,
//                 WhitespaceSplit, Digits, Sequence
//   model         WordPiece, BPE (merges by rank, byte fallback, fused unknowns)
//   post-processor TemplateProcessing, BertProcessing, RobertaProcessing, ByteLevel,
//                 Sequence
//   decoder       WordPiece, ByteLevel, Metaspace, ByteFallback, Fuse, Strip, Replace,
//                 BPEDecoder, Sequence
//   truncation and padding as the file sets them.
//
// Whatever else a file holds (another kind of any stage, an option that changes what a
// kind does) is refused by name with E-TOKEN-002, never run differently. The reader
// reads text, not files: the caller reads the file (from any location) and names it.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "graph/codes.h"

namespace sx::text {

inline constexpr const char* kTokenizerFile = "E-TOKEN-001";         // not JSON, or not a tokenizer.json
inline constexpr const char* kTokenizerUnsupported = "E-TOKEN-002";  // a kind or option this reader does not run
inline constexpr const char* kTokenizerVocabulary = "E-TOKEN-003";   // tokens it names that its vocabulary lacks
inline constexpr const char* kTokenizerText = "E-TOKEN-004";         // text that is not UTF-8
inline constexpr const char* kTokenizerIds = "E-TOKEN-005";          // an id that is no token
inline constexpr const char* kTokenizerLength = "E-TOKEN-006";       // a length the special tokens do not fit

// The E-TOKEN codes with their texts (the rows `sexpgpu explain` shows).
std::span<const graph::CodeInfo> codes();

class TokenizerError : public std::runtime_error {
 public:
  TokenizerError(std::string code, const std::string& message) : std::runtime_error(message), code_(std::move(code)) {}
  const std::string& code() const { return code_; }

 private:
  std::string code_;
};

struct Encoding {
  std::vector<int32_t> ids;
  std::vector<int32_t> mask;  // 1 for a token, 0 for padding
};

struct EncodeOptions {
  bool add_special_tokens = true;
  // When positive: exactly this many ids, cut (before the post-processor's special
  // tokens are added, as truncation does) or padded, in place of the file's own
  // truncation and padding.
  int64_t length = 0;
};

class Tokenizer {
 public:
  // Reads a tokenizer.json's text; `name` (its path) starts each error's message.
  // Throws TokenizerError.
  static std::shared_ptr<const Tokenizer> parse(std::string_view json_text, std::string_view name);
  ~Tokenizer();

  // Throws TokenizerError: E-TOKEN-004 for text that is not UTF-8, E-TOKEN-006 when the
  // length leaves no room for the special tokens.
  Encoding encode(std::string_view text, const EncodeOptions& options = {}) const;
  // The text of `ids`, special tokens left out unless `skip_special` is false. Throws
  // TokenizerError E-TOKEN-005 for an id that is no token.
  std::string decode(std::span<const int32_t> ids, bool skip_special = true) const;

  // The model's kind ("WordPiece", "BPE") and its number of ids (added tokens included).
  std::string model_kind() const;
  int64_t vocab_size() const;

  struct Pipeline;  // the stages, defined in tokenizer.cc

 private:
  explicit Tokenizer(std::unique_ptr<Pipeline> pipeline);
  std::unique_ptr<Pipeline> pipeline_;
};

}  // namespace sx::text
