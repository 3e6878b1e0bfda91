#include "io/json_checked.h"

#include <fmt/format.h>

#include <unordered_set>

#include "graph/shown.h"
#include "io/safetensors.h"
#include "io/util.h"

namespace sx::io {
namespace {

using json = nlohmann::json;

// The checks, as a first pass of SAX events. (nlohmann's parse callback would do them in
// the same pass, but it scans a whole object each time one of its members ends: with
// 40,000 tensors, minutes.)
class Checker : public nlohmann::json_sax<json> {
 public:
  Checker(const std::string& what, const char* code, size_t max_depth, CheckedJson& out)
      : what_(what), code_(code), max_depth_(max_depth), out_(out) {}

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return open(); }
  bool start_array(std::size_t) override { return open(); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }

  bool key(string_t& key) override {
    if (!open_.back().insert(key).second) {
      if (open_.size() == 1)
        throw LoadError(code_, fmt::format("{} has the key `{}` twice", what_, graph::shown_in_message(key)));
      throw LoadError(
          code_, fmt::format("{} has the key `{}` twice in the entry of `{}`", what_, graph::shown_in_message(key),
                             out_.top_keys.empty() ? std::string() : graph::shown_in_message(out_.top_keys.back())));
    }
    if (open_.size() == 1) out_.top_keys.push_back(key);
    return true;
  }

  // A syntax error, or a number too large for a double (1e400).
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    std::string detail = e.what();
    if (auto pos = detail.find("] "); pos != std::string::npos) detail = detail.substr(pos + 2);
    throw LoadError(code_, fmt::format("{} is not valid JSON: {}", what_, graph::shown_in_message(detail)));
  }

 private:
  bool open() {
    if (open_.size() >= max_depth_) {
      throw LoadError(code_, fmt::format("{} nests JSON objects and arrays more than {} deep, which the format never "
                                         "does",
                                         what_, max_depth_));
    }
    open_.emplace_back();  // an array's stays empty
    return true;
  }
  bool close() {
    open_.pop_back();
    return true;
  }

  const std::string& what_;
  const char* code_;
  size_t max_depth_;
  CheckedJson& out_;
  std::vector<std::unordered_set<std::string>> open_;  // the keys of each open container
};

}  // namespace

CheckedJson parse_json_checked(std::string_view text, const std::string& what, const char* code, size_t max_depth) {
  CheckedJson out;
  Checker checker(what, code, max_depth, out);
  json::sax_parse(text.begin(), text.end(), &checker);
  out.value = json::parse(text.begin(), text.end());  // valid, as the first pass found
  return out;
}

}  // namespace sx::io
