// bundle.json: what a bundle holds. Its run file, the variant and knobs `bundle` was
// given (the bundle's defaults), and every file with its size and SHA-256, each a source
// (the run file and its local modules, which `new` copies to edit) or data (a file a
// :load, with-loaded or loader reads, which `new` points at):
//
//   {"format": 1, "run": "run.sx", "variant": "", "knobs": {"width": "32"},
//    "files": [{"path": "run.sx", "kind": "source", "size": 812, "sha256": "..."},
//              {"path": "data/3f2a...-train.jsonl", "kind": "data", "size": 4096, "sha256": "..."}]}
//
// Paths are relative to the bundle's folder, written with `/`, never leading out of it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace sx::bundle {

inline constexpr const char* kManifestName = "bundle.json";
inline constexpr const char* kDataFolder = "data";

struct BundleFile {
  std::string path;  // relative to the bundle's folder
  bool source = false;
  uint64_t size = 0;
  std::string sha256;
};

struct Manifest {
  std::string run;  // the run file, relative to the bundle's folder
  std::string variant;
  std::map<std::string, std::string> knobs;
  std::vector<BundleFile> files;
};

// The JSON text of `manifest`.
std::string manifest_text(const Manifest& manifest);
// The manifest of the bundle in `folder`; E-BUNDLE-001 when bundle.json is missing or
// malformed, naming what is wrong.
Manifest read_manifest(const std::string& folder);
// Checks every file the manifest lists against its bytes, each read once: E-BUNDLE-002
// for one that is missing, E-LOAD-001 naming one whose size or SHA-256 differs.
void check_files(const std::string& folder, const Manifest& manifest);

// Throws lang::Error with `code` and `message` and no span (a bundle's errors are of
// files, not of forms).
[[noreturn]] void fail_bundle(const char* code, std::string message, std::string help = {});

}  // namespace sx::bundle
