// Running initializers.
#include "model/values.h"

#include <fmt/format.h>

#include "lang/diagnostic.h"
#include "model/load.h"

namespace sx::model {

namespace {

graph::Tensor key_tensor(uint64_t key) {
  graph::Tensor t(graph::DType::i64, {});
  t.data<int64_t>()[0] = static_cast<int64_t>(key);
  return t;
}

}  // namespace

std::map<std::string, graph::Tensor> initial_values(const ParameterTable& table, uint64_t seed, device::Device& device,
                                                    const std::map<std::string, graph::DType>& stored) {
  std::map<std::string, graph::Tensor> values = loaded_values(table, stored);
  for (const auto& param : table.params) {
    if (param.decl->load) continue;
    std::vector<graph::Tensor> keys;
    for (size_t i = 0; i < param.decl->init.inputs.size(); ++i)
      keys.push_back(key_tensor(stream_key(seed, param.path, i)));
    try {
      graph::Tensor value = std::move(device.compile(param.decl->init)->run(keys).at(0));
      if (auto it = stored.find(param.path); it != stored.end() && it->second != value.dtype()) {
        value = graph::Tensor::from_doubles(it->second, value.shape(), value.to_doubles());
      }
      values[param.path] = std::move(value);
    } catch (const device::DeviceMemoryError& e) {
      lang::fail("E-DEVICE-002", param.decl->span, fmt::format("initializing `{}`: {}", param.path, e.what()));
    } catch (const device::DeviceError& e) {
      lang::fail("E-DEVICE-001", param.decl->span,
                 fmt::format("the {} device could not initialize `{}`: {}", device.name(), param.path, e.what()));
    }
  }
  return values;
}

std::map<std::string, graph::DType> store_frozen_parameters(const ParameterTable& table, graph::Graph& trace) {
  std::map<std::string, graph::DType> stored;
  for (const auto& param : table.params) {
    graph::Node& input = trace.nodes[param.decl->node];
    stored[param.path] = input.dtype;
    if (param.decl->trainable || param.decl->dtype != graph::DType::f32 || param.decl->numerics_high) continue;
    bool read = false, all_cast_down = true;
    for (auto& node : trace.nodes) {
      for (graph::NodeId arg : node.inputs) {
        if (arg != param.decl->node) continue;
        read = true;
        all_cast_down = all_cast_down && node.op_name() == "cast" && node.dtype == graph::DType::bf16;
      }
    }
    if (!read || !all_cast_down) continue;
    input.dtype = graph::DType::bf16;
    stored[param.path] = graph::DType::bf16;
  }
  return stored;
}

graph::Tensor input_value(const graph::Graph& program, const graph::NamedNode& input, bool read,
                          const std::map<std::string, graph::Tensor>& values, uint64_t seed) {
  if (auto it = values.find(input.name); it != values.end()) return it->second;
  if (input.name.starts_with("rng.")) return key_tensor(stream_key(seed, input.name, 0));
  const graph::Node& node = program.node(input.node);
  if (!read) return graph::Tensor(node.dtype, node.shape);
  lang::fail("E-PARAM-009", {},
             fmt::format("a value reads the parameter input `{}` ({}{}), which has no root or no value", input.name,
                         graph::dtype_name(node.dtype), graph::shape_str(node.shape)),
             "bind the model with `defvar` at the top level, or build it inside the `defmodel` that uses it");
}

}  // namespace sx::model
