// `sexpgpu bundle`: the run file, its local modules and the files they read, as one
// folder (bundle.h).
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "bundle/archive.h"
#include "bundle/bundle.h"
#include "bundle/codes.h"
#include "bundle/files.h"
#include "bundle/manifest.h"
#include "bundle/paths.h"
#include "io/identity.h"
#include "io/location.h"
#include "io/safetensors.h"
#include "io/tensor_source.h"

namespace sx::bundle {
namespace fs = std::filesystem;

namespace {

// The data files of a bundle being written, each stored once by its content as
// data/HASH-NAME (HASH the start of its SHA-256), an index with its weight_map pointing
// at its shards' copies.
class DataStore {
 public:
  DataStore(fs::path folder, Manifest& manifest) : folder_(std::move(folder)), manifest_(manifest) {}

  // The copy of what the local `path` names, relative to the bundle's folder.
  std::string add(const fs::path& path, PathKind kind) {
    auto done = by_file_.find(path);
    if (done != by_file_.end()) return done->second;
    std::string stored = kind == PathKind::ModelFolder                              ? add_model(path)
                         : kind == PathKind::Tensors && path.extension() == ".json" ? add_index(path)
                                                                                    : add_bytes(path);
    by_file_[path] = stored;
    return stored;
  }

 private:
  std::string add_bytes(const fs::path& path) {
    io::FileIdentity identity = identify(path);
    auto [it, fresh] = by_hash_.emplace(identity.sha256, "");
    if (!fresh) return it->second;
    it->second = stored_name(identity.sha256, path.filename().string());
    std::error_code ec;
    fs::create_directories(folder_ / kDataFolder, ec);
    fs::copy_file(path, folder_ / it->second, ec);
    if (ec) fail_bundle(kCannotWrite, fmt::format("{}: {}", lang::shown_in_message(path.string()), ec.message()));
    manifest_.files.push_back({it->second, false, identity.size, identity.sha256});
    return it->second;
  }

  // An index is stored with each shard's name replaced by the name of the shard's copy,
  // beside it in data/.
  std::string add_index(const fs::path& path) {
    nlohmann::json index;
    try {
      io::TensorSource::open(path.string());  // refuses a faulty index before it is copied
      index = nlohmann::json::parse(read_file(path));
    } catch (const io::LoadError& e) {
      fail_bundle(e.code().c_str(), e.what());
    }
    for (auto& [tensor, shard] : index["weight_map"].items()) {
      shard = fs::path(add(path.parent_path() / shard.get<std::string>(), PathKind::Tensors)).filename().string();
    }
    std::string text = index.dump(2) + "\n";
    std::string sha = io::sha256_hex(text);
    auto [it, fresh] = by_hash_.emplace(sha, "");
    if (!fresh) return it->second;
    it->second = stored_name(sha, path.filename().string());
    write_file(folder_ / it->second, text);
    manifest_.files.push_back({it->second, false, text.size(), sha});
    return it->second;
  }

  // A Hugging Face model folder (hf-model's) is stored as data/HASH-NAME/ holding
  // config.json, the weights and tokenizer.json when there is one under their own names,
  // as hf-model finds them; HASH is of those names and their bytes, so a folder named
  // twice, or two folders of the same files, are stored once.
  std::string add_model(const fs::path& path) {
    std::vector<std::pair<std::string, io::FileIdentity>> files;
    for (const std::string& name : model_files(path)) files.emplace_back(name, identify(path / name));
    std::string listing;
    for (const auto& [name, identity] : files) listing += fmt::format("{} {}\n", name, identity.sha256);
    auto [it, fresh] = by_hash_.emplace(io::sha256_hex(listing), "");
    if (fresh) it->second = stored_name(it->first, path.filename().string());
    // A file of the folder named by itself, `(tokenizer "DIR/tokenizer.json")`, is its copy there.
    for (const auto& [name, identity] : files) by_file_.emplace(absolute_of(path / name), it->second + "/" + name);
    if (!fresh) return it->second;
    for (const auto& [name, identity] : files) {
      std::string stored = fmt::format("{}/{}", it->second, name);
      std::error_code ec;
      fs::create_directories((folder_ / stored).parent_path(), ec);
      fs::copy_file(path / name, folder_ / stored, ec);
      if (ec)
        fail_bundle(kCannotWrite, fmt::format("{}: {}", lang::shown_in_message((path / name).string()), ec.message()));
      manifest_.files.push_back({stored, false, identity.size, identity.sha256});
    }
    return it->second;
  }

