// Oniguruma patterns on ICU's regex engine (see regex.h).
#include "text/regex.h"

#include <fmt/format.h>
#include <unicode/regex.h>
#include <unicode/unistr.h>

#include "text/tokenizer.h"
#include "text/unicode.h"

namespace sx::text {
namespace {

// The pattern with Oniguruma's \s and \S spelled as ICU reads them the same.
std::string icu_pattern(std::string_view pattern) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '\\' || i + 1 == pattern.size()) {
      out += pattern[i];
      continue;
    }
    char next = pattern[++i];
    switch (next) {
      case 's': out += "\\p{White_Space}"; break;
      case 'S': out += "\\P{White_Space}"; break;
      default: out += '\\'; out += next;
    }
  }
  return out;
}

}  // namespace

struct Regex::Compiled {
  std::unique_ptr<icu::RegexPattern> pattern;
};

Regex::Regex(std::string_view pattern, std::string_view where) : compiled_(std::make_unique<Compiled>()) {
  std::string rewritten = icu_pattern(pattern);
  UParseError parse_error{};
  UErrorCode status = U_ZERO_ERROR;
  compiled_->pattern.reset(icu::RegexPattern::compile(
      icu::UnicodeString::fromUTF8(icu::StringPiece(rewritten.data(), static_cast<int32_t>(rewritten.size()))), 0,
      parse_error, status));
  if (U_FAILURE(status)) {
    throw TokenizerError(kTokenizerUnsupported, fmt::format("{}: the regex `{}` is not one this reader runs ({})",
                                                            where, pattern, u_errorName(status)));
  }
}

Regex::~Regex() = default;

std::vector<std::pair<size_t, size_t>> Regex::find_all(std::string_view utf8) const {
  // The text in UTF-16 for ICU, and each UTF-16 index's byte offset to map matches back.
  icu::UnicodeString text;
  std::vector<size_t> byte_at;
  size_t offset = 0;
  for (char32_t c : code_points(utf8)) {
    byte_at.push_back(offset);
    if (c >= 0x10000) byte_at.push_back(offset);
    text.append(static_cast<UChar32>(c));
    offset += utf8_length(c);
  }
  byte_at.push_back(offset);
  std::vector<std::pair<size_t, size_t>> found;
  UErrorCode status = U_ZERO_ERROR;
  std::unique_ptr<icu::RegexMatcher> matcher(compiled_->pattern->matcher(text, status));
  if (U_FAILURE(status)) return found;
  while (matcher->find(status) && U_SUCCESS(status)) {
    int32_t begin = matcher->start(status), end = matcher->end(status);
    if (U_FAILURE(status)) break;
    if (end > begin) found.emplace_back(byte_at[begin], byte_at[end]);
  }
  return found;
}

std::string Regex::replace_all(std::string_view utf8, std::string_view content) const {
  std::string out;
  size_t at = 0;
  for (auto [begin, end] : find_all(utf8)) {
    out.append(utf8.substr(at, begin - at));
    out += content;
    at = end;
  }
  out.append(utf8.substr(at));
  return out;
}

std::string Regex::escaped(std::string_view literal) {
  std::string out;
  for (char c : literal) {
    if (std::string_view("\\^$.|?*+()[]{}-&#/ ").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

}  // namespace sx::text
