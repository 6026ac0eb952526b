// The life of a webhook delivery after it was recorded (hooks.h): its check, the write-back of
// the outcome, retries with backoff, resumption after a restart, and GET /v1/deliveries.
//
// States: pending (waiting for its next attempt), checking (download and check), writing_back
// (tags being written to the registry, or waiting to write them again), done (a verdict), failed
// (download_failed, policy_refused, check_failed, writeback_failed). While a server works on a
// delivery it owns it (Delivery::owner) until next_attempt_ms, the end of its lease; a due
// delivery is claimed with a compare-and-set of next_attempt_ms, so one server works on it.
#include <openssl/rand.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <chrono>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "axqc/wire/report_proto.h"
#include "axqc/wire/status_name.h"
#include "http/api.h"
#include "http/hook_payloads.h"
#include "http/hooks.h"
#include "labels.h"
#include "request_validation.h"
#include "url_fetch.h"

namespace axqc::server::http {

namespace {

// Due deliveries taken per pass of the loop.
constexpr std::uint32_t kDuePerPass = 32;

// The report of a delivery's check: its sha256 with the options the check ran with.
std::string ReportLink(const Delivery& d) {
  std::string link = "/v1/reports/" + d.sha256;
  std::string sep = "?";
  try {
    const nlohmann::json r = nlohmann::json::parse(d.request);
    if (r.value("check_value", false)) {
      link += sep + "check_value=true";
      sep = "&";
    }
    std::string chips;
    for (const auto& t : r.value("targets", std::vector<std::string>{})) {
      chips += (chips.empty() ? "" : ",") + t;
    }
    if (!chips.empty()) link += sep + "target=" + chips;
  } catch (const nlohmann::json::exception&) {
  }
  return link;
}

std::string RandomHex(std::size_t bytes) {
  std::vector<unsigned char> b(bytes);
  if (RAND_bytes(b.data(), static_cast<int>(b.size())) != 1) {
    const auto t = static_cast<std::uint64_t>(Clock::now().time_since_epoch().count());
    for (std::size_t i = 0; i < b.size(); ++i)
      b[i] = static_cast<unsigned char>(t >> (8 * (i % 8)));
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : b) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 0xf]);
  }
  return out;
}

std::string Bounded(std::string s, std::size_t n) {
  if (s.size() > n) s.resize(n);
  return s;
}

std::string StatusText(const grpc::Status& status) {
  return std::string(wire::StatusCodeName(status.error_code())) + ": " + status.error_message();
}

bool IsVerdict(const std::string& outcome) {
  return outcome == "conformant" || outcome == "non_conformant" || outcome == "not_applicable" ||
         outcome == "invalid_input";
}

// "HTTP 4xx for ..." from url_fetch.cc: the registry refused the request itself (408 and 429
// are worth another attempt).
bool ClientErrorAnswer(const std::string& message) {
  if (message.size() < 8 || message.compare(0, 6, "HTTP 4") != 0) return false;
  const std::string code = message.substr(5, 3);
  return code != "408" && code != "429";
}

}  // namespace

AttemptFailure ClassifyFailure(const grpc::Status& status, bool reached_checker) {
  const grpc::StatusCode code = status.error_code();
  const bool temporary = code == grpc::StatusCode::UNAVAILABLE ||
                         code == grpc::StatusCode::DEADLINE_EXCEEDED ||
                         code == grpc::StatusCode::CANCELLED || code == grpc::StatusCode::ABORTED;
  if (reached_checker) {
    // The model was checked or refused by the checker. A busy or stopping server is temporary;
    // a crash, a resource limit of the model or an invalid model is not.
    const bool busy = code == grpc::StatusCode::RESOURCE_EXHAUSTED && !OverSizeLimit(status);
    return {"check_failed", temporary || busy};
  }
  if (code == grpc::StatusCode::PERMISSION_DENIED ||
      code == grpc::StatusCode::FAILED_PRECONDITION || OverSizeLimit(status) ||
      code == grpc::StatusCode::INVALID_ARGUMENT) {
    return {"policy_refused", false};
  }
  if (code == grpc::StatusCode::RESOURCE_EXHAUSTED) return {"download_failed", true};  // busy
  if (code == grpc::StatusCode::UNAVAILABLE && ClientErrorAnswer(status.error_message())) {
    return {"download_failed", false};
  }
  return {"download_failed", temporary};
}

