// A bundle opened to run, and a new experiment started from one (bundle.h).
#include <fmt/format.h>

#include <filesystem>

#include "bundle/archive.h"
#include "bundle/bundle.h"
#include "bundle/codes.h"
#include "bundle/files.h"
#include "bundle/manifest.h"
#include "bundle/paths.h"
#include "io/identity.h"
#include "io/safetensors.h"
#include "io/storage_cache.h"

namespace sx::bundle {
namespace fs = std::filesystem;

namespace {

bool is_archive_file(const std::string& path) {
  std::error_code ec;
  return is_archive_name(path) && fs::is_regular_file(path, ec);
}

// The folder an archive unpacks into, once: CACHE/bundles/KEY/NAME, KEY the start of the
// archive's SHA-256, so a changed archive is unpacked again and an unchanged one is not,
// and NAME the archive's without its extension, which a run's slug takes as a folder's.
std::string unpacked(const std::string& archive) {
  io::FileIdentity identity;
  try {
    identity = io::identify(archive);
  } catch (const io::LoadError& e) {
    fail_bundle(e.code().c_str(), e.what());
  }
  std::string name = fs::path(archive).filename().string();
  name = name.substr(0, name.find(".tar"));
  fs::path folder = fs::path(io::cache_root()) / "bundles" / identity.sha256.substr(0, 16) / name;
  std::error_code ec;
  if (fs::exists(folder / kManifestName, ec)) return folder.string();
  fs::create_directories(folder.parent_path(), ec);
  ScratchFolder scratch(folder);
  extract_archive(archive, scratch.path().string());
  if (fs::exists(folder, ec)) return folder.string();  // another process unpacked it meanwhile
  scratch.keep_as(folder);
  return folder.string();
}

}  // namespace

bool is_bundle(const std::string& path) {
  std::error_code ec;
  return is_archive_file(path) || fs::is_regular_file(fs::path(path) / kManifestName, ec);
}

OpenBundle open_bundle(const std::string& path) {
  // Absolute, so that a checkpoint records where the frozen files were read from any folder.
  std::string folder = absolute_of(is_archive_file(path) ? unpacked(path) : path).string();
  Manifest manifest = read_manifest(folder);
  check_files(folder, manifest);
  return {folder, (fs::path(folder) / manifest.run).string(), manifest.variant, manifest.knobs};
}

std::string new_experiment(const std::string& bundle, const std::string& dir) {
  refuse_existing(dir, "`new`");
  fs::path target = absolute_of(dir);
  ScratchFolder scratch(target);
  bool archive = is_archive_file(bundle);
  // Where the bundle is read now, and where it is once the experiment is in place.
  fs::path folder = archive ? scratch.path() / "bundle" : absolute_of(bundle);
  fs::path final_folder = archive ? target / "bundle" : folder;
  if (archive) extract_archive(bundle, folder.string());
  Manifest manifest = read_manifest(folder.string());
  check_files(folder.string(), manifest);
  fs::path data = folder / kDataFolder;
  for (const BundleFile& file : manifest.files) {
    if (!file.source) continue;
    fs::path relative(file.path);
    if (archive && relative.begin()->string() == "bundle") {
      fail_bundle(kPlaceTaken,
                  fmt::format("{}: its place in the experiment is where `new` unpacks the bundle",
                              lang::shown_in_message(file.path)),
                  "rename the file or its folder, and write the bundle again");
    }
    lang::SourceRef source = lang::SourceFile::make((folder / relative).string(), read_file(folder / relative));
    std::vector<Edit> edits;
    for (const PathSite& site : path_sites(*source)) {
      if (!site.literal || fs::path(*site.literal).is_absolute()) continue;
      fs::path copy = (folder / relative.parent_path() / *site.literal).lexically_normal();
      if (!lies_under(copy, data)) continue;
      fs::path pointed = final_folder / copy.lexically_relative(folder);
      edits.push_back({site.span.offset, site.span.length,
                       string_literal(relative_path(pointed, (target / relative).parent_path()))});
    }
    write_file(scratch.path() / relative, apply_edits(source->text(), std::move(edits)));
  }
  scratch.keep_as(target);
  return (target / manifest.run).string();
}

}  // namespace sx::bundle
