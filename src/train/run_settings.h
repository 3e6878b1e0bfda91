// `defrun`: the run's settings (docs/training.md), checked when the file is evaluated and
// read by the commands that run it.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "lang/interp.h"
#include "train/optimizer_spec.h"

namespace sx::train {

struct RunSettings {
  bool defined = false;
  lang::Span span;
  std::vector<std::pair<std::string, lang::Value>> entries;  // in the order written

  const lang::Value* find(std::string_view key) const;
  // `:seed`, 0 without one.
  uint64_t seed() const;
  // `:optimizer` and `:schedule` (checked when defrun is evaluated), nullptr without one.
  const OptimizerSpec* optimizer() const;
  const ScheduleSpec* schedule() const;
  // A number setting (`:grad-clip`, `:ema`), if given.
  std::optional<double> number(std::string_view key) const;
  // `:precision`: "f32" (also without one) or "bf16".
  std::string precision() const;
  // A graph the run runs (the step, a pass, the model alone) as its precision runs it:
  // under bf16, every product of f32 operands on bf16 operands (graph::bf16_products),
  // except those that read a parameter named in `kept_f32` (declared :numerics :high).
  graph::Graph under_precision(graph::Graph graph, std::span<const std::string> kept_f32) const;
};

// Installs `defrun`, the optimizers and schedules its settings take
// (install_optimizer_specs) and the loaders (train/loaders.h); returns the settings
// defrun fills when a file evaluates it.
std::shared_ptr<RunSettings> install_defrun(lang::Interpreter& interp);

}  // namespace sx::train