  // The files of a model folder hf-model reads, by their names in it: config.json, the
  // sharded index and each shard it names once, else model.safetensors, and tokenizer.json
  // when there is one (export --format hf takes it).
  static std::vector<std::string> model_files(const fs::path& path) {
    std::vector<std::string> names = {"config.json"};
    fs::path index = path / "model.safetensors.index.json";
    std::error_code ec;
    if (fs::is_regular_file(index, ec)) {
      names.push_back(index.filename().string());
      std::set<std::string> shards;
      try {
        // Refuses a faulty index, and one whose shard is not in its folder, before it is copied.
        io::TensorSource::open(index.string());
        nlohmann::json parsed = nlohmann::json::parse(read_file(index));
        for (const auto& [tensor, shard] : parsed["weight_map"].items()) shards.insert(shard.get<std::string>());
      } catch (const io::LoadError& e) {
        fail_bundle(e.code().c_str(), e.what());
      }
      names.insert(names.end(), shards.begin(), shards.end());
    } else {
      names.push_back("model.safetensors");
    }
    if (fs::is_regular_file(path / "tokenizer.json", ec)) names.push_back("tokenizer.json");
    return names;
  }

  static io::FileIdentity identify(const fs::path& path) {
    try {
      return io::identify(path.string());
    } catch (const io::LoadError& e) {
      fail_bundle(e.code().c_str(), e.what());
    }
  }

  // A copy a bundle already named (an experiment `new` started, bundled again) keeps its name.
  static std::string stored_name(const std::string& sha, const std::string& name) {
    std::string prefix = sha.substr(0, 16) + "-";
    return fmt::format("{}/{}{}", kDataFolder, name.starts_with(prefix) ? "" : prefix, name);
  }

