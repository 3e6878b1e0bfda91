// Parameters read from safetensors files (`:load` and `with-loaded`): checking each
// against its file's header before anything runs, reading values, and the identity
// (size and hash) of every file read, which checkpoints record.
#pragma once

#include <map>
#include <string>

#include "graph/tensor.h"
#include "io/identity.h"
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

}  // namespace sx::model
