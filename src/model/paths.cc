// Giving parameters their paths (docs/models.md, "Roots" and "Paths").
#include "model/paths.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "lang/printer.h"
#include "lang/tracer.h"
#include "model/codes.h"

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
  Namer(lang::Interpreter& interp, ParameterTable& table, const std::vector<LoadScope>& load_scopes)
      : interp_(interp), table_(table), load_scopes_(load_scopes) {}

  void walk(Model& model, const std::string& prefix) {
    visited_.insert(&model);
    std::vector<std::string> segments = member_segments(model);
    for (size_t m = 0; m < model.members.size(); ++m) {
      const auto& member = model.members[m];
      const std::string& segment = segments[m];
      if (member.child) {
        Model& child = *member.child;
        if (child.named.empty() && child.segment.empty()) {
          lang::Diagnostic d;
          d.code = "W-PARAM-001";
          d.span = child.span;
          d.message = fmt::format("this `{}` is never bound to a name, so its parameters are under `{}.{}`",
                                  lang::shown_in_message(child.constructor), lang::shown_in_message(prefix),
                                  lang::shown_in_message(segment));
          d.helps.push_back("bind it with `let` in the constructor, or name it with (named \"segment\" ...)");
          interp_.warn(std::move(d));
        }
        walk(child, prefix + "." + segment);
        continue;
      }
      const ParamDecl& decl = model.params[member.param];
      std::string path = prefix + "." + segment;
      if (const Parameter* other = table_.find(path)) {
        lang::Diagnostic d;
        d.code = "E-PARAM-010";
        // Two sub-models under one name is the usual cause: point at the models' calls.
        bool same_declaration =
            other->decl->span.offset == decl.span.offset && other->decl->span.file == decl.span.file;
        d.span = same_declaration ? model.span : decl.span;
        d.message = fmt::format("two parameters have the path `{}`", lang::shown_in_message(path));
        d.notes.push_back(same_declaration ? fmt::format("the other belongs to the `{}` built at {}",
                                                         lang::shown_in_message(other->owner->constructor),
                                                         other->owner->span.location())
                                           : fmt::format("the other is declared at {}", other->decl->span.location()));
        d.helps.push_back("bind the sub-models to different names, or rename one with (named \"segment\" ...)");
        throw lang::Error(std::move(d));
      }
      if (decl.load_scope != SIZE_MAX && !decl.load) name_loaded_tensor(model.params[member.param], path);
      table_.params.push_back({path, &decl, &model});
    }
  }

  bool visited(const Model* model) const { return visited_.count(model) != 0; }

 private:
  // with-loaded's name function, called with the parameter's final path.
  void name_loaded_tensor(ParamDecl& decl, const std::string& path) {
    const LoadScope& scope = load_scopes_[decl.load_scope];
    std::vector<lang::Value> args{lang::make_string(path)};
    std::vector<lang::Span> spans{scope.span};
    lang::Value name;
    try {
      name = interp_.apply(scope.name, args, spans, scope.span);
    } catch (lang::Error& e) {
      e.diagnostic().notes.push_back(
          fmt::format("while naming the tensor of `{}` for `with-loaded`", lang::shown_in_message(path)));
      throw;
    }
    if (!name.is(lang::Type::String)) {
      lang::Diagnostic d;
      d.code = "E-PARAM-007";
      d.span = scope.span;
      d.message = fmt::format("the name function of `with-loaded` gave `{}` for `{}`, not a string",
                              lang::printed_in_message(name), lang::shown_in_message(path));
      d.helps.push_back("return the tensor's name in the file, a string");
      throw lang::Error(std::move(d));
    }
    decl.load = {scope.file, lang::string_of(name)};
  }

  lang::Interpreter& interp_;
  ParameterTable& table_;
  const std::vector<LoadScope>& load_scopes_;
  std::set<const Model*> visited_;
};

