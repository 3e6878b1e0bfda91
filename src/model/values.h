// Initial parameter values: each parameter's closed initializer run on a device, its
// random streams keyed by the run's seed and the parameter's path.
#pragma once

#include <map>
#include <string>

#include "device/device.h"
#include "model/paths.h"

namespace sx::model {

// The initial value of every parameter, by path: read from its file when it loads one,
// else its initializer run on `device`.
std::map<std::string, graph::Tensor> initial_values(const ParameterTable& table, uint64_t seed, device::Device& device,
                                                    const std::map<std::string, graph::DType>& stored = {});

// A frozen f32 parameter every reader of which casts it to bf16 is stored as bf16: its
// trace input is retyped (the casts become no-ops) and its value kept in bf16. Returns
// the dtype each parameter is stored in, by path.
std::map<std::string, graph::DType> store_frozen_parameters(const ParameterTable& table, graph::Graph& trace);

// The key of the random stream `stream` (an input named rng.N: a random initializer
// called outside any parameter) for the run's seed.
graph::Tensor random_key(uint64_t seed, std::string_view stream);

}  // namespace sx::model
