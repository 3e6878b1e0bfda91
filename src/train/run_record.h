// What a checkpoint's experiment.json records of the run that wrote it (trainer.cc writes
// it): the slug, the sources with their sha256 and text, the variant and every knob's
// value, the seed and step, and the parameter table. A command that compiles the run file
// against a checkpoint (`export`, `evaluate`) reads it to compile the file as the run did
// and to refuse a checkpoint that is not the file's.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graph/tensor.h"
#include "io/checkpoint.h"
#include "io/checkpoint_files.h"
#include "model/paths.h"
#include "train/knobs.h"

namespace sx::train {

struct RunRecord {
  struct Source {
    std::string path;  // the file's name, as the run was given it
    std::string sha256;
    std::optional<std::string> text;  // absent in checkpoints written before it was recorded
  };
  struct Parameter {
    std::string path;
    std::vector<int64_t> shape;
    std::string dtype;  // "f32", "bf16", ...
    // The file and tensor a :load or with-loaded started it from (trainable or frozen), by
    // which `export --format hf` names it; empty when its initializer made it.
    std::string load_file, load_tensor;
  };

  io::Checkpoint checkpoint;
  std::optional<io::CheckpointReader> files;  // the checkpoint's files, read checked
  std::string slug;
  std::string variant;                       // empty: none
  std::map<std::string, std::string> knobs;  // name -> the value as the reader reads it back
  std::vector<Source> sources;               // the run file first
  std::vector<Parameter> parameters;

  // The file compiled as the run compiled it: its variant, and every knob at the value the
  // run gave it.
  KnobChoices choices() const;
};

// The files of a local checkpoint, to be read checked (io::CheckpointReader, whose
// CheckpointError it throws); one that records no checksums gets W-CKPT-001 on standard
// error, once a process.
io::CheckpointReader open_checkpoint_files(const io::Checkpoint& local);

// The record of the checkpoint `location` names (LOC/step-N, or LOC's newest):
// E-CKPT-002..004 as io::resolve_checkpoint has them, E-CKPT-006 for an experiment.json
// that is missing, not JSON, or lacks what a run writes, E-CKPT-008 for a damaged one.
RunRecord read_run_record(const std::string& location);

// Where the file's parameters differ from the record's, one line each: a parameter one
// holds and the other does not, or of another shape or dtype. Empty when they agree.
std::vector<std::string> parameter_differences(const RunRecord& record, const model::ParameterTable& params);

class Session;

// Loads `file` into `session`, made with `record.choices()`. A knob or variant the file no
// longer has (E-RUN-003, E-RUN-004) gets a note that `command` compiles the file under
// the variant and knobs the checkpoint records.
void load_as_recorded(Session& session, const RunRecord& record, const std::string& file, std::string_view command);
// E-CKPT-006 naming each difference (parameter_differences) when the loaded file's
// parameters are not the checkpoint's.
void refuse_other_parameters(const RunRecord& record, const Session& session, const std::string& file,
                             std::string_view command);

// A parameter a command reads from a checkpoint, and the dtype its value comes back in.
struct WantedParameter {
  const model::Parameter* param;
  graph::DType dtype;
};

// The values of `wanted` from the checkpoint `record` names, by path, once its record of
// frozen :load parameters is checked against `table` (E-CKPT-006, E-LOAD-001). A frozen
// :load parameter is read from the file the record names; any other from ema.safetensors
// when `averages` and that file holds it, else from params.safetensors. E-CKPT-006 names a
// tensor the checkpoint lacks or holds in a shape or dtype other than the parameter's;
// E-CKPT-008 a damaged file.
std::vector<std::pair<std::string, graph::Tensor>> read_checkpoint_values(const RunRecord& record,
                                                                          const model::ParameterTable& table,
                                                                          const std::vector<WantedParameter>& wanted,
                                                                          bool averages);

}  // namespace sx::train
