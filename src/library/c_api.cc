// The C API (include/sexpgpu.h) over library::Model.
//
// A model handle is a number, never reused, that the registry maps to its open model: a
// null or closed handle is found missing and answered E-API-001 rather than followed into
// freed memory, and a call that holds the model keeps it alive while another thread
// closes it. Every function catches every exception: none crosses into C.
#include <fmt/format.h>
#include <sexpgpu.h>

#include <cstring>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <utility>

#include "device/device.h"
#include "graph/shape.h"
#include "library/codes.h"
#include "library/errors.h"
#include "library/model.h"
#include "serve/protocol.h"

namespace sx::library {
namespace {

// An open model and the infos the C API hands out, whose strings live as long as it.
struct OpenModel {
  OpenModel(const std::string& location, const ModelOptions& options) : model(location, options) {}
  Model model;
  std::vector<std::string> dtypes;  // each info's dtype name, inputs then outputs
  std::vector<sexpgpu_tensor_info> inputs, outputs;
};

class Registry {
 public:
  sexpgpu_model* add(std::shared_ptr<OpenModel> model) {
    std::unique_lock lock(mutex_);
    uintptr_t handle = next_++;
    open_.emplace(handle, std::move(model));
    return reinterpret_cast<sexpgpu_model*>(handle);
  }
  std::shared_ptr<OpenModel> find(const sexpgpu_model* handle) const {
    std::shared_lock lock(mutex_);
    auto it = open_.find(reinterpret_cast<uintptr_t>(handle));
    return it == open_.end() ? nullptr : it->second;
  }
  // The model, to be closed once nothing else holds it; null when it is not open.
  std::shared_ptr<OpenModel> remove(const sexpgpu_model* handle) {
    std::unique_lock lock(mutex_);
    auto it = open_.find(reinterpret_cast<uintptr_t>(handle));
    if (it == open_.end()) return nullptr;
    std::shared_ptr<OpenModel> model = std::move(it->second);
    open_.erase(it);
    return model;
  }

