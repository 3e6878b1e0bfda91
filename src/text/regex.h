// The regular expressions of tokenizer.json (Oniguruma's syntax, as `tokenizers` reads
// them) run by ICU's engine. \s and \S, which ICU takes narrower (without \v and U+0085),
// are rewritten to the White_Space property that Oniguruma reads them as; \w is the
// same in both (Unicode's word characters).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sx::text {

class Regex {
 public:
  // Throws TokenizerError (E-TOKEN-002) naming `where` when ICU cannot compile it.
  Regex(std::string_view pattern, std::string_view where);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // The non-empty matches, left to right, as UTF-8 byte ranges [begin, end).
  std::vector<std::pair<size_t, size_t>> find_all(std::string_view utf8) const;

  // `utf8` with each match replaced by `content`.
  std::string replace_all(std::string_view utf8, std::string_view content) const;

  // A regex that matches `literal` as it is.
  static std::string escaped(std::string_view literal);

 private:
  struct Compiled;
  std::unique_ptr<Compiled> compiled_;
};

}  // namespace sx::text
