// The fused and the micro-batched step (see step_runner.h).
#include "train/step_runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <map>

#include "distributed/ordered_sum.h"
#include "lang/tracer.h"
#include "train/codes.h"
#include "train/prefetcher.h"
#include "train/step_feed.h"

namespace sx::train {
namespace {

class FusedSteps final : public StepRunner {
 public:
  FusedSteps(Session& session, device::Device& device, const StepGraph& step, const StepData& data, int64_t batch)
      : session_(session),
        program_(compile_step(session, device, step.graph, step.inputs, step.outputs)),
        prefetcher_(data.loader, data.seed, data.first, batch, {.depth = 2, .end_step = data.end}),
        feed_(device, program_, data.seed, kDataPrefix) {}

  StepResults run(runtime::Store& store, int64_t steps_done, double& waited) override {
    Prefetcher::Next next = prefetcher_.next();
    waited += next.waited_seconds;
    return run_step(session_, program_, store, feed_.fill(next.batch, steps_done), steps_done);
  }

 private:
  Session& session_;
  runtime::Program program_;
  Prefetcher prefetcher_;
  StepFeed feed_;
};

// A sum in progress: f32 gradients, and the numbers a step logs (metrics and counters
// summed, guards 1 while all hold).
struct Partial {
  std::vector<float> grads;
  std::vector<double> numbers;
};

template <class T>
std::span<const std::byte> bytes_of(const std::vector<T>& v) {
  return std::as_bytes(std::span(v));
}
template <class T>
std::span<std::byte> bytes_of(std::vector<T>& v) {
  return std::as_writable_bytes(std::span(v));
}
// The bytes of `floats` from float `at`, as the device copies them.
std::span<uint8_t> device_bytes(std::vector<float>& floats, size_t at, size_t count) {
  return {reinterpret_cast<uint8_t*>(floats.data() + at), count};
}

class MicroBatchedSteps final : public StepRunner {
 public:
  MicroBatchedSteps(Session& session, device::Device& device, const StepGraph& step, const StepData& data,
                    const MicroBatches& micro, distributed::World& world)
      : session_(session),
        device_(device),
        micro_(micro),
        world_(world),
        gradient_(compile_step(session, device, step.graph, step.inputs, step.outputs)),
        update_(compile_step(session, device, step.update->graph, step.update->inputs, step.update->outputs)),
        // A worker's share of a global batch is one loader batch of per_worker micro-batches.
        prefetcher_(data.loader, data.seed, data.first, micro.rows * micro.per_worker,
                    {.depth = 2, .end_step = data.end, .stride = world.size(), .offset = world.rank()}),
        feed_(device, gradient_, data.seed, kDataPrefix),
        local_([this](Partial& left, Partial& right) {
          for (size_t i = 0; i < left.grads.size(); ++i) left.grads[i] += right.grads[i];
          add_numbers(left.numbers, right.numbers);
          spare_.push_back(std::move(right));
        }) {
    // The gradients, one after another in the order of the gradient program's values.
    const graph::Graph& graph = gradient_.graph();
    for (size_t i : gradient_.returned_outputs()) {
      grad_offsets_[gradient_.outputs()[i].name] = gradient_floats_;
      gradient_floats_ += static_cast<size_t>(graph::numel(graph.node(graph.outputs[i].node).shape));
    }
    for (size_t i : gradient_.number_outputs()) number_roles_.push_back(gradient_.outputs()[i].role);
    const graph::Graph& update = update_.graph();
    for (size_t i : update_.fed_inputs()) {
      const graph::Node& input = update.node(update.inputs[i].node);
      update_fed_.push_back(device.allocate({input.shape, input.dtype}));
    }
    for (const device::Buffer& buffer : update_fed_) update_pointers_.push_back(&buffer);
    // A diagnostic of a micro-batch names its rows of the global batch (an index out of
    // range names the row of the micro-batch).
    for (int64_t j = 0; j < micro.per_worker; ++j) {
      const int64_t m = world.rank() * micro.per_worker + j;
      parts_.push_back(fmt::format(", micro-batch {} (rows {} to {})", m, m * micro.rows, (m + 1) * micro.rows - 1));
    }
  }

