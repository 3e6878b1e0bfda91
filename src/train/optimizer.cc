// Group assignment, optimizer state and the update graph: see optimizer.h for what each
// step computes and which PyTorch code it follows.
#include "train/optimizer.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <numbers>
#include <stdexcept>

#include "lang/printer.h"
#include "model/select.h"
#include "train/codes.h"

namespace sx::train {
namespace {

using graph::Builder;
using graph::DType;
using graph::NodeId;

NodeId f32(Builder& b, double value) { return b.scalar(value, DType::f32); }
NodeId f64(Builder& b, double value) { return b.scalar(value, DType::f64); }

// Value `index` of a composite of several values (an update's new parameter or state).
NodeId part(Builder& b, NodeId update, int64_t index) { return b.op("part", {update}, {{"index", index}}); }

// The f64 scalar rounded to f32, where it meets f32 tensors (as torch rounds a Python float).
NodeId to_f32(Builder& b, NodeId scalar) { return b.cast(scalar, DType::f32); }

bool has_momentum(const OptimizerSpec& o) { return o.kind == OptimizerSpec::Kind::Sgd && o.momentum != 0; }

}  // namespace

GroupAssignment assign_groups(const model::ParameterTable& table, const OptimizerSpec& optimizer) {
  GroupAssignment out;
  std::vector<bool> joined(optimizer.groups.size(), false);
  for (const auto& param : table.params) {
    if (!param.decl->trainable) continue;
    ParamGroup entry{&param, -1, optimizer.lr, optimizer.weight_decay};
    for (size_t i = 0; i < optimizer.groups.size(); ++i) {
      const GroupSpec* group = as_group(optimizer.groups[i]);
      if (!model::as_selector(group->selector)->matches(param)) continue;
      entry.group = static_cast<int>(i);
      entry.lr = group->lr.value_or(optimizer.lr);
      entry.weight_decay = group->weight_decay.value_or(optimizer.weight_decay);
      joined[i] = true;
      break;
    }
    out.params.push_back(entry);
  }
  for (size_t i = 0; i < joined.size(); ++i) {
    if (joined[i]) continue;
    const GroupSpec* group = as_group(optimizer.groups[i]);
    lang::Diagnostic d;
    d.severity = lang::Severity::Warning;
    d.code = kGroupWithoutParameters;
    d.span = group->span;
    d.message = fmt::format("no trainable parameter joins this group: {} matches none that an earlier group left",
                            lang::printed_in_message(group->selector));
    d.helps.push_back("`sexpgpu explain FILE --select '(select ...)'` lists what a selector matches");
    out.warnings.push_back(std::move(d));
  }
  return out;
}

std::vector<StateTensor> state_tensors(const GroupAssignment& groups, const UpdateSettings& settings) {
  if (!settings.optimizer) throw std::invalid_argument("state_tensors: no optimizer");
  const OptimizerSpec& opt = *settings.optimizer;
  std::vector<StateTensor> out;
  for (const auto& entry : groups.params) {
    const std::string& path = entry.param->path;
    const graph::Shape& shape = entry.param->decl->shape;
    if (opt.kind == OptimizerSpec::Kind::AdamW) {
      out.push_back({"opt." + path + ".m", path, StateTensor::Kind::AdamM, shape});
      out.push_back({"opt." + path + ".v", path, StateTensor::Kind::AdamV, shape});
    } else if (has_momentum(opt)) {
      out.push_back({"opt." + path + ".momentum", path, StateTensor::Kind::Momentum, shape});
    }
  }
  if (settings.ema) {
    for (const auto& entry : groups.params) {
      out.push_back({"ema." + entry.param->path, entry.param->path, StateTensor::Kind::Ema, entry.param->decl->shape});
    }
  }
  return out;
}

NodeId schedule_factor(Builder& b, const ScheduleSpec* schedule, double optimizer_lr, int64_t total_steps,
                       NodeId step) {
  NodeId s = b.cast(step, DType::f64);
  NodeId after = f64(b, 1.0);
  if (schedule && schedule->kind != ScheduleSpec::Kind::Constant) {
    if (total_steps < 1) {
      lang::fail(kScheduleOption, schedule->span,
                 fmt::format("{} needs the run's total steps, and the run has none", schedule->print()),
                 "give defrun :steps N (or sexpgpu run --steps N)");
    }
    const double w = static_cast<double>(schedule->warmup);
    const double span = static_cast<double>(std::max<int64_t>(1, total_steps - schedule->warmup));
    NodeId p = b.min(b.div(b.sub(s, f64(b, w)), f64(b, span)), f64(b, 1.0));
    const double end = optimizer_lr > 0 ? schedule->end_lr / optimizer_lr : 0.0;
    if (schedule->kind == ScheduleSpec::Kind::WarmupCosine) {
      NodeId wave = b.div(b.add(f64(b, 1.0), b.cos(b.mul(f64(b, std::numbers::pi), p))), f64(b, 2.0));
      after = b.add(f64(b, end), b.mul(f64(b, 1.0 - end), wave));
    } else {
      after = b.sub(f64(b, 1.0), b.mul(f64(b, 1.0 - end), p));
    }
  }
  if (!schedule || schedule->warmup == 0) return after;
  NodeId warming = b.div(s, f64(b, static_cast<double>(schedule->warmup)));
  return b.where(b.lt(s, f64(b, static_cast<double>(schedule->warmup))), warming, after);
}

ClippedGrads clip_by_global_norm(Builder& b, std::span<const NodeId> grads, double max_norm) {
  ClippedGrads out;
  NodeId squares = f32(b, 0.0);
  for (NodeId g : grads) {
    NodeId g32 = b.cast(g, DType::f32);
    squares = b.add(squares, b.sum(b.mul(g32, g32), {}));
  }
  out.norm = b.sqrt(squares);
  NodeId coef = b.min(b.div(f32(b, max_norm), b.add(out.norm, f32(b, 1e-6))), f32(b, 1.0));
  for (NodeId g : grads) out.grads.push_back(b.mul(b.cast(g, DType::f32), coef));
  return out;
}

NodeId ema_update(Builder& b, NodeId ema, NodeId value, NodeId step, double decay) {
  NodeId v = b.cast(value, DType::f32);
  NodeId averaged = b.add(b.mul(f32(b, decay), b.cast(ema, DType::f32)), b.mul(f32(b, 1.0 - decay), v));
  return b.where(b.eq(step, b.scalar(0, b.dtype(step))), v, averaged);
}

UpdateGraph build_update(Builder& b, const GroupAssignment& groups, std::span<const ParamNodes> params,
                         const UpdateSettings& settings, std::optional<NodeId> step) {
  if (!settings.optimizer) throw std::invalid_argument("build_update: no optimizer");
  if (params.size() != groups.params.size()) {
    throw std::invalid_argument(fmt::format("build_update: {} parameter nodes for {} trainable parameters",
                                            params.size(), groups.params.size()));
  }
  const OptimizerSpec& opt = *settings.optimizer;
  UpdateGraph out;
  out.step = step ? *step : b.input("step", {}, DType::i64);
  if (b.dtype(out.step) != DType::i64 || !b.shape(out.step).empty()) {
    throw std::invalid_argument("build_update: `step` must be an i64 scalar");
  }
  NodeId factor = schedule_factor(b, settings.schedule, opt.lr, settings.total_steps, out.step);
  out.lr = to_f32(b, b.mul(f64(b, opt.lr), factor));

  std::vector<NodeId> grads;
  for (const auto& p : params) grads.push_back(b.cast(p.grad, DType::f32));
  if (settings.grad_clip) {
    ClippedGrads clipped = clip_by_global_norm(b, grads, *settings.grad_clip);
    grads = clipped.grads;
    out.grad_norm = clipped.norm;
  }

  // The scalars of this step, each built once: torch's Python floats, in f64, rounded to
  // f32 where they meet tensors. t is torch's state step, after its increment.
  NodeId beta1 = 0, beta2 = 0, eps = 0, rest1 = 0, rest2 = 0, bias1 = 0, bias2_sqrt = 0, first = 0, momentum = 0;
  if (has_momentum(opt)) {
    first = b.eq(out.step, b.scalar(0, DType::i64));
    momentum = f32(b, opt.momentum);
  }
  if (opt.kind == OptimizerSpec::Kind::AdamW) {
    NodeId t = b.add(b.cast(out.step, DType::f64), f64(b, 1.0));
    beta1 = f32(b, opt.beta1), beta2 = f32(b, opt.beta2), eps = f32(b, opt.eps);
    rest1 = f32(b, 1.0 - opt.beta1), rest2 = f32(b, 1.0 - opt.beta2);
    bias1 = b.sub(f64(b, 1.0), b.pow(f64(b, opt.beta1), t));
    bias2_sqrt = to_f32(b, b.sqrt(b.sub(f64(b, 1.0), b.pow(f64(b, opt.beta2), t))));
  }
  // Per (lr, weight decay) of a group: adamw's 1 - lr*wd and -lr/bias1, sgd's -lr and wd.
  struct GroupScalars {
    NodeId decay, neg_step, weight_decay;
  };
  std::map<std::pair<double, double>, GroupScalars> group_scalars;
  auto scalars_of = [&](const ParamGroup& entry) {
    auto key = std::make_pair(entry.lr, entry.weight_decay);
    if (auto it = group_scalars.find(key); it != group_scalars.end()) return it->second;
    NodeId lr = b.mul(f64(b, entry.lr), factor);
    GroupScalars g{};
    g.weight_decay = f32(b, entry.weight_decay);
    if (opt.kind == OptimizerSpec::Kind::AdamW) {
      g.decay = to_f32(b, b.sub(f64(b, 1.0), b.mul(lr, f64(b, entry.weight_decay))));
      g.neg_step = to_f32(b, b.neg(b.div(lr, bias1)));
    } else {
      g.neg_step = to_f32(b, b.neg(lr));
    }
    return group_scalars[key] = g;
  };

  std::vector<StateTensor> tensors = state_tensors(groups, settings);
  size_t next_state = 0;
  auto state_input = [&](const StateTensor& tensor) {
    NodeId input = b.input(tensor.name, tensor.shape, tensor.dtype);
    out.state.push_back({tensor, input, input});
    ++next_state;
    return out.state.size() - 1;
  };

  for (size_t i = 0; i < params.size(); ++i) {
    const ParamGroup& entry = groups.params[i];
    const DType dtype = b.dtype(params[i].value);
    if (b.shape(params[i].value) != entry.param->decl->shape || b.shape(grads[i]) != entry.param->decl->shape) {
      throw std::invalid_argument(
          fmt::format("build_update: the nodes of `{}` are not of its shape", entry.param->path));
    }
    NodeId p = b.cast(params[i].value, DType::f32);
    NodeId g = grads[i];
    const GroupScalars& k = scalars_of(entry);
    const int64_t decays = entry.weight_decay != 0;
    NodeId updated;
    // One composite node per parameter (graph/prims/update.cc, which writes out what each
    // computes, in the order of the cpu device's kernel, device/cpu/kernels/update.cc),
    // its new state taken from it by `part`.
    if (opt.kind == OptimizerSpec::Kind::AdamW) {
      size_t m_index = state_input(tensors[next_state]);
      size_t v_index = state_input(tensors[next_state]);
      std::vector<NodeId> operands{
          p,   g,         out.state[m_index].input, out.state[v_index].input, beta1, rest1, beta2, rest2, bias2_sqrt,
          eps, k.neg_step};
      if (decays) operands.push_back(k.decay);
      NodeId update = b.op("adamw", operands, {{"weight_decay", decays}});
      updated = part(b, update, 0);
      out.state[m_index].updated = part(b, update, 1);
      out.state[v_index].updated = part(b, update, 2);
    } else {
      std::vector<NodeId> operands{p, g, k.neg_step};
      if (decays) operands.push_back(k.weight_decay);
      std::optional<size_t> index;
      if (has_momentum(opt)) {
        index = state_input(tensors[next_state]);
        operands.insert(operands.end(), {out.state[*index].input, momentum, first});
      }
      NodeId update = b.op("sgd", operands, {{"weight_decay", decays}, {"momentum", int64_t{index.has_value()}}});
      updated = index ? part(b, update, 0) : update;
      if (index) out.state[*index].updated = part(b, update, 1);
    }
    out.new_params.push_back(b.cast(updated, dtype));
  }
  if (settings.ema) {
    for (size_t i = 0; i < params.size(); ++i) {
      size_t index = state_input(tensors[next_state]);
      out.state[index].updated = ema_update(b, out.state[index].input, out.new_params[i], out.step, *settings.ema);
    }
  }
  return out;
}

}  // namespace sx::train
