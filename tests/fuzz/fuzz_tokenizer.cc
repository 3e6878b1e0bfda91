// libFuzzer target: arbitrary bytes as a tokenizer.json, then as text. A file that parses
// encodes and decodes a few texts; the seed tokenizer (corpus/fuzz_tokenizer/bert.json,
// read from $SEXPGPU_FUZZ_TOKENIZER when set) encodes the bytes as text and decodes what
// it gives. A TokenizerError is the expected answer to bad input; anything else (a crash,
// a sanitizer report, another exception, a hang) is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "text/tokenizer.h"

namespace {

void round_trip(const sx::text::Tokenizer& tk, std::string_view text) {
  try {
    auto encoding = tk.encode(text);
    (void)tk.decode(encoding.ids);
    (void)tk.decode(encoding.ids, false);
    (void)tk.encode(text, {.add_special_tokens = true, .length = 7});
  } catch (const sx::text::TokenizerError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    auto tk = sx::text::Tokenizer::parse(bytes, "<fuzz>");
    for (const char* text : {"", "Hello, world! naïve café 東京 😀", "  a\tb\nc  ", "[CLS]x<s>y</s>"}) {
      round_trip(*tk, text);
    }
  } catch (const sx::text::TokenizerError&) {
  }
  static const auto seed = [] {
    const char* path = std::getenv("SEXPGPU_FUZZ_TOKENIZER");
    std::ifstream in(path ? path : "tests/fuzz/corpus/fuzz_tokenizer/bert.json", std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    try {
      return sx::text::Tokenizer::parse(text.str(), "seed");
    } catch (const sx::text::TokenizerError&) {
      return std::shared_ptr<const sx::text::Tokenizer>();
    }
  }();
  if (seed) round_trip(*seed, bytes);
  return 0;
}