  StepResults run(runtime::Store& store, int64_t steps_done, double& waited) override {
    Prefetcher::Next next = prefetcher_.next();
    waited += next.waited_seconds;
    const int64_t first_micro = world_.rank() * micro_.per_worker;
    for (int64_t j = 0; j < micro_.per_worker; ++j) {
      auto fed = feed_.fill_micro(next.batch, j * micro_.rows, steps_done, first_micro + j, micro_.count);
      ProgramRun ran = run_checked(session_, gradient_, store, fed, steps_done, parts_[static_cast<size_t>(j)]);
      Partial leaf = spare();
      std::vector<device::Event> copies;
      size_t at = 0;
      for (const device::Buffer& value : ran.values) {
        copies.push_back(device_.download_into(value, device_bytes(leaf.grads, at, value.byte_size())));
        at += value.byte_size() / sizeof(float);
      }
      leaf.numbers.assign(ran.numbers.begin(), ran.numbers.end());
      for (const device::Event& copy : copies) copy.wait();
      local_.push(std::move(leaf));
    }
    Partial sum = local_.finish();
    if (world_.size() > 1) complete_across_workers(sum);
    for (float& g : sum.grads) g /= static_cast<float>(micro_.count);
    for (size_t k = 0; k < number_roles_.size(); ++k) {
      if (number_roles_[k] == runtime::Role::metric) sum.numbers[k] /= static_cast<double>(micro_.count);
    }
    const std::span<const double> update_numbers = run_update(store, sum.grads, steps_done);
    StepResults results = combined_results(sum.numbers, update_numbers);
    spare_.push_back(std::move(sum));
    return results;
  }

 private:
  Partial spare() {
    if (spare_.empty()) return {std::vector<float>(gradient_floats_), {}};
    Partial p = std::move(spare_.back());
    spare_.pop_back();
    return p;
  }

  // The tree's top levels: each worker's node is one subtree; every worker finishes the
  // numbers, and its own slice of the gradients, which all then gather.
  void complete_across_workers(Partial& mine) {
    const auto n = static_cast<size_t>(world_.size());
    const int level = std::countr_zero(static_cast<uint64_t>(micro_.per_worker));
    std::vector<double> numbers(n * mine.numbers.size());
    collective("all-gather of the metrics", [&] { world_.all_gather(bytes_of(mine.numbers), bytes_of(numbers)); });
    const size_t count = mine.numbers.size();
    distributed::OrderedSum<std::span<double>> numbers_sum(
        [&](std::span<double>& left, std::span<double>& right) { add_numbers(left, right); });
    for (size_t r = 0; r < n; ++r) numbers_sum.push(std::span(numbers).subspan(r * count, count), level);
    std::span<double> total = numbers_sum.finish();
    std::copy(total.begin(), total.end(), mine.numbers.begin());

    const size_t slice = (gradient_floats_ + n - 1) / n;
    send_.assign(slice * n, 0.0f);
    std::copy(mine.grads.begin(), mine.grads.end(), send_.begin());
    received_.resize(slice * n);
    collective("all-to-all of the gradients", [&] { world_.all_to_all(bytes_of(send_), bytes_of(received_)); });
    distributed::OrderedSum<std::span<float>> grads_sum([](std::span<float>& left, std::span<float>& right) {
      for (size_t i = 0; i < left.size(); ++i) left[i] += right[i];
    });
    for (size_t r = 0; r < n; ++r) grads_sum.push(std::span(received_).subspan(r * slice, slice), level);
    std::span<float> own = grads_sum.finish();
    std::vector<float> own_copy(own.begin(), own.end());
    collective("all-gather of the gradients", [&] { world_.all_gather(bytes_of(own_copy), bytes_of(send_)); });
    std::copy_n(send_.begin(), gradient_floats_, mine.grads.begin());
  }

  void add_numbers(std::span<double> left, std::span<const double> right) const {
    for (size_t k = 0; k < left.size(); ++k) {
      left[k] = number_roles_[k] == runtime::Role::guard ? std::min(left[k], right[k]) : left[k] + right[k];
    }
  }

  template <class F>
  void collective(std::string_view what, F&& f) {
    try {
      f();
    } catch (const distributed::WorldError& e) {
      lang::fail(kWorkerLost, {}, fmt::format("the {} failed: {}", what, e.what()));
    }
  }

  std::span<const double> run_update(runtime::Store& store, std::vector<float>& grads, int64_t steps_done) {
    const std::vector<size_t>& fed = update_.fed_inputs();
    for (size_t k = 0; k < fed.size(); ++k) {
      const runtime::Binding& input = update_.inputs()[fed[k]];
      if (input.role == runtime::Role::step) {
        step_scalar_ = steps_done;
        device_.upload_into(update_fed_[k], {reinterpret_cast<const uint8_t*>(&step_scalar_), sizeof(int64_t)});
      } else {
        const size_t at = grad_offsets_.at(input.name);
        device_.upload_into(update_fed_[k], device_bytes(grads, at, update_fed_[k].byte_size()));
      }
    }
    return run_checked(session_, update_, store, update_pointers_, steps_done).numbers;
  }

