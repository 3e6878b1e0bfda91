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
  return fill_micro(batch, 0, steps_done, 0, 1);
}

std::span<const device::Buffer* const> StepFeed::fill_micro(const Batch& batch, int64_t first_row, int64_t steps_done,
                                                            int64_t micro, int64_t micro_batches) {
  const std::vector<size_t>& fed = program_.fed_inputs();
  const uint64_t key_index = static_cast<uint64_t>(steps_done * micro_batches + micro) + 1;
  for (size_t k = 0; k < fed.size(); ++k) {
    const runtime::Binding& input = program_.inputs()[fed[k]];
    if (input.role == runtime::Role::data) {
      const device::Buffer& buffer = buffers_[k];
      const size_t row_bytes = buffer.byte_size() / static_cast<size_t>(buffer.shape()[0]);
      const std::span<const uint8_t> rows = batch.find(input.name.substr(data_prefix_.size()))->bytes();
      device_.upload_into(buffers_[k], rows.subspan(static_cast<size_t>(first_row) * row_bytes, buffer.byte_size()));
      continue;
    }
    scalars_[k] = input.role == runtime::Role::random_key
                      ? static_cast<int64_t>(model::stream_key(seed_, input.name, key_index))
                      : steps_done;
    device_.upload_into(buffers_[k], {reinterpret_cast<const uint8_t*>(&scalars_[k]), sizeof(int64_t)});
  }
  return pointers_;
}

}  // namespace sx::train
