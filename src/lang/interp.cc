// The evaluator core: environments, calls, argument binding, depth and step limits.
#include "lang/interp.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <new>

#include "graph/memory.h"
#include "lang/codes.h"
#include "lang/printer.h"
#include "lang/tracer.h"

namespace sx::lang {

// --- Env ---------------------------------------------------------------------------------

Env::Env(Ref<Env> parent, bool top_level) : Object(Type::Env), parent_(std::move(parent)), top_level_(top_level) {}

Env::~Env() {
  if (registry_owner) registry_owner->unregister_env(this);
}

Value* Env::lookup_local(const Symbol* name) {
  if (top_level_) {
    auto it = index_.find(name);
    return it == index_.end() ? nullptr : &bindings_[it->second].second;
  }
  // Later bindings shadow earlier ones (let* rebinding a name).
  for (auto it = bindings_.rbegin(); it != bindings_.rend(); ++it) {
    if (it->first == name) return &it->second;
  }
  return nullptr;
}

Value* Env::lookup(const Symbol* name) {
  for (Env* env = this; env; env = env->parent_.get()) {
    if (Value* v = env->lookup_local(name)) return v;
  }
  return nullptr;
}

void Env::define(const Symbol* name, Value value) {
  if (top_level_) {
    auto [it, inserted] = index_.emplace(name, bindings_.size());
    if (!inserted) {
      bindings_[it->second].second = std::move(value);
      return;
    }
  }
  bindings_.emplace_back(name, std::move(value));
}

const Env::Origin* Env::origin(const Symbol* name) const {
  auto found = origins_.find(name);
  return found == origins_.end() ? nullptr : &found->second;
}

Env& Env::module() {
  Env* env = this;
  while (!env->top_level_ && env->parent_) env = env->parent_.get();
  return *env;
}

void Env::clear() {
  auto doomed = std::move(bindings_);
  bindings_.clear();
  index_.clear();
  parent_ = Ref<Env>();
}

// --- Args --------------------------------------------------------------------------------

void Args::type_error(size_t i, std::string_view expected) const {
  const Value& v = values[i];
  std::string given = std::string(type_name(v.type()));
  if (v.is(Type::Opaque)) given = v.as<Opaque>()->type_label();
  fail("E-EVAL-004", span(i),
       fmt::format("argument {} of `{}` must be {}, not {} `{}`", i + 1, shown_in_message(function), expected, given,
                   printed_in_message(v)));
}

int64_t Args::integer(size_t i) const {
  if (!values[i].is(Type::Int)) type_error(i, "an integer");
  return values[i].as_int();
}

double Args::number(size_t i) const {
  if (!values[i].is_number()) type_error(i, "a number");
  return values[i].as_double();
}

const std::string& Args::string(size_t i) const {
  if (!values[i].is(Type::String)) type_error(i, "a string");
  return string_of(values[i]);
}

const Symbol* Args::keyword(size_t i) const {
  if (!values[i].is(Type::Keyword)) type_error(i, "a keyword");
  return values[i].as<Symbol>();
}

const Value& Args::list(size_t i) const {
  if (!values[i].is_list()) type_error(i, "a list");
  return values[i];
}

Value& Args::callable(size_t i) const {
  if (!values[i].is(Type::Function)) type_error(i, "a function");
  return values[i];
}

// --- Interpreter -------------------------------------------------------------------------

Interpreter::Interpreter(InterpreterOptions options)
    : options_(std::move(options)), tracer_(std::make_shared<Tracer>()) {
  builtins_ = Ref<Env>(new Env(Ref<Env>(), true));
  register_env(builtins_.get());
  on_warning = [](const Diagnostic& d) { std::fputs(render(d, stderr_wants_color()).c_str(), stderr); };
  install_special_forms(*this);
  install_builtins(*this);
}

Interpreter::~Interpreter() {
  // Closures and the environments they capture refer to each other; clear every
  // environment still alive so the cycles fall apart.
  std::vector<Ref<Env>> alive;
  for (Env* env = env_registry_; env; env = env->registry_next) alive.emplace_back(env);
  for (auto& env : alive) env->clear();
  for (auto& env : alive) {
    unregister_env(env.get());
    env->registry_owner = nullptr;
  }
  modules_.clear();
}

void Interpreter::register_env(Env* env) {
  env->registry_owner = this;
  env->registry_next = env_registry_;
  if (env_registry_) env_registry_->registry_prev = env;
  env_registry_ = env;
}

void Interpreter::unregister_env(Env* env) {
  if (env->registry_prev) env->registry_prev->registry_next = env->registry_next;
  else if (env_registry_ == env) env_registry_ = env->registry_next;
  if (env->registry_next) env->registry_next->registry_prev = env->registry_prev;
  env->registry_prev = env->registry_next = nullptr;
}

Ref<Env> Interpreter::new_frame(Ref<Env> parent) {
  Ref<Env> env(new Env(std::move(parent)));
  register_env(env.get());
  return env;
}

Ref<Env> Interpreter::new_top_level(std::string module_path) {
  Ref<Env> env(new Env(builtins_, true));
  env->module_path = std::move(module_path);
  register_env(env.get());
  return env;
}

std::shared_ptr<const LambdaList> Interpreter::signature(std::string_view name, const std::string& params) {
  const SourceFile& file = sources_.add(fmt::format("<lambda list of {}>", name), params);
  std::vector<Form> forms = read_forms(file);
  if (forms.size() != 1) {
    fail("E-EVAL-005", forms.empty() ? Span{} : forms[1].span,
         fmt::format("the lambda list of builtin `{}` must be one list, not `{}`", name, params));
  }
  return parse_lambda_list(forms[0].value, forms[0].span);
}

void Interpreter::define_builtin(std::string_view name, BuiltinFn fn, BuiltinDoc doc) {
  auto params = signature(name, doc.params);
  builtins_->define(intern(name), Value(new Builtin(std::string(name), fn, std::move(doc), std::move(params))));
}

void Interpreter::define_native(std::string_view name, NativeClosure::Body body, BuiltinDoc doc) {
  auto params = signature(name, doc.params);
  builtins_->define(intern(name),
                    Value(new NativeClosure(std::string(name), std::move(body), std::move(doc), std::move(params))));
}

void Interpreter::define_special_form(std::string_view name, SpecialForm handler, BuiltinDoc doc) {
  const Symbol* symbol = intern(name);
  if (!special_forms_.count(symbol)) special_form_order_.push_back(symbol);
  special_forms_[symbol] = std::move(handler);
  special_form_docs_[symbol] = std::move(doc);
}

bool Interpreter::is_special_form(const Symbol* name) const { return special_forms_.count(name) != 0; }

const BuiltinDoc* Interpreter::special_form_doc(const Symbol* name) const {
  auto it = special_form_docs_.find(name);
  return it == special_form_docs_.end() ? nullptr : &it->second;
}

namespace {

// Whether a value holds, at any depth of lists and vectors, a tensor that is not a constant.
bool holds_traced_tensor(const Value& v, int depth = 0) {
  if (depth > 1000) return false;
  if (const TensorValue* t = as_tensor(v)) return !t->info().value;
  if (v.is(Type::Cons)) {
    for (Cons* c = as_cons(v); c; c = next(c)) {
      if (holds_traced_tensor(c->car, depth + 1)) return true;
    }
  } else if (v.is(Type::Vector)) {
    for (const auto& item : v.as<Vector>()->items) {
      if (holds_traced_tensor(item, depth + 1)) return true;
    }
  }
  return false;
}

}  // namespace

Value Interpreter::materialized(const Value& value) {
  return materialize && holds_traced_tensor(value) ? materialize(value) : value;
}

void Interpreter::warn(Diagnostic diagnostic) {
  diagnostic.severity = Severity::Warning;
  if (on_warning) on_warning(diagnostic);
}

void Interpreter::charge(uint64_t n, const Span& span) {
  if (interrupt_ && interrupt_->load(std::memory_order_relaxed)) {
    fail(kInterrupted, span, "interrupted", "Ctrl-C stopped this input; the session goes on");
  }
  steps_ += n;
  if (options_.max_steps && steps_ > options_.max_steps) {
    fail("E-EVAL-017", span, fmt::format("evaluation took more than {} steps", options_.max_steps),
         "raise --max-steps, or remove it");
  }
}

Value Interpreter::eval_text(std::string text, std::string name, Env& env) {
  const SourceFile& file = sources_.add(std::move(name), std::move(text));
  return eval_forms(read_forms(file, options_.reader_limits), env);
}

Value Interpreter::eval_forms(const std::vector<Form>& forms, Env& env) {
  Value last;
  for (const auto& form : forms) last = eval(form.value, form.span, env);
  return last;
}

Ref<Env> Interpreter::load_file(const std::string& path) {
  const SourceFile& file = load_source_file(sources_, path, options_.reader_limits);
  Ref<Env> env = new_top_level(path);
  eval_forms(read_forms(file, options_.reader_limits), *env);
  return env;
}

Value Interpreter::eval(const Value& form, const Span& span, Env& env) {
  if (options_.max_steps || interrupt_) charge(1, span);
  switch (form.type()) {
    case Type::Symbol: {
      const auto* name = form.as<Symbol>();
      if (Value* v = env.lookup(name)) return *v;
      if (is_special_form(name)) {
        fail("E-EVAL-016", span, fmt::format("`{}` is a special form, not a value", name->name),
             fmt::format("call it as `({} ...)`", name->name));
      }
      unbound(name, span, env);
    }
    case Type::Cons:
      // The innermost form that was evaluating owns a request over the memory limit,
      // wherever below it the request was made.
      try {
        return eval_call(form, span, env);
      } catch (const graph::MemoryLimitError& e) {
        fail(graph::kOverMemoryLimit, span, e.what(), std::string(graph::kMemoryLimitHelp));
      } catch (const std::bad_alloc&) {
        fail(graph::kOverMemoryLimit, span, graph::out_of_memory_message("evaluating this form"),
             std::string(graph::kOutOfMemoryHelp));
      }
    case Type::Vector: {
      // A vector literal evaluates its elements: [in out] is a shape of two numbers.
      const auto* vector = form.as<Vector>();
      std::vector<Value> items;
      items.reserve(vector->items.size());
      for (size_t i = 0; i < vector->items.size(); ++i) {
        items.push_back(eval(vector->items[i], vector->span_of(i).known() ? vector->span_of(i) : span, env));
      }
      return make_vector(std::move(items));
    }
    default: return form;  // numbers, strings, keywords, booleans, nil evaluate to themselves
  }
}

namespace {

// Names longer than this (in characters) are neither suggested nor given suggestions: the
// distance costs the product of the two lengths, and no typo of a long name is likely.
constexpr size_t kMaxSuggestedChars = 64;

size_t count_characters(std::string_view s) {
  return static_cast<size_t>(
      std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

// The code points of a UTF-8 string, each as its bytes, so distances count characters.
std::vector<std::string_view> characters(std::string_view s) {
  std::vector<std::string_view> out;
  for (size_t i = 0; i < s.size();) {
    size_t n = 1;
    while (i + n < s.size() && (static_cast<unsigned char>(s[i + n]) & 0xC0) == 0x80) ++n;
    out.push_back(s.substr(i, n));
    i += n;
  }
  return out;
}

// Optimal string alignment distance (an edit, or swapping two neighbours, costs 1) when
// it is at most `bound`, else bound + 1. Stops early: once two rows in a row exceed the
// bound, no later row comes back under it.
size_t bounded_distance(const std::vector<std::string_view>& a, const std::vector<std::string_view>& b, size_t bound) {
  size_t longer = std::max(a.size(), b.size()), shorter = std::min(a.size(), b.size());
  if (longer - shorter > bound) return bound + 1;
  std::vector<size_t> before(b.size() + 1), previous(b.size() + 1), row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) previous[j] = j;
  size_t previous_min = 0;
  for (size_t i = 1; i <= a.size(); ++i) {
    row[0] = i;
    size_t row_min = row[0];
    for (size_t j = 1; j <= b.size(); ++j) {
      row[j] = std::min({previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (a[i - 1] != b[j - 1])});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) row[j] = std::min(row[j], before[j - 2] + 1);
      row_min = std::min(row_min, row[j]);
    }
    if (row_min > bound && previous_min > bound) return bound + 1;
    previous_min = row_min;
    std::swap(before, previous);
    std::swap(previous, row);
  }
  return std::min(previous[b.size()], bound + 1);
}

}  // namespace

void Interpreter::unbound(const Symbol* name, const Span& span, Env& env) {
  std::string help = "define it with `defvar` or `defun`, or bind it with `let`";
  std::vector<std::string> modules = library_modules_defining(name->name);
  if (!modules.empty()) {
    std::string to_require;
    for (size_t i = 0; i < modules.size(); ++i) {
      to_require += fmt::format("{}(require \"{}\")", i == 0 ? "" : " or ", modules[i]);
    }
    help = fmt::format("the standard library defines `{}`: {}", name->name, to_require);
  } else if (size_t wanted_chars = count_characters(name->name); wanted_chars <= kMaxSuggestedChars) {
    // Inner scopes are searched first and win ties, so the program's own names beat builtins.
    auto wanted = characters(name->name);
    size_t bound = std::max<size_t>(1, wanted_chars / 4);  // the most edits a suggestion may be away
    std::string best;
    for (Env* e = &env; e && bound > 0; e = e->parent()) {
      for (const auto& [symbol, value] : e->bindings()) {
        if (symbol->name.size() > 4 * kMaxSuggestedChars) continue;  // more bytes than any short name has
        size_t chars = count_characters(symbol->name);
        if (symbol->name == name->name) continue;  // a gensym of the same spelling is no typo
        if (chars > kMaxSuggestedChars || std::max(chars, wanted_chars) - std::min(chars, wanted_chars) > bound) {
          continue;
        }
        size_t d = bounded_distance(wanted, characters(symbol->name), bound);
        if (d > bound) continue;
        best = symbol->name;
        bound = d - 1;  // a later name must be closer to win
        if (bound == 0) break;
      }
    }
    if (!best.empty()) help = fmt::format("a name like it is defined: `{}`", best);
  }
  fail("E-EVAL-001", span, fmt::format("unbound name `{}`", shown_in_message(name->name)), help);
}

void Interpreter::check_depth(const Span& span) {
  auto here = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  bool stack_exhausted = stack_base_ > here && stack_base_ - here > options_.max_stack_bytes;
  if (depth_ > options_.max_call_depth || stack_exhausted) {
    fail("E-EVAL-008", span, fmt::format("recursion too deep: more than {} nested calls", depth_ - 1),
         "check that the recursion reaches its base case");
  }
}

Value Interpreter::eval_call(const Value& form, const Span& span, Env& env) {
  const Cons* cell = form.as<Cons>();
  if (depth_ == 0) stack_base_ = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  ++depth_;
  struct DepthGuard {
    size_t& depth;
    ~DepthGuard() { --depth; }
  } guard{depth_};
  check_depth(span);

  const Span& head_span = cell->car_span.known() ? cell->car_span : span;
  if (const Symbol* name = as_symbol(cell->car)) {
    auto special = special_forms_.find(name);
    if (special != special_forms_.end()) return special->second(*this, form, span, env);
  }
  Value head = eval(cell->car, head_span, env);
  // A model's callee may itself be a model.
  while (head.is(Type::Opaque) && head.as<Opaque>()->callee()) head = *head.as<Opaque>()->callee();
  if (head.is(Type::Macro)) {
    const auto& macro = *head.as<Closure>();
    Value expansion = expand_macro(macro, form, span);
    try {
      return eval(expansion, span, env);
    } catch (Error& e) {
      e.diagnostic().calls.push_back({fmt::format("the expansion of `{}`", shown_in_message(macro.name)), span});
      throw;
    }
  }
  if (!head.is(Type::Function)) {
    std::string kind = head.is(Type::Opaque) ? head.as<Opaque>()->type_label() : std::string(type_name(head.type()));
    std::string help;
    if (const Symbol* name = as_symbol(cell->car)) {
      help = fmt::format("`{}` names {}; only a function can be called", shown_in_message(name->name), kind);
    } else {
      help = "to write a list as data, quote it: '(1 2 3), or build it: (list 1 2 3)";
    }
    fail("E-EVAL-002", head_span, fmt::format("`{}` is not a function: it is {}", printed_in_message(head), kind),
         help);
  }
  std::vector<Value> args;
  std::vector<Span> spans;
  for (Cons* c = next(cell); c; c = next(c)) {
    const Span& arg_span = c->car_span.known() ? c->car_span : span;
    args.push_back(eval(c->car, arg_span, env));
    spans.push_back(arg_span);
  }
  return apply(head, args, spans, span);
}

Value Interpreter::expand_macro(const Closure& macro, const Value& form, const Span& span) {
  std::vector<Value> args;
  std::vector<Span> spans;
  Expansion expansion{{}, span};
  for (Cons* c = next(form.as<Cons>()); c; c = next(c)) {
    args.push_back(c->car);
    spans.push_back(c->car_span.known() ? c->car_span : span);
    expansion.args.emplace_back(c->car, spans.back());
  }
  expansions_.push_back(std::move(expansion));
  struct Pop {
    std::vector<Expansion>& stack;
    ~Pop() { stack.pop_back(); }
  } pop{expansions_};
  return apply_closure(macro, args, spans, span);
}

namespace {

// A builtin's arguments against its lambda list; its keywords are all it takes.
ArgumentMatch builtin_match(const LambdaList& params, std::string_view name, std::span<const Value> args,
                            std::span<const Span> spans, const Span& call) {
  auto what = [&] {
    return fmt::format("`{}` is a builtin with the parameters {}", shown_in_message(name), params.describe());
  };
  return match_arguments(params, name, args, spans, call, what, false);
}

}  // namespace

Value Interpreter::apply(const Value& function, std::span<Value> args, std::span<const Span> arg_spans,
                         const Span& call) {
  if (function.is(Type::Opaque) && function.as<Opaque>()->callee()) {
    return apply(*function.as<Opaque>()->callee(), args, arg_spans, call);
  }
  if (function.is(Type::Function)) {
    const auto* fn = function.as<Function>();
    if (const auto* builtin = dynamic_cast<const Builtin*>(fn)) {
      Args a(*this, builtin->name, args, arg_spans, call,
             builtin_match(*builtin->params, builtin->name, args, arg_spans, call));
      return builtin->fn(a);
    }
    if (const auto* native = dynamic_cast<const NativeClosure*>(fn)) {
      ArgumentMatch match;
      if (native->params) match = builtin_match(*native->params, native->name, args, arg_spans, call);
      Args a(*this, native->name, args, arg_spans, call, std::move(match));
      return native->body(a);
    }
    return apply_closure(*static_cast<const Closure*>(fn), args, arg_spans, call);
  }
  fail("E-EVAL-002", call, fmt::format("`{}` is not a function", printed_in_message(function)));
}

Value Interpreter::apply_closure(const Closure& closure, std::span<Value> args, std::span<const Span> arg_spans,
                                 const Span& call) {
  Ref<Env> frame = new_frame(closure.env);
  bind_arguments(closure, args, arg_spans, call, *frame);
  try {
    Value result;
    for (Cons* c = as_cons(closure.body); c; c = next(c)) {
      result = eval(c->car, c->car_span.known() ? c->car_span : closure.span, *frame);
    }
    return result;
  } catch (Error& e) {
    e.diagnostic().calls.push_back({fmt::format("`{}`", shown_in_message(closure.name)), call});
    throw;
  }
}

}  // namespace sx::lang