 private:
  mutable std::shared_mutex mutex_;
  std::unordered_map<uintptr_t, std::shared_ptr<OpenModel>> open_;
  uintptr_t next_ = 1;
};

// Never destroyed: a thread may call in while the process exits.
Registry& registry() {
  static Registry& models = *new Registry;
  return models;
}

sexpgpu_error* not_open(const char* function, const sexpgpu_model* model) {
  return make_error(kBadHandle, model ? fmt::format("{}: the model is closed (or was never opened)", function)
                                      : fmt::format("{}: the model is NULL", function));
}

sexpgpu_error* null_argument(const char* function, std::string_view what) {
  return make_error(kBadHandle, fmt::format("{}: {} is NULL", function, what));
}

// The options as the caller's struct gives them, read by its size; E-API-003 for a size
// no version has, or a larger struct that sets a field this library does not know.
sexpgpu_error* read_options(const sexpgpu_options* given, ModelOptions& options) {
  sexpgpu_options fields;
  sexpgpu_options_init(&fields);
  if (given) {
    if (given->size < sizeof fields) {
      return make_error(kBadOptions, fmt::format("sexpgpu_open: options.size is {}, smaller than any version of "
                                                 "sexpgpu_options ({} bytes): fill it with sexpgpu_options_init",
                                                 given->size, sizeof fields));
    }
    const auto* bytes = reinterpret_cast<const unsigned char*>(given);
    for (size_t i = sizeof fields; i < given->size; ++i) {
      if (bytes[i] != 0) {
        return make_error(kBadOptions,
                          fmt::format("sexpgpu_open: options.size is {}: a newer sexpgpu_options than this library's "
                                      "({} bytes, version {}), with a field it does not know set",
                                      given->size, sizeof fields, SEXPGPU_VERSION));
      }
    }
    std::memcpy(&fields, given, sizeof fields);
  }
  if (fields.output_count > 0 && !fields.outputs) return null_argument("sexpgpu_open", "options.outputs");
  for (size_t i = 0; i < fields.output_count; ++i) {
    if (!fields.outputs[i]) return null_argument("sexpgpu_open", fmt::format("options.outputs[{}]", i));
    options.shape.outputs.emplace_back(fields.outputs[i]);
  }
  options.shape.at = fields.at != 0;
  options.shape.precision = fields.precision ? fields.precision : "";
  options.shape.trained = fields.trained != 0;
  options.batch = fields.batch;
  std::string device = fields.device ? fields.device : "cpu";
  options.make_device = [device, cores = fields.cpu_cores] {
    return device::make_device(device, device::DeviceOptions{.cpu_cores = cores});
  };
  return nullptr;
}

std::string describe(const serve::TensorSpec& spec) {
  return fmt::format("`{}` {} {}", spec.name, graph::shape_str(spec.shape), graph::dtype_name(spec.dtype));
}

// The infos of `specs`; E-API-004 for one of more than SEXPGPU_MAX_RANK axes.
sexpgpu_error* fill_infos(const std::vector<serve::TensorSpec>& specs, const char* side, OpenModel& open,
                          std::vector<sexpgpu_tensor_info>& infos) {
  for (const serve::TensorSpec& spec : specs) {
    if (spec.shape.size() > SEXPGPU_MAX_RANK) {
      return make_error(kTooManyAxes, fmt::format("sexpgpu_open: the {} {} has {} axes; the library takes at most {}",
                                                  side, describe(spec), spec.shape.size(), SEXPGPU_MAX_RANK));
    }
    sexpgpu_tensor_info info{};
    info.name = spec.name.c_str();
    info.rank = static_cast<int>(spec.shape.size());
    for (size_t axis = 0; axis < spec.shape.size(); ++axis) info.shape[axis] = spec.shape[axis];
    info.byte_size = spec.byte_size();
    infos.push_back(info);
    open.dtypes.emplace_back(graph::dtype_name(spec.dtype));
  }
  return nullptr;
}

sexpgpu_error* info_of(const char* function, const sexpgpu_model* model, int index, sexpgpu_tensor_info* info,
                       bool input) {
  return guarded(function, [&]() -> sexpgpu_error* {
    std::shared_ptr<OpenModel> open = registry().find(model);
    if (!open) return not_open(function, model);
    if (!info) return null_argument(function, "info");
    const std::vector<sexpgpu_tensor_info>& infos = input ? open->inputs : open->outputs;
    if (index < 0 || static_cast<size_t>(index) >= infos.size()) {
      return make_error(kCallDoesNotFit,
                        fmt::format("{}: no {} {}: the model has {}, 0 to {}", function, input ? "input" : "output",
                                    index, infos.size(), static_cast<int>(infos.size()) - 1));
    }
    *info = infos[static_cast<size_t>(index)];
    return nullptr;
  });
}

// How many inputs (or outputs) the model has; -1 when it is not open.
int count_of(const sexpgpu_model* model, bool inputs) noexcept {
  try {
    std::shared_ptr<OpenModel> open = registry().find(model);
    if (open) return static_cast<int>(inputs ? open->inputs.size() : open->outputs.size());
  } catch (...) {
    // The registry's lock failed: the model cannot be read, as if closed.
  }
  return -1;
}

// E-API-002 unless `count` buffers of the sizes `specs` take, each with its data.
template <class Buffer>
sexpgpu_error* check_buffers(const std::vector<serve::TensorSpec>& specs, const Buffer* buffers, size_t count,
                             const char* side) {
  if (count != specs.size()) {
    std::vector<std::string> each;
    for (const serve::TensorSpec& spec : specs) each.push_back(describe(spec));
    return make_error(kCallDoesNotFit, fmt::format("sexpgpu_run: {} {}s given; the model takes {}: {}", count, side,
                                                   specs.size(), each.empty() ? "none" : graph::join(each, ", ")));
  }
  if (count > 0 && !buffers) return null_argument("sexpgpu_run", fmt::format("{}s", side));
  for (size_t i = 0; i < count; ++i) {
    if (buffers[i].bytes != specs[i].byte_size()) {
      return make_error(kCallDoesNotFit, fmt::format("sexpgpu_run: {} {} ({}) takes {} bytes; its buffer has {}", side,
                                                     i, describe(specs[i]), specs[i].byte_size(), buffers[i].bytes));
    }
    if (!buffers[i].data && buffers[i].bytes > 0) {
      return null_argument("sexpgpu_run", fmt::format("the data of {} {}", side, i));
    }
  }
  return nullptr;
}

// An error answer's text, "error[CODE]: message", as its code and message.
sexpgpu_error* from_error_text(std::string_view text) {
  constexpr std::string_view kOpen = "error[";
  size_t close = text.find("]: ");
  if (!text.starts_with(kOpen) || close == std::string_view::npos) return make_error(kInternal, text);
  return make_error(text.substr(kOpen.size(), close - kOpen.size()), text.substr(close + 3));
}

}  // namespace
}  // namespace sx::library

