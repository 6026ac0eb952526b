#include "worker_pool.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "axqc/pulsar2.h"

namespace axqc::isolate {

namespace {

using Clock = std::chrono::steady_clock;

// Waits for `pid` to exit, killing it first when `kill_now` or when it is still alive after
// `grace`. Returns the wait status (-1 when it cannot be reaped).
int Reap(pid_t pid, bool kill_now, std::chrono::milliseconds grace) {
  if (pid <= 0) return -1;
  if (kill_now) ::kill(pid, SIGKILL);
  const auto end = Clock::now() + grace;
  int status = 0;
  for (;;) {
    const pid_t r = ::waitpid(pid, &status, kill_now ? 0 : WNOHANG);
    if (r == pid) return status;
    if (r < 0 && errno != EINTR) return -1;
    if (r == 0) {
      if (Clock::now() >= end) {
        ::kill(pid, SIGKILL);
        kill_now = true;
        continue;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
}

std::uint64_t ResidentBytes(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/statm");
  std::uint64_t size = 0;
  std::uint64_t resident = 0;
  if (!(in >> size >> resident)) return 0;
  return resident * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
}

std::string SignalName(int sig) {
  const char* abbrev = ::sigabbrev_np(sig);
  return abbrev != nullptr ? std::string("SIG") + abbrev : "unknown";
}

}  // namespace

const char* FailureName(Failure f) {
  switch (f) {
    case Failure::kNone:
      return "none";
    case Failure::kCrashed:
      return "crashed";
    case Failure::kMemory:
      return "memory";
    case Failure::kCpuTime:
      return "cpu_time";
    case Failure::kDeadline:
      return "deadline";
    case Failure::kProtocol:
      return "protocol";
  }
  return "unknown";
}

const char* RestartCauseName(RestartCause cause, Failure failure) {
  switch (cause) {
    case RestartCause::kMaxChecks:
      return "max_checks";
    case RestartCause::kMaxRss:
      return "max_rss";
    case RestartCause::kIdleExit:
      return "idle_exit";
    case RestartCause::kFailure:
      break;
  }
  return FailureName(failure);
}

namespace {

// How a reaped worker ended, for messages: "signal 9: SIGKILL", "exit status 0".
std::string ExitDescription(int status) {
  if (status >= 0 && WIFSIGNALED(status)) {
    return "signal " + std::to_string(WTERMSIG(status)) + ": " + SignalName(WTERMSIG(status));
  }
  if (status >= 0 && WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  return "not reaped";
}

}  // namespace

std::string FailureMessage(const CheckResult& r) {
  switch (r.failure) {
    case Failure::kCrashed:
      return "the checker crashed on this model (signal " + std::to_string(r.signal) + ": " +
             SignalName(r.signal) +
             (r.signal == SIGSYS ? ", a system call the sandbox refuses" : "") + ")";
    case Failure::kMemory:
      return "the check of this model ran out of memory (the worker's address-space limit, "
             "worker-memory-limit)";
    case Failure::kCpuTime:
      return "the check of this model used up its CPU time (worker-cpu-seconds)";
    case Failure::kDeadline:
      return "the check of this model did not finish in time (the worker was stopped)";
    case Failure::kProtocol:
      return "the checker's worker process failed: " + r.error;
    case Failure::kNone:
      break;
  }
  return r.error;
}

std::string FindWorkerProgram() {
  if (const char* env = std::getenv("AXQC_WORKER_PROGRAM"); env != nullptr && *env != '\0') {
    return env;
  }
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  const auto dir = exe.parent_path();
  for (const auto& candidate :
       {dir / "axqc-worker", dir.parent_path() / "server" / "axqc-worker"}) {
    if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return "";
}

std::uint64_t DefaultMemoryLimit(unsigned workers) {
  const auto pages = static_cast<std::uint64_t>(std::max(0L, ::sysconf(_SC_PHYS_PAGES)));
  const auto page = static_cast<std::uint64_t>(std::max(0L, ::sysconf(_SC_PAGESIZE)));
  std::uint64_t memory = pages * page;
  // In a container the cgroup's limit (cgroup v2) is the machine.
  std::ifstream cgroup("/sys/fs/cgroup/memory.max");
  std::uint64_t cgroup_max = 0;
  if (cgroup >> cgroup_max && cgroup_max > 0) memory = std::min(memory, cgroup_max);
  const std::uint64_t per_worker = memory / std::max(1u, workers);
  return std::max<std::uint64_t>(per_worker, 1ull << 30);
}

WorkerPool::WorkerPool(PoolOptions options) : options_(std::move(options)) {
  if (options_.program.empty()) {
    throw std::runtime_error(
        "the worker program axqc-worker was not found next to this program (set "
        "AXQC_WORKER_PROGRAM or worker-program)");
  }
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) throw std::runtime_error(std::string("eventfd: ") + std::strerror(errno));
  slots_.resize(std::max(1u, options_.size));
  respawner_ = std::thread([this] { Respawner(); });
  std::unique_lock<std::mutex> lock(mu_);
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(options_.start_timeout_seconds));
  const bool started = idle_cv_.wait_until(lock, deadline, [&] {
    if (!start_error_.empty()) return true;
    return std::all_of(slots_.begin(), slots_.end(),
                       [](const Slot& s) { return s.state == SlotState::kIdle; });
  });
  if (start_error_.empty() && started) return;
  const std::string error =
      start_error_.empty() ? "the worker processes did not start in time" : start_error_;
  lock.unlock();
  Shutdown();
  ::close(wake_fd_);
  throw std::runtime_error(error);
}

WorkerPool::~WorkerPool() {
  Shutdown();
  ::close(wake_fd_);
}

void WorkerPool::Wake() {
  const std::uint64_t one = 1;
  // EAGAIN: the counter is already non-zero, the respawner wakes anyway.
  while (::write(wake_fd_, &one, sizeof one) < 0 && errno == EINTR) {
  }
}

void WorkerPool::Shutdown() {
  std::vector<Worker> live;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    stopping_ = true;
    for (auto& s : slots_) {
      if (s.state == SlotState::kIdle) live.push_back(s.worker);
      s.state = SlotState::kDead;
      s.worker = Worker{};
    }
  }
  // Workers first (they die with the respawner thread that started them), then the respawner.
  for (auto& w : live) Stop(w, false);
  Wake();
  idle_cv_.notify_all();
  if (respawner_.joinable()) respawner_.join();
}

WorkerPool::Worker WorkerPool::Spawn(std::string* error) {
  Worker w;
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    *error = std::string("socketpair: ") + std::strerror(errno);
    return w;
  }
  std::vector<std::string> args = {options_.program, "--fd=3",
                                   "--parent=" + std::to_string(::getpid()),
                                   "--memory-limit=" + std::to_string(options_.memory_limit)};
  if (options_.allow_read) args.emplace_back("--allow-read");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  char* envp[] = {nullptr};

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, sv[1], 3);
  posix_spawn_file_actions_addclosefrom_np(&actions, 4);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  sigset_t all;
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, options_.program.c_str(), &actions, &attr, argv.data(), envp);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(sv[1]);
  if (rc != 0) {
    ::close(sv[0]);
    *error = "cannot start " + options_.program + ": " + std::strerror(rc);
    return w;
  }
  std::string payload;
  int fd = -1;
  const auto st =
      RecvMessage(sv[0], &payload, &fd, static_cast<int>(options_.start_timeout_seconds * 1000));
  if (fd >= 0) ::close(fd);
  std::optional<ReadyMsg> ready;
  if (st == RecvStatus::kMessage) ready = DecodeReady(payload);
  if (!ready || ready->version != kProtocolVersion) {
    ::close(sv[0]);
    const int status = Reap(pid, st == RecvStatus::kTimeout, std::chrono::seconds(2));
    if (auto failed = st == RecvStatus::kMessage ? DecodeResult(payload) : std::nullopt) {
      *error = failed->error;
    } else if (status >= 0 && WIFSIGNALED(status)) {
      *error = options_.program + " died at start-up (signal " + SignalName(WTERMSIG(status)) + ")";
    } else {
      *error = options_.program + " did not start (exit status " +
               std::to_string(status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1) + ")";
    }
    return w;
  }
  w.pid = pid;
  w.sock = sv[0];
  w.baseline_vm = ready->baseline_vm_bytes;
  std::lock_guard<std::mutex> lock(mu_);
  w.serial = next_serial_++;
  return w;
}

