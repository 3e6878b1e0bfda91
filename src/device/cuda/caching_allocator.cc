// The caching allocator: best fit among the cached blocks, else the raw memory.
#include "device/cuda/caching_allocator.h"

namespace sx::device::cuda {

void* CachingAllocator::allocate(size_t bytes) {
  size_t size = (bytes + kGranule - 1) / kGranule * kGranule;
  if (size == 0) size = kGranule;
  void* block = nullptr;
  if (auto fit = cached_.lower_bound(size); fit != cached_.end() && fit->first / 2 <= size) {
    size = fit->first;
    block = fit->second;
    cached_bytes_ -= size;
    cached_.erase(fit);
  } else {
    block = raw_->allocate(size);
    if (!block && !cached_.empty()) {
      release_cached();
      block = raw_->allocate(size);
    }
    if (!block) return nullptr;
    ++raw_allocations_;
  }
  in_use_.emplace(block, size);
  in_use_bytes_ += size;
  return block;
}

void CachingAllocator::free(void* block) {
  auto found = in_use_.find(block);
  if (found == in_use_.end()) return;
  cached_.emplace(found->second, block);
  cached_bytes_ += found->second;
  in_use_bytes_ -= found->second;
  in_use_.erase(found);
}

void CachingAllocator::release_cached() {
  for (auto& [size, block] : cached_) raw_->release(block);
  cached_.clear();
  cached_bytes_ = 0;
}

}  // namespace sx::device::cuda
