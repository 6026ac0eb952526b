#include "memory.h"

#include <malloc.h>

#include <mutex>

namespace axqc::server {

void ConfigureAllocator() {
  static std::once_flag once;
  std::call_once(once, [] {
#ifdef M_MMAP_THRESHOLD
    mallopt(M_MMAP_THRESHOLD, 8 << 20);
#endif
#ifdef M_TRIM_THRESHOLD
    // Setting the mmap threshold switches off glibc's dynamic thresholds, which would otherwise
    // raise the trim threshold with it; left at its 128 KiB default, every free at the top of an
    // arena gives the pages back (madvise) and the next gRPC receive buffer faults them in again.
    mallopt(M_TRIM_THRESHOLD, static_cast<int>(kTrimThresholdBytes));
#endif
  });
}

void ReturnFreeMemory() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

}  // namespace axqc::server
