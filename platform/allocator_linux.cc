// Linux part of platform/allocator.h.
#include "platform/allocator.h"

// A C library header first: it is what defines __GLIBC__ (tested below), so
// without it the glibc calls would silently compile away.
#include <cstdlib>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace soak {

namespace {
constexpr int kMmapThresholdBytes = 256 * 1024;  // a 64K-token prompt is ~250 KB: at this size and above, mmap
constexpr int kTrimThresholdBytes = 512 * 1024;  // free heap top above this goes back at once
constexpr int kArenaMax = 2;                     // the loop thread and the pool threads share two
}  // namespace

void return_large_blocks_to_the_system() {
#if defined(__GLIBC__)
  // Setting M_MMAP_THRESHOLD also turns off glibc's dynamic raising of it.
  mallopt(M_MMAP_THRESHOLD, kMmapThresholdBytes);
  mallopt(M_TRIM_THRESHOLD, kTrimThresholdBytes);
  mallopt(M_ARENA_MAX, kArenaMax);
#endif
}

void trim_free_memory() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

}  // namespace soak
