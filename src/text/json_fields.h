// Reading a tokenizer.json's objects with errors that name the field: E-TOKEN-001 for a
// field missing or of the wrong type, E-TOKEN-002 for a kind or an option not run.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace sx::text {

using Json = nlohmann::json;

// "FILE: the field `model.vocab` ..." errors are built from a Where: the file's name and
// the path of the field within it.
struct Where {
  std::string file;
  std::string path;
  Where at(std::string_view key) const;
  Where at(size_t index) const;
  std::string shown() const;  // "FILE: `model.vocab`"
};

[[noreturn]] void malformed(const Where& where, std::string_view what);
[[noreturn]] void unsupported(const Where& where, std::string_view what);

const Json& field(const Json& object, std::string_view key, const Where& where);  // present
const Json& object_at(const Json& object, std::string_view key, const Where& where);
const Json& array_at(const Json& object, std::string_view key, const Where& where);
std::string string_at(const Json& object, std::string_view key, const Where& where);
bool bool_at(const Json& object, std::string_view key, const Where& where, bool fallback);
int64_t integer_at(const Json& object, std::string_view key, const Where& where, int64_t fallback);
// Refuses an option that is present, not null and not `allowed` (a value that would
// change what the component does).
void refuse_unless(const Json& object, std::string_view key, const Json& allowed, const Where& where);

}  // namespace sx::text
