// bundle's diagnostic codes, with their texts (the rows of graph/codes.h).
#pragma once

#include <span>

#include "graph/codes.h"

namespace sx::bundle {

// E-BUNDLE and W-BUNDLE: writing, checking, unpacking and starting from bundles.
std::span<const graph::CodeInfo> codes();

inline constexpr const char* kBadManifest = "E-BUNDLE-001";      // bundle.json unreadable or malformed
inline constexpr const char* kMissingFile = "E-BUNDLE-002";      // a file bundle.json lists is not there
inline constexpr const char* kPlaceTaken = "E-BUNDLE-003";       // where a bundle or experiment would go exists
inline constexpr const char* kCannotWrite = "E-BUNDLE-004";      // the file system or an archive failed
inline constexpr const char* kComputedPath = "W-BUNDLE-001";     // a path not written as a string: not rewritten
inline constexpr const char* kPathNamesNoFile = "W-BUNDLE-002";  // a string path that names no file

}  // namespace sx::bundle