std::int64_t RetryDelayMs(std::uint32_t attempts, double first_seconds, double max_seconds) {
  const double exponent = std::min<double>(attempts == 0 ? 0 : attempts - 1, 40);
  const double seconds = std::min(max_seconds, first_seconds * std::pow(2.0, exponent));
  return static_cast<std::int64_t>(std::llround(seconds * 1000));
}

Hooks::Hooks(HookSettings settings, Admission* admission, const ServerConfig* config,
             Logger* logger)
    : settings_(std::move(settings)),
      admission_(admission),
      config_(config),
      logger_(logger),
      store_(admission->context().deps.store),
      metrics_(admission->context().deps.metrics),
      owner_(RandomHex(8)) {}

Hooks::~Hooks() { Stop(); }

void Hooks::Start() {
  store_->RecoverDeliveries(NowMs());
  loop_ = std::thread([this] { Loop(); });
}

void Hooks::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (loop_.joinable()) loop_.join();
}

std::optional<Delivery> Hooks::Record(Delivery& d, bool dedup_model) {
  const std::int64_t now = NowMs();
  d.request_id = RandomHex(8);
  d.state = "checking";
  d.attempts = 1;
  d.owner = owner_;
  d.next_attempt_ms = now + static_cast<std::int64_t>(config_->webhook_lease_seconds * 1000);
  d.created_ms = now;
  d.updated_ms = now;
  const auto dedup_ms = static_cast<std::int64_t>(config_->webhook_dedup_seconds * 1000);
  auto duplicate = store_->AddDelivery(d, dedup_model && dedup_ms > 0, now - dedup_ms);
  if (!duplicate) {
    std::lock_guard<std::mutex> lock(mu_);
    in_flight_.insert(d.id);
  }
  return duplicate;
}

void Hooks::Loop() {
  const auto period = std::chrono::milliseconds(
      static_cast<std::int64_t>(std::clamp(config_->webhook_retry_seconds / 2, 0.1, 5.0) * 1000));
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    lock.unlock();
    ResumeDue();
    lock.lock();
    cv_.wait_for(lock, period, [&] { return stopping_; });
  }
}

void Hooks::ResumeDue() {
  if (admission_->context().deps.draining->load()) return;
  std::vector<Delivery> due;
  try {
    due = store_->DueDeliveries(NowMs(), kDuePerPass);
  } catch (const StoreError& e) {
    metrics_->CountStoreError();
    logger_->Warn("webhook deliveries: cannot read the due deliveries", {{"error", e.what()}});
    return;
  }
  for (Delivery& d : due) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
      if (in_flight_.count(d.id) != 0) continue;
    }
    const std::int64_t lease =
        NowMs() + static_cast<std::int64_t>(config_->webhook_lease_seconds * 1000);
    try {
      if (!store_->ClaimDelivery(d.id, owner_, d.next_attempt_ms, lease)) continue;
    } catch (const StoreError& e) {
      metrics_->CountStoreError();
      logger_->Warn("webhook deliveries: cannot claim a delivery",
                    {{"delivery_id", d.id}, {"error", e.what()}});
      continue;
    }
    const bool resumed = !d.owner.empty() || d.state == "checking";
    d.owner = owner_;
    d.next_attempt_ms = lease;
    ++d.attempts;
    {
      std::lock_guard<std::mutex> lock(mu_);
      in_flight_.insert(d.id);
    }
    if (d.attempts > config_->webhook_max_attempts) {
      // Only when a server stopped while it worked on its last attempt.
      Settle(d, d.state == "writing_back" ? "writeback_failed" : "check_failed",
             d.error.empty() ? "the server stopped during each attempt" : d.error);
      continue;
    }
    logger_->Info(resumed ? "webhook delivery resumed" : "webhook delivery retried",
                  {{"delivery_id", d.id},
                   {"source", d.source},
                   {"state", d.state},
                   {"attempt", d.attempts},
                   {"check_request_id", d.request_id}});
    Begin(std::move(d));
  }
}

