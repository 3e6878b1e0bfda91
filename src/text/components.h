// The stages of a tokenizer's pipeline (tokenizer.h), each built from its object in the
// tokenizer.json; a null object is no stage (nullptr).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "text/json_fields.h"
#include "text/regex.h"

namespace sx::text {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual std::string normalize(std::string text) const = 0;
};

// A piece of text on its way to the model; `at_start` when it begins where the input
// begins (Metaspace's prepend_scheme "first" reads it).
struct Piece {
  std::string text;
  bool at_start = false;
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Splits (and may rewrite) each piece; empty pieces are dropped.
  virtual std::vector<Piece> split(std::vector<Piece> pieces) const = 0;
};

class Model {
 public:
  virtual ~Model() = default;
  virtual void tokenize(std::string_view word, std::vector<int32_t>& ids) const = 0;
  std::optional<int32_t> id_of(std::string_view token) const;
  const std::string* token_of(int32_t id) const;
  int64_t size() const { return size_; }  // one past the largest id
  virtual std::string kind() const = 0;

 protected:
  // Reads the "vocab" object (token -> id); ids must be unique and non-negative.
  void read_vocab(const Json& vocab, const Where& where);
  std::unordered_map<std::string, int32_t> ids_;
  std::unordered_map<int32_t, std::string> tokens_;  // the last token read of each id
  int64_t size_ = 0;
};

// The ids a post-processor puts around a sequence.
class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  virtual size_t added_count() const = 0;
  virtual std::vector<int32_t> process(std::vector<int32_t> ids) const = 0;
};

class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual std::vector<std::string> decode_chain(std::vector<std::string> tokens) const = 0;
};

std::unique_ptr<Normalizer> make_normalizer(const Json& object, const Where& where);
std::unique_ptr<PreTokenizer> make_pre_tokenizer(const Json& object, const Where& where);
std::unique_ptr<Model> make_model(const Json& object, const Where& where);
// Token names resolve to ids through `id_of` (the model and the added tokens).
std::unique_ptr<PostProcessor> make_post_processor(const Json& object, const Where& where);
std::unique_ptr<Decoder> make_decoder(const Json& object, const Where& where);

// The regex of a `pattern` object: {"String": literal} or {"Regex": pattern}.
std::unique_ptr<Regex> pattern_of(const Json& object, const Where& where);

// A Sequence stage: the stages listed under `key` (null ones left out), each in turn on
// what the one before gave.
template <class Stage, class Value, Value (Stage::*apply)(Value) const>
class SequenceOf : public Stage {
 public:
  SequenceOf(const Json& object, std::string_view key, const Where& where,
             std::unique_ptr<Stage> (*make)(const Json&, const Where&)) {
    const Json& items = array_at(object, key, where);
    for (size_t i = 0; i < items.size(); ++i) {
      if (auto stage = make(items[i], where.at(key).at(i))) stages_.push_back(std::move(stage));
    }
  }

 protected:
  Value run(Value value) const {
    for (const auto& stage : stages_) value = ((*stage).*apply)(std::move(value));
    return value;
  }
  std::vector<std::unique_ptr<Stage>> stages_;
};

// The characters GPT-2's byte-level alphabet gives each byte, and back.
const std::u32string& byte_level_chars();
std::optional<uint8_t> byte_of_level_char(char32_t c);

}  // namespace sx::text
