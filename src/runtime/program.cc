// Programs and the store of their parameters.
#include "runtime/program.h"

#include <fmt/format.h>

#include <algorithm>

#include "graph/builder.h"
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

bool number(Role role) { return role == Role::metric || role == Role::counter || role == Role::guard; }

bool returned(Role role) { return role == Role::value || number(role); }

// The name of the vector of a program's numbers: one that no parameter's or state's path
// has, since none begins with a dot.
constexpr const char* kNumbersName = ".numbers";

// `graph` with its outputs `numbers` (scalars) gathered into one, its last: each cast to
// f64, in one vector.
graph::Graph gather_numbers(graph::Graph graph, const std::vector<size_t>& numbers) {
  if (numbers.empty()) return graph;
  graph::Builder b(graph);
  std::vector<graph::NodeId> parts;
  for (size_t i : numbers) parts.push_back(b.reshape(b.cast(graph.outputs[i].node, graph::DType::f64), {1}));
  graph::NodeId gathered = parts.size() == 1 ? parts[0] : b.concat(parts, 0);
  std::vector<graph::NamedNode> outputs;
  for (size_t i = 0; i < graph.outputs.size(); ++i) {
    if (!std::binary_search(numbers.begin(), numbers.end(), i)) outputs.push_back(graph.outputs[i]);
  }
  outputs.push_back({kNumbersName, gathered});
  graph.outputs = std::move(outputs);
  return graph;
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
    const graph::Node& node = graph_.node(graph_.outputs[i].node);
    if (number(role) && !node.shape.empty()) {
      throw ProgramError(fmt::format("output `{}`, a {}, must be a scalar, not {}{}", graph_.outputs[i].name,
                                     role_name(role), graph::dtype_name(node.dtype), graph::shape_str(node.shape)));
    }
    if (role == Role::value) returned_.push_back(i);
    if (number(role)) numbers_.push_back(i);
  }
  Compiled compiled = compile(device_, gather_numbers(graph_, numbers_));
  graph_ = std::move(compiled.graph);
  plan_ = std::move(compiled.plan);
  const auto& types = plan_->output_types();
  size_t j = 0;  // the plan's output
  for (size_t i = 0; i < outputs_.size(); ++i) {
    if (outputs_[i].role == Role::value) results_.push_back(device_.allocate(types[j]));
    if (!number(outputs_[i].role)) ++j;
  }
  if (!numbers_.empty()) {
    numbers_buffer_ = device_.allocate(types[j]);
    numbers_read_.resize(numbers_.size());
  }
  in_.resize(inputs_.size());
  out_.resize(types.size());
}

std::span<const device::Buffer> Program::run(Store& store, std::span<const device::Buffer* const> fed) {
  if (fed.size() != fed_.size()) {
    throw ProgramError(fmt::format("the program reads {} fed inputs, got {}", fed_.size(), fed.size()));
  }
  for (size_t k = 0; k < fed_.size(); ++k) in_[fed_[k]] = fed[k];
  for (size_t i = 0; i < inputs_.size(); ++i) {
    if (stored(inputs_[i].role)) in_[i] = &store.at(inputs_[i].name);
  }
  size_t j = 0, k = 0;  // the plan's output, the returned value
  for (const Binding& output : outputs_) {
    if (stored(output.role)) out_[j++] = &store.at(output.name);
    else if (output.role == Role::value) out_[j++] = &results_[k++];
  }
  if (!numbers_.empty()) out_[j] = &numbers_buffer_;
  plan_->run(in_, out_);
  return results_;
}

std::span<const double> Program::read_numbers() {
  if (numbers_.empty()) return {};
  std::span<uint8_t> bytes(reinterpret_cast<uint8_t*>(numbers_read_.data()), numbers_read_.size() * sizeof(double));
  device_.download_into(numbers_buffer_, bytes).wait();
  return numbers_read_;
}

}  // namespace sx::runtime