bool Hooks::CheckOf(const Delivery& d, HookCheck* check, std::string* why) const {
  try {
    const nlohmann::json r = nlohmann::json::parse(d.request);
    check->registry = d.source;
    check->name = r.at("name").get<std::string>();
    check->labels = r.at("labels").get<std::map<std::string, std::string>>();
    check->options.set_check_value(r.value("check_value", false));
    for (const auto& t : r.value("targets", std::vector<std::string>{})) {
      check->options.add_targets(t);
    }
    if (d.source == "huggingface") {
      const std::string url = r.at("url").get<std::string>();
      check->resolve_url = [url] { return url; };
      if (!settings_.huggingface_token.empty()) {
        check->headers = {{"Authorization", "Bearer " + settings_.huggingface_token}};
      }
      check->credential_origin = settings_.huggingface_origin;
    } else if (d.source == "mlflow") {
      if (settings_.mlflow_url.empty()) {
        *why = "the MLflow webhook is no longer configured (--mlflow-url)";
        return false;
      }
      const std::string name = r.at("mlflow").at("model").get<std::string>();
      const std::string version = r.at("mlflow").at("version").get<std::string>();
      check->resolve_url = [this, name, version] {
        return MlflowModelVersionUrl(*this, name, version);
      };
      if (!settings_.mlflow_token.empty()) {
        check->headers = {{"Authorization", "Bearer " + settings_.mlflow_token}};
      }
      check->credential_origin = settings_.mlflow_origin;
    } else {
      *why = "unknown delivery source " + Bounded(d.source, 40);
      return false;
    }
  } catch (const nlohmann::json::exception& e) {
    *why = std::string("the stored request of the delivery cannot be read: ") + e.what();
    return false;
  }
  return true;
}

void Hooks::Begin(Delivery d) {
  if (d.state == "writing_back" && !d.write_back.empty()) {
    boost::asio::post(*admission_->context().deps.io, [this, d = std::move(d)] { WriteBack(d); });
    return;
  }
  HookCheck check;
  std::string why;
  if (!CheckOf(d, &check, &why)) {
    Settle(std::move(d), "check_failed", why);
    return;
  }
  if (d.state != "checking") {
    d.state = "checking";
    Save(d);
  }
  CallOrigin origin;
  origin.request_id = d.request_id;
  origin.peer = d.source + " webhook";
  origin.transport = "webhook";
  auto* io = admission_->context().deps.io;
  const v1::CheckOptions options = check.options;
  admission_->Internal<HookCheckRpc>(
      origin, check,
      [this, io, d = std::move(d), reached = check.reached_checker, options](
          const std::string& /*request_id*/, const grpc::Status& status, v1::CheckResponse& resp) {
        // Off the thread that finished the check (a worker): store and registry calls block.
        boost::asio::post(*io, [this, d, status, resp = resp, reached, options] {
          Checked(d, status, resp, reached->load(), options);
        });
      });
}

