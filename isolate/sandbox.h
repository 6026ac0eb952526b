// The worker's confinement, applied by the worker itself right after it starts (before any model
// is read): parent-death signal, no inherited descriptors, resource limits, no new privileges,
// then a seccomp filter. Linux only.
#pragma once

#include <cstdint>
#include <string>

namespace axqc::isolate {

// Kills the calling process when its parent dies; false when the parent already died (the
// worker must exit then).
bool DieWithParent(int expected_parent);

// Closes every descriptor from `first` upwards.
void CloseDescriptorsFrom(int first);

// Hard and soft address-space limit (0: none), no core files, few descriptors.
// Throws std::runtime_error.
void ApplyStartupLimits(std::uint64_t memory_limit_bytes);

// Soft address-space and CPU-time limits of the next check; 0 restores the start-up value
// (memory) or removes the limit (CPU). The CPU limit counts from the process's current usage.
void SetCheckLimits(std::uint64_t memory_bytes, std::uint32_t cpu_seconds);

// PR_SET_NO_NEW_PRIVS, then the seccomp filter: the system calls a check needs (memory, reading
// the descriptors it was given, the control socket, memfds for the report, clocks, signals to
// itself) and nothing else: no socket creation, connect, exec, fork or thread creation, ptrace,
// file creation or writing by name. Any other call kills the process (SIGSYS). With
// `allow_read_only_open`, open/openat succeed for read-only access (a model file and its
// external data named by path); otherwise they fail with EACCES. Throws std::runtime_error.
void ApplySeccomp(bool allow_read_only_open);

// The process's address-space size (VmSize) in bytes, from /proc/self/status; 0 when unknown.
// Call before ApplySeccomp when opens are refused.
std::uint64_t CurrentVmBytes();

}  // namespace axqc::isolate
