// The batcher: its programs, compiled at start, and one batch's run.
#include "serve/batcher.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "graph/errors.h"
#include "graph/index_error.h"
#include "graph/passes.h"
#include "serve/errors.h"

namespace sx::serve {
namespace {

// A call's answer when an index of it is outside its axis: the input of the call the
// index is in and where, in the call's own tensor (the batch's axis dropped), or the
// device's words for an index computed in the model.
std::string index_error_answer(const graph::IndexOutOfRange& e, const CallLayout& layout) {
  std::string text = e.what();
  std::vector<int64_t> at = e.position();
  for (const TensorSpec& input : layout.inputs()) {
    if (e.input() == input.name && !at.empty()) {
      at.erase(at.begin());
      text = e.message(fmt::format("input `{}`", input.name), at);
    }
  }
  return error_answer(fmt::format("error[{}]: {}", kCallValue, text));
}

}  // namespace

Batcher::Batcher(device::Device& device, const ServedModel& model, int max_batch)
    : device_(device), layout_(model.about.inputs), store_(device) {
  if (max_batch < 1 || max_batch > kMaxBatch) {
    throw ServeError(kFlagDoesNotFit, fmt::format("--batch is {}; it is from 1 to {}", max_batch, kMaxBatch),
                     "ask for the most calls worth running together: the programs compiled at start grow with it");
  }
  std::vector<std::string> data;
  for (const TensorSpec& s : model.about.inputs) data.push_back(s.name);
  std::set<std::string> data_names(data.begin(), data.end());
  for (const auto& [path, value] : model.weights) store_.put(path, value);
  std::vector<int> batches;
  for (int batch = 1; batch < max_batch; batch *= 2) batches.push_back(batch);
  batches.push_back(max_batch);
  for (int batch : batches) {
    graph::Graph g;
    try {
      g = graph::vmap(model.graph, data, batch);
    } catch (const graph::GraphError& e) {
      throw ServeError(kRunFailed, fmt::format("the model cannot run {} calls together: {}", batch, e.what()),
                       "serve it with --batch 1");
    }
    std::vector<runtime::Binding> inputs, outputs;
    for (const graph::NamedNode& in : g.inputs) {
      inputs.push_back({data_names.contains(in.name) ? runtime::Role::data : runtime::Role::parameter, in.name});
    }
    for (const graph::NamedNode& out : g.outputs) outputs.push_back({runtime::Role::value, out.name});
    try {
      programs_.push_back({batch, std::make_unique<runtime::Program>(device, std::move(g), inputs, outputs)});
    } catch (const device::DeviceError& e) {
      throw ServeError(kRunFailed, fmt::format("the {} device cannot run the model: {}", device.name(), e.what()));
    } catch (const graph::IndexOutOfRange& e) {
      throw ServeError(kRunFailed, fmt::format("the model's constants read an index outside its axis: {}", e.what()));
    }
  }
  const runtime::Program& first = *programs_.front().program;
  for (size_t i : first.fed_inputs()) {
    const std::string& name = first.graph().inputs[i].name;
    for (size_t k = 0; k < data.size(); ++k) {
      if (data[k] == name) fed_input_.push_back(k);
    }
  }
}

const Batcher::SizedProgram& Batcher::program_for(size_t calls) const {
  auto it = std::find_if(programs_.begin(), programs_.end(),
                         [&](const SizedProgram& p) { return static_cast<size_t>(p.batch) >= calls; });
  if (calls == 0 || it == programs_.end()) {
    throw std::out_of_range(fmt::format("{} calls in a batch of 1 to {}", calls, max_batch()));
  }
  return *it;
}

std::vector<std::string> Batcher::run(std::span<const std::string> calls) {
  std::vector<std::string> answers = answer(calls);
  calls_ += calls.size();
  return answers;
}

std::vector<std::string> Batcher::answer_one_at_a_time(std::span<const std::string> calls) {
  std::vector<std::string> answers;
  for (size_t i = 0; i < calls.size(); ++i) answers.push_back(answer(calls.subspan(i, 1)).front());
  return answers;
}

std::vector<std::string> Batcher::answer(std::span<const std::string> calls) {
  runs_ += 1;
  std::vector<std::string> answers;
  try {
    const SizedProgram& sized = program_for(calls.size());
    // The rows past the calls repeat the first: values the model takes, so that they fail
    // nothing, and no call's row depends on them.
    std::vector<std::string_view> rows(calls.begin(), calls.end());
    const std::string_view first_call = rows.front();
    rows.resize(static_cast<size_t>(sized.batch), first_call);
    std::vector<device::Buffer> fed;
    std::vector<const device::Buffer*> fed_pointers;
    for (size_t k : fed_input_) fed.push_back(device_.upload(stack_input(layout_, k, rows)));
    for (const device::Buffer& b : fed) fed_pointers.push_back(&b);
    auto results = sized.program->run(store_, fed_pointers);
    std::vector<graph::Tensor> outputs;
    for (const device::Buffer& r : results) outputs.push_back(device_.download(r));
    for (size_t i = 0; i < calls.size(); ++i) answers.push_back(ok_answer(outputs, i));
  } catch (const graph::IndexOutOfRange& e) {
    answers = calls.size() == 1 ? std::vector{index_error_answer(e, layout_)} : answer_one_at_a_time(calls);
  } catch (const std::exception& e) {
    answers.assign(calls.size(),
                   error_answer(fmt::format("error[{}]: the device failed to run the call: {}", kRunFailed, e.what())));
  }
  return answers;
}

}  // namespace sx::serve
