#include "sandbox.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <seccomp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace axqc::isolate {

namespace {

rlim_t g_startup_memory = RLIM_INFINITY;

[[noreturn]] void Fail(const std::string& what, int err) {
  throw std::runtime_error(what + ": " + std::strerror(err));
}

}  // namespace

bool DieWithParent(int expected_parent) {
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) return false;
  // The parent may have died between fork and prctl: then we were reparented already.
  return ::getppid() == expected_parent;
}

void CloseDescriptorsFrom(int first) {
  if (::syscall(SYS_close_range, static_cast<unsigned>(first), ~0U, 0) == 0) return;
  for (int fd = first; fd < 65536; ++fd) ::close(fd);
}

void ApplyStartupLimits(std::uint64_t memory_limit_bytes) {
  const rlimit no_core{0, 0};
  if (::setrlimit(RLIMIT_CORE, &no_core) != 0) Fail("setrlimit(RLIMIT_CORE)", errno);
  const rlimit fds{64, 64};
  if (::setrlimit(RLIMIT_NOFILE, &fds) != 0) Fail("setrlimit(RLIMIT_NOFILE)", errno);
  if (memory_limit_bytes != 0) {
    const rlimit as{memory_limit_bytes, memory_limit_bytes};
    if (::setrlimit(RLIMIT_AS, &as) != 0) Fail("setrlimit(RLIMIT_AS)", errno);
    g_startup_memory = memory_limit_bytes;
  }
}

void SetCheckLimits(std::uint64_t memory_bytes, std::uint32_t cpu_seconds) {
  rlimit as{};
  ::getrlimit(RLIMIT_AS, &as);
  as.rlim_cur = memory_bytes == 0 ? g_startup_memory : std::min<rlim_t>(memory_bytes, as.rlim_max);
  ::setrlimit(RLIMIT_AS, &as);
  rlimit cpu{RLIM_INFINITY, RLIM_INFINITY};
  if (cpu_seconds != 0) {
    rusage ru{};
    ::getrusage(RUSAGE_SELF, &ru);
    const double used = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                        static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
    // SIGXCPU at the soft limit (whole seconds); the hard limit stays unlimited so that the next
    // check can move the soft one on. The parent's wall-clock deadline backs it up.
    cpu.rlim_cur = static_cast<rlim_t>(std::ceil(used)) + cpu_seconds;
  }
  ::getrlimit(RLIMIT_CPU, &as);
  cpu.rlim_max = as.rlim_max;
  if (cpu.rlim_cur > cpu.rlim_max) cpu.rlim_cur = cpu.rlim_max;
  ::setrlimit(RLIMIT_CPU, &cpu);
}

std::uint64_t CurrentVmBytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmSize:", 0) == 0) return std::stoull(line.substr(7)) * 1024;
  }
  return 0;
}

