// Where a run starts: from the newest checkpoint at its location when there is one, else
// from the parameters' initial values. A resumed run refuses a checkpoint of another file
// (E-CKPT-005), or one that does not fit this file (E-CKPT-006), before it reads any
// weight; and it reaches the same bits as an unbroken run.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "io/load_record.h"
#include "runtime/program.h"
#include "train/run_checkpoints.h"
#include "train/session.h"
#include "train/step.h"

namespace sx::train {

struct RunStart {
  int64_t step = 0;                         // the steps done
  std::map<std::string, double> counters;   // the counters' totals
  io::LoadRecord loads;                     // the frozen :load files, checked unchanged on resuming
  std::optional<std::string> resumed_from;  // the checkpoint, as written; none for a run from step 0
};

// Fills `store` with the run's parameters and optimizer state, from `place.newest` when
// there is one (read from a local folder: one on storage is downloaded), else initial.
RunStart resume_or_start(Session& session, runtime::Store& store, const StepGraph& step, const CheckpointTables& tables,
                         const RunPlace& place);

}  // namespace sx::train
