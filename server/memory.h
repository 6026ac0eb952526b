// Giving memory back to the operating system. glibc's malloc keeps freed memory of its heaps and
// per-thread arenas mapped, so after a big check (a parsed model is 2-3x its file size, in many
// allocations) the server's resident size would stay near its peak for good. Two measures:
//   * ConfigureAllocator: a fixed mmap threshold (8 MiB), so every big buffer (model bytes, tensor
//     data, upload buffers) is its own mapping and is unmapped when freed. glibc's default raises
//     the threshold after the first big free, which moves later big buffers into the heaps.
//     A fixed mmap threshold also fixes glibc's trim threshold, which would then stay at its
//     128 KiB default: every free at the top of an arena would give its pages back (madvise) and
//     the next allocation fault them in again; gRPC frees and allocates receive buffers all the
//     time, and a 65 MB upload took up to 16k page faults and 3-6x the CPU. So the trim threshold
//     is fixed too (kTrimThresholdBytes): free memory at the top of an arena is kept up to that
//     size for the next request;
//   * ReturnFreeMemory after every check of a model of at least kTrimAfterBytes: malloc_trim(0)
//     releases the free pages of every arena (whatever the trim threshold).
#pragma once

#include <cstdint>

namespace axqc::server {

inline constexpr std::uint64_t kTrimAfterBytes = 4ull << 20;
// Free memory at the top of an arena is given back beyond this size (and by ReturnFreeMemory).
inline constexpr std::uint64_t kTrimThresholdBytes = 64ull << 20;

// Idempotent; call before the first big allocation.
void ConfigureAllocator();
void ReturnFreeMemory();

}  // namespace axqc::server
