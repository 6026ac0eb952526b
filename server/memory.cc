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
  });
}

void ReturnFreeMemory() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

}  // namespace axqc::server
