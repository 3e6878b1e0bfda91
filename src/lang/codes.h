// The table of every diagnostic code: its one-line title and its long explanation,
// which `sexpgpu explain-error CODE` prints.
#pragma once

#include <span>
#include <string_view>

namespace sx::lang {

struct CodeInfo {
  std::string_view code;         // "E-READ-001"
  std::string_view title;        // "unterminated list or vector"
  std::string_view explanation;  // several paragraphs, with an example and the fix
};

std::span<const CodeInfo> all_codes();
// nullptr when the code is unknown; case-insensitive.
const CodeInfo* find_code(std::string_view code);

}  // namespace sx::lang
