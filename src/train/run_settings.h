// `defrun`: the run's settings (DESIGN section 4). The training loop reads them in a
// later part; what every command needs now is the seed, which keys initial values.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

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
};

// Installs `defrun`, the optimizers and schedules its settings take
// (install_optimizer_specs) and the loaders (train/loaders.h); returns the settings
// defrun fills when a file evaluates it.
std::shared_ptr<RunSettings> install_defrun(lang::Interpreter& interp);

}  // namespace sx::train
