// Reading, writing and checking bundle.json (manifest.h).
#include "bundle/manifest.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "bundle/codes.h"
#include "io/identity.h"
#include "io/safetensors.h"
#include "lang/diagnostic.h"

namespace sx::bundle {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// bundle.json is small; a larger one is not a bundle's.
constexpr std::streamsize kManifestLimit = std::streamsize{64} << 20;

// Whether `path` is relative and stays inside the bundle's folder.
bool stays_inside(const std::string& path) {
  fs::path p(path);
  if (path.empty() || p.is_absolute()) return false;
  for (const auto& part : p.lexically_normal()) {
    if (part == "..") return false;
  }
  return true;
}

bool is_sha256(const std::string& text) {
  return text.size() == 64 && text.find_first_not_of("0123456789abcdef") == std::string::npos;
}

}  // namespace

void fail_bundle(const char* code, std::string message, std::string help) {
  lang::Diagnostic d;
  d.code = code;
  d.message = std::move(message);
  if (!help.empty()) d.helps.push_back(std::move(help));
  throw lang::Error(std::move(d));
}

std::string manifest_text(const Manifest& manifest) {
  json files = json::array();
  for (const BundleFile& file : manifest.files) {
    files.push_back(
        {{"path", file.path}, {"kind", file.source ? "source" : "data"}, {"size", file.size}, {"sha256", file.sha256}});
  }
  json out = {{"format", 1},
              {"run", manifest.run},
              {"variant", manifest.variant},
              {"knobs", manifest.knobs},
              {"files", std::move(files)}};
  return out.dump(2) + "\n";
}

Manifest read_manifest(const std::string& folder) {
  std::string where = (fs::path(folder) / kManifestName).string();
  auto bad = [&](const std::string& why) {
    fail_bundle(kBadManifest, fmt::format("{}: {}", lang::shown_in_message(where), why),
                "write the bundle again with `sexpgpu bundle FILE.sx -o DIR`");
  };
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) {
    fail_bundle(kBadManifest,
                fmt::format("{}: there is no bundle here: neither a folder holding bundle.json nor a .tar or .tar.zst "
                            "archive of one",
                            lang::shown_in_message(folder)));
  }
  std::ifstream in(where, std::ios::binary);
  if (!in) bad("there is no bundle.json: the folder is not a bundle");
  std::string text(std::istreambuf_iterator<char>(in), {});
  if (static_cast<std::streamsize>(text.size()) > kManifestLimit) bad("it is too large to be a bundle's");
  json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) bad("it is not a JSON object");
  Manifest manifest;
  if (!doc.contains("run") || !doc["run"].is_string()) bad("it has no `run`, the run file's path");
  manifest.run = doc["run"].get<std::string>();
  if (!stays_inside(manifest.run)) bad("its `run` leads outside the bundle");
  if (doc.contains("variant") && doc["variant"].is_string()) manifest.variant = doc["variant"].get<std::string>();
  if (doc.contains("knobs")) {
    if (!doc["knobs"].is_object()) bad("its `knobs` is not an object of names to values");
    for (const auto& [name, value] : doc["knobs"].items()) {
      if (!value.is_string()) bad(fmt::format("the knob `{}` is not a string", lang::shown_in_message(name)));
      manifest.knobs[name] = value.get<std::string>();
    }
  }
  if (!doc.contains("files") || !doc["files"].is_array()) bad("it has no `files`, the list of the bundle's files");
  bool lists_run = false;
  for (const json& entry : doc["files"]) {
    if (!entry.is_object() || !entry.contains("path") || !entry["path"].is_string() || !entry.contains("size") ||
        !entry["size"].is_number_unsigned() || !entry.contains("sha256") || !entry["sha256"].is_string()) {
      bad(fmt::format("the entry `{}` is not a file's path, size and sha256", lang::shown_in_message(entry.dump())));
    }
    bool source = entry.contains("kind") && entry["kind"].is_string() && entry["kind"] == "source";
    BundleFile file{entry["path"].get<std::string>(), source, entry["size"].get<uint64_t>(),
                    entry["sha256"].get<std::string>()};
    if (!stays_inside(file.path)) {
      bad(fmt::format("the file `{}` leads outside the bundle", lang::shown_in_message(file.path)));
    }
    if (!is_sha256(file.sha256)) {
      bad(fmt::format("the sha256 of `{}` is not 64 hex digits", lang::shown_in_message(file.path)));
    }
    lists_run = lists_run || file.path == manifest.run;
    manifest.files.push_back(std::move(file));
  }
  if (!lists_run) bad("its `files` does not list the run file");
  return manifest;
}

void check_files(const std::string& folder, const Manifest& manifest) {
  for (const BundleFile& file : manifest.files) {
    std::string path = (fs::path(folder) / file.path).string();
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) {
      fail_bundle(kMissingFile,
                  fmt::format("{}: the bundle lists this file, and it is not there", lang::shown_in_message(path)),
                  "copy the whole bundle folder again, or write the bundle again");
    }
    io::FileIdentity now;
    try {
      now = io::identify(path);
    } catch (const io::LoadError& e) {
      fail_bundle(e.code().c_str(), e.what());
    }
    if (now.size == file.size && now.sha256 == file.sha256) continue;
    std::string what = now.size != file.size
                           ? fmt::format("it is {} bytes, and bundle.json says {}", now.size, file.size)
                           : fmt::format("its sha256 is {}, and bundle.json says {}", now.sha256, file.sha256);
    fail_bundle(
        io::kFileChanged,
        fmt::format("{}: the file changed since the bundle was written: {}", lang::shown_in_message(path), what),
        "a bundle runs as it was written: write it again with `sexpgpu bundle` after an edit");
  }
}

}  // namespace sx::bundle
