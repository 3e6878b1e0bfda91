// Checked reads of a tokenizer.json's fields (see json_fields.h).
#include "text/json_fields.h"

#include <fmt/format.h>

#include "text/tokenizer.h"

namespace sx::text {

Where Where::at(std::string_view key) const {
  return {file, path.empty() ? std::string(key) : path + "." + std::string(key)};
}
Where Where::at(size_t index) const { return {file, fmt::format("{}[{}]", path, index)}; }
std::string Where::shown() const { return path.empty() ? file : fmt::format("{}: `{}`", file, path); }

void malformed(const Where& where, std::string_view what) {
  throw TokenizerError(kTokenizerFile, fmt::format("{} {}", where.shown(), what));
}

void unsupported(const Where& where, std::string_view what) {
  throw TokenizerError(kTokenizerUnsupported, fmt::format("{} {}", where.shown(), what));
}

const Json& field(const Json& object, std::string_view key, const Where& where) {
  if (!object.is_object()) malformed(where, "is not a JSON object");
  auto it = object.find(key);
  if (it == object.end()) malformed(where.at(key), "is missing");
  return *it;
}

const Json& object_at(const Json& object, std::string_view key, const Where& where) {
  const Json& v = field(object, key, where);
  if (!v.is_object()) malformed(where.at(key), "is not a JSON object");
  return v;
}

const Json& array_at(const Json& object, std::string_view key, const Where& where) {
  const Json& v = field(object, key, where);
  if (!v.is_array()) malformed(where.at(key), "is not a JSON array");
  return v;
}

std::string string_at(const Json& object, std::string_view key, const Where& where) {
  const Json& v = field(object, key, where);
  if (!v.is_string()) malformed(where.at(key), "is not a string");
  return v.get<std::string>();
}

bool bool_at(const Json& object, std::string_view key, const Where& where, bool fallback) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) malformed(where.at(key), "is not true or false");
  return it->get<bool>();
}

int64_t integer_at(const Json& object, std::string_view key, const Where& where, int64_t fallback) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return fallback;
  if (!it->is_number_integer()) malformed(where.at(key), "is not a whole number");
  return it->get<int64_t>();
}

void refuse_unless(const Json& object, std::string_view key, const Json& allowed, const Where& where) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null() || *it == allowed) return;
  unsupported(where.at(key), fmt::format("is {}: this reader runs only {}", it->dump(), allowed.dump()));
}

}  // namespace sx::text
