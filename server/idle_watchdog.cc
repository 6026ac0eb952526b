#include "idle_watchdog.h"

#include <algorithm>

namespace axqc::server {

namespace {

std::int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

IdleWatchdog::IdleWatchdog(std::chrono::milliseconds timeout) : timeout_(timeout) {
  if (timeout_.count() > 0) thread_ = std::thread([this] { Loop(); });
}

IdleWatchdog::~IdleWatchdog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

IdleWatchdog::Handle IdleWatchdog::Watch(std::function<void()> on_idle) {
  if (timeout_.count() <= 0) return nullptr;
  auto h = std::make_shared<Entry>();
  h->on_idle = std::move(on_idle);
  h->last_ns.store(NowNs(), std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(mu_);
  entries_.push_back(h);
  return h;
}

void IdleWatchdog::Touch(const Handle& h) {
  if (h != nullptr) h->last_ns.store(NowNs(), std::memory_order_relaxed);
}

void IdleWatchdog::Unwatch(const Handle& h) {
  if (h == nullptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  entries_.erase(std::remove(entries_.begin(), entries_.end(), h), entries_.end());
}

void IdleWatchdog::Loop() {
  // Checks four times per timeout (at most every 250 ms, at least every 10 ms): an idle activity
  // is noticed between 1 and 1.25 timeouts after its last Touch.
  const auto tick = std::clamp<std::chrono::milliseconds>(
      timeout_ / 4, std::chrono::milliseconds(10), std::chrono::milliseconds(250));
  const std::int64_t timeout_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(timeout_).count();
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, tick, [&] { return stop_; });
    if (stop_) break;
    const std::int64_t now = NowNs();
    std::vector<Handle> expired;
    std::vector<Handle> kept;
    for (auto& h : entries_) {
      const bool idle = now - h->last_ns.load(std::memory_order_relaxed) >= timeout_ns;
      (idle ? expired : kept).push_back(std::move(h));
    }
    entries_ = std::move(kept);
    if (expired.empty()) continue;
    lock.unlock();
    for (const auto& h : expired) h->on_idle();
    lock.lock();
  }
}

}  // namespace axqc::server
