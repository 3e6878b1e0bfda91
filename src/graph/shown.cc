// Shortening user text for messages.
#include "graph/shown.h"

#include <fmt/format.h>

#include <algorithm>

namespace sx::graph {

std::string shown_in_message(std::string_view text) {
  constexpr size_t kWhole = 160, kCut = 80;
  auto starts_code_point = [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; };
  size_t length = static_cast<size_t>(std::count_if(text.begin(), text.end(), starts_code_point));
  bool cut = length > kWhole;
  std::string out;
  size_t shown = 0;
  for (char c : text) {
    if (cut && starts_code_point(c) && shown++ == kCut) {
      out += fmt::format("... ({} characters)", length);
      break;
    }
    auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7F) out += fmt::format("\\u{{{:x}}}", byte);
    else out += c;
  }
  return out;
}

}  // namespace sx::graph
