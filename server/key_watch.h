// Which cache keys (model sha256 + options + rule-set version) have a check in progress on this
// server, so that a hash lookup (GetReport) can wait for that check instead of answering
// NOT_FOUND and having its client upload the model a second time.
//
// A key is busy while it has holds or a reservation:
//   * a hold is taken by every Check/Upload request once it knows the key (an Upload when its
//     metadata declares the sha256, any request once the bytes are hashed) and given back when the
//     request is answered;
//   * a reservation is handed to a hash-first client that got NOT_FOUND (it is about to upload);
//     it ends when a hold on the key is taken (the upload arrived) or when its time to live has
//     passed (noticed lazily: waiters poll as well, see CheckerService).
// Waiters registered on a busy key are woken (once) when its last hold is released; they then
// look the key up again. Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace axqc::server {

class KeyWatch {
 public:
  using Clock = std::chrono::steady_clock;
  using Wake = std::function<void()>;
  // Called (outside the lock) when a key stops being busy, after its waiters were woken.
  using OnIdle = std::function<void(const std::string& key)>;

  explicit KeyWatch(OnIdle on_idle = {}) : on_idle_(std::move(on_idle)) {}

  void Hold(const std::string& key);
  void Release(const std::string& key);
  // Reserves an idle key until `expiry` (see above); false when the key is busy.
  bool Reserve(const std::string& key, Clock::time_point expiry);
  // Ends a reservation early (e.g. another server turned out to be on the key).
  void Unreserve(const std::string& key);

  bool Busy(const std::string& key) const;
  // Registers `wake` on a busy key and returns its id (> 0); returns 0 and does not register when
  // the key is not busy. `wake` runs at most once, on the thread that makes the key idle.
  std::uint64_t Wait(const std::string& key, Wake wake);
  // Removes a waiter; false when it was already woken (or never registered).
  bool Cancel(const std::string& key, std::uint64_t id);

  std::size_t busy_keys() const;

 private:
  struct Entry {
    unsigned holds = 0;
    bool reserved = false;
    Clock::time_point reserved_until;
    std::vector<std::pair<std::uint64_t, Wake>> waiters;
    bool busy() const { return holds > 0 || (reserved && Clock::now() < reserved_until); }
  };
  // Removes an idle entry and returns its waiters (to run outside the lock).
  std::vector<std::pair<std::uint64_t, Wake>> TakeIfIdleLocked(const std::string& key);
  void Woken(const std::string& key, std::vector<std::pair<std::uint64_t, Wake>> waiters);

  OnIdle on_idle_;
  mutable std::mutex mu_;
  std::map<std::string, Entry> entries_;
  std::uint64_t next_id_ = 1;
  unsigned reservations_ = 0;  // since the last sweep of expired reservations
};

}  // namespace axqc::server
