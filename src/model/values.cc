// Running initializers.
#include "model/values.h"

#include <fmt/format.h>

#include "graph/memory.h"
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

graph::Tensor random_key(uint64_t seed, std::string_view stream) { return key_tensor(stream_key(seed, stream, 0)); }

std::map<std::string, graph::Tensor> initial_values(const ParameterTable& table, uint64_t seed, device::Device& device,
                                                    const std::map<std::string, graph::DType>& stored) {
  std::map<std::string, graph::Tensor> values = loaded_values(table, stored);
  for (const auto& param : table.params) {
    if (param.decl->load) continue;
    std::vector<graph::Tensor> keys;
    for (size_t i = 0; i < param.decl->init.inputs.size(); ++i)
      keys.push_back(key_tensor(stream_key(seed, param.path, i)));
    try {
      graph::Tensor value = std::move(device.compile(param.decl->init)->run_host(keys).at(0));
      if (auto it = stored.find(param.path); it != stored.end() && it->second != value.dtype()) {
        value = graph::Tensor::from_doubles(it->second, value.shape(), value.to_doubles());
      }
      values[param.path] = std::move(value);
    } catch (const graph::MemoryLimitError& e) {
      lang::fail("E-MEM-001", param.decl->span, fmt::format("initializing `{}`: {}", param.path, e.what()),
                 std::string(graph::kMemoryLimitHelp));
    } catch (const device::DeviceError& e) {
      lang::fail("E-DEVICE-001", param.decl->span,
                 fmt::format("the {} device could not initialize `{}`: {}", device.name(), param.path, e.what()));
    }
  }
  return values;
}

std::map<std::string, graph::DType> store_frozen_parameters(const ParameterTable& table, graph::Graph& trace) {
  std::map<std::string, graph::DType> stored;
  // The frozen f32 parameters that may be stored as bf16, by trace node: one pass over
  // the trace decides them all.
  struct Readers {
    bool read = false, all_cast_down = true;
  };
  std::map<graph::NodeId, Readers> candidates;
  for (const auto& param : table.params) {
    stored[param.path] = trace.nodes[param.decl->node].dtype;
    if (param.decl->trainable || param.decl->dtype != graph::DType::f32 || param.decl->numerics_high) continue;
    candidates[param.decl->node] = {};
  }
  if (candidates.empty()) return stored;
  for (const auto& node : trace.nodes) {
    for (graph::NodeId arg : node.inputs) {
      auto it = candidates.find(arg);
      if (it == candidates.end()) continue;
      it->second.read = true;
      it->second.all_cast_down =
          it->second.all_cast_down && node.op_name() == "cast" && node.dtype == graph::DType::bf16;
    }
  }
  for (const auto& param : table.params) {
    auto it = candidates.find(param.decl->node);
    if (it == candidates.end() || !it->second.read || !it->second.all_cast_down) continue;
    trace.nodes[param.decl->node].dtype = graph::DType::bf16;
    stored[param.path] = graph::DType::bf16;
  }
  return stored;
}

}  // namespace sx::model