void WorkerPool::Respawner() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    auto dead = std::find_if(slots_.begin(), slots_.end(),
                             [](const Slot& s) { return s.state == SlotState::kDead; });
    if (dead == slots_.end()) {
      WatchIdle(lock);
      continue;
    }
    const std::size_t index = static_cast<std::size_t>(dead - slots_.begin());
    lock.unlock();
    std::string error;
    Worker w = Spawn(&error);
    lock.lock();
    Slot& slot = slots_[index];
    if (stopping_) {
      lock.unlock();
      Stop(w, false);
      lock.lock();
      break;
    }
    if (w.pid > 0) {
      slot.worker = w;
      slot.state = SlotState::kIdle;
      idle_cv_.notify_all();
    } else {
      start_error_ = error;
      idle_cv_.notify_all();
      // Back off before the next attempt (a missing or broken worker program).
      lock.unlock();
      pollfd p{wake_fd_, POLLIN, 0};
      (void)::poll(&p, 1, 1000);
      lock.lock();
    }
  }
}

void WorkerPool::WatchIdle(std::unique_lock<std::mutex>& lock) {
  struct Watched {
    std::size_t slot;
    pid_t pid;
  };
  std::vector<pollfd> fds{{wake_fd_, POLLIN, 0}};
  std::vector<Watched> watched;
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i].state != SlotState::kIdle) continue;
    fds.push_back({slots_[i].worker.sock, POLLIN | POLLRDHUP, 0});
    watched.push_back({i, slots_[i].worker.pid});
  }
  lock.unlock();
  int rc = 0;
  do {
    rc = ::poll(fds.data(), fds.size(), -1);
  } while (rc < 0 && errno == EINTR);
  std::uint64_t count = 0;
  while (::read(wake_fd_, &count, sizeof count) < 0 && errno == EINTR) {
  }
  lock.lock();
  std::vector<Worker> gone;
  for (std::size_t k = 1; k < fds.size(); ++k) {
    if (fds[k].revents == 0) continue;
    Slot& slot = slots_[watched[k - 1].slot];
    // The slot may have run a check (its answer woke this poll) and be idle again: only a worker
    // that is idle now, and whose socket reports something now, is gone.
    if (stopping_ || slot.state != SlotState::kIdle || slot.worker.pid != watched[k - 1].pid ||
        slot.worker.sock != fds[k].fd) {
      continue;
    }
    pollfd now{slot.worker.sock, POLLIN | POLLRDHUP, 0};
    if (::poll(&now, 1, 0) <= 0 || now.revents == 0) continue;
    gone.push_back(slot.worker);
    slot.state = SlotState::kDead;
    slot.worker = Worker{};
    slot.cause = RestartCause::kIdleExit;
    slot.failure = Failure::kNone;
  }
  if (gone.empty()) return;
  lock.unlock();
  for (auto& w : gone) {
    Stop(w, true);
    if (options_.on_restart) options_.on_restart(RestartCause::kIdleExit, Failure::kNone);
  }
  lock.lock();
}

