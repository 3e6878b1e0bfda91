// sgd, adamw, group, constant, warmup-cosine and warmup-linear: the values and their checks.
#include "train/optimizer_spec.h"

#include <fmt/format.h>

#include <cmath>
#include <functional>

#include "lang/builtins/builtins.h"
#include "lang/printer.h"
#include "model/select.h"
#include "train/codes.h"

namespace sx::train {
namespace {

using lang::Args;
using lang::Value;

std::string num(double x) { return lang::format_float(x); }

// The value of keyword option `key` (found by Args::keywords), or `fallback` when it is
// not given: a finite number for which `ok` holds, else `code` saying it is not `what`.
double number_option(Args& a, const std::map<std::string, size_t>& kw, const std::string& key, double fallback,
                     const std::function<bool(double)>& ok, std::string_view what, const std::string& code,
                     std::string help = {}) {
  auto it = kw.find(key);
  if (it == kw.end()) return fallback;
  const Value& v = a[it->second];
  if (!v.is_number() || !std::isfinite(v.as_double()) || !ok(v.as_double())) {
    lang::fail(code, a.span(it->second),
               fmt::format("`{}`: `:{}` is {}, not `{}`", a.function, key, what, lang::printed_in_message(v)),
               std::move(help));
  }
  return v.as_double();
}

bool non_negative(double x) { return x >= 0; }
bool unit_interval(double x) { return x >= 0 && x < 1; }

// :groups, a list or vector of (group ...) values.
std::vector<Value> groups_option(Args& a, const std::map<std::string, size_t>& kw) {
  auto it = kw.find("groups");
  if (it == kw.end()) return {};
  const Value& v = a[it->second];
  std::vector<Value> items;
  if (v.is(lang::Type::Vector)) items = v.as<lang::Vector>()->items;
  else if (v.is_list()) items = lang::list_items(v);
  else {
    lang::fail(
        kOptimizerOption, a.span(it->second),
        fmt::format("`{}`: `:groups` is a list of (group ...), not `{}`", a.function, lang::printed_in_message(v)),
        "write :groups (list (group (select :tag :no-decay) :weight-decay 0.0) ...)");
  }
  for (const auto& item : items) {
    if (!as_group(item)) {
      lang::fail(kOptimizerOption, a.span(it->second),
                 fmt::format("`{}`: each of `:groups` is a (group ...), not {} `{}`", a.function,
                             lang::type_label(item), lang::printed_in_message(item)),
                 "write :groups (list (group (select :tag :no-decay) :weight-decay 0.0) ...)");
    }
  }
  return items;
}

void lr_and_groups(Args& a, const std::map<std::string, size_t>& kw, OptimizerSpec& spec) {
  spec.lr = number_option(a, kw, "lr", spec.lr, non_negative, "a non-negative number", kOptimizerOption);
  spec.groups = groups_option(a, kw);
  spec.span = a.call;
}

Value sgd(Args& a) {
  auto kw = a.keywords();
  auto* spec = new OptimizerSpec;
  Value held(spec);
  spec->kind = OptimizerSpec::Kind::Sgd;
  spec->weight_decay = 0.0;
  lr_and_groups(a, kw, *spec);
  spec->momentum = number_option(a, kw, "momentum", 0.0, unit_interval, "a number in [0, 1)", kOptimizerOption,
                                 "0 is plain SGD; 0.9 is usual");
  spec->weight_decay =
      number_option(a, kw, "weight-decay", 0.0, non_negative, "a non-negative number", kOptimizerOption);
  return held;
}

Value adamw(Args& a) {
  auto kw = a.keywords();
  auto* spec = new OptimizerSpec;
  Value held(spec);
  spec->kind = OptimizerSpec::Kind::AdamW;
  lr_and_groups(a, kw, *spec);
  if (auto it = kw.find("betas"); it != kw.end()) {
    const Value& v = a[it->second];
    std::vector<Value> items;
    if (v.is(lang::Type::Vector)) items = v.as<lang::Vector>()->items;
    else if (v.is_list()) items = lang::list_items(v);
    bool ok = items.size() == 2;
    for (const auto& b : items) ok = ok && b.is_number() && unit_interval(b.as_double());
    if (!ok) {
      lang::fail(
          kOptimizerOption, a.span(it->second),
          fmt::format("`adamw`: `:betas` is a vector of two numbers in [0, 1), not `{}`", lang::printed_in_message(v)),
          "write :betas [0.9 0.999]");
    }
    spec->beta1 = items[0].as_double();
    spec->beta2 = items[1].as_double();
  }
  spec->eps = number_option(a, kw, "eps", spec->eps, non_negative, "a non-negative number", kOptimizerOption,
                            "it keeps the update finite where the gradient's second moment is 0; 1e-8 is usual");
  spec->weight_decay =
      number_option(a, kw, "weight-decay", spec->weight_decay, non_negative, "a non-negative number", kOptimizerOption);
  return held;
}

Value group(Args& a) {
  if (!model::as_selector(a[0])) {
    lang::fail(kOptimizerOption, a.span(0),
               fmt::format("`group` takes a selector first, not {} `{}`", lang::type_label(a[0]),
                           lang::printed_in_message(a[0])),
               "write (group (select :tag :no-decay) :weight-decay 0.0)");
  }
  auto kw = a.keywords();
  auto* spec = new GroupSpec;
  Value held(spec);
  spec->selector = a[0];
  spec->span = a.call;
  if (kw.count("lr")) {
    spec->lr = number_option(a, kw, "lr", 0.0, non_negative, "a non-negative number", kOptimizerOption);
  }
  if (kw.count("weight-decay")) {
    spec->weight_decay =
        number_option(a, kw, "weight-decay", 0.0, non_negative, "a non-negative number", kOptimizerOption);
  }
  return held;
}

Value schedule(Args& a, ScheduleSpec::Kind kind, const char* end_key) {
  std::map<std::string, size_t> kw = a.keywords();
  auto* spec = new ScheduleSpec;
  Value held(spec);
  spec->kind = kind;
  spec->span = a.call;
  if (auto it = kw.find("warmup"); it != kw.end()) {
    const Value& v = a[it->second];
    if (!v.is(lang::Type::Int) || v.as_int() < 0) {
      lang::fail(kScheduleOption, a.span(it->second),
                 fmt::format("`{}`: `:warmup` is a number of steps, a non-negative integer, not `{}`", a.function,
                             lang::printed_in_message(v)),
                 "count it in steps: 5% of a 2000-step run is :warmup 100");
    }
    spec->warmup = v.as_int();
  }
  if (end_key) {
    spec->end_lr = number_option(a, kw, end_key, 0.0, non_negative, "a non-negative number", kScheduleOption,
                                 "it is a learning rate, as the optimizer's :lr");
  }
  return held;
}

}  // namespace

std::string GroupSpec::print() const {
  std::string out = "(group " + lang::print(selector);
  if (lr) out += " :lr " + num(*lr);
  if (weight_decay) out += " :weight-decay " + num(*weight_decay);
  return out + ")";
}

std::string OptimizerSpec::print() const {
  std::string out;
  if (kind == Kind::Sgd) {
    out = fmt::format("(sgd :lr {} :momentum {} :weight-decay {}", num(lr), num(momentum), num(weight_decay));
  } else {
    out = fmt::format("(adamw :lr {} :betas [{} {}] :eps {} :weight-decay {}", num(lr), num(beta1), num(beta2),
                      num(eps), num(weight_decay));
  }
  if (!groups.empty()) {
    out += " :groups (list";
    for (const auto& g : groups) out += " " + lang::print(g);
    out += ")";
  }
  return out + ")";
}

std::string ScheduleSpec::print() const {
  switch (kind) {
    case Kind::Constant: return fmt::format("(constant :warmup {})", warmup);
    case Kind::WarmupCosine: return fmt::format("(warmup-cosine :warmup {} :min-lr {})", warmup, num(end_lr));
    case Kind::Linear: return fmt::format("(warmup-linear :warmup {} :end-lr {})", warmup, num(end_lr));
  }
  return {};
}

void install_optimizer_specs(lang::Interpreter& interp) {
  lang::install_rows(
      interp, "Optimizers and schedules",
      {
          {"sgd", sgd, "(&key (lr 0.001) (momentum 0.0) (weight-decay 0.0) groups)",
           "Stochastic gradient descent as torch.optim.SGD: the momentum buffer starts at the first gradient, "
           "without dampening; :weight-decay is added to the gradient; :groups, a list of (group ...).",
           "(sgd :lr 0.1 :momentum 0.9)\n;; => (sgd :lr 0.1 :momentum 0.9 :weight-decay 0.0)"},
          {"adamw", adamw, "(&key (lr 0.001) (betas [0.9 0.999]) (eps 1e-8) (weight-decay 0.01) groups)",
           "AdamW as torch.optim.AdamW: decoupled weight decay, bias-corrected moments, eps added to sqrt(v_hat); "
           ":groups, a list of (group ...), the first that matches a parameter winning.",
           "(adamw :lr 3e-4 :weight-decay 0.1)\n"
           ";; => (adamw :lr 0.0003 :betas [0.9 0.999] :eps 1e-08 :weight-decay 0.1)"},
          {"group", group, "(selector &key lr weight-decay)",
           "An optimizer group: the trainable parameters the selector matches, with their own :lr or "
           ":weight-decay; what it leaves out is the optimizer's.",
           "(group (select :tag :no-decay) :weight-decay 0.0)\n"
           ";; => (group (select :tag :no-decay) :weight-decay 0.0)"},
          {"constant", [](Args& a) { return schedule(a, ScheduleSpec::Kind::Constant, nullptr); }, "(&key (warmup 0))",
           "A schedule: the optimizer's :lr at every step, rising linearly from 0 over the first :warmup steps.",
           "(constant)\n;; => (constant :warmup 0)"},
          {"warmup-cosine", [](Args& a) { return schedule(a, ScheduleSpec::Kind::WarmupCosine, "min-lr"); },
           "(&key (warmup 0) (min-lr 0.0))",
           "A schedule: a linear warmup from 0 over :warmup steps, then a cosine from the optimizer's :lr down to "
           ":min-lr at the run's last step.",
           "(warmup-cosine :warmup 100 :min-lr 1e-5)\n;; => (warmup-cosine :warmup 100 :min-lr 1e-05)"},
          {"warmup-linear", [](Args& a) { return schedule(a, ScheduleSpec::Kind::Linear, "end-lr"); },
           "(&key (warmup 0) (end-lr 0.0))",
           "A schedule: a linear warmup from 0 over :warmup steps, then a straight line from the optimizer's :lr "
           "down to :end-lr at the run's last step.",
           "(warmup-linear :warmup 100)\n;; => (warmup-linear :warmup 100 :end-lr 0.0)"},
      });
}

}  // namespace sx::train
