// Running initializers.
#include "model/values.h"

#include <fmt/format.h>

#include "device/codes.h"
#include "graph/index_error.h"
#include "graph/memory.h"
#include "graph/passes.h"
#include "lang/diagnostic.h"
#include "model/load.h"
#include "runtime/compile.h"

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
      graph::Tensor value = std::move(runtime::compile(device, param.decl->init).plan->run_host(keys).at(0));
      if (auto it = stored.find(param.path); it != stored.end() && it->second != value.dtype()) {
        value = graph::Tensor::from_doubles(it->second, value.shape(), value.to_doubles());
      }
      values[param.path] = std::move(value);
    } catch (const graph::MemoryLimitError& e) {
      lang::fail(graph::kOverMemoryLimit, param.decl->span,
                 fmt::format("initializing `{}`: {}", lang::shown_in_message(param.path), e.what()),
                 std::string(graph::kMemoryLimitHelp));
    } catch (const device::DeviceError& e) {
      lang::fail(e.code(), param.decl->span,
                 fmt::format("the {} device could not initialize `{}`: {}", device.name(),
                             lang::shown_in_message(param.path), e.what()));
    } catch (const graph::IndexOutOfRange& e) {
      lang::fail(device::kIndexOutsideAxis, param.decl->span,
                 fmt::format("initializing `{}`: {}", lang::shown_in_message(param.path), e.what()));
    }
  }
  return values;
}

std::map<std::string, graph::DType> store_frozen_parameters(const ParameterTable& table, graph::Graph& trace) {
  std::map<std::string, graph::DType> stored;
  std::map<graph::NodeId, std::string> frozen_f32;  // trace input -> parameter path
  for (const auto& param : table.params) {
    stored[param.path] = trace.nodes[param.decl->node].dtype;
    if (!param.decl->trainable && param.decl->dtype == graph::DType::f32 && !param.decl->numerics_high)
      frozen_f32[param.decl->node] = param.path;
  }
  std::vector<graph::NodeId> candidates;
  for (const auto& [node, path] : frozen_f32) candidates.push_back(node);
  for (graph::NodeId node : graph::keep_inputs_in_bf16(trace, candidates))
    stored[frozen_f32[node]] = graph::DType::bf16;
  return stored;
}

}  // namespace sx::model