void ApplySeccomp(bool allow_read_only_open) {
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) Fail("prctl(PR_SET_NO_NEW_PRIVS)", errno);
  scmp_filter_ctx ctx = ::seccomp_init(SCMP_ACT_KILL_PROCESS);
  if (ctx == nullptr) throw std::runtime_error("seccomp_init failed");
  struct Guard {
    scmp_filter_ctx c;
    ~Guard() { ::seccomp_release(c); }
  } guard{ctx};
  auto allow = [&](int nr) {
    const int rc = ::seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);
    if (rc != 0) Fail("seccomp_rule_add", -rc);
  };
  // Memory.
  for (int nr : {SCMP_SYS(brk), SCMP_SYS(mmap), SCMP_SYS(munmap), SCMP_SYS(mremap),
                 SCMP_SYS(mprotect), SCMP_SYS(madvise)}) {
    allow(nr);
  }
  // Descriptors it holds: the control socket, the model, the report memfd.
  for (int nr :
       {SCMP_SYS(read), SCMP_SYS(pread64), SCMP_SYS(readv), SCMP_SYS(write), SCMP_SYS(writev),
        SCMP_SYS(pwrite64), SCMP_SYS(lseek), SCMP_SYS(close), SCMP_SYS(fstat), SCMP_SYS(newfstatat),
        SCMP_SYS(statx), SCMP_SYS(fcntl), SCMP_SYS(ftruncate), SCMP_SYS(memfd_create),
        SCMP_SYS(recvmsg), SCMP_SYS(sendmsg), SCMP_SYS(poll), SCMP_SYS(ppoll)}) {
    allow(nr);
  }
  // Process housekeeping: clocks, futexes (locks), signals to itself (abort), limits of itself.
  for (int nr : {SCMP_SYS(exit),          SCMP_SYS(exit_group),
                 SCMP_SYS(rt_sigreturn),  SCMP_SYS(rt_sigprocmask),
                 SCMP_SYS(rt_sigaction),  SCMP_SYS(futex),
                 SCMP_SYS(clock_gettime), SCMP_SYS(clock_getres),
                 SCMP_SYS(gettimeofday),  SCMP_SYS(clock_nanosleep),
                 SCMP_SYS(nanosleep),     SCMP_SYS(getrusage),
                 SCMP_SYS(getpid),        SCMP_SYS(gettid),
                 SCMP_SYS(getppid),       SCMP_SYS(getrandom),
                 SCMP_SYS(sched_yield),   SCMP_SYS(sched_getaffinity),
                 SCMP_SYS(rseq),          SCMP_SYS(set_robust_list),
                 SCMP_SYS(getrlimit),     SCMP_SYS(sysinfo),
                 SCMP_SYS(uname)}) {
    allow(nr);
  }
  // Signals only to itself (abort() raises SIGABRT with tgkill).
  auto add = [&](int nr, std::initializer_list<scmp_arg_cmp> args) {
    const int rc = ::seccomp_rule_add_array(ctx, SCMP_ACT_ALLOW, nr,
                                            static_cast<unsigned>(args.size()), args.begin());
    if (rc != 0) Fail("seccomp_rule_add", -rc);
  };
  const auto self = static_cast<scmp_datum_t>(::getpid());
  add(SCMP_SYS(tgkill), {SCMP_A0(SCMP_CMP_EQ, self)});
  add(SCMP_SYS(kill), {SCMP_A0(SCMP_CMP_EQ, self)});
  // Its own limits only (pid 0 = itself); setrlimit can only lower hard limits.
  add(SCMP_SYS(prlimit64), {SCMP_A0(SCMP_CMP_EQ, 0)});
  allow(SCMP_SYS(setrlimit));
  // Opening by name: read-only (no O_WRONLY/O_RDWR, O_CREAT, O_TRUNC, O_TMPFILE), or refused.
  const scmp_datum_t write_bits = O_ACCMODE | O_CREAT | O_TRUNC | O_APPEND | __O_TMPFILE;
  if (allow_read_only_open) {
    add(SCMP_SYS(openat), {SCMP_A2(SCMP_CMP_MASKED_EQ, write_bits, 0)});
    add(SCMP_SYS(open), {SCMP_A1(SCMP_CMP_MASKED_EQ, write_bits, 0)});
    for (int nr : {SCMP_SYS(readlink), SCMP_SYS(readlinkat), SCMP_SYS(getcwd), SCMP_SYS(stat),
                   SCMP_SYS(lstat), SCMP_SYS(access), SCMP_SYS(faccessat), SCMP_SYS(faccessat2),
                   SCMP_SYS(getdents64)}) {
      allow(nr);
    }
  } else {
    for (int nr : {SCMP_SYS(openat), SCMP_SYS(open)}) {
      const int rc = ::seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), nr, 0);
      if (rc != 0) Fail("seccomp_rule_add", -rc);
    }
  }
  const int rc = ::seccomp_load(ctx);
  if (rc != 0) Fail("seccomp_load", -rc);
}

}  // namespace axqc::isolate
