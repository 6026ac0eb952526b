// The parent's side: a pool of pre-started worker processes (axqc-worker), each confined by its
// own sandbox (sandbox.h), that run one check at a time. A worker that dies, overruns its limits
// or reaches its recycling point is replaced by a background thread; the check it was running
// fails with the cause. Shared by axqc-server (--isolation process) and `axqc check --isolate`.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "axqc/checker.h"
#include "data_files.h"
#include "model_buffer.h"
#include "protocol.h"

namespace axqc::isolate {

// Why a check ended without an answer from its worker (the worker is gone or being replaced).
enum class Failure {
  kNone,
  kCrashed,   // killed by a signal (SIGSEGV, SIGABRT, SIGSYS from the seccomp filter, SIGKILL...)
  kMemory,    // an allocation failed under the address-space limit
  kCpuTime,   // the CPU-time limit (SIGXCPU)
  kDeadline,  // the wall-clock deadline passed (the worker was killed)
  kProtocol,  // the worker broke the protocol or could not be reached
};
const char* FailureName(Failure f);  // "crashed", "memory", "cpu_time", "deadline", "protocol"

// Why a worker was replaced (metrics): a failure above, recycling, or a worker that died while it
// had no check (kIdleExit: killed from outside, e.g. by the kernel's OOM killer).
enum class RestartCause { kFailure, kMaxChecks, kMaxRss, kIdleExit };
const char* RestartCauseName(RestartCause cause, Failure failure);  // "max_checks", "idle_exit"...

struct PoolOptions {
  std::string program;             // the worker executable (FindWorkerProgram)
  bool allow_read = false;         // path checks (the CLI); the server sends memfds only
  unsigned size = 1;               // worker processes
  std::uint64_t memory_limit = 0;  // hard address-space limit per worker; 0 = none
  // Per check: the soft address-space limit is the worker's start-up size + headroom +
  // factor x model bytes, at most memory_limit.
  std::uint64_t memory_headroom = 512ull << 20;
  unsigned memory_factor = 8;
  std::uint32_t cpu_seconds = 0;    // CPU-time limit per check; 0 = none
  double deadline_seconds = 0;      // wall-clock limit per check; 0 = 2 x cpu_seconds + 60 (a busy
                                    // machine gives a worker less than a core)
  unsigned max_checks = 0;          // recycle a worker after this many checks; 0 = never
  std::uint64_t max_rss_bytes = 0;  // recycle a worker whose RSS exceeds this; 0 = never
  double start_timeout_seconds = 30;
  // Called (on any thread, without the pool's lock) when a worker is replaced: `failure` is the
  // failure for kFailure; and after every check with the workers' RSS (sum, max).
  std::function<void(RestartCause cause, Failure failure)> on_restart;
  std::function<void(std::uint64_t rss_sum, std::uint64_t rss_max)> on_rss;
};

struct CheckInput {
  // The model: a sealed memfd-backed buffer is handed to the worker as it is (no copy); otherwise
  // `bytes` are copied into a sealed memfd.
  const ModelBuffer* model = nullptr;
  std::string_view bytes;  // when `model` is null
  std::string name;        // its name in the report
  // The SHA-256 (hex) of the model bytes as this process computed them, or empty: the worker then
  // skips hashing. Never a hash that came from a client.
  std::string sha256;
  std::string path;  // or, when not empty, a file the worker reads itself (allow_read)
  // With `model`/`bytes`: the model's external data files, handed to the worker as descriptors
  // (at most kMaxDataFiles). Null: none.
  const DataFileSet* data_files = nullptr;
  CheckOptions options;  // timings: filled from the worker's
  // Task::kRenderHtml: `model`/`bytes` hold a serialized axqc.v1.Report and the result's
  // `report` is its HTML report, laid out under the same limits (CPU, memory, deadline, sandbox)
  // as a check; a worker that fails on it is replaced like one that failed a check.
  Task task = Task::kCheck;
  HtmlSettings html;
};

struct CheckResult {
  ResultKind kind = ResultKind::kInternalError;  // kReport, kInputError, kInternalError
  std::string report;                            // serialized axqc.v1.Report (kReport)
  std::string error;                             // kInputError, kInternalError, failures
  Failure failure = Failure::kNone;              // set: the worker failed (kind is meaningless)
  // With `failure`: no worker took the check (every worker tried was gone before it received
  // the request, or none became available); the model was never looked at.
  bool not_started = false;
  std::uint64_t worker = 0;       // the serial number of the worker that ran the check (1, 2, ...)
  int signal = 0;                 // kCrashed: the signal
  double worker_cpu_seconds = 0;  // CPU time the worker spent (answered checks)
};

// "the checker crashed on this model (signal 11: SIGSEGV)" etc.
std::string FailureMessage(const CheckResult& r);

// The worker executable: $AXQC_WORKER when set, else axqc-worker next to the running program,
// else ../server/axqc-worker from it (build tree). Empty when none exists.
std::string FindWorkerProgram();

// Default hard address-space limit per worker: physical memory (or the cgroup v2 memory.max,
// when lower) / workers, at least 1 GiB.
std::uint64_t DefaultMemoryLimit(unsigned workers);

class WorkerPool {
 public:
  // Starts `size` workers and waits for them. Throws std::runtime_error when the first cannot
  // start (program missing, sandbox refused by the kernel...).
  explicit WorkerPool(PoolOptions options);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Runs one check on an idle worker (waits for one). Never throws for worker failures. A worker
  // that is gone before it takes the request (it died while idle) is replaced and the check runs
  // on another one: only a failure after the worker took the request is the check's.
  // Workers that die while idle are noticed (their control socket hangs up) and replaced at once.
  CheckResult Check(const CheckInput& input);

  // Process ids of the live workers (tests, logs).
  std::vector<pid_t> Pids() const;
  unsigned size() const { return options_.size; }

 private:
  struct Worker {
    pid_t pid = -1;
    int sock = -1;
    std::uint64_t serial = 0;
    unsigned checks = 0;
    std::uint64_t baseline_vm = 0;
  };
  enum class SlotState { kIdle, kBusy, kDead };
  struct Slot {
    SlotState state = SlotState::kDead;
    Worker worker;
    RestartCause cause = RestartCause::kFailure;
    Failure failure = Failure::kNone;
  };

  void Shutdown();
  Worker Spawn(std::string* error);
  void Respawner();
  static void Stop(Worker& w, bool kill_now);
  CheckResult Exchange(Worker& w, const CheckInput& input);
  void ReportRss();
  void Wake();  // the respawner: a slot died, became idle, or the pool stops
  // Respawner: waits until a slot dies or an idle worker's socket reports anything (an idle
  // worker never writes: it hung up or broke the protocol), then replaces that worker.
  void WatchIdle(std::unique_lock<std::mutex>& lock);

  const PoolOptions options_;
  mutable std::mutex mu_;
  std::condition_variable idle_cv_;  // a slot became idle
  int wake_fd_ = -1;                 // eventfd: wakes the respawner (Wake)
  std::vector<Slot> slots_;
  std::uint64_t next_serial_ = 1;
  std::string start_error_;
  bool stopping_ = false;
  std::thread respawner_;
};

}  // namespace axqc::isolate
