// The evaluator: environments, functions, and the Interpreter that evaluates forms.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "lang/diagnostic.h"
#include "lang/reader.h"
#include "lang/value.h"

namespace sx::lang {

class Interpreter;
class Tracer;

// A scope. A module's top level keeps its names in definition order (roots are ordered
// by it); a call or `let` frame keeps a few names in a flat vector.
class Env final : public Object {
 public:
  explicit Env(Ref<Env> parent, bool top_level = false);
  ~Env() override;

  Value* lookup(const Symbol* name);
  Value* lookup_local(const Symbol* name);
  void define(const Symbol* name, Value value);
  bool top_level() const { return top_level_; }
  Env* parent() const { return parent_.get(); }
  // The nearest enclosing top level: where `defvar` and `defun` define.
  Env& module();
  // Names in the order they were first defined.
  const std::vector<std::pair<const Symbol*, Value>>& bindings() const { return bindings_; }
  // Where a top-level name's binding came from: the module a `require` imported it from
  // and that require's span, or module "" and the span of a definition in this file.
  struct Origin {
    std::string module;
    Span span;
  };
  const Origin* origin(const Symbol* name) const;
  void set_origin(const Symbol* name, Origin origin) { origins_[name] = std::move(origin); }
  // Whether a top-level name was brought in by `require` (and not defined again since).
  bool imported(const Symbol* name) const {
    const Origin* o = origin(name);
    return o && !o->module.empty();
  }
  // Drops every binding; breaks the closure <-> environment cycles at shutdown.
  void clear();

  // Set by the interpreter: the registry that lets it clear environments at shutdown.
  Env* registry_prev = nullptr;
  Env* registry_next = nullptr;
  Interpreter* registry_owner = nullptr;

  // The module file a top-level environment belongs to ("" for the REPL and builtins).
  std::string module_path;
  // The folder this module's relative requires must stay under, set by require
  // (module.cc): the run file's folder, or a library module's library folder. Empty for
  // the file given to the command, whose own folder it is, and for the top level of the
  // REPL or of an expression, where it is the current directory.
  std::string require_root;

 private:
  Ref<Env> parent_;
  bool top_level_;
  std::vector<std::pair<const Symbol*, Value>> bindings_;
  std::unordered_map<const Symbol*, size_t> index_;    // top level only
  std::unordered_map<const Symbol*, Origin> origins_;  // top level only
};

// How a call's arguments fit a lambda list (match_arguments): where the keyword
// arguments begin, and the index of each keyword's value, by the keyword's name.
struct ArgumentMatch {
  size_t keywords_at = 0;  // the arguments before it are the positional ones and the &rest
  std::map<std::string, size_t> keywords;
};

// The arguments of a builtin call, with where each came from for error messages.
class Args {
 public:
  Args(Interpreter& interp, std::string_view function, std::span<Value> values, std::span<const Span> spans,
       const Span& call, ArgumentMatch matched = {})
      : interp(interp), function(function), values(values), spans(spans), call(call), matched_(std::move(matched)) {}

  size_t size() const { return values.size(); }
  Value& operator[](size_t i) const { return values[i]; }
  Span span(size_t i) const { return i < spans.size() && spans[i].known() ? spans[i] : call; }

  // Typed access: each throws E-EVAL-004 naming the argument when the type is wrong.
  int64_t integer(size_t i) const;
  double number(size_t i) const;  // an integer or a float
  const std::string& string(size_t i) const;
  const Symbol* keyword(size_t i) const;
  const Value& list(size_t i) const;  // nil or a cons
  Value& callable(size_t i) const;    // a function
  [[noreturn]] void type_error(size_t i, std::string_view expected) const;

  // The keyword arguments given, each name to the index of its value: checked against the
  // function's lambda list before it is called (known, with a value, given once).
  const std::map<std::string, size_t>& keywords() const { return matched_.keywords; }
  // Where the keyword arguments begin (size() when none are given).
  size_t keywords_at() const { return matched_.keywords.empty() ? values.size() : matched_.keywords_at; }

  Interpreter& interp;
  std::string_view function;
  std::span<Value> values;
  std::span<const Span> spans;
  Span call;

