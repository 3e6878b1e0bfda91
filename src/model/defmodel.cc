// defmodel, defparam and named: constructors that create models, the parameters they
// declare, and the names let-bindings give sub-models.
#include <fmt/format.h>

#include <filesystem>
#include <functional>
#include <set>

#include "graph/errors.h"
#include "graph/primitive.h"
#include "io/location.h"
#include "io/safetensors.h"
#include "lang/builtins/builtins.h"
#include "lang/codes.h"
#include "lang/printer.h"
#include "lang/tracer.h"
#include "model/model.h"

namespace sx::model {
namespace {

using lang::Args;
using lang::Cons;
using lang::Env;
using lang::fail;
using lang::Interpreter;
using lang::Span;
using lang::Type;
using lang::Value;

struct Part {
  Value value;
  Span span;
};

std::vector<Part> parts_of(const Value& form, Span span) {
  std::vector<Part> parts;
  for (Cons* c = lang::as_cons(form); c; c = lang::next(c)) {
    parts.push_back({c->car, c->car_span.known() ? c->car_span : span});
  }
  return parts;
}

// Calling a constructor: a fresh model collects the parameters and sub-models its body
// makes; the body's value, which must be callable, is what applying the model calls.
Value construct(const std::shared_ptr<ModelState>& state, const Value& body, const std::string& name, Args& a) {
  auto* model = new Model(name, a.call);
  Value result(model);
  if (!state->constructing.empty()) {
    Model* parent = state->constructing.back();
    model->parent = parent;
    parent->children.push_back(result);
    parent->members.push_back({SIZE_MAX, model});
  }
  state->models.push_back(result);
  state->constructing.push_back(model);
  struct Pop {
    std::vector<Model*>& stack;
    ~Pop() { stack.pop_back(); }
  } pop{state->constructing};
  Value function = a.interp.apply(body, a.values, a.spans, a.call);
  bool callable = function.is(Type::Function) || as_model(function);
  if (!callable) {
    const auto* closure = dynamic_cast<const lang::Closure*>(body.as<lang::Function>());
    lang::Diagnostic d;
    d.code = "E-PARAM-004";
    d.span = a.call;
    if (closure) {
      d.span = closure->span;
      for (Cons* c = lang::as_cons(closure->body); c; c = lang::next(c)) {
        if (c->car_span.known()) d.span = c->car_span;  // the last form of the body
      }
    }
    std::string kind = function.is(Type::Opaque) ? function.as<lang::Opaque>()->type_label()
                                                 : std::string(lang::type_name(function.type()));
    d.message = fmt::format("the body of `{}` ends in {} `{}`, not a function", lang::shown_in_message(name), kind,
                            lang::printed_in_message(function));
    d.helps.push_back("end the body with the function the model applies: (lambda (x) ...)");
    d.calls.push_back({fmt::format("`{}`", lang::shown_in_message(name)), a.call});
    throw lang::Error(std::move(d));
  }
  model->function = function;
  return result;
}

Value defmodel(const std::shared_ptr<ModelState>& state, Interpreter& in, const Value& form, Span span, Env& env) {
  auto p = parts_of(form, span);
  if (p.size() < 3 || !p[1].value.is(Type::Symbol)) {
    fail(lang::kMalformedForm, span, "malformed `defmodel`", "write it as (defmodel name (params...) body...)");
  }
  std::string name = p[1].value.as<lang::Symbol>()->name;
  // The body is an ordinary function of the constructor's parameters.
  std::vector<Value> lambda_form{lang::make_symbol("lambda")};
  std::vector<Span> spans{span};
  for (size_t i = 2; i < p.size(); ++i) lambda_form.push_back(p[i].value), spans.push_back(p[i].span);
  Value body = in.eval(lang::list_with_spans(std::move(lambda_form), spans), span, env);
  body.as<lang::Function>()->name = name;
  auto* native =
      new lang::NativeClosure(name, [state, body, name](Args& a) { return construct(state, body, name, a); });
  native->documented_by = body;  // (doc NAME) shows the defmodel's lambda list and documentation
  Value constructor(native);
  lang::define_top_level(in, p[1].value.as<lang::Symbol>(), constructor, p[1].span, env);
  return p[1].value;
}

std::vector<std::string> tag_names(const Part& part, const Value& tags) {
  std::vector<std::string> names;
  std::vector<Value> items = tags.is(Type::Vector) ? tags.as<lang::Vector>()->items : lang::list_items(tags);
  if (!tags.is(Type::Vector) && !tags.is_list()) {
    fail("E-PARAM-006", part.span,
         fmt::format("`:tags` takes a list or vector of names, not `{}`", lang::printed_in_message(tags)));
  }
  for (const auto& tag : items) {
    if (tag.is(Type::Keyword) || tag.is(Type::Symbol)) names.push_back(tag.as<lang::Symbol>()->name);
    else if (tag.is(Type::String)) names.push_back(lang::string_of(tag));
    else fail("E-PARAM-006", part.span, fmt::format("a tag is a name, not `{}`", lang::printed_in_message(tag)));
  }
  return names;
}

// The initializer's graph, copied out of the trace: it may read constants and random
// keys only (E-PARAM-003). Random keys become inputs key.0, key.1, ... in order.
graph::Graph closed_initializer(const std::shared_ptr<ModelState>& state, lang::Tracer& tracer, graph::NodeId root,
                                const std::string& name, Span span) {
  const graph::Graph& trace = tracer.graph();
  std::set<graph::NodeId> rng(state->rng_inputs.begin(), state->rng_inputs.end());
  std::vector<bool> needed(root + 1, false);
  needed[root] = true;
  for (graph::NodeId id = root + 1; id-- > 0;) {
    if (!needed[id]) continue;
    const graph::Node& n = trace.node(id);
    if ((n.op() == graph::PrimId::input && !rng.count(id)) || tracer.is_argument(id)) {
      std::string what = "a value that is not a shape, constant or random node";
      if (auto named = state->param_names.find(id); named != state->param_names.end()) {
        what = fmt::format("the parameter `{}`, which is not a shape, constant or random node",
                           lang::shown_in_message(named->second));
      } else if (tracer.is_argument(id)) {
        what = "an argument of a function being differentiated, which is not a shape, constant or random node";
      }
      lang::Diagnostic d;
      d.code = "E-PARAM-003";
      d.span = span;
      d.message = fmt::format("the initializer of `{}` reads {}", lang::shown_in_message(name), what);
      d.helps.push_back("build the initializer from shapes, constants and random initializers only");
      if (Span from = tracer.span_of(n.origin); from.known())
        d.notes.push_back("that value comes from " + from.location());
      throw lang::Error(std::move(d));
    }
    for (graph::NodeId input : n.inputs) needed[input] = true;
  }
  graph::Graph init;
  std::vector<graph::NodeId> remap(root + 1);
  size_t keys = 0;
  for (graph::NodeId id = 0; id <= root; ++id) {
    if (!needed[id]) continue;
    graph::Node n = trace.node(id);
    for (auto& input : n.inputs) input = remap[input];
    remap[id] = static_cast<graph::NodeId>(init.nodes.size());
    if (n.op() == graph::PrimId::input) init.inputs.push_back({fmt::format("key.{}", keys++), remap[id]});
    n.origin = 0;
    init.nodes.push_back(std::move(n));
  }
  init.outputs.push_back({"value", remap[root]});
  return init;
}

Value defparam(const std::shared_ptr<ModelState>& state, Interpreter& in, const Value& form, Span span, Env& env) {
  auto p = parts_of(form, span);
  if (p.size() < 3 || !p[1].value.is(Type::Symbol)) {
    fail(lang::kMalformedForm, span, "malformed `defparam`",
         "write it as (defparam name initializer :keyword value ...)");
  }
  if (state->constructing.empty()) {
    fail("E-PARAM-002", span, "`defparam` outside a model",
         "declare parameters inside a `defmodel` body; a model's constructor creates them");
  }
  Model& model = *state->constructing.back();
  const auto* symbol = p[1].value.as<lang::Symbol>();
  ParamDecl decl;
  decl.name = symbol->name;
  decl.gensym = lang::intern(symbol->name) != symbol;
  decl.span = span;
  decl.init_source = std::string(p[2].span.file->text().substr(p[2].span.offset, p[2].span.length));

  // Under with-loaded the innermost scope gives :load and :trainable unless the
  // defparam gives its own, each on its own.
  if (!state->active_loads.empty()) {
    decl.load_scope = state->active_loads.back();
    decl.trainable = state->load_scopes[decl.load_scope].trainable;
  }
  Value init = in.eval(p[2].value, p[2].span, env);
  if ((p.size() - 3) % 2 != 0) {
    fail("E-PARAM-006", p.back().span, "`defparam` options come in pairs: a keyword and its value");
  }
  for (size_t i = 3; i + 1 < p.size(); i += 2) {
    const Part& key = p[i];
    if (!key.value.is(Type::Keyword)) {
      fail("E-PARAM-006", key.span,
           fmt::format("`defparam` options are keywords, not `{}`", lang::printed_in_message(key.value)),
           "the options are :tags, :numerics, :trainable and :load");
    }
    std::string option = key.value.as<lang::Symbol>()->name;
    Value value = in.eval(p[i + 1].value, p[i + 1].span, env);
    if (option == "tags") {
      decl.tags = tag_names(p[i + 1], value);
    } else if (option == "numerics") {
      if (!value.is(Type::Keyword) || value.as<lang::Symbol>()->name != "high") {
        fail("E-PARAM-006", p[i + 1].span,
             fmt::format("`:numerics` takes `:high`, not `{}`", lang::printed_in_message(value)));
      }
      decl.numerics_high = true;
    } else if (option == "trainable") {
      if (!value.is(Type::Bool)) {
        fail("E-PARAM-007", p[i + 1].span,
             fmt::format("`:trainable` takes true or false, not `{}`", lang::printed_in_message(value)));
      }
      decl.trainable = value.as_bool();
    } else if (option == "load") {
      std::vector<Value> pair = value.is(Type::Vector) ? value.as<lang::Vector>()->items : std::vector<Value>{};
      if (pair.size() != 2 || !pair[0].is(Type::String) || !pair[1].is(Type::String)) {
        fail("E-PARAM-007", p[i + 1].span,
             fmt::format("`:load` takes [file tensor], two strings, not `{}`", lang::printed_in_message(value)));
      }
      decl.load = {resolve_data_path(lang::string_of(pair[0]), p[i + 1].span), lang::string_of(pair[1])};
    } else {
      fail("E-PARAM-006", key.span, fmt::format("`defparam` has no option `:{}`", lang::shown_in_message(option)),
           "the options are :tags, :numerics, :trainable and :load");
    }
  }

  if (decl.load) decl.load_scope = SIZE_MAX;
  const auto& tracer = in.tracer();
  graph::Builder& b = tracer->builder();
  tracer->at(p[2].span);
  graph::NodeId root;
  if (const auto* t = lang::as_tensor(init)) {
    root = t->node;
  } else if (init.is_number()) {
    root = b.scalar(init.as_double(), graph::DType::f32);
  } else {
    fail("E-PARAM-003", p[2].span,
         fmt::format("the initializer of `{}` is {} `{}`, not a tensor", lang::shown_in_message(decl.name),
                     lang::type_name(init.type()), lang::printed_in_message(init)),
         "write an initializer such as (normal [in out] :std 0.02) or (zeros [out])");
  }
  if (b.graph().node(root).weak) root = b.cast(root, graph::DType::f32);
  decl.init = closed_initializer(state, *tracer, root, decl.name, p[2].span);
  decl.shape = b.graph().node(root).shape;
  decl.dtype = b.graph().node(root).dtype;
  tracer->at(span);
  // param#N names a parameter until it has a path; naming the parameters renames those
  // left without a root by their node (paths.cc), so a number may already be taken.
  std::string input_name;
  do {
    input_name = fmt::format("param#{}", state->next_param_input++);
  } while (b.graph().find_input(input_name));
  decl.node = b.input(std::move(input_name), decl.shape, decl.dtype);
  state->param_names[decl.node] = decl.name;

  Value param = lang::make_tensor(tracer, decl.node);
  model.members.push_back({model.params.size(), nullptr});
  model.params.push_back(std::move(decl));
  env.define(symbol, param);
  return param;
}

// (named "segment" value): the segment of a model's or parameter's path.
Value named(const std::shared_ptr<ModelState>& state, Interpreter& in, const Value& form, Span span, Env& env) {
  auto p = parts_of(form, span);
  if (p.size() != 3) fail(lang::kMalformedForm, span, "malformed `named`", "write it as (named \"segment\" value)");
  Value segment = in.eval(p[1].value, p[1].span, env);
  if (!segment.is(Type::String) || lang::string_of(segment).empty() ||
      lang::string_of(segment).find('.') != std::string::npos) {
    fail("E-PARAM-005", p[1].span,
         fmt::format("a path segment is a non-empty string without dots, not `{}`", lang::printed_in_message(segment)));
  }
  Value value = in.eval(p[2].value, p[2].span, env);
  if (Model* model = as_model(value)) {
    model->named = lang::string_of(segment);
    return value;
  }
  if (const auto* t = lang::as_tensor(value)) {
    for (const auto& held : state->models) {
      for (auto& decl : as_model(held)->params) {
        if (decl.node == t->node) {
          decl.named = lang::string_of(segment);
          return value;
        }
      }
    }
  }
  fail("E-PARAM-005", p[2].span,
       fmt::format(
           "`named` names a model or a parameter, not {} `{}`",
           value.is(Type::Opaque) ? value.as<lang::Opaque>()->type_label() : std::string(lang::type_name(value.type())),
           lang::printed_in_message(value)));
}

// (with-loaded (file name &key (trainable false)) body...): every defparam executed while
// the body is evaluated loads from `file`, its tensor named by (name path) once paths exist.
Value with_loaded(const std::shared_ptr<ModelState>& state, Interpreter& in, const Value& form, Span span, Env& env) {
  auto p = parts_of(form, span);
  const char* expected = "(with-loaded (file name-function :trainable true) body...)";
  if (p.size() < 2 || !p[1].value.is(Type::Cons)) {
    fail("E-PARAM-007", p.size() < 2 ? span : p[1].span, "`with-loaded` needs a header (file name-function)",
         std::string("write it as ") + expected);
  }
  auto header = parts_of(p[1].value, p[1].span);
  if (header.size() != 2 && header.size() != 4) {
    fail("E-PARAM-007", p[1].span, "a `with-loaded` header is a file, a function and an optional :trainable boolean",
         std::string("write it as ") + expected);
  }
  Value file = in.eval(header[0].value, header[0].span, env);
  if (!file.is(Type::String)) {
    fail("E-PARAM-007", header[0].span,
         fmt::format("the file of `with-loaded` must be a string, not {} `{}`", lang::type_label(file),
                     lang::printed_in_message(file)));
  }
  Value name = in.eval(header[1].value, header[1].span, env);
  if (!name.is(Type::Function)) {
    fail("E-PARAM-007", header[1].span,
         fmt::format(
             "the name of `with-loaded` must be a function from a parameter's path to a tensor name, not {} `{}`",
             lang::type_label(name), lang::printed_in_message(name)));
  }
  LoadScope scope{resolve_data_path(lang::string_of(file), header[0].span), name, false, span};
  if (header.size() == 4) {
    bool is_trainable_key =
        header[2].value.is(Type::Keyword) && header[2].value.as<lang::Symbol>()->name == "trainable";
    Value trainable = in.eval(header[3].value, header[3].span, env);
    if (!is_trainable_key || !trainable.is(Type::Bool)) {
      fail("E-PARAM-007", header[2].span, "the only option of a `with-loaded` header is :trainable true or false");
    }
    scope.trainable = trainable.as_bool();
  }
  state->load_scopes.push_back(std::move(scope));
  state->active_loads.push_back(state->load_scopes.size() - 1);
  struct Pop {
    std::vector<size_t>& stack;
    ~Pop() { stack.pop_back(); }
  } pop{state->active_loads};
  Value result;
  for (size_t i = 2; i < p.size(); ++i) result = in.eval(p[i].value, p[i].span, env);
  return result;
}

// A let-binding names the sub-models made by the constructor under way: `blocks` for
// one, `blocks.0`, `blocks.1`, ... for a list or vector of them. The first name wins.
void name_bound_models(const std::shared_ptr<ModelState>& state, const lang::Symbol* name, const Value& value) {
  // Gensym bindings (a macro's) never name models.
  if (state->constructing.empty() || lang::intern(name->name) != name) return;
  Model* owner = state->constructing.back();
  auto claim = [&](const Value& v, const std::string& segment) {
    Model* m = as_model(v);
    if (m && m->parent == owner && m->segment.empty()) m->segment = segment;
  };
  claim(value, name->name);
  std::vector<Value> items = value.is(Type::Vector) ? value.as<lang::Vector>()->items
                             : value.is(Type::Cons) ? lang::list_items(value)
                                                    : std::vector<Value>{};
  for (size_t i = 0; i < items.size(); ++i) claim(items[i], fmt::format("{}.{}", name->name, i));
}

}  // namespace

std::string resolve_data_path(const std::string& path, Span span) {
  // The scheme before anything else: file:///abs/w.safetensors is /abs/w.safetensors, not a
  // relative path; any other scheme stays as written, for opening to refuse it by name.
  std::string scheme = io::scheme_of(path);
  if (scheme == "file") {
    try {
      return io::local_path(path);
    } catch (const io::LoadError& e) {
      lang::fail(e.code(), span, e.what(), "write file:///absolute/path, or the path itself");
    }
  }
  if (!scheme.empty() || path.starts_with("/") || !span.known()) return path;
  std::filesystem::path dir = std::filesystem::path(span.file->path()).parent_path();
  return (dir / path).lexically_normal().string();
}

void install_model_forms(lang::Interpreter& in, const std::shared_ptr<ModelState>& state) {
  auto doc = [](std::string_view form, std::string_view summary, std::string_view example = {}) {
    return lang::BuiltinDoc{std::string(form), std::string(summary), std::string(example), "Special forms"};
  };
  in.define_special_form(
      "defmodel", [state](Interpreter& i, const Value& f, Span s, Env& e) { return defmodel(state, i, f, s, e); },
      doc("(defmodel name (params...) [\"doc\"] body...)",
          "Defines a model constructor: its body declares parameters and ends in the function the model applies.",
          "(defmodel scale (n) (defparam s (ones [n])) (lambda (x) (* x s)))\n(defvar model (scale 2))\n"
          "(model (tensor [1.0 2.0]))\n;; => (tensor [1.0 2.0] :dtype :f32)"));
  in.define_special_form(
      "defparam", [state](Interpreter& i, const Value& f, Span s, Env& e) { return defparam(state, i, f, s, e); },
      doc("(defparam name initializer :tags [...] :numerics :high :trainable false :load [file tensor])",
          "Declares a parameter of the model being constructed and binds name to it."));
  in.define_special_form(
      "with-loaded", [state](Interpreter& i, const Value& f, Span s, Env& e) { return with_loaded(state, i, f, s, e); },
      doc("(with-loaded (file name-function :trainable false) body...)",
          "Every defparam run in the body loads from file, its tensor named by (name-function path)."));
  in.define_special_form(
      "named", [state](Interpreter& i, const Value& f, Span s, Env& e) { return named(state, i, f, s, e); },
      doc("(named \"segment\" value)", "value, a model or parameter, with segment as its name in paths."));
  in.on_let_binding = [state](const lang::Symbol* name, const Value& value) { name_bound_models(state, name, value); };
}

}  // namespace sx::model
