// Feeding a program (see step_feed.h).
#include "train/step_feed.h"

#include "model/model.h"

namespace sx::train {

StepFeed::StepFeed(device::Device& device, const runtime::Program& program, uint64_t seed, std::string_view data_prefix)
    : device_(device),
      program_(program),
      seed_(seed),
      data_prefix_(data_prefix),
      buffers_(program.fed_inputs().size()) {
  for (const device::Buffer& buffer : buffers_) pointers_.push_back(&buffer);
}

std::span<const device::Buffer* const> StepFeed::fill(const Batch& batch, int64_t steps_done) {
  const std::vector<size_t>& fed = program_.fed_inputs();
  for (size_t k = 0; k < fed.size(); ++k) {
    const runtime::Binding& input = program_.inputs()[fed[k]];
    if (input.role == runtime::Role::data) {
      buffers_[k] = device_.upload(*batch.find(input.name.substr(data_prefix_.size())));
    } else if (input.role == runtime::Role::random_key) {
      graph::Tensor key(graph::DType::i64, {});
      key.data<int64_t>()[0] =
          static_cast<int64_t>(model::stream_key(seed_, input.name, static_cast<uint64_t>(steps_done) + 1));
      buffers_[k] = device_.upload(std::move(key));
    } else {
      buffers_[k] = device_.upload(graph::Tensor::scalar(graph::DType::i64, static_cast<double>(steps_done)));
    }
  }
  return pointers_;
}

}  // namespace sx::train