 private:
  ArgumentMatch matched_;
};

using BuiltinFn = Value (*)(Args& args);

// What `(doc NAME)` and docs/builtins.md show of a builtin or a special form. It is part of
// the one row that defines the builtin (builtins/builtins.h), never a second table.
struct BuiltinDoc {
  std::string params;   // the lambda list: "(f seq &rest seqs)", "(x &key axis keepdims)"
  std::string summary;  // one line: what it does
  std::string example;  // an expression, then ";; => VALUE" on a line of its own
  std::string family;   // the heading docs/builtins.md lists it under
};

class Function : public Object {
 public:
  Function(Type type, std::string name) : Object(type), name(std::move(name)) {}
  std::string name;
  // The lambda list as text, "(x &key (axis -1))", and the documentation; "" when unknown.
  virtual std::string lambda_list() const { return {}; }
  virtual std::string documentation() const { return {}; }
};

struct LambdaList;

// A builtin function. Its lambda list, parsed from the documentation's (doc.params), is
// its signature: the interpreter checks a call's arity and keywords against it before
// calling fn (match_arguments).
class Builtin final : public Function {
 public:
  Builtin(std::string name, BuiltinFn fn, BuiltinDoc doc, std::shared_ptr<const LambdaList> params)
      : Function(Type::Function, std::move(name)), fn(fn), doc(std::move(doc)), params(std::move(params)) {}
  std::string lambda_list() const override { return doc.params; }
  std::string documentation() const override { return doc.summary; }
  BuiltinFn fn;
  BuiltinDoc doc;
  std::shared_ptr<const LambdaList> params;
};

// A function native code makes at run time, closing over values (what `grad` returns, a
// model's constructor, a builtin with state such as `normal`). One documented with a
// lambda list (Interpreter::define_native) is checked against it as a builtin is.
class NativeClosure final : public Function {
 public:
  using Body = std::function<Value(Args&)>;
  NativeClosure(std::string name, Body body, BuiltinDoc doc = {}, std::shared_ptr<const LambdaList> params = nullptr)
      : Function(Type::Function, std::move(name)),
        body(std::move(body)),
        doc(std::move(doc)),
        params(std::move(params)) {}
  std::string lambda_list() const override {
    return documented_by.is(Type::Function) ? documented_by.as<Function>()->lambda_list() : doc.params;
  }
  std::string documentation() const override {
    return documented_by.is(Type::Function) ? documented_by.as<Function>()->documentation() : doc.summary;
  }
  Body body;
  BuiltinDoc doc;
  std::shared_ptr<const LambdaList> params;  // nullptr: the body checks its arguments
  // A model's constructor: the defmodel's body, whose lambda list and documentation
  // `(doc NAME)` shows.
  Value documented_by;
};

struct LambdaList {
  struct Param {
    const Symbol* name = nullptr;
    Value default_form;  // nil when absent
    Span default_span;
    const Symbol* keyword = nullptr;  // &key parameters: the keyword that names it
  };
  std::vector<const Symbol*> required;
  std::vector<Param> optional;
  const Symbol* rest = nullptr;
  std::vector<Param> keys;
  bool has_keys = false;

