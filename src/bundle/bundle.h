// Bundles (docs/bundle.md): an experiment written as a folder that runs anywhere, the
// folder (or its archive) opened to run, and a new experiment started from one.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "lang/diagnostic.h"
#include "train/session.h"

namespace sx::bundle {

struct BundleOptions {
  std::string file;      // the run file
  std::string out;       // the folder, or with `archive` the archive, to write
  bool archive = false;  // one .tar (.tar.zst where zstd is at hand) instead of a folder
};

// What `write_bundle` wrote.
struct Written {
  std::string path;  // the folder or archive
  size_t sources = 0, data = 0;
  uint64_t bytes = 0;
};

// Evaluates the run file in `session` (its variant and knobs are the bundle's defaults),
// then writes the bundle: the run file and its local modules with their path literals
// rewritten to the copies, and each file they name copied once, by content. Each
// warning (W-BUNDLE-001, -002) goes to `warn`. Throws lang::Error: the run file's own
// errors, E-BUNDLE-003 when `out` exists, E-BUNDLE-004 when writing fails (nothing half
// written is left).
Written write_bundle(const BundleOptions& options, train::Session& session,
                     const std::function<void(const lang::Diagnostic&)>& warn);

// A bundle opened to run: checked, every file against bundle.json.
struct OpenBundle {
  std::string folder;    // the bundle's folder (an archive's is unpacked in the cache)
  std::string run_file;  // its run file
  std::string variant;   // the defaults recorded by `bundle`
  std::map<std::string, std::string> knobs;
};

// Whether `path` is a bundle: a folder holding bundle.json, or a .tar or .tar.zst file.
bool is_bundle(const std::string& path);
// Opens the bundle at `path`: an archive is unpacked once into the cache
// (CACHE/bundles/KEY/NAME, KEY from its bytes), then every file is checked (manifest.h).
OpenBundle open_bundle(const std::string& path);

// `sexpgpu new BUNDLE DIR`: the bundle's sources copied into `dir` (which must not exist,
// E-BUNDLE-003) with their rewritten paths pointed at the bundle's copies, relative from
// `dir`; an archive is first unpacked into DIR/bundle/. Returns the new run file's path.
std::string new_experiment(const std::string& bundle, const std::string& dir);

}  // namespace sx::bundle
