// Parameters read from safetensors files (`:load` and `with-loaded`): checking each
// against its file's header before anything runs, reading values, and the identity
// (size and hash) of every file read, which checkpoints record.
#pragma once

#include <map>
#include <string>

#include "graph/tensor.h"
#include "io/identity.h"
#include "io/load_record.h"
#include "model/paths.h"

namespace sx::model {

// Refuses a missing tensor, a shape that differs from the initializer's, or a dtype that
// does not load, naming the parameter's path and the tensor: from the headers alone.
void check_loads(const ParameterTable& table);

// The value of each loaded parameter, by path, in the dtype it is stored in (`stored`,
// by path; its declared dtype where absent).
std::map<std::string, graph::Tensor> loaded_values(const ParameterTable& table,
                                                   const std::map<std::string, graph::DType>& stored = {});

// Every file the loaded parameters read (shards included), with its size and hash.
std::map<std::string, io::FileIdentity> load_identities(const ParameterTable& table);

// A frozen parameter read from a file: a checkpoint names it instead of holding it.
bool is_frozen_load(const Parameter& param);
// What a checkpoint records of `table`'s frozen :load parameters (io/load_record.h).
io::LoadRecord frozen_load_record(const ParameterTable& table);
// Refuses a checkpoint (`where`) whose record does not fit `table`, E-CKPT-006 naming the
// parameter: a frozen :load parameter it does not name, or names with another file or
// tensor, or one it names that `table` does not load frozen. Then E-LOAD-001 when a
// recorded file changed since.
void check_load_record(const ParameterTable& table, const io::LoadRecord& recorded, const std::string& where);
// The same for one frozen :load parameter, without the files (for a REPL whose table grows).
void check_load_reference(const Parameter& param, const io::LoadRecord& recorded, const std::string& where);
// E-LOAD-001 when a file the record names changed since the checkpoint `where` was written.
void check_recorded_files(const io::LoadRecord& recorded, const std::string& where);

}  // namespace sx::model
