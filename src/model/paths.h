// Roots and paths: after a file is evaluated, every parameter of a model bound by itself
// at the top level gets its canonical path (model.blocks.3.attn.q).
#pragma once

#include <string>
#include <vector>

#include "model/model.h"

namespace sx::model {

struct Parameter {
  std::string path;
  const ParamDecl* decl = nullptr;
  const Model* owner = nullptr;
};

struct ParameterTable {
  std::vector<Parameter> params;  // model.* first, then each other root, imports first
  const Parameter* find(std::string_view path) const;
  const Parameter* find_node(graph::NodeId node) const;
};

// The path segment of each of `model`'s members, in order: a sub-model's `named`, the
// name its `let` gave it, or anon.N; a parameter's `named`, its name, or param.N.
std::vector<std::string> member_segments(const Model& model);

// Names the roots (E-PARAM-008 for a model bound twice), gives every parameter its path
// (W-PARAM-001 for an unnamed model, E-PARAM-010 for two with one path), and renames each
// parameter's trace input to its path, or to param#N while it has none. Roots brought in by `require` come after
// `model`, before the file's own.
ParameterTable resolve_parameters(lang::Interpreter& interp, ModelState& state, lang::Env& top);

// E-PARAM-009 when `graph` reads a parameter that has no root: after a file, the whole
// trace; before a run, the graph that runs (a REPL's earlier entries may read models
// that have lost their names since).
void check_unrooted_reads(lang::Interpreter& interp, const ModelState& state, const graph::Graph& graph);

}  // namespace sx::model
