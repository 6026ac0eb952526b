#include "key_watch.h"

#include <algorithm>

namespace axqc::server {

void KeyWatch::Hold(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry& e = entries_[key];
  ++e.holds;
  e.reserved = false;  // the upload the reservation waited for has arrived
}

void KeyWatch::Release(const std::string& key) {
  std::vector<std::pair<std::uint64_t, Wake>> woken;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(key);
    if (it == entries_.end() || it->second.holds == 0) return;
    --it->second.holds;
    if (it->second.busy()) return;
    woken = TakeIfIdleLocked(key);
  }
  Woken(key, std::move(woken));
}

bool KeyWatch::Reserve(const std::string& key, Clock::time_point expiry) {
  std::lock_guard<std::mutex> lock(mu_);
  // Reservations whose client never uploaded leave idle entries behind: sweep them now and then.
  if (++reservations_ >= 256) {
    reservations_ = 0;
    for (auto it = entries_.begin(); it != entries_.end();) {
      it = it->second.busy() || !it->second.waiters.empty() ? std::next(it) : entries_.erase(it);
    }
  }
  Entry& e = entries_[key];
  if (e.busy()) return false;
  e.reserved = true;
  e.reserved_until = expiry;
  return true;
}

void KeyWatch::Unreserve(const std::string& key) {
  std::vector<std::pair<std::uint64_t, Wake>> woken;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(key);
    if (it == entries_.end() || !it->second.reserved) return;
    it->second.reserved = false;
    if (it->second.busy()) return;
    woken = TakeIfIdleLocked(key);
  }
  Woken(key, std::move(woken));
}

bool KeyWatch::Busy(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(key);
  return it != entries_.end() && it->second.busy();
}

std::uint64_t KeyWatch::Wait(const std::string& key, Wake wake) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end() || !it->second.busy()) return 0;
  const std::uint64_t id = next_id_++;
  it->second.waiters.emplace_back(id, std::move(wake));
  return id;
}

bool KeyWatch::Cancel(const std::string& key, std::uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return false;
  auto& ws = it->second.waiters;
  auto w = std::find_if(ws.begin(), ws.end(), [&](const auto& p) { return p.first == id; });
  if (w == ws.end()) return false;
  ws.erase(w);
  return true;
}

std::size_t KeyWatch::busy_keys() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<std::size_t>(std::count_if(entries_.begin(), entries_.end(),
                                                [](const auto& kv) { return kv.second.busy(); }));
}

std::vector<std::pair<std::uint64_t, KeyWatch::Wake>> KeyWatch::TakeIfIdleLocked(
    const std::string& key) {
  auto it = entries_.find(key);
  std::vector<std::pair<std::uint64_t, Wake>> waiters = std::move(it->second.waiters);
  entries_.erase(it);
  return waiters;
}

void KeyWatch::Woken(const std::string& key, std::vector<std::pair<std::uint64_t, Wake>> waiters) {
  for (auto& [id, wake] : waiters) wake();
  if (on_idle_) on_idle_(key);
}

}  // namespace axqc::server
