// A buffer: memory a device owns, holding one value of a dtype and shape.
// Buffers are moved, never copied implicitly; the host reads one by
// downloading it (Device::download). A host device (cpu, reference) keeps a
// buffer's bytes in a host tensor, so uploading a tensor to it moves the
// tensor in without copying its bytes, and a reader that only looks may read
// them where they lie (host_tensor_if).
#pragma once

#include <memory>

#include "graph/primitive.h"
#include "graph/tensor.h"

namespace sx::device {

class Buffer {
 public:
  // What a device keeps behind a buffer.
  class Memory {
   public:
    virtual ~Memory() = default;
    // The tensor holding the bytes where they are host memory; null on a device that owns
    // its memory. (A virtual call, not a dynamic_cast: a step looks up every input's bytes.)
    virtual graph::Tensor* host_value() { return nullptr; }
  };

  Buffer() = default;
  Buffer(graph::ValueType type, std::unique_ptr<Memory> memory) : type_(std::move(type)), memory_(std::move(memory)) {}
  Buffer(Buffer&&) = default;
  Buffer& operator=(Buffer&&) = default;

  graph::DType dtype() const { return type_.dtype; }
  const graph::Shape& shape() const { return type_.shape; }
  const graph::ValueType& type() const { return type_; }
  size_t byte_size() const { return static_cast<size_t>(graph::numel(type_.shape)) * graph::dtype_size(type_.dtype); }
  // False for a moved-from or default-made buffer.
  bool holds_memory() const { return memory_ != nullptr; }
  Memory* memory() const { return memory_.get(); }

 private:
  graph::ValueType type_;
  std::unique_ptr<Memory> memory_;
};

// A host device's memory: a tensor.
class HostMemory : public Buffer::Memory {
 public:
  explicit HostMemory(graph::Tensor value) : value(std::move(value)) {}
  graph::Tensor* host_value() override { return &value; }
  graph::Tensor value;
};

// A buffer of host memory holding `value` (moved in).
Buffer host_buffer(graph::Tensor value);
// The tensor behind a host device's buffer; DeviceError when the buffer has
// no memory or lives on another kind of device.
const graph::Tensor& host_tensor(const Buffer& buffer);
graph::Tensor& host_tensor(Buffer& buffer);
// The tensor behind a buffer of host memory, or null: a reader that only looks, and is
// done before the buffer changes (a checkpoint's writer), may read a host device's bytes
// where they lie instead of downloading a copy.
const graph::Tensor* host_tensor_if(const Buffer& buffer);

}  // namespace sx::device
