// Per-RPC state shared by the reactor and the asynchronous work of a handler. Completion happens
// exactly once: whoever wins Claim() (the handler's pipeline, or OnCancelled) calls Complete(),
// which records the request (axqc_requests_total, one JSON log line) and hands the status to the
// reactor.
//
// Only the admission layer (admission.h) creates calls (CallBase::Key), after it has checked the
// request: a handler works on a call, so it cannot run without admission.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "axqc/v1/axqc.pb.h"
#include "rpc/context.h"

namespace axqc::server {

class Admission;

using Clock = std::chrono::steady_clock;

inline double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Milliseconds since the Unix epoch (history rows, GetStats windows).
std::int64_t NowMs();

// The value of the client's metadata `key`, empty when absent.
std::string MetadataValue(const grpc::CallbackServerContext* ctx, const char* key);

// Where a request comes from when it is not a gRPC call: the HTTP/JSON API (http/) and the checks
// its registry webhooks start.
struct CallOrigin {
  std::string request_id;          // the client's X-Request-Id; a new id when empty or invalid
  std::string peer;                // e.g. "ipv4:127.0.0.1:40312"
  std::string transport = "http";  // log field `transport`
};

class CallBase : public std::enable_shared_from_this<CallBase> {
 public:
  // Only the admission layer can make one.
  class Key {
    friend class Admission;
    Key() = default;
  };

  // Mutable request facts, written by whichever thread works on the request.
  struct Fields {
    std::string source;  // "path", "url", "inline", "upload", "hash"
    std::string name;
    std::string url;  // redacted
    std::string sha256;
    std::uint64_t size_bytes = 0;
    std::string verdict;
    std::string cache;
    std::uint64_t errors = 0;
    std::uint64_t warnings = 0;
    std::map<std::string, std::string> labels;
    v1::CheckOptions options;
    bool record = true;  // a check request (history row, checks metric); false: plain GetReport
  };

  CallBase(Key key, const ServiceDeps& d, KeyWatch* key_watch, std::string method_name,
           grpc::CallbackServerContext* ctx);
  CallBase(Key key, const ServiceDeps& d, KeyWatch* key_watch, std::string method_name,
           const CallOrigin& origin);
  virtual ~CallBase() = default;

  template <typename F>
  void Update(F&& f) {
    std::lock_guard<std::mutex> lock(fields_mu_);
    f(fields_);
  }
  Fields Snapshot() const {
    std::lock_guard<std::mutex> lock(fields_mu_);
    return fields_;
  }

  bool Claim() { return !finished_.exchange(true); }
  bool finished() const { return finished_.load(); }
  bool Finish(const grpc::Status& s) {
    if (!Claim()) return false;
    Complete(s);
    return true;
  }

  // After a successful Claim(): metric, log line, release of the held key, status to the reactor.
  void Complete(const grpc::Status& status);

  // Marks `key` as being checked for this request until it completes (first key only).
  void HoldKey(const std::string& key);
  // The check engine's waiter of this request (cancelled with the call).
  void SetWaiter(const std::string& key, std::uint64_t id);
  // From the reactor's OnCancel: stop waiting, free the queue slot, finish with the right code.
  void OnCancelled();

  const ServiceDeps& deps;
  KeyWatch* const watch;
  const std::string method;
  const Clock::time_point start;
  const std::chrono::system_clock::time_point deadline;
  const std::string peer;
  const std::string transport;  // "" for gRPC, "http" for the HTTP/JSON API
  std::string request_id;
  std::string expected_sha256;  // Check only; written before any asynchronous work starts
  std::mutex stream_mu;         // Upload: orders StartRead against Finish
  std::atomic<bool> cancelled{false};
  // Set by the admission layer: sends the status (and on OK the response) to the client.
  std::function<void(const grpc::Status&)> finisher;
  // Run by the reactor once gRPC is done with the call (the response has been sent or dropped).
  std::function<void()> on_done;

 private:
  std::atomic<bool> finished_{false};
  mutable std::mutex fields_mu_;
  Fields fields_;
  std::mutex waiter_mu_;
  std::string waiter_key_;
  std::uint64_t waiter_id_ = 0;
  std::string held_key_;   // HoldKey
  bool released_ = false;  // Complete() ran: no more holds
};

template <typename Resp>
class Call final : public CallBase {
 public:
  using CallBase::CallBase;
  Resp response;  // copied to gRPC's response on OK
};

using CheckCall = Call<v1::CheckResponse>;

}  // namespace axqc::server
