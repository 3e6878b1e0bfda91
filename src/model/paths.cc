// Giving parameters their paths (the seed page's "Roots" and "Paths").
#include "model/paths.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "lang/tracer.h"

namespace sx::model {

const Parameter* ParameterTable::find(std::string_view path) const {
  for (const auto& p : params) {
    if (p.path == path) return &p;
  }
  return nullptr;
}

const Parameter* ParameterTable::find_node(graph::NodeId node) const {
  for (const auto& p : params) {
    if (p.decl->node == node) return &p;
  }
  return nullptr;
}

namespace {

struct Root {
  std::string name;
  Model* model;
  lang::Span span;
  bool imported;
};

class Namer {
 public:
  Namer(lang::Interpreter& interp, ParameterTable& table) : interp_(interp), table_(table) {}

  void walk(Model& model, const std::string& prefix) {
    visited_.insert(&model);
    size_t anonymous = 0, gensyms = 0;
    for (const auto& member : model.members) {
      if (member.child) {
        Model& child = *member.child;
        std::string segment = !child.named.empty() ? child.named : child.segment;
        if (segment.empty()) {
          segment = fmt::format("anon.{}", anonymous++);
          lang::Diagnostic d;
          d.code = "W-PARAM-001";
          d.span = child.span;
          d.message = fmt::format("this `{}` is never bound to a name, so its parameters are under `{}.{}`",
                                  child.constructor, prefix, segment);
          d.helps.push_back("bind it with `let` in the constructor, or name it with (named \"segment\" ...)");
          interp_.warn(std::move(d));
        }
        walk(child, prefix + "." + segment);
        continue;
      }
      const ParamDecl& decl = model.params[member.param];
      std::string segment = !decl.named.empty() ? decl.named
                            : decl.gensym       ? fmt::format("param.{}", gensyms++)
                                                : decl.name;
      std::string path = prefix + "." + segment;
      if (const Parameter* other = table_.find(path)) {
        lang::Diagnostic d;
        d.code = "E-PARAM-010";
        d.span = decl.span;
        d.message = fmt::format("two parameters have the path `{}`", path);
        d.notes.push_back(fmt::format("the other is declared at {}", other->decl->span.location()));
        d.helps.push_back("bind the sub-models to different names, or rename one with (named \"segment\" ...)");
        throw lang::Error(std::move(d));
      }
      table_.params.push_back({path, &decl, &model});
    }
  }

  bool visited(const Model* model) const { return visited_.count(model) != 0; }

 private:
  lang::Interpreter& interp_;
  ParameterTable& table_;
  std::set<const Model*> visited_;
};

// The first node of the trace that reads `input`, if any.
std::optional<graph::NodeId> first_reader(const graph::Graph& graph, graph::NodeId input) {
  for (graph::NodeId id = input + 1; id < graph.nodes.size(); ++id) {
    for (graph::NodeId arg : graph.nodes[id].inputs) {
      if (arg == input) return id;
    }
  }
  return std::nullopt;
}

}  // namespace

ParameterTable resolve_parameters(lang::Interpreter& interp, ModelState& state, lang::Env& top,
                                  const std::string& run_file) {
  std::vector<Root> roots;
  std::map<const Model*, const Root*> bound;
  for (const auto& [symbol, value] : top.bindings()) {
    Model* model = as_model(value);
    if (!model) continue;
    bool imported = model->span.known() && model->span.file->path() != run_file;
    roots.push_back({symbol->name, model, model->span, imported});
  }
  for (const auto& root : roots) {
    const Model* owner = root.model->parent;
    if (owner || bound.count(root.model)) {
      lang::Diagnostic d;
      d.code = "E-PARAM-008";
      d.span = root.span;
      d.message = bound.count(root.model)
                      ? fmt::format("one model is bound to two top-level names: `{}` and `{}`",
                                    bound[root.model]->name, root.name)
                      : fmt::format("`{}` is part of a `{}` model and is also bound at the top level", root.name,
                                    owner->constructor);
      d.helps.push_back("a model has one root: bind it to one name, or build a second model");
      throw lang::Error(std::move(d));
    }
    bound[root.model] = &root;
  }
  // model first, then imported roots, then the file's own, each in binding order.
  std::stable_sort(roots.begin(), roots.end(), [](const Root& a, const Root& b) {
    auto rank = [](const Root& r) { return r.name == "model" ? 0 : r.imported ? 1 : 2; };
    return rank(a) < rank(b);
  });
  ParameterTable table;
  Namer namer(interp, table);
  for (const auto& root : roots) namer.walk(*root.model, root.name);

  graph::Graph& graph = interp.tracer()->graph();
  for (const auto& held : state.models) {
    const Model* model = as_model(held);
    if (namer.visited(model)) continue;
    for (const auto& decl : model->params) {
      auto reader = first_reader(graph, decl.node);
      if (!reader) continue;
      lang::Diagnostic d;
      d.code = "E-PARAM-009";
      d.span = interp.tracer()->span_of(graph.node(*reader).origin);
      d.message = fmt::format("this reads `{}` of a `{}` model that has no root", decl.name, model->constructor);
      d.notes.push_back(fmt::format("the model is built at {}", model->span.location()));
      d.helps.push_back("bind the model with `defvar` at the top level, or build it inside the `defmodel` that uses it");
      throw lang::Error(std::move(d));
    }
  }
  for (const auto& param : table.params) {
    for (auto& input : graph.inputs) {
      if (input.node == param.decl->node) input.name = param.path;
    }
  }
  return table;
}

}  // namespace sx::model
