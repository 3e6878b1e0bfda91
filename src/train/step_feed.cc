// Feeding a program (see step_feed.h).
#include "train/step_feed.h"

#include "model/model.h"

namespace sx::train {

StepFeed::StepFeed(device::Device& device, const runtime::Program& program, uint64_t seed, std::string_view data_prefix)
    : device_(device), program_(program), seed_(seed), data_prefix_(data_prefix) {
  const graph::Graph& graph = program.graph();
  for (size_t i : program.fed_inputs()) {
    const graph::Node& input = graph.node(graph.inputs[i].node);
    buffers_.push_back(device.allocate({input.shape, input.dtype}));
  }
  scalars_.resize(buffers_.size());
  for (const device::Buffer& buffer : buffers_) pointers_.push_back(&buffer);
}

std::span<const device::Buffer* const> StepFeed::fill(const Batch& batch, int64_t steps_done) {
  const std::vector<size_t>& fed = program_.fed_inputs();
  for (size_t k = 0; k < fed.size(); ++k) {
    const runtime::Binding& input = program_.inputs()[fed[k]];
    if (input.role == runtime::Role::data) {
      device_.upload_into(buffers_[k], batch.find(input.name.substr(data_prefix_.size()))->bytes());
      continue;
    }
    scalars_[k] =
        input.role == runtime::Role::random_key
            ? static_cast<int64_t>(model::stream_key(seed_, input.name, static_cast<uint64_t>(steps_done) + 1))
            : steps_done;
    device_.upload_into(buffers_[k], {reinterpret_cast<const uint8_t*>(&scalars_[k]), sizeof(int64_t)});
  }
  return pointers_;
}

}  // namespace sx::train
