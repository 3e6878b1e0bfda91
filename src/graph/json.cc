// Writing and reading the JSON form of graphs (see json.h).
#include "graph/json.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "graph/errors.h"
#include "graph/primitive.h"
#include "graph/verify.h"

namespace sx::graph {
namespace {

using nlohmann::json;

constexpr std::string_view kBase64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string base64_encode(std::span<const uint8_t> bytes) {
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    size_t n = std::min<size_t>(3, bytes.size() - i);
    uint32_t chunk = 0;
    for (size_t k = 0; k < 3; ++k) chunk = chunk << 8 | (k < n ? bytes[i + k] : 0u);
    for (size_t k = 0; k < 4; ++k) out += k <= n ? kBase64[(chunk >> (18 - 6 * k)) & 63] : '=';
  }
  return out;
}

[[noreturn]] void malformed(std::string_view where, std::string_view what) {
  throw FormatError(
      fmt::format("graph JSON: {}: {}; the file is damaged or was not written by sexpgpu: "
                  "write it again with `sexpgpu export`",
                  where, what));
}

std::vector<uint8_t> base64_decode(std::string_view text, std::string_view where) {
  if (text.size() % 4 != 0) malformed(where, "the constant's base64 value has a length that is not a multiple of 4");
  std::vector<uint8_t> out;
  for (size_t i = 0; i < text.size(); i += 4) {
    uint32_t chunk = 0;
    int padding = 0;
    for (size_t k = 0; k < 4; ++k) {
      char c = text[i + k];
      size_t digit = kBase64.find(c);
      if (c == '=' && i + 4 == text.size() && k >= 2) {
        ++padding;
        digit = 0;
      } else if (digit == std::string_view::npos || padding > 0) {
        malformed(where, fmt::format("the constant's value has '{}', which is not base64", c));
      }
      chunk = chunk << 6 | static_cast<uint32_t>(digit);
    }
    out.push_back(static_cast<uint8_t>(chunk >> 16));
    if (padding < 2) out.push_back(static_cast<uint8_t>(chunk >> 8));
    if (padding < 1) out.push_back(static_cast<uint8_t>(chunk));
  }
  return out;
}

// Finite doubles as JSON numbers (they read back exactly); NaN and the
// infinities, which JSON lacks, as the strings "nan", "inf" and "-inf".
json double_to_json(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

json attr_to_json(const AttrValue& value) {
  if (auto* i = std::get_if<int64_t>(&value)) return {{"int", *i}};
  if (auto* l = std::get_if<std::vector<int64_t>>(&value)) return {{"ints", *l}};
  if (auto* d = std::get_if<double>(&value)) return {{"double", double_to_json(*d)}};
  if (auto* t = std::get_if<DType>(&value)) return {{"dtype", dtype_name(*t)}};
  return {{"string", std::get<std::string>(value)}};
}

const json& field(const json& object, std::string_view name, std::string_view where) {
  if (!object.is_object()) malformed(where, "is not a JSON object");
  auto it = object.find(name);
  if (it == object.end()) malformed(where, fmt::format("the field \"{}\" is missing", name));
  return *it;
}

template <class T>
T read(const json& value, std::string_view where, std::string_view what) {
  try {
    return value.get<T>();
  } catch (const json::exception&) {
    malformed(where, fmt::format("expected {}, got {}", what, value.dump()));
  }
}

DType read_dtype(const json& value, std::string_view where) {
  auto name = read<std::string>(value, where, "a dtype name");
  auto dtype = parse_dtype(name);
  if (!dtype)
    malformed(where, fmt::format("unknown dtype \"{}\" (the dtypes are f32 bf16 f64 i32 i64 bool u8 u16)", name));
  return *dtype;
}

double read_double(const json& value, std::string_view where) {
  if (value.is_string()) {
    auto text = value.get<std::string>();
    if (text == "nan") return std::nan("");
    if (text == "inf") return INFINITY;
    if (text == "-inf") return -INFINITY;
  }
  return read<double>(value, where, "a number");
}

AttrValue read_attr(const json& value, std::string_view where) {
  if (!value.is_object() || value.size() != 1) malformed(where, "an attribute must be an object with one field");
  auto first = value.begin();
  const std::string& kind = first.key();
  const json& v = first.value();
  if (kind == "int") return read<int64_t>(v, where, "an integer");
  if (kind == "ints") return read<std::vector<int64_t>>(v, where, "a list of integers");
  if (kind == "double") return read_double(v, where);
  if (kind == "dtype") return read_dtype(v, where);
  if (kind == "string") return read<std::string>(v, where, "a string");
  malformed(where, fmt::format("unknown attribute kind \"{}\" (int, ints, double, dtype or string)", kind));
}

json node_to_json(const Node& node) {
  json attrs = json::object();
  for (const auto& [name, value] : node.attrs.values()) attrs[name] = attr_to_json(value);
  json out = {{"op", node.op_name()}, {"inputs", node.inputs}, {"dtype", dtype_name(node.dtype)},
              {"shape", node.shape},  {"attrs", attrs},        {"weak", node.weak},
              {"origin", node.origin}};
  if (node.value) out["value"] = base64_encode(node.value->bytes());
  return out;
}

Node node_from_json(const json& j, std::string_view where) {
  Node node;
  auto op = read<std::string>(field(j, "op", where), where, "an op name");
  node.prim = find_primitive(op);
  if (!node.prim) {
    throw FormatError(
        fmt::format("graph JSON: {}: unknown op \"{}\"; the file needs a newer sexpgpu: upgrade it", where, op));
  }
  node.inputs = read<std::vector<NodeId>>(field(j, "inputs", where), where, "a list of node ids");
  node.dtype = read_dtype(field(j, "dtype", where), where);
  node.shape = read<Shape>(field(j, "shape", where), where, "a shape");
  const json& attrs = field(j, "attrs", where);
  if (!attrs.is_object()) malformed(where, "\"attrs\" must be an object");
  for (const auto& [name, value] : attrs.items())
    node.attrs.set(name, read_attr(value, fmt::format("{}, attribute \"{}\"", where, name)));
  node.weak = read<bool>(field(j, "weak", where), where, "true or false");
  node.origin = read<uint32_t>(field(j, "origin", where), where, "an origin number");
  if (j.contains("value")) {
    auto text = read<std::string>(j["value"], where, "a base64 string");
    try {
      node.value = std::make_shared<const Tensor>(node.dtype, node.shape, base64_decode(text, where));
    } catch (const FormatError&) {
      throw;
    } catch (const GraphError& e) {
      malformed(where, e.what());
    }
  }
  return node;
}

json names_to_json(const std::vector<NamedNode>& names) {
  json out = json::array();
  for (const NamedNode& n : names) out.push_back({{"name", n.name}, {"node", n.node}});
  return out;
}

std::vector<NamedNode> names_from_json(const json& j, std::string_view kind) {
  if (!j.is_array()) malformed(kind, "must be a list");
  std::vector<NamedNode> out;
  for (const json& n : j) {
    out.push_back({read<std::string>(field(n, "name", kind), kind, "a name"),
                   read<NodeId>(field(n, "node", kind), kind, "a node id")});
  }
  return out;
}

}  // namespace

json graph_to_json(const Graph& graph) {
  json nodes = json::array();
  for (const Node& node : graph.nodes) nodes.push_back(node_to_json(node));
  return {{"format", kGraphFormat},
          {"version", kGraphVersion},
          {"inputs", names_to_json(graph.inputs)},
          {"outputs", names_to_json(graph.outputs)},
          {"nodes", nodes}};
}

Graph graph_from_json(const json& document) {
  auto format = read<std::string>(field(document, "format", "the document"), "\"format\"", "a string");
  if (format != kGraphFormat) {
    malformed("\"format\"", fmt::format("is \"{}\", not \"{}\"", format, kGraphFormat));
  }
  auto version = read<int>(field(document, "version", "the document"), "\"version\"", "an integer");
  if (version > kGraphVersion) {
    throw FormatError(
        fmt::format("graph JSON: version {} is newer than this build reads (up to {}); upgrade sexpgpu "
                    "to read it",
                    version, kGraphVersion));
  }
  if (version < 1) malformed("\"version\"", fmt::format("{} is not a version (they start at 1)", version));
  Graph graph;
  const json& nodes = field(document, "nodes", "the document");
  if (!nodes.is_array()) malformed("\"nodes\"", "must be a list");
  for (size_t i = 0; i < nodes.size(); ++i) graph.nodes.push_back(node_from_json(nodes[i], fmt::format("node {}", i)));
  graph.inputs = names_from_json(field(document, "inputs", "the document"), "\"inputs\"");
  graph.outputs = names_from_json(field(document, "outputs", "the document"), "\"outputs\"");
  try {
    verify(graph);
  } catch (const VerifyError& e) {
    malformed("the graph", e.what());
  }
  return graph;
}

std::string graph_to_json_text(const Graph& graph, int indent) { return graph_to_json(graph).dump(indent); }

Graph graph_from_json_text(std::string_view text) {
  json document;
  try {
    document = json::parse(text);
  } catch (const json::parse_error& e) {
    malformed("the text", fmt::format("is not JSON ({})", e.what()));
  }
  return graph_from_json(document);
}

}  // namespace sx::graph