  // "(x &key (y 2))" for messages.
  std::string describe() const;
};

// Parses a lambda list; E-EVAL-005 when it is malformed.
std::shared_ptr<const LambdaList> parse_lambda_list(const Value& form, const Span& span);

// Checks a call's arguments against a lambda list, for closures and builtins alike, and
// says where each keyword's value is. Too few or too many is E-EVAL-003, with the note
// `note` makes (what the function is) beside the message. Keyword arguments follow the
// positional ones (with &rest, they begin at the first keyword after them): a value where
// a keyword belongs, an unknown keyword (unless `other_keys_allowed`) or one given twice
// is E-EVAL-006, a keyword without its value E-EVAL-007.
ArgumentMatch match_arguments(const LambdaList& params, std::string_view function, std::span<const Value> args,
                              std::span<const Span> spans, const Span& call, const std::function<std::string()>& note,
                              bool other_keys_allowed);

class Closure final : public Function {
 public:
  Closure(Type type, std::string name, std::shared_ptr<const LambdaList> params, Value body, Ref<Env> env,
          const Span& span, Value doc = {})
      : Function(type, std::move(name)),
        params(std::move(params)),
        body(std::move(body)),
        env(std::move(env)),
        span(span),
        doc(std::move(doc)) {}
  std::string lambda_list() const override { return params->describe(); }
  std::string documentation() const override { return doc.is(Type::String) ? string_of(doc) : std::string(); }
  std::shared_ptr<const LambdaList> params;
  Value body;  // a list of forms
  Ref<Env> env;
  Span span;  // where it was defined
  Value doc;  // the documentation string (a string as the first of several body forms), or nil
};

// A special form's handler: the whole form `(name ...)`, its span, the environment.
using SpecialForm = std::function<Value(Interpreter&, const Value& form, const Span& span, Env& env)>;

struct InterpreterOptions {
  std::vector<std::string> library_dirs;  // where `require "sexpgpu/..."` looks
  // Folders (or files) a require may read besides the run file's folder and the library:
  // --allow-require and SEXPGPU_ALLOW_REQUIRE.
  std::vector<std::string> require_allowed;
  size_t max_call_depth = 10000;
  size_t max_stack_bytes = 6u << 20;  // native stack the evaluator may use below its first frame
  uint64_t max_steps = 0;             // 0: unlimited
  bool warn_redefinition = true;      // off in the REPL, where redefining is the point
  ReaderLimits reader_limits;
};

class Interpreter {
 public:
  explicit Interpreter(InterpreterOptions options = {});
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  // A fresh top-level environment for a file or the REPL, above the builtins.
  Ref<Env> new_top_level(std::string module_path = {});
  // A call or `let` frame; every environment is made here so shutdown can clear it.
  Ref<Env> new_frame(Ref<Env> parent);
  // Reads and evaluates a file in a fresh top level; returns it.
  Ref<Env> load_file(const std::string& path);
  // Reads `text` as a source named `name` and evaluates its forms in `env`; the last value.
  Value eval_text(std::string text, std::string name, Env& env);
  Value eval_forms(const std::vector<Form>& forms, Env& env);

  // Spans go by reference through evaluation: copying one counts a reference to its source.
  Value eval(const Value& form, const Span& span, Env& env);
  // Calls a function value with evaluated arguments.
  Value apply(const Value& function, std::span<Value> args, std::span<const Span> arg_spans, const Span& call);

  // Defines a builtin whose signature is the lambda list doc.params ("(x &key axis)"):
  // the arity and keywords every call is checked against (E-EVAL-005 when malformed).
  void define_builtin(std::string_view name, BuiltinFn fn, BuiltinDoc doc);
  // The same for a native closure, whose body may hold state.
  void define_native(std::string_view name, NativeClosure::Body body, BuiltinDoc doc);
  // Registers a special form; later parts (models, runs) add their own this way. `doc`
  // is what `(doc NAME)` and docs/builtins.md show of it.
  void define_special_form(std::string_view name, SpecialForm handler, BuiltinDoc doc = {});
  bool is_special_form(const Symbol* name) const;
  // The documentation of a special form (empty fields when it has none); nullptr when
  // `name` is not one. Special forms in the order they were defined.
  const BuiltinDoc* special_form_doc(const Symbol* name) const;
  const std::vector<const Symbol*>& special_form_names() const { return special_form_order_; }

  // Runs the traced tensors in a value on a device, so printing shows their elements
  // (`print`, `str`, `format`, `item`, `save-tensors`). Set by the commands that have a
  // device (eval, repl); unset, tensors that are not constants stay unevaluated.
  std::function<Value(const Value&)> materialize;
  // The value with its traced tensors run, when `materialize` is set; else the value.
  Value materialized(const Value& value);
  Env& builtins() { return *builtins_; }

  // Told of every name `let` or `let*` binds (models take their names from bindings).
  std::function<void(const Symbol* name, const Value& value)> on_let_binding;

  // Warnings go here; by default they are printed to standard error.
  std::function<void(const Diagnostic&)> on_warning;
  void warn(Diagnostic diagnostic);

