// Locations and their schemes (see location.h).
#include "io/location.h"

#include <fmt/format.h>

#include <cctype>

#include "io/safetensors.h"
#include "io/util.h"

namespace sx::io {
namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A file:// location's path with its %XX escapes decoded; a `%` not followed by two hex
// digits stays as it is.
std::string percent_decoded(std::string_view text, std::string_view location) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    int high = text[i] == '%' && i + 2 < text.size() ? hex_digit(text[i + 1]) : -1;
    int low = high >= 0 ? hex_digit(text[i + 2]) : -1;
    if (high < 0 || low < 0) {
      out += text[i];
      continue;
    }
    char c = static_cast<char>(high * 16 + low);
    if (c == '\0') {
      throw LoadError(kUnknownScheme, fmt::format("{}: a file:// location may not hold %00", shown(location)));
    }
    out += c;
    i += 2;
  }
  return out;
}

}  // namespace

std::string scheme_of(std::string_view location) {
  if (location.empty() || !std::isalpha(static_cast<unsigned char>(location[0]))) return "";
  size_t i = 1;
  while (i < location.size() && (std::isalnum(static_cast<unsigned char>(location[i])) || location[i] == '+' ||
                                 location[i] == '-' || location[i] == '.')) {
    ++i;
  }
  if (location.substr(i, 3) != "://") return "";
  std::string scheme(location.substr(0, i));
  for (char& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return scheme;
}

bool is_storage_scheme(std::string_view scheme) { return scheme == "s3" || scheme == "o41"; }

std::string local_path(std::string_view location) {
  std::string scheme = scheme_of(location);
  if (scheme.empty()) return std::string(location);
  if (is_storage_scheme(scheme)) {
    throw LoadError(kStorageLocation,
                    fmt::format("{}: {}:// files are not readable in this version: they come with storage locations",
                                shown(location), scheme));
  }
  if (scheme != "file") {
    throw LoadError(kUnknownScheme, fmt::format("{}: SexpGPU reads no {}:// locations; a location is a local path, "
                                                "file:///absolute/path, s3://bucket/key or o41://team/run",
                                                shown(location), shown(scheme)));
  }
  std::string_view rest = location.substr(scheme.size() + 3);  // after "file://"
  size_t slash = rest.find('/');
  std::string_view host = rest.substr(0, slash);
  if (slash == std::string_view::npos || (!host.empty() && host != "localhost")) {
    throw LoadError(kUnknownScheme, fmt::format("{}: a file:// location names an absolute path on this host, as in "
                                                "file:///home/me/w.safetensors (three slashes)",
                                                shown(location)));
  }
  return percent_decoded(rest.substr(slash), location);
}

}  // namespace sx::io
