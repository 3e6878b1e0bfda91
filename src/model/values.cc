// Running initializers.
#include "model/values.h"

#include <fmt/format.h>

#include "lang/diagnostic.h"

namespace sx::model {

namespace {

graph::Tensor key_tensor(uint64_t key) {
  graph::Tensor t(graph::DType::i64, {});
  t.data<int64_t>()[0] = static_cast<int64_t>(key);
  return t;
}

}  // namespace

std::map<std::string, graph::Tensor> initial_values(const ParameterTable& table, uint64_t seed,
                                                    device::Device& device) {
  std::map<std::string, graph::Tensor> values;
  for (const auto& param : table.params) {
    if (param.decl->load) continue;
    std::vector<graph::Tensor> keys;
    for (size_t i = 0; i < param.decl->init.inputs.size(); ++i) keys.push_back(key_tensor(stream_key(seed, param.path, i)));
    try {
      values[param.path] = std::move(device.compile(param.decl->init)->run(keys).at(0));
    } catch (const device::DeviceError& e) {
      lang::fail("E-DEVICE-001", param.decl->span,
                 fmt::format("the {} device could not initialize `{}`: {}", device.name(), param.path, e.what()));
    }
  }
  return values;
}

graph::Tensor input_value(const graph::Graph& trace, const graph::NamedNode& input, bool read,
                          const std::map<std::string, graph::Tensor>& values, uint64_t seed) {
  if (auto it = values.find(input.name); it != values.end()) return it->second;
  if (input.name.starts_with("rng.")) return key_tensor(stream_key(seed, input.name, 0));
  const graph::Node& node = trace.node(input.node);
  if (!read) return graph::Tensor(node.dtype, node.shape);
  lang::fail("E-PARAM-009",
             {}, fmt::format("a value reads the parameter input `{}` ({}{}), which has no root or no value", input.name,
                             graph::dtype_name(node.dtype), graph::shape_str(node.shape)),
             "bind the model with `defvar` at the top level, or build it inside the `defmodel` that uses it");
}

}  // namespace sx::model
