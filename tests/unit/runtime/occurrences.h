// How often a text holds another: what the tests of the cpu device's programs count in its
// profile (SEXPGPU_CPU_PROFILE), a line per step.
#pragma once

#include <cstddef>
#include <string>

namespace sx::testing {

inline size_t occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace sx::testing