void WorkerPool::Stop(Worker& w, bool kill_now) {
  if (w.sock >= 0) ::close(w.sock);
  w.sock = -1;
  if (w.pid > 0) Reap(w.pid, kill_now, std::chrono::seconds(2));
  w.pid = -1;
}

std::vector<pid_t> WorkerPool::Pids() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<pid_t> out;
  for (const auto& s : slots_) {
    if (s.state != SlotState::kDead && s.worker.pid > 0) out.push_back(s.worker.pid);
  }
  return out;
}

void WorkerPool::ReportRss() {
  if (!options_.on_rss) return;
  const auto pids = Pids();
  std::uint64_t sum = 0;
  std::uint64_t max = 0;
  for (pid_t p : pids) {
    const std::uint64_t r = ResidentBytes(p);
    sum += r;
    max = std::max(max, r);
  }
  options_.on_rss(sum, max);
}

CheckResult WorkerPool::Exchange(Worker& w, const CheckInput& input) {
  CheckResult out;
  CheckRequestMsg req;
  req.name = input.name;
  req.path = input.path;
  req.check_value = input.options.check_value;
  req.include_units = input.options.include_units;
  req.include_graph = input.options.include_graph;
  req.timings_cpu = input.options.timings != nullptr && input.options.timings->thread_cpu;
  req.max_locations =
      static_cast<std::uint32_t>(std::min<std::size_t>(input.options.max_locations, UINT32_MAX));
  req.targets = input.options.targets;
  if (input.options.pulsar2_config) {
    if (input.options.pulsar2_config->size() > kMaxPulsar2ConfigBytes) {
      out.failure = Failure::kProtocol;
      out.not_started = true;
      out.error = "the Pulsar2 configuration is larger than " +
                  std::to_string(kMaxPulsar2ConfigBytes) + " bytes";
      return out;
    }
    req.pulsar2_config_bytes = static_cast<std::uint32_t>(input.options.pulsar2_config->size());
  }
  req.cpu_seconds = options_.cpu_seconds;
  req.task = input.task;
  req.html = input.html;
  std::uint64_t model_size = input.model != nullptr ? input.model->size() : input.bytes.size();
  int fd = -1;
  bool own_fd = false;
  if (input.path.empty()) {
    if (input.model != nullptr && input.model->sealed() && input.model->fd() >= 0) {
      fd = input.model->fd();  // already a sealed memfd: sent as it is
    } else {
      fd = SealedMemfd("axqc-model", input.model != nullptr ? input.model->view() : input.bytes);
      own_fd = true;
      if (fd < 0) {
        out.failure = Failure::kProtocol;
        out.error = std::string("cannot create the model memfd: ") + std::strerror(errno);
        return out;
      }
    }
    req.model_bytes = model_size;
    req.sha256 = input.sha256;
    if (input.data_files != nullptr) {
      if (input.data_files->count() > kMaxDataFiles) {
        if (own_fd) ::close(fd);
        out.failure = Failure::kProtocol;
        out.not_started = true;
        out.error = "more than " + std::to_string(kMaxDataFiles) + " external data files";
        return out;
      }
      req.external_data = true;
      for (std::size_t i = 0; i < input.data_files->count(); ++i) {
        req.data_files.push_back({input.data_files->name(i), input.data_files->size(i)});
      }
    }
  } else {
    struct stat st {};
    if (::stat(input.path.c_str(), &st) == 0) model_size = static_cast<std::uint64_t>(st.st_size);
  }
  if (options_.memory_limit != 0) {
    req.memory_bytes = std::min(options_.memory_limit, w.baseline_vm + options_.memory_headroom +
                                                           options_.memory_factor * model_size);
  }
  out.worker = w.serial;
  bool sent = SendMessage(w.sock, Encode(req), fd);
  for (std::size_t i = 0; sent && i < req.data_files.size(); ++i) {
    DataFileMsg file;
    file.index = static_cast<std::uint32_t>(i);
    sent = SendMessage(w.sock, Encode(file), input.data_files->fd(i));
  }
  if (sent && req.pulsar2_config_bytes) {
    const int config_fd = SealedMemfd("axqc-pulsar2-config", *input.options.pulsar2_config);
    sent = config_fd >= 0 && SendMessage(w.sock, Encode(Pulsar2ConfigMsg{}), config_fd);
    if (config_fd >= 0) ::close(config_fd);
  }
  const int send_errno = errno;
  if (own_fd) ::close(fd);
  double deadline = options_.deadline_seconds;
  if (deadline <= 0 && options_.cpu_seconds > 0) deadline = 2.0 * options_.cpu_seconds + 60;
  std::string payload;
  int report_fd = -1;
  // The worker takes the request (AcceptedMsg) before it checks. Until then a dead or silent
  // worker never looked at the model: it died while idle (the OOM killer, an operator's kill).
  RecvStatus st = RecvStatus::kClosed;
  const double accept_seconds = deadline > 0 ? std::min(deadline, options_.start_timeout_seconds)
                                             : options_.start_timeout_seconds;
  if (sent) st = RecvMessage(w.sock, &payload, &report_fd, static_cast<int>(accept_seconds * 1000));
  if (st != RecvStatus::kMessage) {
    ::close(w.sock);
    w.sock = -1;
    const int status = Reap(w.pid, true, std::chrono::seconds(2));
    w.pid = -1;
    out.failure = Failure::kProtocol;
    out.not_started = true;
    out.error = "worker " + std::to_string(w.serial) + " was gone before it took the check (" +
                (!sent ? std::string("send: ") + std::strerror(send_errno) + ", "
                 : st == RecvStatus::kTimeout ? std::string("no answer, ")
                                              : std::string()) +
                ExitDescription(status) + ")";
    return out;
  }
  if (report_fd >= 0 || !DecodeAccepted(payload)) {
    if (report_fd >= 0) ::close(report_fd);
    out.failure = Failure::kProtocol;
    out.error = "malformed answer";
    return out;
  }
  st = RecvMessage(w.sock, &payload, &report_fd,
                   deadline > 0 ? static_cast<int>(deadline * 1000) : -1);
  if (st == RecvStatus::kMessage) {
    auto result = DecodeResult(payload);
    if (!result || (result->kind == ResultKind::kReport) != (report_fd >= 0)) {
      if (report_fd >= 0) ::close(report_fd);
      out.failure = Failure::kProtocol;
      out.error = "malformed answer";
      return out;
    }
    if (input.options.timings != nullptr) *input.options.timings = result->timings;
    out.kind = result->kind;
    out.error = std::move(result->error);
    out.worker_cpu_seconds = result->cpu_seconds;
    if (result->kind == ResultKind::kMemoryExhausted) out.failure = Failure::kMemory;
    if (report_fd >= 0) {
      const bool ok = ReadAll(report_fd, result->report_bytes, &out.report);
      ::close(report_fd);
      if (!ok) {
        out.failure = Failure::kProtocol;
        out.error = "cannot read the report memfd";
      }
    }
    return out;
  }
  if (report_fd >= 0) ::close(report_fd);
  // No answer: the worker died, or overran the deadline (then it is killed here).
  ::close(w.sock);
  w.sock = -1;
  const bool timed_out = st == RecvStatus::kTimeout;
  const int status = Reap(w.pid, timed_out, std::chrono::seconds(2));
  w.pid = -1;
  if (timed_out) {
    out.failure = Failure::kDeadline;
  } else if (status >= 0 && WIFSIGNALED(status)) {
    out.signal = WTERMSIG(status);
    out.failure = out.signal == SIGXCPU ? Failure::kCpuTime : Failure::kCrashed;
  } else {
    out.failure = Failure::kProtocol;
    out.error = "the worker exited with status " +
                std::to_string(status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  }
  return out;
}

CheckResult WorkerPool::Check(const CheckInput& input) {
  // Every worker may have died while idle (the OOM killer takes several at once): each is
  // replaced, and the check waits for the next idle one, a bounded number of times.
  const std::size_t attempts = slots_.size() + 2;
  std::unique_lock<std::mutex> lock(mu_);
  Slot* slot = nullptr;
  Worker w;
  CheckResult result;
  for (std::size_t attempt = 1;; ++attempt) {
    slot = nullptr;
    const auto find_idle = [&] {
      for (auto& s : slots_) {
        if (s.state == SlotState::kIdle) {
          slot = &s;
          return true;
        }
      }
      return stopping_;
    };
    const bool got = idle_cv_.wait_for(
        lock, std::chrono::duration<double>(options_.start_timeout_seconds), find_idle);
    if (!got || slot == nullptr) {
      CheckResult r;
      r.failure = Failure::kProtocol;
      r.not_started = true;
      r.error = stopping_ ? "the worker pool is stopping"
                          : "no worker process is available" +
                                (start_error_.empty() ? std::string() : ": " + start_error_);
      return r;
    }
    slot->state = SlotState::kBusy;
    w = slot->worker;
    lock.unlock();

    result = Exchange(w, input);
    if (!result.not_started) break;
    // Not this check's failure: the worker is replaced (Exchange reaped it), the check goes to
    // another one.
    lock.lock();
    if (!stopping_) {
      slot->state = SlotState::kDead;
      slot->worker = Worker{};
      slot->cause = RestartCause::kIdleExit;
      slot->failure = Failure::kNone;
      Wake();
    }
    const bool stopping = stopping_;
    lock.unlock();
    if (!stopping && options_.on_restart) {
      options_.on_restart(RestartCause::kIdleExit, Failure::kNone);
    }
    lock.lock();
    if (stopping_ || attempt >= attempts) {
      result.error = "no worker process took the check (" + std::to_string(attempt) +
                     " tried); the last: " + result.error;
      return result;
    }
  }
  ++w.checks;
  std::optional<RestartCause> restart;
  if (result.failure != Failure::kNone) {
    restart = RestartCause::kFailure;
    Stop(w, result.failure != Failure::kMemory);
  } else if (options_.max_checks != 0 && w.checks >= options_.max_checks) {
    restart = RestartCause::kMaxChecks;
  } else if (options_.max_rss_bytes != 0 && ResidentBytes(w.pid) > options_.max_rss_bytes) {
    restart = RestartCause::kMaxRss;
  }
  if (restart && *restart != RestartCause::kFailure) Stop(w, false);

  lock.lock();
  if (stopping_ && !restart) {
    // Shut down while this check ran: this worker is no longer the pool's.
    lock.unlock();
    Stop(w, false);
    return result;
  }
  if (restart) {
    slot->state = SlotState::kDead;
    slot->worker = Worker{};
    slot->cause = *restart;
    slot->failure = result.failure;
    Wake();
  } else {
    slot->worker = w;
    slot->state = SlotState::kIdle;
    idle_cv_.notify_all();
    Wake();  // the respawner watches this idle worker again
  }
  lock.unlock();
  if (restart && options_.on_restart) options_.on_restart(*restart, result.failure);
  ReportRss();
  return result;
}

}  // namespace axqc::isolate
