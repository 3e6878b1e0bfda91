// Locations and their schemes (see location.h).
#include "io/location.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "graph/shown.h"
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
      throw LoadError(kUnknownScheme,
                      fmt::format("{}: a file:// location may not hold %00", graph::shown_in_message(location)));
    }
    out += c;
    i += 2;
  }
  return out;
}

// Why a key's '/'-separated segments are not usable, or "": none empty, "." or "..", so
// that a key names one place however it is joined.
std::string bad_segments(std::string_view key) {
  size_t start = 0;
  while (start <= key.size()) {
    size_t stop = std::min(key.find('/', start), key.size());
    std::string_view segment = key.substr(start, stop - start);
    if (segment.empty()) return "has an empty segment (`//`)";
    if (segment == "." || segment == "..") return fmt::format("has a `{}` segment", segment);
    start = stop + 1;
  }
  return "";
}

bool valid_bucket(std::string_view bucket) {
  if (bucket.size() < 3 || bucket.size() > 63) return false;
  for (char c : bucket) {
    if (!std::islower(static_cast<unsigned char>(c)) && !std::isdigit(static_cast<unsigned char>(c)) && c != '.' &&
        c != '-') {
      return false;
    }
  }
  return std::isalnum(static_cast<unsigned char>(bucket.front())) &&
         std::isalnum(static_cast<unsigned char>(bucket.back()));
}

ResolvedLocation resolve_s3(std::string_view location, std::string written) {
  std::string_view rest = location.substr(5);  // after "s3://"
  while (rest.ends_with('/')) rest.remove_suffix(1);
  size_t slash = rest.find('/');
  ResolvedLocation out{std::move(written), "", std::string(rest.substr(0, slash)), ""};
  if (slash != std::string_view::npos) out.key = rest.substr(slash + 1);
  if (!valid_bucket(out.bucket)) {
    throw LoadError(kBadLocation,
                    fmt::format("{}: `{}` is not a bucket name (3 to 63 lower-case letters, digits, "
                                "`.` and `-`); an S3 location is s3://bucket/key",
                                graph::shown_in_message(out.written), graph::shown_in_message(out.bucket)));
  }
  if (std::string why = out.key.empty() ? "" : bad_segments(out.key); !why.empty()) {
    throw LoadError(kBadLocation, fmt::format("{}: the key {}", graph::shown_in_message(out.written), why));
  }
  return out;
}

ResolvedLocation resolve_o41(std::string_view location) {
  std::string_view rest = location.substr(6);  // after "o41://"
  while (rest.ends_with('/')) rest.remove_suffix(1);
  size_t team_end = rest.find('/');
  if (team_end == std::string_view::npos || !bad_segments(rest).empty()) {
    throw LoadError(kBadLocation, fmt::format("{}: an o41 location is o41://team/run, or a file under it: "
                                              "o41://team/run/file",
                                              graph::shown_in_message(location)));
  }
  const char* root_variable = std::getenv("SEXPGPU_O41_ROOT");
  std::string_view root = root_variable ? root_variable : "";
  while (root.size() > 1 && root.ends_with('/')) root.remove_suffix(1);
  if (root.empty()) {
    throw LoadError(kNoO41Root, fmt::format("{}: o41:// locations lie under the root SEXPGPU_O41_ROOT names (a local "
                                            "folder or an s3:// URL), and it is not set",
                                            graph::shown_in_message(location)));
  }
  std::string root_scheme = scheme_of(root);
  if (root_scheme != "" && root_scheme != "file" && root_scheme != "s3") {
    throw LoadError(kNoO41Root, fmt::format("{}: SEXPGPU_O41_ROOT is {}, which is neither a local folder nor an "
                                            "s3:// URL",
                                            graph::shown_in_message(location), graph::shown_in_message(root)));
  }
  ResolvedLocation base = root_scheme == "s3" ? resolve_s3(root, std::string(root))
                                              : ResolvedLocation{std::string(root), local_path(root), "", ""};
  ResolvedLocation out = base.child(rest);
  out.written = std::string(location);
  return out;
}

}  // namespace

std::string ResolvedLocation::url() const { return is_s3() ? fmt::format("s3://{}/{}", bucket, key) : path; }

ResolvedLocation ResolvedLocation::child(std::string_view name) const {
  ResolvedLocation out = *this;
  out.written = fmt::format("{}/{}", written, name);
  if (is_s3()) {
    out.key = key.empty() ? std::string(name) : fmt::format("{}/{}", key, name);
  } else {
    out.path = path.empty()  ? std::string(name)
               : path == "/" ? fmt::format("/{}", name)
                             : fmt::format("{}/{}", path, name);
  }
  return out;
}

ResolvedLocation resolve_location(std::string_view location) {
  std::string scheme = scheme_of(location);
  if (scheme == "o41") return resolve_o41(location);
  if (scheme == "s3") return resolve_s3(location, std::string(location));
  return {std::string(location), local_path(location), "", ""};
}

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
    throw LoadError(kStorageLocation, fmt::format("{}: a local file is read here, not an {}:// location",
                                                  graph::shown_in_message(location), scheme));
  }
  if (scheme != "file") {
    throw LoadError(kUnknownScheme, fmt::format("{}: SexpGPU reads no {}:// locations; a location is a local path, "
                                                "file:///absolute/path, s3://bucket/key or o41://team/run",
                                                graph::shown_in_message(location), graph::shown_in_message(scheme)));
  }
  std::string_view rest = location.substr(scheme.size() + 3);  // after "file://"
  size_t slash = rest.find('/');
  std::string_view host = rest.substr(0, slash);
  if (slash == std::string_view::npos || (!host.empty() && host != "localhost")) {
    throw LoadError(kUnknownScheme, fmt::format("{}: a file:// location names an absolute path on this host, as in "
                                                "file:///home/me/w.safetensors (three slashes)",
                                                graph::shown_in_message(location)));
  }
  return percent_decoded(rest.substr(slash), location);
}

}  // namespace sx::io
