// `(parameters model)`: a model's parameter tensors as a plist keyed by their paths within
// the model, as PyTorch's named_parameters(), for `grad` and `save-tensors`. `grad` over
// them differentiates the parameters themselves, so a function that calls the model gets
// their gradients.
#include <fmt/format.h>

#include <set>

#include "lang/builtins/builtins.h"
#include "lang/printer.h"
#include "lang/tracer.h"
#include "model/paths.h"

namespace sx::model {
namespace {

using lang::Args;
using lang::Value;

void collect(const Model& model, const std::string& prefix, bool trainable_only, Args& a, std::set<std::string>& seen,
             std::vector<Value>& out) {
  std::vector<std::string> segments = member_segments(model);
  for (size_t m = 0; m < model.members.size(); ++m) {
    const auto& member = model.members[m];
    std::string path = prefix.empty() ? segments[m] : prefix + "." + segments[m];
    if (member.child) {
      collect(*member.child, path, trainable_only, a, seen, out);
      continue;
    }
    const ParamDecl& decl = model.params[member.param];
    if (!seen.insert(path).second) {
      lang::fail("E-PARAM-010", decl.span,
                 fmt::format("two parameters have the path `{}` in this model", lang::shown_in_message(path)),
                 "bind the sub-models to different names, or rename one with (named \"segment\" ...)");
    }
    if (trainable_only && !decl.trainable) continue;
    out.push_back(lang::make_keyword(path));
    auto* tensor = new lang::TensorValue(a.interp.tracer(), decl.node);
    tensor->parameter = true;
    out.push_back(Value(tensor));
  }
}

Value parameters(Args& a) {
  const Model* model = as_model(a[0]);
  if (!model) a.type_error(0, "a model");
  auto kw = a.keywords();
  bool trainable_only = false;
  if (auto it = kw.find("trainable"); it != kw.end()) {
    if (!a[it->second].is(lang::Type::Bool)) a.type_error(it->second, "true or false");
    trainable_only = a[it->second].as_bool();
  }
  std::set<std::string> seen;
  std::vector<Value> out;
  collect(*model, "", trainable_only, a, seen, out);
  return lang::list(std::move(out));
}

}  // namespace

void install_parameters(lang::Interpreter& interp) {
  lang::install_rows(
      interp, "Models",
      {
          {"parameters", parameters, "(model &key (trainable false))",
           "The model's parameter tensors as a plist keyed by their paths within it (:blocks.0.w ...), in "
           "declaration order; with :trainable true, only the trainable ones. `grad` over it gives the plist of "
           "their gradients, through every use (the model's too).",
           "(defmodel scale () (defparam s (ones [2])) (lambda (x) (* x s)))\n(defvar m (scale))\n"
           "(parameters m)\n;; => (:s (tensor [1.0 1.0] :dtype :f32))"},
      });
}

}  // namespace sx::model