void Hooks::Checked(Delivery d, const grpc::Status& status, const v1::CheckResponse& resp,
                    bool reached_checker, const v1::CheckOptions& options) {
  std::string outcome;
  std::string error;
  if (status.ok()) {
    outcome = VerdictLabel(resp.verdict());
    d.sha256 = resp.sha256();
    d.cache_key = wire::CacheKey(resp.sha256(), options);
  } else {
    const AttemptFailure failure = ClassifyFailure(status, reached_checker);
    error = StatusText(status);
    if (status.error_code() == grpc::StatusCode::INVALID_ARGUMENT && reached_checker) {
      outcome = "invalid_input";  // the model is not a valid ONNX model: a verdict
    } else {
      outcome = failure.outcome;
      if (failure.retry && d.attempts < config_->webhook_max_attempts) {
        Retry(std::move(d), error);
        return;
      }
    }
  }
  std::string write_back;
  nlohmann::json request;
  try {
    request = nlohmann::json::parse(d.request);
    write_back = request.value("write_back", "");
  } catch (const nlohmann::json::exception&) {
  }
  const std::string& hf_policy = settings_.huggingface_write_back;
  if ((write_back == "mlflow" && settings_.mlflow_url.empty()) ||
      (write_back == "huggingface" &&
       (hf_policy == "off" ||
        (hf_policy == "failures" && (outcome == "conformant" || outcome == "not_applicable"))))) {
    write_back.clear();
  }
  if (write_back != "mlflow" && write_back != "huggingface") {
    Settle(std::move(d), outcome, error);
    return;
  }
  // The report on the dashboard, for people reading the registry.
  std::string report_url;
  if (status.ok() && !settings_.public_url.empty()) {
    report_url = settings_.public_url + "/models/" +
                 ReportLink(d).substr(std::string("/v1/reports/").size());
  }
  // What to write, and the check's error, which the delivery keeps once it is written
  // (Delivery::error holds the write-back's error meanwhile).
  nlohmann::json stored = {{"check_error", Bounded(error, kMaxDeliveryErrorBytes)}};
  try {
    if (write_back == "mlflow") {
      nlohmann::json tags = nlohmann::json::array();
      for (const auto& [k, v] : MlflowTags(status, resp, report_url)) tags.push_back({k, v});
      stored["tags"] = std::move(tags);
    } else {
      stored["huggingface"] = HfWriteBackPost(request, status, resp, outcome, error, report_url);
    }
  } catch (const nlohmann::json::exception& e) {
    Settle(std::move(d), "writeback_failed",
           std::string("the stored request of the delivery cannot be read: ") + e.what());
    return;
  }
  d.write_back = stored.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  d.outcome = outcome;
  d.error = Bounded(error, kMaxDeliveryErrorBytes);
  d.state = "writing_back";
  Save(d);
  WriteBack(std::move(d));
}

void Hooks::WriteBack(Delivery d) {
  std::string error;
  std::string check_error;
  std::size_t count = 0;
  try {
    const nlohmann::json r = nlohmann::json::parse(d.request);
    const nlohmann::json stored = nlohmann::json::parse(d.write_back);
    check_error = stored.value("check_error", "");
    if (stored.contains("huggingface")) {
      HfWriteBack(*this, r, stored.at("huggingface"));
      count = 1;
    } else {
      std::vector<std::pair<std::string, std::string>> tags;
      for (const auto& t : stored.at("tags")) {
        tags.emplace_back(t.at(0).get<std::string>(), t.at(1).get<std::string>());
      }
      count = tags.size();
      MlflowWriteTags(*this, r.at("mlflow").at("model").get<std::string>(),
                      r.at("mlflow").at("version").get<std::string>(), tags);
    }
  } catch (const SourceError& e) {
    error = e.what();
  } catch (const nlohmann::json::exception& e) {
    Settle(std::move(d), "writeback_failed",
           std::string("the stored write-back of the delivery cannot be read: ") + e.what());
    return;
  }
  if (error.empty()) {
    logger_->Info("webhook write-back", {{"delivery_id", d.id},
                                         {"source", d.source},
                                         {"items_written", count},
                                         {"attempt", d.attempts}});
    d.write_back.clear();
    const std::string outcome = d.outcome;
    Settle(std::move(d), outcome, check_error);
    return;
  }
  error = "write-back: " + error;
  if (d.attempts < config_->webhook_max_attempts) {
    Retry(std::move(d), error);
  } else {
    Settle(std::move(d), "writeback_failed", error);
  }
}

void Hooks::Retry(Delivery d, const std::string& error) {
  const std::int64_t delay =
      RetryDelayMs(d.attempts, config_->webhook_retry_seconds, config_->webhook_retry_max_seconds);
  if (d.state == "checking") d.state = "pending";
  d.error = Bounded(error, kMaxDeliveryErrorBytes);
  d.owner.clear();
  d.next_attempt_ms = NowMs() + delay;
  Save(d);
  metrics_->CountWebhookDelivery(d.source, "retry");
  logger_->Warn("webhook delivery attempt failed; retrying",
                {{"delivery_id", d.id},
                 {"source", d.source},
                 {"state", d.state},
                 {"attempt", d.attempts},
                 {"max_attempts", config_->webhook_max_attempts},
                 {"retry_in_seconds", static_cast<double>(delay) / 1000},
                 {"error", d.error}});
  Release(d.id);
}

