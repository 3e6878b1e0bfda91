// Exporting a checkpoint's weights under their Hugging Face names (export_hf.h).
#include "train/export_hf.h"

#include <fmt/format.h>

#include <map>

#include "io/export_folder.h"
#include "io/location.h"
#include "io/safetensors.h"
#include "lang/diagnostic.h"

namespace sx::train {
namespace {

constexpr const char* kNoHfName = "E-HF-003";
constexpr size_t kMaxSideFileBytes = 64ull << 20;

// The folder a location lies in: "s3://b/w" for "s3://b/w/model.safetensors".
std::string folder_of(const std::string& location) {
  size_t slash = location.rfind('/');
  return slash == std::string::npos ? "." : location.substr(0, slash);
}

// The tokenizer.json to write: the one the run read its text through, when it read text.
// Two different ones leave no tokenizer of the model.
std::string run_tokenizer(const std::vector<std::string>& locations) {
  for (const std::string& location : locations) {
    if (location != locations.front()) {
      lang::fail(kNoHfName, {},
                 fmt::format("the run read its text through {} and {}: not one tokenizer of a Hugging Face model",
                             locations.front(), location),
                 "read every :tokenize field with one tokenizer, or export without --format hf");
    }
  }
  return locations.empty() ? "" : locations.front();
}

// The Hugging Face files beside the weights: config.json, as it is beside them, and
// tokenizer.json, the run's (`tokenizer`, a location) or else the one beside them, if any.
std::vector<std::pair<std::string, std::string>> side_files(const std::string& folder, const std::string& tokenizer) {
  std::vector<std::pair<std::string, std::string>> files;
  try {
    const io::ResolvedLocation place = io::resolve_location(folder);
    files.emplace_back("config.json",
                       io::read_small_location(place.child("config.json"), kMaxSideFileBytes, io::kExportUnwritable));
    if (!tokenizer.empty()) {
      files.emplace_back("tokenizer.json", io::read_small_location(io::resolve_location(tokenizer), kMaxSideFileBytes,
                                                                   io::kExportUnwritable));
    } else if (io::location_exists(place.child("tokenizer.json"))) {
      files.emplace_back("tokenizer.json", io::read_small_location(place.child("tokenizer.json"), kMaxSideFileBytes,
                                                                   io::kExportUnwritable));
    }
  } catch (const io::LoadError& e) {
    lang::fail(
        e.code(), {}, e.what(),
        "--format hf copies the config.json beside the file the weights came from, and the run's tokenizer.json");
  }
  return files;
}

}  // namespace

std::string export_hf_folder(const std::string& out, const std::vector<std::pair<std::string, graph::Tensor>>& weights,
                             const RunRecord& record, const std::vector<std::string>& run_tokenizers) {
  std::map<std::string, const RunRecord::Parameter*> recorded;
  for (const auto& p : record.parameters) recorded[p.path] = &p;
  std::vector<std::pair<std::string, graph::Tensor>> named;
  std::string folder;
  std::string folder_of_path;
  for (const auto& [path, weight] : weights) {
    auto it = recorded.find(path);
    if (it == recorded.end() || it->second->load_tensor.empty()) {
      lang::fail(kNoHfName, {}, fmt::format("`{}` was not loaded from a file, so it has no Hugging Face name", path),
                 "--format hf writes a model loaded with hf-model (or with-loaded); export this one without it");
    }
    const std::string here = folder_of(it->second->load_file);
    if (folder.empty()) {
      folder = here, folder_of_path = path;
    } else if (here != folder) {
      lang::fail(kNoHfName, {},
                 fmt::format("`{}` was loaded from {} and `{}` from {}: not one Hugging Face model", folder_of_path,
                             folder, path, here));
    }
    named.emplace_back(it->second->load_tensor, weight);
  }
  std::vector<std::pair<std::string, std::string>> files = side_files(folder, run_tokenizer(run_tokenizers));
  try {
    io::ExportFolderWriter writer(out);
    writer.write_tensors("model.safetensors", named, {{"format", "pt"}});
    for (const auto& [name, bytes] : files) writer.write_bytes(name, bytes);
    writer.commit();
    return writer.path();
  } catch (const io::ExportError& e) {
    lang::fail(e.code(), {}, e.what(), e.code() == io::kExportExists ? "give -o a new folder, or remove that one" : "");
  }
}

}  // namespace sx::train
