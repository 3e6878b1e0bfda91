// A run's checkpoints (io/checkpoint.h): what each of their tensor files holds, and the
// policy that writes them, every `:checkpoint-every` steps and after the last, keeping the
// newest `:keep`. Each holds experiment.json (the run's record, train/run_record.h),
// params.safetensors, optimizer.safetensors, ema.safetensors (with `:ema`), state.json
// (the step, its loss and the counters' totals) and model.json (the model alone).
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "io/load_record.h"
#include "runtime/program.h"
#include "train/model_alone.h"
#include "train/session.h"
#include "train/step.h"
#include "train/trainer.h"

namespace sx::train {

// A tensor a checkpoint's file holds: its name there, the store's name for it, and
// whether it is a weight (a bf16 weight is stored as f32, exactly).
struct StoredTensor {
  std::string name, key;
  bool weight = false;
};

// What each tensor file of a checkpoint holds: written so, and read back on resuming.
struct CheckpointTables {
  std::vector<StoredTensor> params, optimizer, ema;
};

CheckpointTables checkpoint_tables(Session& session, const StepGraph& step);

// Where a run's checkpoints go, and the newest one there, which it resumes from.
struct RunPlace {
  std::string slug;
  std::string location;  // as written
  std::optional<io::Checkpoint> newest;
};

// The location --checkpoint-dir names (runs/<slug> by default); for --fresh where it
// holds checkpoints, the first of LOC-2, LOC-3, ... that holds none, with nothing to resume.
RunPlace place_run(const TrainOptions& options);

class CheckpointPolicy {
 public:
  // Reads the run's sources, each with its SHA-256, for every experiment.json it writes.
  // `loads` are the frozen :load files the run read; `alone` the model alone, when it has
  // one. The session, the options and the model alone must outlive the policy.
  CheckpointPolicy(Session& session, const TrainOptions& options, const RunPlace& place, io::LoadRecord loads,
                   CheckpointTables tables, const std::optional<ModelAlone>& alone, int64_t every, int64_t keep,
                   int64_t total);

  // Whether the run writes a checkpoint once `done` steps are done.
  bool due(int64_t done) const { return done % every_ == 0 || done == total_; }
  // Writes the checkpoint of `done` steps from the store, with the step's loss and the
  // counters' totals, after publishing metrics.jsonl beside it, and prunes the old ones.
  void write(const runtime::Store& store, int64_t done, double loss, const std::map<std::string, double>& counters);

 private:
  nlohmann::json experiment_json(int64_t step) const;

  Session& session_;
  const TrainOptions& options_;
  std::string slug_, location_;
  io::LoadRecord loads_;
  CheckpointTables tables_;
  const ModelAlone* alone_;  // null for a model that cannot run alone
  int64_t every_, keep_, total_;
  nlohmann::json sources_;
};

}  // namespace sx::train
