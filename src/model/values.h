// Initial parameter values: each parameter's closed initializer run on a device, its
// random streams keyed by the run's seed and the parameter's path.
#pragma once

#include <map>
#include <string>

#include "device/device.h"
#include "model/paths.h"

namespace sx::model {

// The initial value of every parameter (by path) that is not loaded from a file.
std::map<std::string, graph::Tensor> initial_values(const ParameterTable& table, uint64_t seed,
                                                    device::Device& device);

// The value of a trace input when a traced value runs on its own: a parameter's value,
// or the key of a random initializer called outside any parameter. A parameter without
// a root is E-PARAM-009 when `read`, and zeros when nothing reads it.
graph::Tensor input_value(const graph::Graph& trace, const graph::NamedNode& input, bool read,
                          const std::map<std::string, graph::Tensor>& values, uint64_t seed);

}  // namespace sx::model
