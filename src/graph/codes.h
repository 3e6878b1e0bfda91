// A diagnostic code's row: its title and long explanation, which `sexpgpu explain-error`
// prints. Each part keeps the rows of the codes it raises in its own codes.cc (io the
// E-LOAD and E-CKPT rows, serve the E-SERVE rows, ...), beside the code that raises them;
// the cli gathers them all.
#pragma once

#include <span>
#include <string_view>

namespace sx::graph {

struct CodeInfo {
  std::string_view code;         // "E-READ-001"
  std::string_view title;        // "unterminated list or vector"
  std::string_view explanation;  // several paragraphs, with an example and the fix
};

// graph's own: E-MEM (the memory limit, graph/memory.h).
std::span<const CodeInfo> codes();

}  // namespace sx::graph
