// Opening the model, and the calls of several threads batched on its device.
#include "library/model.h"

#include <utility>

namespace sx::library {

Model::Model(const std::string& location, const ModelOptions& options)
    : Model(serve::resolve_operand(location), options) {}

Model::Model(serve::ModelSource source, const ModelOptions& options) : source_(std::move(source)) {
  serve::ServedModel served = serve::open_model(source_, options.shape);
  device_ = options.make_device();
  batcher_ = std::make_unique<serve::Batcher>(*device_, served, options.batch);
  about_ = std::move(served.about);
  at_limit_ = served.at_limit;
  batch_.reserve(static_cast<size_t>(batcher_->max_batch()));
  batch_calls_.reserve(static_cast<size_t>(batcher_->max_batch()));
}

std::string Model::run(std::string call) {
  Pending me{std::move(call)};
  std::unique_lock lock(mutex_);
  waiting_.push_back(&me);
  while (!me.done) {
    if (running_) finished_.wait(lock);
    else run_waiting(lock);
  }
  if (me.failure) std::rethrow_exception(me.failure);
  return std::move(me.answer);
}

size_t Model::calls_waiting() {
  std::lock_guard lock(mutex_);
  return waiting_.size();
}

void Model::run_waiting(std::unique_lock<std::mutex>& lock) {
  running_ = true;
  const auto most = static_cast<size_t>(batcher_->max_batch());
  while (!waiting_.empty() && batch_.size() < most) {
    batch_.push_back(waiting_.front());
    waiting_.pop_front();
    batch_calls_.push_back(std::move(batch_.back()->call));
  }
  lock.unlock();
  std::vector<std::string> answers;
  std::exception_ptr failure;
  try {
    answers = batcher_->run(batch_calls_);
  } catch (...) {
    failure = std::current_exception();
  }
  lock.lock();
  for (size_t i = 0; i < batch_.size(); ++i) {
    if (failure) batch_[i]->failure = failure;
    else batch_[i]->answer = std::move(answers[i]);
    batch_[i]->done = true;
  }
  batch_.clear();
  batch_calls_.clear();
  running_ = false;
  finished_.notify_all();
}

}  // namespace sx::library
