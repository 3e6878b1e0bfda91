// Frames, the handshake, and the encoding of tensors in calls and answers.
#include "serve/protocol.h"

#include <fmt/format.h>

#include <bit>
#include <cstring>
#include <nlohmann/json.hpp>

#include "graph/shown.h"
#include "serve/errors.h"

namespace sx::serve {

// The wire is little-endian and so is every host SexpGPU builds for (x86-64, arm64): a
// tensor's bytes in memory are its encoding, and encoding is copying.
static_assert(std::endian::native == std::endian::little, "the protocol's encoding assumes a little-endian host");

size_t TensorSpec::byte_size() const { return static_cast<size_t>(graph::numel(shape)) * graph::dtype_size(dtype); }

namespace {

nlohmann::json specs_json(const std::vector<TensorSpec>& specs) {
  nlohmann::json out = nlohmann::json::array();
  for (const TensorSpec& s : specs) {
    out.push_back({{"name", s.name}, {"shape", s.shape}, {"dtype", graph::dtype_name(s.dtype)}});
  }
  return out;
}

std::string describe(const std::vector<TensorSpec>& specs) {
  std::vector<std::string> parts;
  for (const TensorSpec& s : specs) {
    parts.push_back(fmt::format("`{}` {} {}, {} bytes", s.name, graph::shape_str(s.shape), graph::dtype_name(s.dtype),
                                s.byte_size()));
  }
  return graph::join(parts, "; ");
}

std::string coded(const char* code, std::string_view message) { return fmt::format("error[{}]: {}", code, message); }

}  // namespace

std::string handshake_json(const Handshake& about) {
  nlohmann::json doc = {{"protocol", kProtocolVersion},
                        {"checkpoint", about.checkpoint},
                        {"step", about.step},
                        {"slug", about.slug},
                        {"precision", about.precision},
                        {"inputs", specs_json(about.inputs)},
                        {"outputs", specs_json(about.outputs)}};
  return doc.dump();
}

std::array<uint8_t, kFrameHeaderBytes> frame_header(uint64_t length) {
  std::array<uint8_t, kFrameHeaderBytes> out;
  std::memcpy(out.data(), &length, sizeof length);
  return out;
}

uint64_t frame_length(std::span<const uint8_t, kFrameHeaderBytes> header) {
  uint64_t length = 0;
  std::memcpy(&length, header.data(), sizeof length);
  return length;
}

std::string frame(std::string_view body) {
  auto header = frame_header(body.size());
  std::string out(reinterpret_cast<const char*>(header.data()), header.size());
  out.append(body);
  return out;
}

CallLayout::CallLayout(std::vector<TensorSpec> inputs) : inputs_(std::move(inputs)) {
  for (const TensorSpec& s : inputs_) {
    offsets_.push_back(call_bytes_);
    call_bytes_ += s.byte_size();
  }
}

std::string_view CallLayout::slice(std::string_view call, size_t input) const {
  return call.substr(offsets_[input], inputs_[input].byte_size());
}

std::optional<std::string> check_call_length(const CallLayout& layout, uint64_t length) {
  if (length == layout.call_bytes()) return std::nullopt;
  return coded(kCallLength, fmt::format("a call is {} bytes, every input of one record in order ({}); this frame "
                                        "says {} bytes, so the connection is closed",
                                        layout.call_bytes(), describe(layout.inputs()), length));
}

std::optional<std::string> check_call_values(const CallLayout& layout, std::string_view call,
                                             std::optional<int64_t> at_limit) {
  for (size_t k = 0; k < layout.inputs().size(); ++k) {
    const TensorSpec& spec = layout.inputs()[k];
    std::string_view bytes = layout.slice(call, k);
    if (spec.dtype == graph::DType::boolean) {
      for (size_t i = 0; i < bytes.size(); ++i) {
        auto byte = static_cast<uint8_t>(bytes[i]);
        if (byte > 1) {
          return coded(kCallValue, fmt::format("input `{}` is bool, one byte 0 or 1 each; its element {} is {}",
                                               graph::shown_in_message(spec.name), i, byte));
        }
      }
    }
    if (at_limit && spec.name == "at") {
      int32_t at = 0;
      std::memcpy(&at, bytes.data(), sizeof at);
      if (at < 0 || at >= *at_limit) {
        return coded(kCallValue,
                     fmt::format("`at` is {}, outside the outputs' second axis, 0 to {}", at, *at_limit - 1));
      }
    }
  }
  return std::nullopt;
}

graph::Tensor stack_input(const CallLayout& layout, size_t input, std::span<const std::string_view> calls) {
  const TensorSpec& spec = layout.inputs()[input];
  graph::Shape shape = spec.shape;
  shape.insert(shape.begin(), static_cast<int64_t>(calls.size()));
  graph::Tensor out(spec.dtype, std::move(shape));
  size_t row = spec.byte_size();
  for (size_t i = 0; i < calls.size(); ++i) {
    std::memcpy(out.bytes().data() + i * row, layout.slice(calls[i], input).data(), row);
  }
  return out;
}

std::string encode_tensor(const graph::Tensor& value) {
  auto bytes = value.bytes();
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

std::optional<graph::Tensor> decode_tensor(const TensorSpec& spec, std::string_view bytes) {
  if (bytes.size() != spec.byte_size()) return std::nullopt;
  if (spec.dtype == graph::DType::boolean) {
    for (char c : bytes) {
      if (static_cast<uint8_t>(c) > 1) return std::nullopt;
    }
  }
  return graph::Tensor(spec.dtype, spec.shape,
                       std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
}

std::string ok_answer(std::span<const graph::Tensor> batched_outputs, size_t row) {
  size_t size = 1;
  for (const graph::Tensor& t : batched_outputs) size += t.bytes().size() / static_cast<size_t>(t.shape().at(0));
  std::string out;
  out.reserve(size);
  out.push_back(static_cast<char>(kStatusOk));
  for (const graph::Tensor& t : batched_outputs) {
    size_t width = t.bytes().size() / static_cast<size_t>(t.shape().at(0));
    out.append(reinterpret_cast<const char*>(t.bytes().data()) + row * width, width);
  }
  return out;
}

std::string error_answer(std::string_view text) {
  std::string out(1, static_cast<char>(kStatusError));
  out.append(text);
  return out;
}

}  // namespace sx::serve