void Hooks::Settle(Delivery d, const std::string& outcome, const std::string& error) {
  d.state = IsVerdict(outcome) ? "done" : "failed";
  d.outcome = outcome;
  d.error = Bounded(error, kMaxDeliveryErrorBytes);
  d.owner.clear();
  d.next_attempt_ms = 0;
  Save(d);
  metrics_->CountWebhookDelivery(d.source, outcome);
  nlohmann::json log = {{"delivery_id", d.id},    {"source", d.source},
                        {"model", d.model},       {"revision", d.revision},
                        {"state", d.state},       {"outcome", d.outcome},
                        {"attempts", d.attempts}, {"check_request_id", d.request_id}};
  if (d.state == "done") {
    logger_->Info("webhook delivery done", std::move(log));
  } else {
    log["error"] = d.error;
    logger_->Warn("webhook delivery failed", std::move(log));
  }
  Release(d.id);
}

void Hooks::Save(const Delivery& d) {
  Delivery copy = d;
  copy.updated_ms = NowMs();
  try {
    store_->UpdateDelivery(copy);
  } catch (const StoreError& e) {
    // The delivery keeps its recorded state: it is taken up again when its lease runs out.
    metrics_->CountStoreError();
    logger_->Error("webhook deliveries: cannot record the state of a delivery",
                   {{"delivery_id", d.id}, {"state", d.state}, {"error", e.what()}});
  }
}

void Hooks::Release(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  in_flight_.erase(id);
}

void ListDeliveriesRpc::Run(ServiceContext& s, const std::shared_ptr<Call<Response>>& call,
                            const Request& req, Response* /*grpc_resp*/) {
  boost::asio::post(*s.deps.io, [&s, call = call, req = req] {
    std::vector<Delivery> rows;
    try {
      rows = s.deps.store->ListDeliveries(req);
    } catch (const StoreError& e) {
      s.deps.metrics->CountStoreError();
      call->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                std::string("the store cannot list deliveries: ") + e.what()));
      return;
    }
    nlohmann::json list = nlohmann::json::array();
    for (const Delivery& d : rows) {
      nlohmann::json j = {{"delivery_id", d.id},
                          {"source", d.source},
                          {"model", d.model},
                          {"revision", d.revision},
                          {"event", d.event},
                          {"state", d.state},
                          {"outcome", d.outcome},
                          {"error", d.error},
                          {"attempts", d.attempts},
                          {"request_id", d.request_id},
                          {"sha256", d.sha256},
                          {"created_time", Rfc3339OfMs(d.created_ms)},
                          {"updated_time", Rfc3339OfMs(d.updated_ms)}};
      if (!d.sha256.empty()) {
        j["report"] = ReportLink(d);
        // The dashboard's page of that report (the same query string).
        const std::string link = j["report"];
        j["model_page"] = "/models/" + link.substr(std::string("/v1/reports/").size());
      }
      if ((d.state == "pending" || d.state == "writing_back") && d.owner.empty()) {
        j["next_attempt_time"] = Rfc3339OfMs(d.next_attempt_ms);
      }
      list.push_back(std::move(j));
    }
    auto& out = call->response;
    out["deliveries"] = std::move(list);
    if (!rows.empty() && rows.size() == req.limit)
      out["next_cursor"] = std::to_string(rows.back().seq);
    call->Finish(grpc::Status::OK);
  });
}

void AddDeliveryRoutes(Router& router, Api api) {
  Route r;
  r.method = "GET";
  r.pattern = "/v1/deliveries";
  r.handle = [api](Request& request, Reply reply) {
    api.admission->Http<ListDeliveriesRpc>(
        OriginOf(request), request.Header("authorization"),
        [&request](DeliveriesQuery& q) { return ParseDeliveriesQuery(request, q); },
        Answer<nlohmann::json>(
            std::move(reply), [](const std::string& request_id, nlohmann::json& resp) {
              return JsonResponse(
                  resp.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), request_id);
            }));
  };
  router.Add(std::move(r));
}

}  // namespace axqc::server::http
