// Tokenizers in the language (docs/tokenizers.md): `(tokenizer PATH)` reads a Hugging
// Face tokenizer.json from any location (docs/locations.md) into a value that `encode`
// and `decode` take, and a loader's `:tokenize` (train/loaders.h).
#pragma once

#include <memory>
#include <string>

#include "lang/interp.h"
#include "lang/value.h"
#include "text/tokenizer.h"

namespace sx::model {

class TokenizerValue final : public lang::Opaque {
 public:
  TokenizerValue(std::shared_ptr<const text::Tokenizer> tokenizer, std::string written, std::string location)
      : tokenizer(std::move(tokenizer)), written(std::move(written)), location(std::move(location)) {}
  std::string type_label() const override { return "a tokenizer"; }
  // (tokenizer "PATH"), as written.
  std::string print() const override;

  const std::shared_ptr<const text::Tokenizer> tokenizer;
  const std::string written;   // the path as the file wrote it
  const std::string location;  // resolved: relative to the file's folder, or a storage URL
};

inline const TokenizerValue* as_tokenizer(const lang::Value& v) {
  return v.is(lang::Type::Opaque) ? dynamic_cast<const TokenizerValue*>(v.as<lang::Opaque>()) : nullptr;
}

// Throws lang::Error at `span` with the TokenizerError's code and message.
[[noreturn]] void fail_tokenizer(const text::TokenizerError& e, lang::Span span);

// Installs tokenizer, encode and decode.
void install_tokenizers(lang::Interpreter& interp);

}  // namespace sx::model
