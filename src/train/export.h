// `sexpgpu export`: a checkpoint's model and weights as a folder of their own (the seed
// page "Running a trained model", its export section).
//
// The run file is compiled as the checkpoint's run compiled it (its variant and knobs, from
// experiment.json) and must declare the checkpoint's parameters exactly: by path, shape
// and dtype (E-CKPT-006 otherwise). Its text may have changed since: the lines that moved
// are printed. The model alone is traced from it (E-INFER-001 when it cannot run alone),
// and the folder gets
//
//   model.json           as a checkpoint holds it: the graph, with the checkpoint, its
//                        step and slug, the inputs, outputs and parameters
//   params.safetensors   every weight the graph reads, by path: the :ema averages unless
//                        `trained` (a parameter without an average, a frozen one, is the
//                        trained value), each stored as f32, a bf16 one too
//
// (with --format hf, the Hugging Face folder export_hf.h describes instead), all
// written under a temporary name and renamed when whole (io/export_folder.h); a folder
// that exists is refused (E-SERVE-020), one that cannot be written is E-SERVE-021.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "lang/interp.h"
#include "train/session.h"

namespace sx::train {

struct ExportOptions {
  std::string file;                // the run file
  std::string checkpoint;          // LOC/step-N, or LOC for its newest
  std::string out;                 // the folder to write
  bool trained = false;            // the trained weights, not the :ema averages
  std::string format = "sexpgpu";  // or "hf": the Hugging Face folder (export_hf.h)
};

// Exports, printing what the page shows: `export: CHECKPOINT`, the moved lines, `wrote
// DIR: N weights, SIZE`, then the inputs and outputs a line each. Diagnosed errors are
// lang::Error. The session the file is compiled in is made in `session`, which the caller
// keeps until it has reported any error: a diagnostic's spans point into its sources.
void export_model(const ExportOptions& options, lang::InterpreterOptions interpreter, std::optional<Session>& session);

// "109.8 KiB": a byte count in B, KiB, MiB or GiB, one decimal above bytes.
std::string format_size(uint64_t bytes);

// `  inputs  NAME [1, 16] i32`: one line per input, then per output, as the handshake
// describes them (`serve` prints its banner's lines the same way).
std::vector<std::string> describe_signature(const nlohmann::json& model);

}  // namespace sx::train
