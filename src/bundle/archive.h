// A bundle as one file: a tar archive of its folder, compressed with zstd where the
// libarchive at hand has it (libarchive writes and reads both).
#pragma once

#include <string>

namespace sx::bundle {

// Whether `path` names a bundle's archive: it ends in .tar or .tar.zst.
bool is_archive_name(const std::string& path);
// The extension `write_archive` gives: ".tar.zst" where zstd is at hand, else ".tar".
std::string archive_extension();
// Writes the files of `folder` (regular files and folders, names relative to it, in
// sorted order) to the archive `out`, through a temporary name renamed when whole.
// E-BUNDLE-004 on a failure.
void write_archive(const std::string& folder, const std::string& out);
// Unpacks `archive` into `folder` (created; its parent must exist). Refuses, E-BUNDLE-004,
// an archive that does not read, and an entry that is not a regular file or folder or
// whose name is absolute or leads out with `..`.
void extract_archive(const std::string& archive, const std::string& folder);

}  // namespace sx::bundle
