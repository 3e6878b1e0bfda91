// A tensor in host memory: dtype, shape and the elements' bytes in row-major
// order. Constants hold one; reference kernels take and return them; devices
// use them as buffers. Also the dtype dispatch that kernels use to run one loop per
// element type (bf16's storage type is graph/bf16.h's).
#pragma once

#include <cstdint>
#include <cstring>
#include <new>
#include <span>
#include <vector>

#include "graph/bf16.h"
#include "graph/dtype.h"
#include "graph/shape.h"

namespace sx::graph {

// Memory for tensors and the cpu device's arena. On whole cache lines, so that a
// tensor's rows start where lines do when their length allows: the cpu device's matrix
// products read a weight in 128-byte parts of its rows, two lines each rather than
// three. From kHugePage bytes on, on a kHugePage boundary, and Linux asked to back it
// with transparent huge pages (madvise, which systems that offer them only on request
// need): one TLB entry then covers 512 of the 4 KiB pages that the products' packing,
// the fused programs and the optimizer's updates walk through. The pages are backed as
// they are touched, so the rounding costs no memory.
inline constexpr size_t kHugePage = size_t{2} << 20;
void* allocate_lines(size_t bytes);
void free_lines(void* p, size_t bytes);

template <class T>
struct CacheLineAllocator {
  using value_type = T;
  CacheLineAllocator() = default;
  template <class U>
  explicit CacheLineAllocator(const CacheLineAllocator<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(allocate_lines(n * sizeof(T))); }
  void deallocate(T* p, size_t n) { free_lines(p, n * sizeof(T)); }
  bool operator==(const CacheLineAllocator&) const = default;
};

// The bytes of a `dtype` tensor of `shape` (checked_bytes in shape.h).
inline int64_t checked_bytes(const Shape& shape, DType dtype) {
  return checked_bytes(shape, static_cast<int64_t>(dtype_size(dtype)));
}

class Tensor {
 public:
  Tensor() = default;
  // Zero-filled; a ShapeError for a shape checked_bytes refuses, as in every constructor.
  Tensor(DType dtype, Shape shape);
  // A copy of the bytes; throws GraphError when their count does not fit.
  Tensor(DType dtype, Shape shape, std::span<const uint8_t> bytes);
  // Each value converted to the dtype as `cast` converts (prims::convert): rounded for
  // bf16; for integers truncated toward zero and saturated at the dtype's limits, NaN
  // giving 0; for bool, anything but 0 is true.
  static Tensor from_doubles(DType dtype, Shape shape, std::span<const double> values);
  static Tensor scalar(DType dtype, double value);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t numel() const { return graph::numel(shape_); }
  std::span<const uint8_t> bytes() const { return bytes_; }
  std::span<uint8_t> bytes() { return bytes_; }

  template <class S>
  S* data() {
    return reinterpret_cast<S*>(bytes_.data());
  }
  template <class S>
  const S* data() const {
    return reinterpret_cast<const S*>(bytes_.data());
  }

  // Element i converted to double; all elements the same way.
  double value(int64_t i) const;
  std::vector<double> to_doubles() const;
  // Element i set to `value` converted as from_doubles converts.
  void set_value(int64_t i, double value);

  bool operator==(const Tensor& other) const = default;

 private:
  DType dtype_ = DType::f32;
  Shape shape_;
  std::vector<uint8_t, CacheLineAllocator<uint8_t>> bytes_;
};

// The storage type of a dtype's elements and the type its arithmetic runs in
// (bf16 is stored as Bf16 and computed in float).
template <class Storage, class Compute>
struct ElementTypes {
  using storage = Storage;
  using compute = Compute;
};

// Calls fn(ElementTypes<S, C>{}) for the dtype's storage and compute types.
template <class Fn>
decltype(auto) visit_dtype(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::f32: return fn(ElementTypes<float, float>{});
    case DType::bf16: return fn(ElementTypes<Bf16, float>{});
    case DType::f64: return fn(ElementTypes<double, double>{});
    case DType::i32: return fn(ElementTypes<int32_t, int32_t>{});
    case DType::i64: return fn(ElementTypes<int64_t, int64_t>{});
    case DType::boolean: return fn(ElementTypes<bool, bool>{});
    case DType::u8: return fn(ElementTypes<uint8_t, uint8_t>{});
    case DType::u16: return fn(ElementTypes<uint16_t, uint16_t>{});
  }
  return fn(ElementTypes<float, float>{});
}

}  // namespace sx::graph
