// Calls a function when a watched activity has been idle for longer than a timeout (the Upload
// idle timeout, --upload-idle-timeout-seconds). One thread checks every watched activity a few
// times per timeout; Touch() is a relaxed atomic store.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace axqc::server {

class IdleWatchdog {
 public:
  struct Entry;
  using Handle = std::shared_ptr<Entry>;

  // timeout 0 disables the watchdog (Watch returns null, no thread).
  explicit IdleWatchdog(std::chrono::milliseconds timeout);
  ~IdleWatchdog();
  IdleWatchdog(const IdleWatchdog&) = delete;
  IdleWatchdog& operator=(const IdleWatchdog&) = delete;

  // Starts watching; `on_idle` runs at most once, on the watchdog's thread, unless Unwatch comes
  // first. Returns null when disabled.
  Handle Watch(std::function<void()> on_idle);
  // Records activity now. Null handles are ignored.
  static void Touch(const Handle& h);
  // Stops watching (idempotent; null handles are ignored). `on_idle` may be running on the
  // watchdog's thread while this returns, so it must only use state it owns.
  void Unwatch(const Handle& h);
  std::chrono::milliseconds timeout() const { return timeout_; }

 private:
  void Loop();

  const std::chrono::milliseconds timeout_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Handle> entries_;
  bool stop_ = false;
  std::thread thread_;
};

struct IdleWatchdog::Entry {
  std::function<void()> on_idle;
  std::atomic<std::int64_t> last_ns{0};
};

}  // namespace axqc::server
