#include "rpc/call.h"

#include <openssl/rand.h>

#include <cmath>
#include <utility>

#include "axqc/wire/status_name.h"
#include "request_validation.h"

namespace axqc::server {

namespace {

std::string RandomRequestId() {
  unsigned char b[8];
  if (RAND_bytes(b, sizeof(b)) != 1) {
    const auto t = static_cast<std::uint64_t>(Clock::now().time_since_epoch().count());
    for (std::size_t i = 0; i < sizeof(b); ++i) b[i] = static_cast<unsigned char>(t >> (8 * i));
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : b) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 0xf]);
  }
  return out;
}

// Longest client string (model name, URL, error message) written to the request log.
constexpr std::size_t kMaxLogString = 1024;

LogLevel LevelOf(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::INTERNAL:
    case grpc::StatusCode::UNKNOWN:
    case grpc::StatusCode::DATA_LOSS:
      return LogLevel::kError;
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
    case grpc::StatusCode::UNAVAILABLE:
      return LogLevel::kWarn;
    default:
      return LogLevel::kInfo;
  }
}

}  // namespace

std::int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string MetadataValue(const grpc::CallbackServerContext* ctx, const char* key) {
  const auto& md = ctx->client_metadata();
  auto it = md.find(key);
  if (it == md.end()) return {};
  return std::string(it->second.data(), it->second.size());
}

CallBase::CallBase(Key /*key*/, const ServiceDeps& d, KeyWatch* key_watch, std::string method_name,
                   grpc::CallbackServerContext* ctx)
    : deps(d),
      watch(key_watch),
      method(std::move(method_name)),
      start(Clock::now()),
      deadline(ctx->deadline()),
      peer(ctx->peer()) {
  std::string id = MetadataValue(ctx, "x-request-id");
  request_id = ValidToken(id, 64, true) ? id : RandomRequestId();
  ctx->AddInitialMetadata("x-request-id", request_id);
}

CallBase::CallBase(Key /*key*/, const ServiceDeps& d, KeyWatch* key_watch, std::string method_name,
                   const CallOrigin& origin)
    : deps(d),
      watch(key_watch),
      method(std::move(method_name)),
      start(Clock::now()),
      deadline(std::chrono::system_clock::time_point::max()),
      peer(origin.peer),
      transport(origin.transport) {
  request_id = ValidToken(origin.request_id, 64, true) ? origin.request_id : RandomRequestId();
}

void CallBase::Complete(const grpc::Status& status) {
  auto self = shared_from_this();
  const double seconds = SecondsSince(start);
  const char* code = wire::StatusCodeName(status.error_code());
  deps.metrics->CountRequest(method, code, seconds);
  const Fields f = Snapshot();
  nlohmann::json j = {{"request_id", request_id},
                      {"method", method},
                      {"code", code},
                      {"duration_ms", std::round(seconds * 1e6) / 1e3},
                      {"peer", peer}};
  if (!transport.empty()) j["transport"] = transport;
  if (!f.source.empty()) j["source"] = f.source;
  // Strings from the client are cut to kMaxLogString bytes: a request refused for its size does
  // not copy that size into the log.
  if (!f.name.empty()) j["model_name"] = Clip(f.name, kMaxLogString);
  if (!f.url.empty()) j["url"] = Clip(f.url, kMaxLogString);
  if (!f.sha256.empty()) j["model_sha256"] = f.sha256;
  if (f.size_bytes > 0) j["size_bytes"] = f.size_bytes;
  if (!f.verdict.empty()) {
    j["verdict"] = f.verdict;
    j["errors"] = f.errors;
    j["warnings"] = f.warnings;
  }
  if (!f.cache.empty()) j["cache"] = f.cache;
  if (!f.labels.empty()) {
    nlohmann::json labels = nlohmann::json::object();
    std::size_t n = 0;
    for (const auto& [k, v] : f.labels) {
      if (++n > kMaxLabels) break;
      labels[Clip(k, kMaxLabelKey)] = Clip(v, kMaxLabelValue);
    }
    j["labels"] = std::move(labels);
  }
  if (!status.ok()) j["error"] = Clip(status.error_message(), kMaxLogString);
  // The check of this key is over for this request: lookups waiting for it look again.
  std::string held;
  {
    std::lock_guard<std::mutex> lock(waiter_mu_);
    held = std::move(held_key_);
    held_key_.clear();
    released_ = true;
  }
  if (!held.empty()) watch->Release(held);
  deps.logger->Log(LevelOf(status.error_code()), "request", std::move(j));
  finisher(status);
}

void CallBase::HoldKey(const std::string& key) {
  {
    std::lock_guard<std::mutex> lock(waiter_mu_);
    if (released_ || !held_key_.empty()) return;
    held_key_ = key;
  }
  watch->Hold(key);
}

void CallBase::SetWaiter(const std::string& key, std::uint64_t id) {
  {
    std::lock_guard<std::mutex> lock(waiter_mu_);
    if (!cancelled.load()) {
      waiter_key_ = key;
      waiter_id_ = id;
      return;
    }
  }
  deps.engine->Cancel(key, id);
}

void CallBase::OnCancelled() {
  cancelled.store(true);
  std::string key;
  std::uint64_t id = 0;
  {
    std::lock_guard<std::mutex> lock(waiter_mu_);
    key = std::move(waiter_key_);
    id = std::exchange(waiter_id_, 0);
  }
  if (id != 0) deps.engine->Cancel(key, id);
  if (Claim()) {
    // The client's own deadline fires first (the server's copy starts when the call arrives)
    // and arrives as a cancellation shortly before the server's deadline: within a second of
    // the deadline, count it as DEADLINE_EXCEEDED.
    const bool expired = deadline != std::chrono::system_clock::time_point::max() &&
                         std::chrono::system_clock::now() + std::chrono::seconds(1) >= deadline;
    Complete(expired ? grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "deadline exceeded")
                     : grpc::Status(grpc::StatusCode::CANCELLED, "cancelled by the client"));
  }
}

}  // namespace axqc::server
