// The optimizer step as graph (docs/optimizers.md): which group each trainable
// parameter joins, the state tensors the optimizer keeps, and a builder that appends to a
// graph the whole update: gradient clipping by global norm, the learning rate from the
// schedule and the step, AdamW or SGD, and the EMA of the parameters. The training loop
// builds its step graph as (params, state, batch, `step`) -> (new params, new state, loss,
// metrics) and feeds each step's new values back as the next step's inputs.
//
// Everything means what PyTorch means, which is the oracle (tests/oracle/optimizer_oracle.py):
//
//   clipping   torch.nn.utils.clip_grad_norm_: norm = sqrt(sum of every g*g), then each
//              g *= min(1, max_norm / (norm + 1e-6)).
//   schedule   lr(s) = group lr * factor(s), s = steps done before this one (0 first), as
//              torch.optim.lr_scheduler.LambdaLR(opt, factor) stepped after each step:
//              s < W:  factor = s / W                           (W = :warmup; so step 0 has lr 0)
//              else    p = min(1, (s - W) / max(1, T - W))      (T = the run's total steps)
//                constant       1
//                warmup-cosine  m + (1 - m) * (1 + cos(pi * p)) / 2,   m = :min-lr / optimizer :lr
//                warmup-linear  1 - (1 - e) * p,                       e = :end-lr / optimizer :lr
//              (for one group, lr goes from :lr to :min-lr / :end-lr; other groups in proportion,
//              as transformers' get_cosine_with_min_lr_schedule_with_warmup does.)
//   adamw      torch.optim.AdamW, t = s + 1:  p *= 1 - lr*wd;  m = b1*m + (1-b1)*g;
//              v = b2*v + (1-b2)*g*g;  p -= (lr / (1 - b1^t)) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
//   sgd        torch.optim.SGD, no dampening, no nesterov:  g += wd*p;  buf = g at s = 0, else
//              momentum*buf + g;  p -= lr*buf  (just p -= lr*g without momentum: no state)
//   ema        torch.optim.swa_utils.AveragedModel with an EMA avg_fn, updated after each step:
//              ema = p at s = 0, else decay*ema + (1-decay)*p, for the trainable parameters
//
// Scalars (the schedule, bias corrections) are computed in f64 and rounded to f32 where they
// meet tensors, as PyTorch's Python floats are; the update and the state are f32 whatever
// the parameter's dtype, and the new value is cast back to it.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "graph/builder.h"
#include "lang/diagnostic.h"
#include "model/paths.h"
#include "train/optimizer_spec.h"

namespace sx::train {

// The learning rate and weight decay one trainable parameter is updated with.
struct ParamGroup {
  const model::Parameter* param = nullptr;
  int group = -1;  // its index in the optimizer's :groups, or -1: the optimizer's own options
  double lr = 0;
  double weight_decay = 0;
};

struct GroupAssignment {
  std::vector<ParamGroup> params;          // every trainable parameter, in table order
  std::vector<lang::Diagnostic> warnings;  // W-RUN-001 for each group no parameter joined
};

// Each trainable parameter joins the first group whose selector matches it, else the
// optimizer's defaults; frozen parameters join none. The caller shows the warnings
// (Interpreter::warn).
GroupAssignment assign_groups(const model::ParameterTable& table, const OptimizerSpec& optimizer);

// The run's settings the step needs, from defrun (:optimizer :schedule :steps :grad-clip :ema).
struct UpdateSettings {
  const OptimizerSpec* optimizer = nullptr;  // required
  const ScheduleSpec* schedule = nullptr;    // nullptr: (constant)
  int64_t total_steps = 0;                   // T: the run's total steps (:steps, or --steps)
  std::optional<double> grad_clip;           // the largest global norm of the gradients
  std::optional<double> ema;                 // the decay of the EMA of the parameters
};

// One tensor of state the loop allocates, feeds and checkpoints (optimizer.safetensors,
// by `name`). Every one is f32 and starts as zeros: the first step (`step` = 0) writes
// what must start otherwise (SGD's buffer, the EMA).
struct StateTensor {
  enum class Kind { AdamM, AdamV, Momentum, Ema };
  std::string name;  // opt.<path>.m, opt.<path>.v, opt.<path>.momentum, ema.<path>
  std::string path;  // the parameter's
  Kind kind = Kind::AdamM;
  graph::Shape shape;
  graph::DType dtype = graph::DType::f32;
};

// The state of a run with these groups and settings, in the order build_update uses:
// for each parameter its optimizer state (m, v or momentum), then every EMA.
std::vector<StateTensor> state_tensors(const GroupAssignment& groups, const UpdateSettings& settings);

// A trainable parameter's value and its gradient in the graph being built.
struct ParamNodes {
  graph::NodeId value;
  graph::NodeId grad;
};

struct UpdateGraph {
  graph::NodeId step;                      // the i64 scalar input `step`: steps done before this one
  graph::NodeId lr;                        // f32 scalar: the optimizer's :lr times the schedule's factor
  std::optional<graph::NodeId> grad_norm;  // f32 scalar: the global norm before clipping (with :grad-clip)
  std::vector<graph::NodeId> new_params;   // one per groups.params, of the parameter's shape and dtype
  struct State {
    StateTensor tensor;
    graph::NodeId input;    // the graph input named tensor.name
    graph::NodeId updated;  // its value after this step
  };
  std::vector<State> state;  // as state_tensors gives them
};

// Appends the update to `b`'s graph: each parameter's is one `adamw` or `sgd` composite
// (graph/prims/update.cc), its new value and state taken from it by `part`, after the
// step's scalars and clipping. `params` is one entry per groups.params, in its order.
// Creates the state inputs (named as StateTensor::name) and, unless `step` is given, the
// i64 scalar input `step`. Throws lang::Error E-RUN-011 at the schedule when it needs the
// run's total steps and settings.total_steps < 1; std::invalid_argument when `params`
// does not fit `groups`.
UpdateGraph build_update(graph::Builder& b, const GroupAssignment& groups, std::span<const ParamNodes> params,
                         const UpdateSettings& settings, std::optional<graph::NodeId> step = std::nullopt);

// The parts build_update is made of, for the loop and tests that need one alone.

// The schedule's factor at `step` (i64 scalar, steps done), an f64 scalar; `optimizer_lr`
// is the optimizer's :lr (warmup-cosine's :min-lr and warmup-linear's :end-lr are relative to it).
graph::NodeId schedule_factor(graph::Builder& b, const ScheduleSpec* schedule, double optimizer_lr, int64_t total_steps,
                              graph::NodeId step);

struct ClippedGrads {
  std::vector<graph::NodeId> grads;  // f32, each times the clip coefficient
  graph::NodeId norm;                // f32 scalar: the global norm before clipping
};
// torch.nn.utils.clip_grad_norm_(params, max_norm) over all of `grads` together.
ClippedGrads clip_by_global_norm(graph::Builder& b, std::span<const graph::NodeId> grads, double max_norm);

// decay*ema + (1-decay)*value, or value itself at step 0 (f32).
graph::NodeId ema_update(graph::Builder& b, graph::NodeId ema, graph::NodeId value, graph::NodeId step, double decay);

}  // namespace sx::train
