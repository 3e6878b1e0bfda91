// The ids and text SexpGPU's tokenizer gives, for compare_tokenizers.py to set beside the
// `tokenizers` package's:
//
//   tokenizer_dump TOKENIZER_JSON STRINGS_JSONL
//
// prints one JSON line a string: {"ids": [...], "text": decode(ids)}, or
// {"error": CODE, "message": ...}; an unreadable tokenizer prints one error line.
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "text/tokenizer.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: tokenizer_dump TOKENIZER_JSON STRINGS_JSONL\n";
    return 2;
  }
  auto read = [](const char* path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  };
  try {
    auto tk = sx::text::Tokenizer::parse(read(argv[1]), argv[1]);
    std::ifstream strings(argv[2], std::ios::binary);
    std::string line;
    while (std::getline(strings, line)) {
      nlohmann::json out;
      try {
        auto enc = tk->encode(nlohmann::json::parse(line).get<std::string>());
        out["ids"] = enc.ids;
        out["text"] = tk->decode(enc.ids);
      } catch (const sx::text::TokenizerError& e) {
        out = {{"error", e.code()}, {"message", e.what()}};
      }
      std::cout << out.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace) << "\n";
    }
  } catch (const sx::text::TokenizerError& e) {
    std::cout << nlohmann::json{{"error", e.code()}, {"message", e.what()}}.dump() << "\n";
  }
  return 0;
}
