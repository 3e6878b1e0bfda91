// Host tensors.
#include "graph/tensor.h"

#include <fmt/format.h>
#include <sys/mman.h>

#include <bit>
#include <cmath>

#include "graph/errors.h"
#include "graph/prims/scalar.h"

namespace sx::graph {

namespace {

std::align_val_t alignment_of(size_t bytes) { return std::align_val_t{bytes >= kHugePage ? kHugePage : 64}; }

}  // namespace

void* allocate_lines(size_t bytes) {
  void* p = ::operator new(bytes, alignment_of(bytes));
#ifdef MADV_HUGEPAGE
  // Advice only: where the system has no huge pages to give, the pages stay small.
  if (bytes >= kHugePage) madvise(p, bytes, MADV_HUGEPAGE);
#endif
  return p;
}

void free_lines(void* p, size_t bytes) { ::operator delete(p, alignment_of(bytes)); }

Tensor::Tensor(DType dtype, Shape shape)
    : dtype_(dtype), shape_(std::move(shape)), bytes_(static_cast<size_t>(checked_bytes(shape_, dtype))) {}

Tensor::Tensor(DType dtype, Shape shape, std::span<const uint8_t> bytes) : dtype_(dtype), shape_(std::move(shape)) {
  auto expected = static_cast<size_t>(checked_bytes(shape_, dtype));
  if (bytes.size() != expected) {
    throw GraphError(fmt::format("tensor: a {} {} tensor needs {} bytes, got {}", dtype_name(dtype), shape_str(shape_),
                                 expected, bytes.size()));
  }
  bytes_.assign(bytes.begin(), bytes.end());
}

Tensor Tensor::from_doubles(DType dtype, Shape shape, std::span<const double> values) {
  Tensor t(dtype, std::move(shape));
  if (static_cast<int64_t>(values.size()) != t.numel()) {
    throw GraphError(
        fmt::format("tensor: shape {} needs {} values, got {}", shape_str(t.shape()), t.numel(), values.size()));
  }
  for (size_t i = 0; i < values.size(); ++i) t.set_value(static_cast<int64_t>(i), values[i]);
  return t;
}

Tensor Tensor::scalar(DType dtype, double value) {
  Tensor t(dtype, {});
  t.set_value(0, value);
  return t;
}

double Tensor::value(int64_t i) const {
  return visit_dtype(dtype_, [&](auto types) {
    using S = typename decltype(types)::storage;
    using C = typename decltype(types)::compute;
    return static_cast<double>(static_cast<C>(data<S>()[i]));
  });
}

std::vector<double> Tensor::to_doubles() const {
  std::vector<double> out(static_cast<size_t>(numel()));
  for (int64_t i = 0; i < numel(); ++i) out[static_cast<size_t>(i)] = value(i);
  return out;
}

void Tensor::set_value(int64_t i, double value) {
  visit_dtype(dtype_, [&](auto types) {
    using S = typename decltype(types)::storage;
    using C = typename decltype(types)::compute;
    // The cast primitive's conversion: a float saturates to an integer dtype, NaN giving 0.
    data<S>()[i] = S(prims::convert<C>(value));
  });
}

}  // namespace sx::graph
