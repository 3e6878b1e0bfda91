// Locations: where a file named in a program (a `:load`, a `with-loaded`) lives. A
// location's scheme is recognized before anything else, so that `file:///w.safetensors`
// is never taken for a relative path. A scheme is a letter, then letters, digits, `+`,
// `-` or `.`, followed by `://`:
//
//   no scheme        a local path, as written (a relative one is the caller's to resolve)
//   file://          a local path: file:///ABSOLUTE/PATH or file://localhost/ABSOLUTE/PATH,
//                    with %XX escapes decoded
//   s3://, o41://    storage locations: they come with checkpoint locations, and are not
//                    readable in this version (E-LOAD-010)
//   anything else    refused by its name (E-LOAD-013)
#pragma once

#include <string>
#include <string_view>

namespace sx::io {

inline constexpr const char* kStorageLocation = "E-LOAD-010";  // s3:// or o41://, not readable yet
inline constexpr const char* kUnknownScheme = "E-LOAD-013";    // a scheme that is not read

// The location's scheme in lower case ("file", "s3", "https"), or "" for a plain path.
std::string scheme_of(std::string_view location);

// Whether the scheme is one of the storage locations (s3, o41) that come with checkpoints.
bool is_storage_scheme(std::string_view scheme);

// The local path a location names: a plain path as it is, a file:// location's absolute
// path. Throws LoadError: E-LOAD-010 for s3:// and o41://, E-LOAD-013 for any other
// scheme and for a file:// location that names another host or no absolute path; each
// message shows the location as written.
std::string local_path(std::string_view location);

}  // namespace sx::io