// The first node of `graph` that reads `input`, if any.
std::optional<graph::NodeId> first_reader(const graph::Graph& graph, graph::NodeId input) {
  for (graph::NodeId id = input + 1; id < graph.nodes.size(); ++id) {
    for (graph::NodeId arg : graph.nodes[id].inputs) {
      if (arg == input) return id;
    }
  }
  return std::nullopt;
}

}  // namespace

std::vector<std::string> member_segments(const Model& model) {
  std::vector<std::string> out;
  size_t anonymous = 0, gensyms = 0;
  for (const auto& member : model.members) {
    if (member.child) {
      const Model& child = *member.child;
      out.push_back(!child.named.empty()     ? child.named
                    : !child.segment.empty() ? child.segment
                                             : fmt::format("anon.{}", anonymous++));
      continue;
    }
    const ParamDecl& decl = model.params[member.param];
    out.push_back(!decl.named.empty() ? decl.named : decl.gensym ? fmt::format("param.{}", gensyms++) : decl.name);
  }
  return out;
}

ParameterTable resolve_parameters(lang::Interpreter& interp, ModelState& state, lang::Env& top) {
  std::vector<Root> roots;
  std::map<const Model*, const Root*> bound;
  for (const auto& [symbol, value] : top.bindings()) {
    Model* model = as_model(value);
    if (!model) continue;
    roots.push_back({symbol->name, model, model->span, top.imported(symbol)});
  }
  // The top-level name of the root a model belongs to, for messages.
  auto root_name = [&](const Model* m) {
    while (m->parent) m = m->parent;
    for (const auto& r : roots) {
      if (r.model == m) return r.name;
    }
    return std::string("a model without a root");
  };
  for (const auto& root : roots) {
    const Model* owner = root.model->parent;
    if (owner || bound.count(root.model)) {
      lang::Diagnostic d;
      d.code = "E-PARAM-008";
      d.span = root.span;
      d.message = bound.count(root.model)
                      ? fmt::format("one model is bound to two top-level names: `{}` and `{}`",
                                    lang::shown_in_message(bound[root.model]->name), lang::shown_in_message(root.name))
                      : fmt::format("`{}` is a sub-model of `{}` (a `{}` inside it) and is also bound at the top level",
                                    lang::shown_in_message(root.name), lang::shown_in_message(root_name(owner)),
                                    lang::shown_in_message(owner->constructor));
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
  Namer namer(interp, table, state.load_scopes);
  for (const auto& root : roots) namer.walk(*root.model, root.name);

  // Every parameter input is named by its path, or param#N while it has no root.
  graph::Graph& graph = interp.tracer()->graph();
  for (auto& input : graph.inputs) {
    if (state.param_names.count(input.node)) input.name = fmt::format("param#{}", input.node);
  }
  for (const auto& param : table.params) {
    for (auto& input : graph.inputs) {
      if (input.node == param.decl->node) input.name = param.path;
    }
  }
  return table;
}

void check_unrooted_reads(lang::Interpreter& interp, const ModelState& state, const graph::Graph& graph) {
  for (const auto& input : graph.inputs) {
    if (!input.name.starts_with("param#")) continue;
    auto reader = first_reader(graph, input.node);
    if (!reader) continue;
    auto trace_node = static_cast<graph::NodeId>(std::stoul(input.name.substr(6)));
    for (const auto& held : state.models) {
      const Model* model = as_model(held);
      for (const auto& decl : model->params) {
        if (decl.node != trace_node) continue;
        lang::Diagnostic d;
        d.code = kParameterWithoutRoot;
        d.span = interp.tracer()->span_of(graph.node(*reader).origin);
        d.message = fmt::format("this reads `{}` of a `{}` model that has no root", lang::shown_in_message(decl.name),
                                lang::shown_in_message(model->constructor));
        d.notes.push_back(fmt::format("the model is built at {}", model->span.location()));
        d.helps.push_back(
            "bind the model with `defvar` at the top level, or build it inside the `defmodel` that uses it");
        throw lang::Error(std::move(d));
      }
    }
  }
}

}  // namespace sx::model
