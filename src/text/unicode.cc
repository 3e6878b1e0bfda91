// Unicode helpers over ICU (see unicode.h).
#include "text/unicode.h"

#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>
#include <unicode/ustring.h>
#include <unicode/utf8.h>

#include <stdexcept>

namespace sx::text {
namespace {

// The length of the UTF-8 sequence that starts at `at`, or 0 when none does (and in
// `valid` the bytes that begin a valid sequence, for the lossy decoder).
size_t sequence_length(std::string_view s, size_t at, size_t* valid_prefix) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  unsigned char b = byte(at);
  size_t need = 0;
  unsigned char lo = 0x80, hi = 0xBF;
  if (b < 0x80) return 1;
  if (b >= 0xC2 && b <= 0xDF) need = 1;
  else if (b == 0xE0) need = 2, lo = 0xA0;
  else if (b == 0xED) need = 2, hi = 0x9F;
  else if (b >= 0xE1 && b <= 0xEF) need = 2;
  else if (b == 0xF0) need = 3, lo = 0x90;
  else if (b == 0xF4) need = 3, hi = 0x8F;
  else if (b >= 0xF1 && b <= 0xF3) need = 3;
  else {
    *valid_prefix = 0;
    return 0;
  }
  for (size_t k = 1; k <= need; ++k) {
    unsigned char lower = k == 1 ? lo : 0x80, upper = k == 1 ? hi : 0xBF;
    if (at + k >= s.size() || byte(at + k) < lower || byte(at + k) > upper) {
      *valid_prefix = k;
      return 0;
    }
  }
  return need + 1;
}

icu::UnicodeString unicode_of(std::string_view utf8) {
  return icu::UnicodeString::fromUTF8(icu::StringPiece(utf8.data(), static_cast<int32_t>(utf8.size())));
}

std::string utf8_of_icu(const icu::UnicodeString& s) {
  std::string out;
  s.toUTF8String(out);
  return out;
}

}  // namespace

void append_utf8(std::string& out, char32_t c) {
  char bytes[U8_MAX_LENGTH];
  int32_t n = 0;
  U8_APPEND_UNSAFE(bytes, n, static_cast<UChar32>(c));
  out.append(bytes, static_cast<size_t>(n));
}

std::u32string code_points(std::string_view utf8) {
  std::u32string out;
  out.reserve(utf8.size());
  const size_t length = utf8.size();
  for (size_t i = 0; i < length;) {
    UChar32 c = 0;
    U8_NEXT(utf8.data(), i, length, c);
    out += static_cast<char32_t>(c < 0 ? 0xFFFD : c);
  }
  return out;
}

size_t utf8_length(char32_t c) { return U8_LENGTH(static_cast<UChar32>(c)); }

std::string utf8_of(std::u32string_view code_points) {
  std::string out;
  out.reserve(code_points.size());
  for (char32_t c : code_points) append_utf8(out, c);
  return out;
}

size_t first_invalid_utf8(std::string_view bytes) {
  for (size_t i = 0; i < bytes.size();) {
    size_t valid = 0, n = sequence_length(bytes, i, &valid);
    if (n == 0) return i;
    i += n;
  }
  return std::string_view::npos;
}

std::string utf8_lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (size_t i = 0; i < bytes.size();) {
    size_t valid = 0, n = sequence_length(bytes, i, &valid);
    if (n) {
      out.append(bytes.substr(i, n));
      i += n;
    } else {
      out += "\xEF\xBF\xBD";
      i += valid ? valid : 1;
    }
  }
  return out;
}

std::string normalized(std::string_view utf8, NormalForm form) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* n = form == NormalForm::NFC    ? icu::Normalizer2::getNFCInstance(status)
                              : form == NormalForm::NFD  ? icu::Normalizer2::getNFDInstance(status)
                              : form == NormalForm::NFKC ? icu::Normalizer2::getNFKCInstance(status)
                                                         : icu::Normalizer2::getNFKDInstance(status);
  if (U_FAILURE(status)) throw std::runtime_error("ICU has no normalization data");
  icu::UnicodeString out = n->normalize(unicode_of(utf8), status);
  if (U_FAILURE(status)) throw std::runtime_error("ICU could not normalize the text");
  return utf8_of_icu(out);
}

std::string lowercased(std::string_view utf8) {
  std::string out;
  out.reserve(utf8.size());
  for (char32_t c : code_points(utf8)) {
    if (c < 0x80) {
      out += static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
      continue;
    }
    UChar in[2], lower[8];
    int32_t in_len = 0;
    U16_APPEND_UNSAFE(in, in_len, static_cast<UChar32>(c));
    UErrorCode status = U_ZERO_ERROR;
    int32_t n = u_strToLower(lower, 8, in, in_len, "", &status);
    if (U_FAILURE(status)) {
      append_utf8(out, c);
      continue;
    }
    out += utf8_of_icu(icu::UnicodeString(lower, n));
  }
  return out;
}

bool is_white_space(char32_t c) { return u_hasBinaryProperty(static_cast<UChar32>(c), UCHAR_WHITE_SPACE); }

bool is_punctuation(char32_t c) {
  if (c < 0x80)
    return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) || (c >= 0x7B && c <= 0x7E);
  return u_ispunct(static_cast<UChar32>(c));
}

bool is_other(char32_t c) {
  switch (u_charType(static_cast<UChar32>(c))) {
    case U_CONTROL_CHAR:
    case U_FORMAT_CHAR:
    case U_SURROGATE:
    case U_PRIVATE_USE_CHAR: return true;
    default: return false;
  }
}

bool is_nonspacing_mark(char32_t c) { return u_charType(static_cast<UChar32>(c)) == U_NON_SPACING_MARK; }

bool is_mark(char32_t c) { return U_GET_GC_MASK(static_cast<UChar32>(c)) & U_GC_M_MASK; }

bool is_alphanumeric(char32_t c) {
  return u_hasBinaryProperty(static_cast<UChar32>(c), UCHAR_ALPHABETIC) || is_numeric(c);
}

bool is_numeric(char32_t c) {
  auto t = u_charType(static_cast<UChar32>(c));
  return t == U_DECIMAL_DIGIT_NUMBER || t == U_LETTER_NUMBER || t == U_OTHER_NUMBER;
}

}  // namespace sx::text