using namespace sx;
using namespace sx::library;

extern "C" {

const char* sexpgpu_version(void) { return SEXPGPU_VERSION; }

void sexpgpu_options_init(sexpgpu_options* options) {
  if (!options) return;
  *options = sexpgpu_options{};
  options->size = sizeof *options;
  options->batch = 1;
}

sexpgpu_error* sexpgpu_open(const char* location, const sexpgpu_options* options, sexpgpu_model** model) {
  if (model) *model = nullptr;
  return guarded("sexpgpu_open", [&]() -> sexpgpu_error* {
    if (!model) return null_argument("sexpgpu_open", "model (the place for the open model)");
    if (!location) return null_argument("sexpgpu_open", "location");
    ModelOptions read;
    if (sexpgpu_error* error = read_options(options, read)) return error;
    auto open = std::make_shared<OpenModel>(location, read);
    const serve::Handshake& about = open->model.about();
    if (sexpgpu_error* error = fill_infos(about.inputs, "input", *open, open->inputs)) return error;
    if (sexpgpu_error* error = fill_infos(about.outputs, "output", *open, open->outputs)) return error;
    // The dtype names are in place now; a vector that grew would have moved them.
    for (size_t i = 0; i < open->inputs.size(); ++i) open->inputs[i].dtype = open->dtypes[i].c_str();
    for (size_t i = 0; i < open->outputs.size(); ++i) {
      open->outputs[i].dtype = open->dtypes[open->inputs.size() + i].c_str();
    }
    *model = registry().add(std::move(open));
    return nullptr;
  });
}

int sexpgpu_input_count(const sexpgpu_model* model) { return count_of(model, true); }

int sexpgpu_output_count(const sexpgpu_model* model) { return count_of(model, false); }

sexpgpu_error* sexpgpu_input_info(const sexpgpu_model* model, int index, sexpgpu_tensor_info* info) {
  return info_of("sexpgpu_input_info", model, index, info, true);
}

sexpgpu_error* sexpgpu_output_info(const sexpgpu_model* model, int index, sexpgpu_tensor_info* info) {
  return info_of("sexpgpu_output_info", model, index, info, false);
}

sexpgpu_error* sexpgpu_run(sexpgpu_model* model, const sexpgpu_const_buffer* inputs, size_t input_count,
                           const sexpgpu_buffer* outputs, size_t output_count) {
  return guarded("sexpgpu_run", [&]() -> sexpgpu_error* {
    std::shared_ptr<OpenModel> open = registry().find(model);
    if (!open) return not_open("sexpgpu_run", model);
    const serve::Handshake& about = open->model.about();
    if (sexpgpu_error* error = check_buffers(about.inputs, inputs, input_count, "input")) return error;
    if (sexpgpu_error* error = check_buffers(about.outputs, outputs, output_count, "output")) return error;
    const serve::CallLayout& layout = open->model.batcher().layout();
    std::string call;
    call.reserve(layout.call_bytes());
    for (size_t i = 0; i < input_count; ++i) call.append(static_cast<const char*>(inputs[i].data), inputs[i].bytes);
    if (auto why = serve::check_call_values(layout, call, open->model.at_limit())) return from_error_text(*why);
    std::string answer = open->model.run(std::move(call));
    std::string_view body(answer);
    if (body.empty()) return make_error(kInternal, "sexpgpu_run: the model gave an empty answer");
    const auto status = static_cast<uint8_t>(body.front());
    body.remove_prefix(1);
    if (status != serve::kStatusOk) return from_error_text(body);
    for (size_t j = 0; j < output_count; ++j) {
      std::memcpy(outputs[j].data, body.data(), outputs[j].bytes);
      body.remove_prefix(outputs[j].bytes);
    }
    return nullptr;
  });
}

const char* sexpgpu_error_code(const sexpgpu_error* error) { return error ? error->code.c_str() : ""; }

const char* sexpgpu_error_message(const sexpgpu_error* error) { return error ? error->message.c_str() : ""; }

void sexpgpu_error_free(sexpgpu_error* error) { free_error(error); }

void sexpgpu_close(sexpgpu_model* model) {
  try {
    // The model is freed here, or by the last call still running on it.
    registry().remove(model);
  } catch (...) {
  }
}

}  // extern "C"
