// The JSON form of a graph (the graph part of model.json), exact both ways:
// constants' bytes in base64, doubles written so they read back bit for bit.
//
//   {"format": "sexpgpu-graph", "version": 1,
//    "inputs": [{"name": "x", "node": 0}], "outputs": [{"name": "y", "node": 2}],
//    "nodes": [{"op": "add", "inputs": [0, 1], "dtype": "f32", "shape": [2, 3],
//               "attrs": {"axes": {"ints": [0]}}, "weak": false, "origin": 0,
//               "value": "<base64, constants only>"}, ...]}
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

#include "graph/graph.h"

namespace sx::graph {

inline constexpr std::string_view kGraphFormat = "sexpgpu-graph";
inline constexpr int kGraphVersion = 1;

nlohmann::json graph_to_json(const Graph& graph);
// Throws FormatError saying what is wrong and how to fix it (a newer
// version, a missing field, an unknown op); the graph read is verified.
Graph graph_from_json(const nlohmann::json& document);

std::string graph_to_json_text(const Graph& graph, int indent = 1);
Graph graph_from_json_text(std::string_view text);

}  // namespace sx::graph
