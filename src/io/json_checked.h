// JSON read with the checks nlohmann leaves out, for the headers and indexes of weight
// files: a key twice in one object (nlohmann keeps the last in silence) and nesting deeper
// than the format ever goes. In time linear in the text, however many entries it has.
// Internal to src/io.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace sx::io {

struct CheckedJson {
  nlohmann::json value;
  std::vector<std::string> top_keys;  // the top-level object's keys, in their order
};

// Parses `text`. Throws LoadError with `code`, its message beginning with `what`
// ("model.safetensors: the header"), when the text is not JSON, has a key twice in one
// object, or nests objects and arrays more than `max_depth` deep.
CheckedJson parse_json_checked(std::string_view text, const std::string& what, const char* code, size_t max_depth);

}  // namespace sx::io
