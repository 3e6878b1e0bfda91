// Optimizers, parameter groups and learning-rate schedules as values of the language
// (docs/optimizers.md): what `(sgd ...)`, `(adamw ...)`, `(group ...)`, `(constant ...)`,
// `(warmup-cosine ...)` and `(warmup-linear ...)` return. Their options are checked when they
// are called (E-RUN-010 for an optimizer or group, E-RUN-011 for a schedule); what they
// do to parameters, step by step, is train/optimizer.h. They mean what PyTorch's do.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lang/interp.h"

namespace sx::train {

// `(group SELECTOR :lr x :weight-decay y)`: the parameters the selector matches, with
// options of their own; an option not given is the optimizer's.
class GroupSpec final : public lang::Opaque {
 public:
  std::string type_label() const override { return "an optimizer group"; }
  std::string print() const override;

  lang::Value selector;  // a model::Selector
  std::optional<double> lr;
  std::optional<double> weight_decay;
  lang::Span span;  // the call, for messages
};

class OptimizerSpec final : public lang::Opaque {
 public:
  enum class Kind { Sgd, AdamW };
  std::string type_label() const override { return "an optimizer"; }
  std::string print() const override;

  Kind kind = Kind::AdamW;
  double lr = 1e-3;
  // adamw: decoupled, p *= 1 - lr * weight_decay (default 0.01, as torch.optim.AdamW);
  // sgd: L2, added to the gradient as weight_decay * p (default 0, as torch.optim.SGD).
  double weight_decay = 0.01;
  double momentum = 0.0;                          // sgd only
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;  // adamw only
  std::vector<lang::Value> groups;                // GroupSpec values; a parameter joins the first that matches
  lang::Span span;
};

class ScheduleSpec final : public lang::Opaque {
 public:
  enum class Kind { Constant, WarmupCosine, Linear };
  std::string type_label() const override { return "a schedule"; }
  std::string print() const override;

  Kind kind = Kind::Constant;
  int64_t warmup = 0;  // steps of linear warmup from 0
  // The learning rate at the run's last step: warmup-cosine's :min-lr, warmup-linear's :end-lr.
  double end_lr = 0.0;
  lang::Span span;
};

inline const OptimizerSpec* as_optimizer(const lang::Value& v) {
  return v.is(lang::Type::Opaque) ? dynamic_cast<const OptimizerSpec*>(v.as<lang::Opaque>()) : nullptr;
}
inline const GroupSpec* as_group(const lang::Value& v) {
  return v.is(lang::Type::Opaque) ? dynamic_cast<const GroupSpec*>(v.as<lang::Opaque>()) : nullptr;
}
inline const ScheduleSpec* as_schedule(const lang::Value& v) {
  return v.is(lang::Type::Opaque) ? dynamic_cast<const ScheduleSpec*>(v.as<lang::Opaque>()) : nullptr;
}

// Installs sgd, adamw, group, constant, warmup-cosine and warmup-linear. (Not `linear`:
// that is sexpgpu/nn's layer.)
void install_optimizer_specs(lang::Interpreter& interp);

}  // namespace sx::train
