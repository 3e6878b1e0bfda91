// The Unicode a tokenizer needs (ICU underneath): UTF-8 to code points and back,
// character properties, normalization forms and lowercasing, and UTF-8 decoding that
// replaces what is not UTF-8 as the `tokenizers` package does.
#pragma once

#include <string>
#include <string_view>

namespace sx::text {

// The code points of UTF-8 (U+FFFD for each part that is not: check it with
// first_invalid_utf8 first), and a code point's length in UTF-8.
std::u32string code_points(std::string_view utf8);
size_t utf8_length(char32_t c);
std::string utf8_of(std::u32string_view code_points);
void append_utf8(std::string& out, char32_t c);

// The byte offset of the first byte that is not part of valid UTF-8, or npos.
size_t first_invalid_utf8(std::string_view bytes);
// Bytes as UTF-8 text, each maximal ill-formed part replaced by one U+FFFD (as Rust's
// String::from_utf8_lossy does).
std::string utf8_lossy(std::string_view bytes);

enum class NormalForm { NFC, NFD, NFKC, NFKD };
std::string normalized(std::string_view utf8, NormalForm form);
// Each code point lowercased alone, with its full mapping (no context, so a final
// sigma is σ).
std::string lowercased(std::string_view utf8);

bool is_white_space(char32_t c);      // the White_Space property
bool is_punctuation(char32_t c);      // ASCII punctuation or a P* category
bool is_other(char32_t c);            // Cc, Cf, Cs, Co or Cn
bool is_nonspacing_mark(char32_t c);  // Mn
bool is_mark(char32_t c);             // Mn, Mc or Me
bool is_alphanumeric(char32_t c);     // Alphabetic or an N* category
bool is_numeric(char32_t c);          // an N* category

}  // namespace sx::text
