// Counts the heap allocations of a test binary, by replacing operator new:
// every allocation of the program goes through it. Include it in exactly one
// file of a binary (it defines the replacements). Every form of new and
// delete is replaced, aligned ones too, so that none pairs one of ours with
// the library's (AddressSanitizer checks the pairs).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>

namespace sx::testing {
inline std::atomic<int64_t> allocation_count{0};
// The allocations made so far by the whole program.
inline int64_t allocations() { return allocation_count.load(); }
}  // namespace sx::testing

// GCC sees the replaced delete's free() and, not knowing the replaced new
// is malloc, warns of a mismatch that is not there.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

namespace {
void* counted_malloc(size_t n) noexcept {
  sx::testing::allocation_count.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(n == 0 ? 1 : n);
}
void* counted_aligned(size_t n, std::align_val_t align) noexcept {
  sx::testing::allocation_count.fetch_add(1, std::memory_order_relaxed);
  auto a = static_cast<size_t>(align);
  return std::aligned_alloc(a, (std::max<size_t>(n, 1) + a - 1) / a * a);
}
}  // namespace

void* operator new(size_t n) {
  if (void* p = counted_malloc(n)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t n) {
  if (void* p = counted_malloc(n)) return p;
  throw std::bad_alloc();
}
void* operator new(size_t n, std::align_val_t a) {
  if (void* p = counted_aligned(n, a)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t n, std::align_val_t a) {
  if (void* p = counted_aligned(n, a)) return p;
  throw std::bad_alloc();
}
void* operator new(size_t n, const std::nothrow_t&) noexcept { return counted_malloc(n); }
void* operator new[](size_t n, const std::nothrow_t&) noexcept { return counted_malloc(n); }
void* operator new(size_t n, std::align_val_t a, const std::nothrow_t&) noexcept { return counted_aligned(n, a); }
void* operator new[](size_t n, std::align_val_t a, const std::nothrow_t&) noexcept { return counted_aligned(n, a); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
