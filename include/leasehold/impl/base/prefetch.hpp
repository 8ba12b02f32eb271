#pragma once
// Starts loading memory into the cache ahead of use. With 100,000 groups
// each group's state is a cache miss; asking for a whole batch's groups at
// once overlaps those misses instead of waiting for each in turn.

#include <cstddef>

namespace leasehold::detail {

inline void prefetch(const void* at, std::size_t bytes = 64) noexcept {
#if defined(__GNUC__)
  const char* p = static_cast<const char*>(at);
  for (std::size_t offset = 0; offset < bytes; offset += 64) __builtin_prefetch(p + offset);
#else
  (void)at;
  (void)bytes;
#endif
}

}  // namespace leasehold::detail
