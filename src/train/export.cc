// Exporting a checkpoint's model: the file compiled as its run compiled it, checked
// against the checkpoint, the model alone traced and written with its weights.
#include "train/export.h"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>

#include "graph/shape.h"
#include "io/export_folder.h"
#include "io/identity.h"
#include "lang/reader.h"
#include "lang/tracer.h"
#include "report/moved_lines.h"
#include "train/codes.h"
#include "train/export_hf.h"
#include "train/model_alone.h"
#include "train/run_record.h"
#include "train/session.h"
#include "train/step.h"

namespace sx::train {
namespace {

namespace fs = std::filesystem;

// Prints what changed in the run file since the run: its moved lines, and its name when
// the run knew it by another.
void print_source_changes(const RunRecord& record, const std::string& file, const std::string& text) {
  const RunRecord::Source& recorded = record.sources.front();
  const std::string name = fs::path(file).filename().string();
  if (name != recorded.path)
    std::printf("  %s: the checkpoint's run compiled %s\n", name.c_str(), recorded.path.c_str());
  if (io::sha256_hex({reinterpret_cast<const uint8_t*>(text.data()), text.size()}) == recorded.sha256) return;
  for (const std::string& line : report::describe_moved_lines(name, recorded.text, text))
    std::printf("%s\n", line.c_str());
}

// The run's `:data` loader, whose fields make the model's inputs.
const LoaderSpec& data_spec(Session& session) {
  const lang::Value* data = session.settings().find("data");
  const LoaderSpec* spec = data ? as_loader_spec(*data) : nullptr;
  if (!spec) {
    lang::fail(kRunSettingMissing, session.settings().span,
               "`defrun` has no `:data` loader, whose fields make the model's inputs");
  }
  return *spec;
}

ModelAlone trace_exported_model(Session& session) {
  std::shared_ptr<const Loader> loader = open_loader(data_spec(session));
  try {
    return trace_model_alone(session, *loader);
  } catch (lang::Error& e) {
    if (e.diagnostic().code == kModelNotAlone) {
      e.diagnostic().helps = {"an exported model runs alone: make its prediction tensors, in lists and plists"};
    }
    throw;
  }
}

// Every weight the graph reads, by path, as f32: the :ema average when there is one and
// `trained` is not asked for, else the trained value.
std::vector<std::pair<std::string, graph::Tensor>> read_weights(const ModelAlone& model, const Session& session,
                                                                const RunRecord& record, bool trained) {
  std::vector<WantedParameter> wanted;
  for (const auto& input : model.graph.inputs) {
    if (const model::Parameter* param = session.params().find(input.name)) wanted.push_back({param, graph::DType::f32});
  }
  return read_checkpoint_values(record, session.params(), wanted, !trained);
}

}  // namespace

std::string format_size(uint64_t bytes) {
  if (bytes < 1024) return fmt::format("{} B", bytes);
  constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes) / 1024;
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(kUnits)) value /= 1024, ++unit;
  return fmt::format("{:.1f} {}", value, kUnits[unit]);
}

std::vector<std::string> describe_signature(const nlohmann::json& model) {
  std::vector<std::string> out;
  for (const char* side : {"inputs", "outputs"}) {
    for (const auto& tensor : model.at(side)) {
      // The names line up: "inputs " is as wide as "outputs".
      out.push_back(
          fmt::format("  {}{} {} {} {}", side, side[0] == 'i' ? " " : "", tensor.at("name").get<std::string>(),
                      graph::shape_str(tensor.at("shape").get<graph::Shape>()), tensor.at("dtype").get<std::string>()));
    }
  }
  return out;
}

void export_model(const ExportOptions& options, lang::InterpreterOptions interpreter, std::optional<Session>& made) {
  // Before any work: an export never replaces a folder.
  try {
    io::refuse_existing_export(options.out);
  } catch (const io::ExportError& e) {
    lang::fail(e.code(), {}, e.what(), e.code() == io::kExportExists ? "give -o a new folder, or remove that one" : "");
  }
  RunRecord record = read_run_record(options.checkpoint);
  std::printf("export: %s\n", record.checkpoint.written.c_str());
  Session& session = made.emplace(SessionOptions{std::move(interpreter), record.choices()});
  const std::string& text =
      lang::load_source_file(session.interp().sources(), options.file, session.interp().options().reader_limits).text();
  print_source_changes(record, options.file, text);
  std::fflush(stdout);
  load_as_recorded(session, record, options.file, "export");
  refuse_other_parameters(record, session, options.file, "export");
  ModelAlone model = trace_exported_model(session);
  std::vector<std::pair<std::string, graph::Tensor>> weights = read_weights(model, session, record, options.trained);
  nlohmann::json described = model_json(model, session, record.slug, record.checkpoint.step);
  uint64_t bytes = 0;
  for (const auto& [path, weight] : weights) bytes += weight.bytes().size();
  std::string path;
  if (options.format == "hf") {
    std::vector<std::string> tokenizers;
    for (const TokenizedField& field : data_spec(session).tokenize) tokenizers.push_back(field.tokenizer_location);
    path = export_hf_folder(options.out, weights, record, tokenizers);
    std::printf("wrote %s: %zu weights, %s, as a Hugging Face model\n", path.c_str(), weights.size(),
                format_size(bytes).c_str());
    return;
  }
  try {
    io::ExportFolderWriter folder(options.out);
    folder.write_bytes("model.json", described.dump() + "\n");
    folder.write_tensors("params.safetensors", weights);
    folder.commit();
    path = folder.path();
  } catch (const io::ExportError& e) {
    lang::fail(e.code(), {}, e.what(), e.code() == io::kExportExists ? "give -o a new folder, or remove that one" : "");
  }
  std::printf("wrote %s: %zu weights, %s\n", path.c_str(), weights.size(), format_size(bytes).c_str());
  for (const std::string& line : describe_signature(described)) std::printf("%s\n", line.c_str());
}

}  // namespace sx::train
