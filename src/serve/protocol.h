// The socket protocol of `sexpgpu serve` (docs/serving.md), byte for byte.
//
// Every message either way is a frame: its length as a little-endian u64, then that many
// bytes. On connecting, the server sends the handshake, JSON naming the model's inputs and
// outputs. Each call is one frame of every input of one record in order; each answer is a
// status byte, 0 then every output in order, or 1 then UTF-8 error text.
//
// A tensor travels as its elements in row-major order, each little-endian at its dtype's
// width (f32, i32: 4; f64, i64: 8; bf16: 2, the high half of the f32 rounded to nearest
// even; bool: 1, 0 or 1), with no header: the shapes are fixed, so every call of a model
// has one length.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "graph/dtype.h"
#include "graph/shape.h"
#include "graph/tensor.h"

namespace sx::serve {

// The handshake's own version: a client that reads a newer one knows it may not
// understand the rest.
inline constexpr int kProtocolVersion = 1;
inline constexpr size_t kFrameHeaderBytes = 8;
inline constexpr uint8_t kStatusOk = 0;
inline constexpr uint8_t kStatusError = 1;

// One input or output of a call: its name, shape and dtype.
struct TensorSpec {
  std::string name;
  graph::Shape shape;
  graph::DType dtype = graph::DType::f32;

  size_t byte_size() const;
  bool operator==(const TensorSpec&) const = default;
};

// The handshake: what the server serves, as the flags left it.
struct Handshake {
  std::string checkpoint;
  int64_t step = 0;
  std::string slug;
  std::string precision;
  std::vector<TensorSpec> inputs, outputs;
};

std::string handshake_json(const Handshake& about);

// The 8 bytes that open a frame of `length` bytes, and the length they say.
std::array<uint8_t, kFrameHeaderBytes> frame_header(uint64_t length);
uint64_t frame_length(std::span<const uint8_t, kFrameHeaderBytes> header);
// A whole frame: header then body.
std::string frame(std::string_view body);

// How a call frame lays out a model's inputs: each input's offset and size, and the
// call's whole length.
class CallLayout {
 public:
  explicit CallLayout(std::vector<TensorSpec> inputs);
  const std::vector<TensorSpec>& inputs() const { return inputs_; }
  size_t call_bytes() const { return call_bytes_; }
  size_t offset(size_t input) const { return offsets_[input]; }
  // The bytes of input `input` within a call's body.
  std::string_view slice(std::string_view call, size_t input) const;

 private:
  std::vector<TensorSpec> inputs_;
  std::vector<size_t> offsets_;
  size_t call_bytes_ = 0;
};

// Why a call frame of `length` bytes is refused (a call has exactly call_bytes()), as
// the error text of an answer; nullopt when the length is right.
std::optional<std::string> check_call_length(const CallLayout& layout, uint64_t length);
// Why a call's values are refused: a bool byte other than 0 or 1, or an `at` (the input of
// that name, when `at_limit` is given) outside [0, at_limit). nullopt when none is.
std::optional<std::string> check_call_values(const CallLayout& layout, std::string_view call,
                                             std::optional<int64_t> at_limit);

// The calls' input `input` stacked into one tensor of shape [calls, ...]: the rows in the
// order of `calls`. The wire's bytes are the tensor's own (row-major, little-endian, bool
// one byte), so stacking is copying.
graph::Tensor stack_input(const CallLayout& layout, size_t input, std::span<const std::string_view> calls);

// One tensor's encoding, and a tensor from its encoding (nullopt when `bytes` is not
// `spec.byte_size()` long or holds a bool byte other than 0 or 1).
std::string encode_tensor(const graph::Tensor& value);
std::optional<graph::Tensor> decode_tensor(const TensorSpec& spec, std::string_view bytes);

// An answer's body: status 0, then row `row` of each batched output in order (each of
// shape [rows, ...the output's shape]).
std::string ok_answer(std::span<const graph::Tensor> batched_outputs, size_t row);
// An answer's body: status 1, then the text.
std::string error_answer(std::string_view text);

}  // namespace sx::serve