  // The results as the fused step orders them: the loss, the update's (lr, grad-norm),
  // then the other metrics, the counters and the guards.
  StepResults combined_results(std::span<const double> gradient, std::span<const double> update) const {
    std::vector<runtime::Binding> bindings;
    std::vector<double> values;
    auto add = [&](const runtime::Program& program, size_t k, double value) {
      bindings.push_back(program.outputs()[program.number_outputs()[k]]);
      values.push_back(value);
    };
    add(gradient_, 0, gradient[0]);
    for (size_t k = 0; k < update.size(); ++k) add(update_, k, update[k]);
    for (size_t k = 1; k < gradient.size(); ++k) add(gradient_, k, gradient[k]);
    return decode_step_results(bindings, values);
  }

  Session& session_;
  device::Device& device_;
  MicroBatches micro_;
  distributed::World& world_;
  runtime::Program gradient_, update_;
  Prefetcher prefetcher_;
  StepFeed feed_;
  distributed::OrderedSum<Partial> local_;
  size_t gradient_floats_ = 0;
  std::map<std::string, size_t, std::less<>> grad_offsets_;  // by the gradient's binding name
  std::vector<runtime::Role> number_roles_;                  // of the gradient program's numbers
  std::vector<device::Buffer> update_fed_;
  std::vector<const device::Buffer*> update_pointers_;
  int64_t step_scalar_ = 0;
  std::vector<std::string> parts_;      // what a diagnostic calls each of this worker's micro-batches
  std::vector<Partial> spare_;          // sums done with, reused
  std::vector<float> send_, received_;  // the collectives' buffers
};

}  // namespace

MicroBatches micro_batches(const RunSettings& run, std::optional<int64_t> rows, int64_t batch, int workers) {
  MicroBatches micro;
  int64_t parts = 1;
  while (parts * 2 <= kDerivedMicroBatches && batch % (parts * 2) == 0) parts *= 2;
  micro.rows = rows.value_or(batch / parts);
  if (batch % micro.rows != 0) {
    lang::fail(kBatchNotSplit, run.span,
               fmt::format("`:micro-batch` {} does not divide `:batch` {}", micro.rows, batch),
               "give a :micro-batch that divides the batch");
  }
  micro.count = batch / micro.rows;
  micro.per_worker = micro.count / workers;
  if (micro.count % workers != 0 || (workers > 1 && !distributed::is_power_of_two(micro.per_worker))) {
    lang::fail(kBatchNotSplit, run.span,
               fmt::format("{} workers cannot split a batch of {} rows in {} micro-batches of {}: each worker "
                           "needs the same number of micro-batches, a power of two",
                           workers, batch, micro.count, micro.rows),
               "run on a number of workers that divides the micro-batches into 1, 2, 4, ... each, or set "
               ":micro-batch so that it does");
  }
  return micro;
}

int64_t collective_bytes_per_step(int64_t gradient_floats, int64_t numbers, int workers) {
  if (workers <= 1) return 0;
  const int64_t slice = (gradient_floats + workers - 1) / workers;
  return (workers - 1) *
         (2 * slice * static_cast<int64_t>(sizeof(float)) + numbers * static_cast<int64_t>(sizeof(double)));
}

runtime::Program compile_step(Session& session, device::Device& device, graph::Graph graph,
                              std::vector<runtime::Binding> inputs, std::vector<runtime::Binding> outputs) {
  try {
    return runtime::Program(device, session.under_precision(graph), std::move(inputs), std::move(outputs));
  } catch (const graph::IndexOutOfRange& e) {
    fail_index_out_of_range(*session.interp().tracer(), e, "the step: ");
  }
}

std::unique_ptr<StepRunner> fused_steps(Session& session, device::Device& device, const StepGraph& step,
                                        const StepData& data, int64_t batch) {
  return std::make_unique<FusedSteps>(session, device, step, data, batch);
}

std::unique_ptr<StepRunner> micro_batched_steps(Session& session, device::Device& device, const StepGraph& step,
                                                const StepData& data, const MicroBatches& micro,
                                                distributed::World& world) {
  return std::make_unique<MicroBatchedSteps>(session, device, step, data, micro, world);
}

}  // namespace sx::train
