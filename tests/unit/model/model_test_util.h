// Helpers for the model tests: a run file evaluated with defmodel and defrun installed,
// its parameter table, initial values on the reference device, and running a value.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "device/device.h"
#include "graph/passes.h"
#include "lang/interp.h"
#include "lang/printer.h"
#include "lang/test_util.h"
#include "lang/tracer.h"
#include "model/model.h"
#include "model/paths.h"
#include "model/select.h"
#include "model/values.h"
#include "train/run_settings.h"

namespace sx::model::testing {

// The page's `linear`, verbatim.
inline const char* kLinear = R"(
(defmodel linear (in out &key (bias true) (init-std nil))
  (defparam weight (normal [in out] :std (or init-std (/ 1.0 (sqrt in)))))
  (when bias (defparam b (zeros [out])))
  (lambda (x) (if bias (+ (matmul x weight) b) (matmul x weight))))
)";

struct RunFile {
  lang::Interpreter interp{lang::testing::test_options()};
  std::shared_ptr<ModelState> state;
  std::shared_ptr<train::RunSettings> settings;
  lang::Ref<lang::Env> top;
  ParameterTable table;
  std::vector<lang::Diagnostic> warnings;
  std::unique_ptr<device::Device> device = device::make_device("reference");
  std::optional<std::map<std::string, graph::Tensor>> initialized;

  RunFile() {
    state = install_models(interp);
    settings = train::install_defrun(interp);
    interp.on_warning = [this](const lang::Diagnostic& d) { warnings.push_back(d); };
  }

  // Evaluates `text` as the run file `name` and resolves its parameters.
  void load(const std::string& text, const std::string& name = "run.sx") {
    top = interp.new_top_level();
    interp.eval_text(text, name, *top);
    table = resolve_parameters(interp, *state, *top);
    check_unrooted_reads(interp, *state, interp.tracer()->graph());
  }

  // Evaluates a file on disk (so `require` finds files beside it) and resolves.
  void load_file(const std::string& path) {
    top = interp.load_file(path);
    table = resolve_parameters(interp, *state, *top);
    check_unrooted_reads(interp, *state, interp.tracer()->graph());
  }

  std::vector<std::string> paths() const {
    std::vector<std::string> out;
    for (const auto& p : table.params) out.push_back(p.path);
    return out;
  }

  const Parameter& param(const std::string& path) const {
    const Parameter* p = table.find(path);
    if (!p) {
      std::string all;
      for (const auto& q : paths()) all += " " + q;
      throw std::runtime_error("no parameter " + path + "; the table has:" + all);
    }
    return *p;
  }

  std::map<std::string, graph::Tensor> values(std::optional<uint64_t> seed = std::nullopt) {
    return initial_values(table, seed.value_or(settings->seed()), *device);
  }

  std::vector<double> value(const std::string& path) {
    auto all = values();
    auto it = all.find(path);
    if (it == all.end()) throw std::runtime_error("no initial value for " + path);
    return it->second.to_doubles();
  }

  lang::Value eval(const std::string& text) { return interp.eval_text(text, "<expr>", *top); }

  // Evaluates `text` in the file's top level and runs the tensor it gives on the
  // reference device, parameters at their initial values.
  graph::Tensor run(const std::string& text) {
    lang::Value v = eval(text);
    const auto* t = lang::as_tensor(v);
    if (!t) throw std::runtime_error("not a tensor: " + lang::print(v));
    if (!initialized) initialized = values();
    std::vector<graph::NodeId> outputs{t->node};
    graph::Graph program = graph::extract(interp.tracer()->graph(), outputs);
    std::vector<graph::Tensor> inputs;
    for (const auto& input : program.inputs) {
      if (auto it = initialized->find(input.name); it != initialized->end()) inputs.push_back(it->second);
      else if (input.name.starts_with("rng.")) inputs.push_back(random_key(settings->seed(), input.name));
      else throw std::runtime_error("no value for the input " + input.name);
    }
    return device->compile(program)->run_host(inputs).at(0);
  }

  // The selector `text` evaluates to, and the paths of the table's parameters it matches.
  std::vector<std::string> selected(const std::string& text) {
    lang::Value v = eval(text);
    const Selector* s = as_selector(v);
    if (!s) throw std::runtime_error("not a selector: " + lang::print(v));
    std::vector<std::string> out;
    for (const auto& p : table.params) {
      if (s->matches(p)) out.push_back(p.path);
    }
    return out;
  }
};

// The substring of `text` a span covers (for checking where a diagnostic points).
inline std::string spanned(const lang::Span& span) {
  if (!span.known()) return "<unknown span>";
  return std::string(span.file->text().substr(span.offset, span.length));
}
inline std::string spanned(const lang::Diagnostic& d) { return spanned(d.span); }

// A diagnostic with the source text its spans cover, read while the sources still exist
// (its own spans are cleared: they would point into a freed interpreter).
struct Failure : lang::Diagnostic {
  std::string where;                    // the text the span covers
  std::vector<std::string> call_where;  // the text each call frame's span covers
};
inline std::string spanned(const Failure& d) { return d.where; }

// The diagnostic loading `text` raises, or one with an empty code when it raises none.
inline Failure load_error(const std::string& text) {
  RunFile f;
  Failure out;
  try {
    f.load(text);
  } catch (const lang::Error& e) {
    static_cast<lang::Diagnostic&>(out) = e.diagnostic();
    out.where = spanned(e.diagnostic().span);
    for (const auto& call : e.diagnostic().calls) out.call_where.push_back(spanned(call.call));
    out.span = {};
    for (auto& call : out.calls) call.call = {};
  }
  return out;
}

inline std::string error_code(const std::string& text) { return load_error(text).code; }

inline double mean_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

inline double std_of(const std::vector<double>& v) {
  double m = mean_of(v), s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / static_cast<double>(v.size()));
}

}  // namespace sx::model::testing