  fs::path folder_;
  Manifest& manifest_;
  std::map<fs::path, std::string> by_file_;
  std::map<std::string, std::string> by_hash_;
};

// The local file a literal path names, resolved from the folder of the source that
// writes it (as the run resolves it); nullopt for a storage location (s3://, o41://),
// read where the bundle runs, and for another scheme, which the run refuses.
std::optional<fs::path> local_file(const std::string& written, const fs::path& source_folder) {
  std::string scheme = io::scheme_of(written);
  if (scheme == "file") {
    try {
      return absolute_of(io::local_path(written));
    } catch (const io::LoadError&) {
      return std::nullopt;
    }
  }
  if (!scheme.empty()) return std::nullopt;
  return absolute_of(source_folder / written);
}

lang::Diagnostic warning(const char* code, const PathSite& site, std::string message, std::string help) {
  lang::Diagnostic d;
  d.severity = lang::Severity::Warning;
  d.code = code;
  d.span = site.span;
  d.message = std::move(message);
  d.helps.push_back(std::move(help));
  return d;
}

// The run file first, then every module it required that is not the standard library's.
std::vector<fs::path> local_sources(const std::string& run_file, train::Session& session) {
  std::vector<fs::path> libraries;
  for (const auto& dir : session.interp().options().library_dirs) libraries.push_back(absolute_of(dir));
  std::vector<fs::path> sources = {absolute_of(run_file)};
  for (const std::string& module : session.interp().module_files()) {
    fs::path path = absolute_of(module);
    bool library =
        std::any_of(libraries.begin(), libraries.end(), [&](const fs::path& l) { return lies_under(path, l); });
    if (!library && path != sources.front()) sources.push_back(path);
  }
  return sources;
}

}  // namespace

Written write_bundle(const BundleOptions& options, train::Session& session,
                     const std::function<void(const lang::Diagnostic&)>& warn) {
  std::string target = without_trailing_slash(options.out);
  if (options.archive && !is_archive_name(target)) target += archive_extension();
  refuse_existing(target, "`bundle`");
  session.load(options.file);
  std::vector<fs::path> sources = local_sources(options.file, session);
  fs::path root = sources.front().parent_path();
  for (const fs::path& source : sources) {
    while (!lies_under(source, root) && root.has_relative_path()) root = root.parent_path();
  }

  Manifest manifest;
  manifest.variant = session.knobs().choices.variant;
  manifest.knobs = session.knobs().choices.knobs;
  ScratchFolder scratch(target);
  DataStore data(scratch.path(), manifest);
  lang::SourceMap texts;
  std::vector<std::pair<fs::path, std::string>> rewritten;
  for (const fs::path& source : sources) {
    fs::path relative = source.lexically_relative(root);
    std::string first = relative.begin()->string();
    if (first == kManifestName || first == kDataFolder) {
      fail_bundle(kPlaceTaken,
                  fmt::format("{}: its place in the bundle, `{}`, is where the bundle keeps its own files",
                              lang::shown_in_message(source.string()), relative.generic_string()),
                  "rename the file or its folder");
    }
    const lang::SourceFile& file = lang::load_source_file(
        texts, source == sources.front() ? options.file : source.string(), session.interp().options().reader_limits);
    std::vector<Edit> edits;
    std::vector<PathSite> sites = path_sites(file, session.interp().options().reader_limits);
    // Model folders first, so that a file of one named by itself is read from the folder's copy.
    std::stable_partition(sites.begin(), sites.end(),
                          [](const PathSite& site) { return site.kind == PathKind::ModelFolder; });
    for (const PathSite& site : sites) {
      if (!site.literal) {
        warn(warning(kComputedPath, site,
                     fmt::format("the path of `{}` is computed, so the bundle copies nothing for it: it is left as "
                                 "written, and read where it points when the bundle runs",
                                 site.form),
                     "write the path as a string in the form to have the bundle copy its file"));
        continue;
      }
      std::optional<fs::path> local = local_file(*site.literal, source.parent_path());
      if (!local) continue;
      std::error_code ec;
      bool folder = site.kind == PathKind::ModelFolder;
      if (folder ? !fs::is_directory(*local, ec) : !fs::is_regular_file(*local, ec)) {
        warn(warning(
            kPathNamesNoFile, site,
            fmt::format("`{}` names no {}: the path is left as written", lang::shown_in_message(*site.literal),
                        folder ? "folder" : "file"),
            fmt::format("where the bundle runs, the {} must be where the path points", folder ? "folder" : "file")));
        continue;
      }
      std::string stored = data.add(*local, site.kind);
      edits.push_back(
          {site.span.offset, site.span.length, string_literal(relative_path(stored, relative.parent_path()))});
    }
    rewritten.emplace_back(relative, apply_edits(file.text(), std::move(edits)));
  }
  for (const auto& [relative, text] : rewritten) {
    write_file(scratch.path() / relative, text);
    manifest.files.push_back({relative.generic_string(), true, text.size(), io::sha256_hex(text)});
  }
  manifest.run = sources.front().lexically_relative(root).generic_string();
  std::sort(manifest.files.begin(), manifest.files.end(),
            [](const BundleFile& a, const BundleFile& b) { return a.path < b.path; });
  write_file(scratch.path() / kManifestName, manifest_text(manifest));

  Written written{target, rewritten.size(), manifest.files.size() - rewritten.size(), 0};
  for (const BundleFile& file : manifest.files) written.bytes += file.size;
  if (options.archive) write_archive(scratch.path().string(), target);
  else scratch.keep_as(target);
  return written;
}

}  // namespace sx::bundle
