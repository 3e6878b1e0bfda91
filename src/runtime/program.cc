// Programs and the store of their parameters.
#include "runtime/program.h"

#include <fmt/format.h>

#include "runtime/compile.h"

namespace sx::runtime {

std::string_view role_name(Role role) {
  switch (role) {
    case Role::parameter: return "parameter";
    case Role::optimizer_state: return "optimizer state";
    case Role::data: return "data";
    case Role::random_key: return "random key";
    case Role::step: return "step";
    case Role::value: return "value";
    case Role::metric: return "metric";
    case Role::counter: return "counter";
    case Role::guard: return "guard";
  }
  return "?";
}

namespace {

bool stored(Role role) { return role == Role::parameter || role == Role::optimizer_state; }

bool returned(Role role) {
  return role == Role::value || role == Role::metric || role == Role::counter || role == Role::guard;
}

}  // namespace

device::Buffer& Store::at(std::string_view path) {
  auto it = buffers_.find(path);
  if (it == buffers_.end()) throw ProgramError(fmt::format("no value for `{}` on the {} device", path, device_.name()));
  return it->second;
}

const device::Buffer& Store::at(std::string_view path) const { return const_cast<Store*>(this)->at(path); }

void Store::put(const std::string& path, graph::Tensor value) {
  device::Buffer buffer = device_.upload(std::move(value));
  buffers_.insert_or_assign(path, std::move(buffer));
}

graph::Tensor Store::read(std::string_view path) const { return device_.download(at(path)); }

void Store::erase(std::string_view path) {
  if (auto it = buffers_.find(path); it != buffers_.end()) buffers_.erase(it);
}

std::vector<std::string> Store::paths() const {
  std::vector<std::string> out;
  for (const auto& [path, buffer] : buffers_) out.push_back(path);
  return out;
}

Program::Program(device::Device& device, graph::Graph graph, std::vector<Binding> inputs, std::vector<Binding> outputs)
    : device_(device), graph_(std::move(graph)), inputs_(std::move(inputs)), outputs_(std::move(outputs)) {
  if (inputs_.size() != graph_.inputs.size() || outputs_.size() != graph_.outputs.size()) {
    throw ProgramError(fmt::format("a program of {} inputs and {} outputs was given {} and {} roles",
                                   graph_.inputs.size(), graph_.outputs.size(), inputs_.size(), outputs_.size()));
  }
  for (size_t i = 0; i < inputs_.size(); ++i) {
    Role role = inputs_[i].role;
    if (returned(role)) {
      throw ProgramError(fmt::format("input `{}` cannot have the role {}", graph_.inputs[i].name, role_name(role)));
    }
    if (!stored(role)) fed_.push_back(i);
  }
  for (size_t i = 0; i < outputs_.size(); ++i) {
    Role role = outputs_[i].role;
    if (!returned(role) && !stored(role)) {
      throw ProgramError(fmt::format("output `{}` cannot have the role {}", graph_.outputs[i].name, role_name(role)));
    }
    if (returned(role)) returned_.push_back(i);
  }
  Compiled compiled = compile(device_, graph_);
  graph_ = std::move(compiled.graph);
  plan_ = std::move(compiled.plan);
  const auto& types = plan_->output_types();
  for (size_t i : returned_) results_.push_back(device_.allocate(types[i]));
  in_.resize(inputs_.size());
  out_.resize(outputs_.size());
}

std::span<const device::Buffer> Program::run(Store& store, std::span<const device::Buffer* const> fed) {
  if (fed.size() != fed_.size()) {
    throw ProgramError(fmt::format("the program reads {} fed inputs, got {}", fed_.size(), fed.size()));
  }
  for (size_t k = 0; k < fed_.size(); ++k) in_[fed_[k]] = fed[k];
  for (size_t i = 0; i < inputs_.size(); ++i) {
    if (stored(inputs_[i].role)) in_[i] = &store.at(inputs_[i].name);
  }
  for (size_t k = 0; k < returned_.size(); ++k) out_[returned_[k]] = &results_[k];
  for (size_t i = 0; i < outputs_.size(); ++i) {
    if (stored(outputs_[i].role)) out_[i] = &store.at(outputs_[i].name);
  }
  plan_->run(in_, out_);
  return results_;
}

}  // namespace sx::runtime
