// Reading model.json.
#include "serve/model_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "graph/errors.h"
#include "graph/json.h"
#include "graph/shown.h"
#include "serve/errors.h"

namespace sx::serve {
namespace {

using json = nlohmann::json;

[[noreturn]] void malformed(const std::string& path, std::string_view what) {
  throw ServeError(kBadModelFile, fmt::format("{}: {}", path, what),
                   "the file is damaged or was not written by sexpgpu: write it again with `sexpgpu export`");
}

const json& field(const json& doc, const char* name, const std::string& path, std::string_view where) {
  auto it = doc.find(name);
  if (it == doc.end()) malformed(path, fmt::format("{} has no \"{}\"", where, name));
  return *it;
}

std::string string_field(const json& doc, const char* name, const std::string& path) {
  const json& value = field(doc, name, path, "the model");
  if (!value.is_string()) malformed(path, fmt::format("\"{}\" is not a string", name));
  return value.get<std::string>();
}

TensorSpec spec_from_json(const json& entry, const char* key, const std::string& path, std::string_view where) {
  if (!entry.is_object()) malformed(path, fmt::format("an entry of {} is not an object", where));
  TensorSpec spec;
  const json& name = field(entry, key, path, where);
  const json& shape = field(entry, "shape", path, where);
  const json& dtype = field(entry, "dtype", path, where);
  if (!name.is_string()) malformed(path, fmt::format("a \"{}\" of {} is not a string", key, where));
  spec.name = name.get<std::string>();
  if (!shape.is_array())
    malformed(path, fmt::format("the shape of `{}` in {} is not a list", graph::shown_in_message(spec.name), where));
  for (const json& size : shape) {
    if (!size.is_number_integer() || size.get<int64_t>() < 0) {
      malformed(path, fmt::format("the shape of `{}` in {} holds {}, not a size", graph::shown_in_message(spec.name),
                                  where, size.dump()));
    }
    spec.shape.push_back(size.get<int64_t>());
  }
  auto parsed = dtype.is_string() ? graph::parse_dtype(dtype.get<std::string>()) : std::nullopt;
  if (!parsed)
    malformed(path,
              fmt::format("the dtype of `{}` in {} is {}", graph::shown_in_message(spec.name), where, dtype.dump()));
  spec.dtype = *parsed;
  return spec;
}

std::vector<TensorSpec> specs_from_json(const json& doc, const char* name, const char* key, const std::string& path) {
  const json& list = field(doc, name, path, "the model");
  if (!list.is_array()) malformed(path, fmt::format("\"{}\" is not a list", name));
  std::vector<TensorSpec> out;
  for (const json& entry : list) out.push_back(spec_from_json(entry, key, path, fmt::format("\"{}\"", name)));
  return out;
}

// The graph's node named `name` among `named` must be of the spec's shape and dtype.
void check_node(const graph::Graph& g, const std::vector<graph::NamedNode>& named, const TensorSpec& spec,
                std::string_view kind, const std::string& path) {
  const graph::NamedNode* found = nullptr;
  for (const graph::NamedNode& n : named) {
    if (n.name == spec.name) found = &n;
  }
  if (!found)
    malformed(path,
              fmt::format("the graph has no {} `{}`, which the model lists", kind, graph::shown_in_message(spec.name)));
  const graph::Node& node = g.node(found->node);
  if (node.shape != spec.shape || node.dtype != spec.dtype) {
    malformed(path, fmt::format("`{}` is listed as {} {} but the graph has {} {}", graph::shown_in_message(spec.name),
                                graph::shape_str(spec.shape), graph::dtype_name(spec.dtype),
                                graph::shape_str(node.shape), graph::dtype_name(node.dtype)));
  }
}

}  // namespace

ModelFile parse_model_file(std::string_view text, const std::string& path) {
  json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded()) malformed(path, "not JSON");
  if (!doc.is_object()) malformed(path, "not a JSON object");
  std::string format = string_field(doc, "format", path);
  if (format != kModelFormat) malformed(path, fmt::format("the format is \"{}\", not \"{}\"", format, kModelFormat));
  const json& version = field(doc, "version", path, "the model");
  if (!version.is_number_integer() || version.get<int64_t>() < 1) {
    malformed(path, fmt::format("the version is {}, not a version (they start at 1)", version.dump()));
  }
  if (version.get<int64_t>() > kModelVersion) {
    throw ServeError(kBadModelFile,
                     fmt::format("{}: version {} of the model format is newer than this build reads (up to {})", path,
                                 version.get<int64_t>(), kModelVersion),
                     "upgrade sexpgpu to serve it");
  }
  ModelFile model;
  model.checkpoint = string_field(doc, "checkpoint", path);
  const json& step = field(doc, "step", path, "the model");
  if (!step.is_number_integer() || step.get<int64_t>() < 0) malformed(path, "\"step\" is not a step count");
  model.step = step.get<int64_t>();
  model.slug = string_field(doc, "slug", path);
  model.precision = string_field(doc, "precision", path);
  model.inputs = specs_from_json(doc, "inputs", "name", path);
  model.outputs = specs_from_json(doc, "outputs", "name", path);
  model.parameters = specs_from_json(doc, "parameters", "path", path);
  try {
    model.graph = graph::graph_from_json(field(doc, "graph", path, "the model"));
  } catch (const graph::GraphError& e) {
    throw ServeError(kBadModelFile, fmt::format("{}: {}", path, e.what()));
  }
  const graph::Graph& g = model.graph;
  if (g.inputs.size() != model.inputs.size() + model.parameters.size()) {
    malformed(path, fmt::format("the graph has {} inputs; the model lists {} inputs and {} parameters", g.inputs.size(),
                                model.inputs.size(), model.parameters.size()));
  }
  if (g.outputs.size() != model.outputs.size()) {
    malformed(path,
              fmt::format("the graph has {} outputs; the model lists {}", g.outputs.size(), model.outputs.size()));
  }
  // The inputs and parameters in any order (the graph keeps its trace's); the outputs in the order listed.
  for (const TensorSpec& spec : model.inputs) check_node(g, g.inputs, spec, "input", path);
  for (const TensorSpec& spec : model.parameters) check_node(g, g.inputs, spec, "input", path);
  for (size_t i = 0; i < model.outputs.size(); ++i) {
    if (g.outputs[i].name != model.outputs[i].name) {
      malformed(path, fmt::format("the graph's output {} is `{}`; the model lists `{}`", i,
                                  graph::shown_in_message(g.outputs[i].name),
                                  graph::shown_in_message(model.outputs[i].name)));
    }
    check_node(g, g.outputs, model.outputs[i], "output", path);
  }
  return model;
}

ModelFile read_model_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    throw ServeError(kUnreadableOperand, fmt::format("{}: cannot read it: {}", path, std::strerror(errno)));
  }
  std::string text;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw ServeError(kUnreadableOperand, fmt::format("{}: not a file", path));
  }
  text.resize(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::read(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = n < 0 ? errno : 0;
      ::close(fd);
      throw ServeError(kUnreadableOperand,
                       fmt::format("{}: cannot read it: {}", path, err ? std::strerror(err) : "it ended early"));
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  return parse_model_file(text, path);
}

}  // namespace sx::serve