  SourceMap& sources() { return sources_; }
  // The graph tensor expressions trace into (tracer.h).
  const std::shared_ptr<Tracer>& tracer() { return tracer_; }
  const InterpreterOptions& options() const { return options_; }

  // Counts one evaluation step against `max_steps`, or `n` for builtins that build n things.
  void charge(uint64_t n, const Span& span);
  // Starts the `max_steps` budget over: the REPL gives each input its own.
  void reset_steps() { steps_ = 0; }
  // Evaluation stops at its next step with E-EVAL-020 while `*flag` is true: the REPL's
  // Ctrl-C, whose signal handler may do no more than set a flag.
  void interrupt_when(const std::atomic<bool>* flag) { interrupt_ = flag; }

  // Used by Env's constructor and destructor.
  void register_env(Env* env);
  void unregister_env(Env* env);

  // Module loading (require); see module.cc.
  Ref<Env> require_module(const std::string& name, Span span, Env& from);
  // The file of every module loaded so far, by its canonical path, sorted.
  std::vector<std::string> module_files() const;
  // The standard library modules ("sexpgpu/ops", ...) whose top level defines `name`
  // (defun, defmacro, defvar, defmodel), sorted: read from the module files themselves,
  // once, the first time it is asked (for the help of an unbound name).
  std::vector<std::string> library_modules_defining(const std::string& name);

  // Macro expansion context for quasiquote: the argument forms of the macro call being
  // expanded, so inserted forms keep their own spans.
  struct Expansion {
    std::vector<std::pair<Value, Span>> args;
    Span call;
  };
  const Expansion* expansion() const { return expansions_.empty() ? nullptr : &expansions_.back(); }
  Value expand_macro(const Closure& macro, const Value& form, const Span& span);

 private:
  Value eval_call(const Value& form, const Span& span, Env& env);
  Value apply_closure(const Closure& closure, std::span<Value> args, std::span<const Span> arg_spans, const Span& call);
  void bind_arguments(const Closure& closure, std::span<Value> args, std::span<const Span> arg_spans, const Span& call,
                      Env& frame);
  void check_depth(const Span& span);
  [[noreturn]] void unbound(const Symbol* name, const Span& span, Env& env);
  // A builtin's lambda list, read from its documentation (kept in sources_ for its spans).
  std::shared_ptr<const LambdaList> signature(std::string_view name, const std::string& params);

  struct Module {
    Ref<Env> env;
    bool loading = true;
  };

  InterpreterOptions options_;
  SourceMap sources_;
  Ref<Env> builtins_;
  std::unordered_map<const Symbol*, SpecialForm> special_forms_;
  std::unordered_map<const Symbol*, BuiltinDoc> special_form_docs_;
  std::vector<const Symbol*> special_form_order_;
  std::map<std::string, Module> modules_;
  std::vector<std::string> loading_;  // the require chain, for cycle messages
  std::optional<std::map<std::string, std::vector<std::string>>> library_names_;  // name -> modules
  std::vector<Expansion> expansions_;
  std::shared_ptr<Tracer> tracer_;
  Env* env_registry_ = nullptr;
  size_t depth_ = 0;
  uintptr_t stack_base_ = 0;
  uint64_t steps_ = 0;
  const std::atomic<bool>* interrupt_ = nullptr;
};

// Defines `name` at the top level of `env`'s module, warning when it replaces a definition
// (W-EVAL-002) or shadows a builtin (W-EVAL-001): what defvar, defun and require do (a
// require first refuses, E-EVAL-018, to replace anything). Records the name's origin as
// this file, at `span`.
void define_top_level(Interpreter& in, const Symbol* name, Value value, const Span& span, Env& env);

// Installs the special forms of the core language (special_forms.cc).
void install_special_forms(Interpreter& interp);
// Installs `doc` and `help` (doc.cc).
void install_doc_forms(Interpreter& interp);
// Installs the builtin functions (builtins/*.cc).
void install_builtins(Interpreter& interp);

// Quasiquote expansion (quasiquote.cc).
Value eval_quasiquote(Interpreter& interp, const Value& tmpl, const Span& span, Env& env, int depth);

}  // namespace sx::lang
