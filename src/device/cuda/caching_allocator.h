// A caching allocator, as PyTorch's CUDA allocator is: memory given back is kept for the
// next request of about its size instead of being returned to the driver, so that a
// program's steps, which ask for the same sizes run after run, stop calling cudaMalloc
// (slow, and synchronizing) after the first. It knows memory only through RawMemory, so
// that it serves device memory and pinned host memory alike, and runs in tests without
// a GPU. Every request is rounded up to a multiple of kGranule; a cached block serves a
// request of at least half its size. One stream uses the memory, so a block given back
// may serve the next request at once: the work that read it runs first.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <unordered_map>

namespace sx::device::cuda {

// Where the memory comes from: cudaMalloc, cudaMallocHost, or a test's fake.
class RawMemory {
 public:
  virtual ~RawMemory() = default;
  // Null when there is no memory to give.
  virtual void* allocate(size_t bytes) = 0;
  virtual void release(void* block) = 0;
};

class CachingAllocator {
 public:
  static constexpr size_t kGranule = 512;

  explicit CachingAllocator(std::unique_ptr<RawMemory> raw) : raw_(std::move(raw)) {}
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;
  ~CachingAllocator() { release_cached(); }

  // A block of at least `bytes` (at least one granule); null when the raw memory has none
  // even after the cached blocks are given back to it.
  void* allocate(size_t bytes);
  // Keeps a block allocate gave for a later request.
  void free(void* block);
  // Gives every cached block back to the raw memory.
  void release_cached();

  size_t bytes_in_use() const { return in_use_bytes_; }
  size_t bytes_cached() const { return cached_bytes_; }
  // The raw allocations made so far: constant once a program's runs repeat.
  size_t raw_allocations() const { return raw_allocations_; }

 private:
  std::unique_ptr<RawMemory> raw_;
  std::multimap<size_t, void*> cached_;       // free blocks by size
  std::unordered_map<void*, size_t> in_use_;  // blocks given out, with their size
  size_t in_use_bytes_ = 0, cached_bytes_ = 0, raw_allocations_ = 0;
};

}  // namespace sx::device::cuda
