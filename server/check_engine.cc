#include "check_engine.h"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <exception>

#include "axqc/wire/report_proto.h"
#include "external_reads.h"

namespace axqc::server {

ProtoCheckFn ToProtoCheck(CheckFn check) {
  return [check = std::move(check)](const isolate::ModelBuffer& model, const std::string& name,
                                    const CheckOptions& options) {
    return wire::ToProto(check(model.view(), name, options));
  };
}

std::string RenderHtmlInProcess(const v1::Report& report, const HtmlOptions& options) {
  return RenderHtml(wire::FromProto(report), options);
}

CheckEngine::CheckEngine(unsigned workers, std::size_t queue_capacity, ProtoCheckFn check,
                         ResultSink sink, Metrics* metrics, FlightEnd flight_end)
    : workers_(std::max(1u, workers)),
      capacity_(queue_capacity),
      check_(std::move(check)),
      sink_(std::move(sink)),
      metrics_(metrics),
      flight_end_(std::move(flight_end)),
      pool_(workers_) {
  metrics_->workers().Set(workers_);
  metrics_->queue_capacity().Set(static_cast<double>(capacity_));
}

CheckEngine::~CheckEngine() { Shutdown(); }

CheckEngine::Ticket CheckEngine::Submit(CheckJob job, Completion done,
                                        const std::function<void(SubmitStatus)>& admitted) {
  std::lock_guard<std::mutex> lock(mu_);
  auto status = [&](SubmitStatus st) {
    if (admitted) admitted(st);
    return st;
  };
  if (stopped_) return {status(SubmitStatus::kStopped), 0};
  const std::uint64_t id = next_waiter_++;
  if (auto it = flights_.find(job.key); it != flights_.end()) {
    it->second->waiters.emplace_back(id, std::move(done));
    return {status(SubmitStatus::kJoined), id};
  }
  if (busy_ >= workers_ && pending_.size() >= capacity_) {
    return {status(SubmitStatus::kQueueFull), 0};
  }
  status(SubmitStatus::kQueued);
  auto flight = std::make_shared<Flight>();
  flight->originator = id;
  flight->waiters.emplace_back(id, std::move(done));
  flight->enqueued = Clock::now();
  const std::string key = job.key;
  flight->job = std::move(job);
  flights_.emplace(key, flight);
  pending_.push_back(std::move(flight));
  DispatchLocked();
  UpdateGaugesLocked();
  return {SubmitStatus::kQueued, id};
}

bool CheckEngine::Cancel(const std::string& key, std::uint64_t waiter) {
  bool dropped = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = flights_.find(key);
    if (it == flights_.end()) return false;
    auto flight = it->second;
    auto& ws = flight->waiters;
    auto w = std::find_if(ws.begin(), ws.end(), [&](const auto& p) { return p.first == waiter; });
    if (w == ws.end()) return false;
    ws.erase(w);
    if (ws.empty() && !flight->running) {
      pending_.erase(std::remove(pending_.begin(), pending_.end(), flight), pending_.end());
      flights_.erase(it);
      UpdateGaugesLocked();
      dropped = true;
    }
  }
  if (dropped && flight_end_) flight_end_(key);
  return true;
}

void CheckEngine::DispatchLocked() {
  while (busy_ < workers_ && !pending_.empty()) {
    auto flight = std::move(pending_.front());
    pending_.pop_front();
    flight->running = true;
    ++busy_;
    metrics_->ObserveQueueWait(
        std::chrono::duration<double>(Clock::now() - flight->enqueued).count());
    boost::asio::post(pool_, [this, flight]() { Run(flight); });
  }
}

void CheckEngine::UpdateGaugesLocked() {
  metrics_->queue_depth().Set(static_cast<double>(pending_.size()));
  metrics_->busy_workers().Set(busy_);
}

void CheckEngine::Run(const std::shared_ptr<Flight>& flight) {
  CheckOutcome outcome;
  if (trimmer_ != nullptr) trimmer_->CheckStarted();
  const auto start = Clock::now();
  StageTimings timings;
  CheckOptions options = flight->job.options;
  options.timings = &timings;
  options.known_sha256 = flight->job.sha256;
  options.external_data = flight->job.data.get();
  try {
    auto proto = check_(*flight->job.bytes, flight->job.name, options);
    auto* model = proto.mutable_model();
    if (model->sha256().empty()) model->set_sha256(flight->job.sha256);
    if (model->size_bytes() == 0) model->set_size_bytes(flight->job.bytes->size());
    if (flight->job.data != nullptr) {
      SettleExternalReads(proto, *flight->job.data, flight->job.graph_sha256);
    } else {
      proto.clear_external_reads();
    }
    outcome.kind = CheckOutcome::Kind::kReport;
    outcome.report = MakeCachedReport(std::move(proto));
  } catch (const ExternalRangesNeeded& e) {
    outcome.kind = CheckOutcome::Kind::kRangesNeeded;
    outcome.error = e.what();
    outcome.needed = e.needed();
  } catch (const ExternalRangesRefused& e) {
    outcome.kind = CheckOutcome::Kind::kRangesRefused;
    outcome.error = e.what();
  } catch (const CheckerFailure& e) {
    outcome.kind = CheckOutcome::Kind::kCheckerFailed;
    outcome.cause = e.cause();
    outcome.worker = e.worker();
    outcome.error = e.what();
  } catch (const InputError& e) {
    outcome.kind = CheckOutcome::Kind::kInputError;
    outcome.error = e.what();
  } catch (const std::exception& e) {
    outcome.kind = CheckOutcome::Kind::kInternalError;
    outcome.error = e.what();
  }
  metrics_->ObserveStage("check", std::chrono::duration<double>(Clock::now() - start).count());
  // The checker's own stages (those that ran).
  const std::pair<const char*, double> stages[] = {
      {"check_parse", timings.parse_s},  {"check_onnx", timings.onnx_check_s},
      {"check_index", timings.index_s},  {"check_quant", timings.quant_s},
      {"check_units", timings.units_s},  {"check_rules", timings.rules_s},
      {"check_report", timings.report_s}};
  for (const auto& [stage, seconds] : stages) {
    if (seconds > 0) metrics_->ObserveStage(stage, seconds);
  }
  if (outcome.kind == CheckOutcome::Kind::kReport && sink_) {
    sink_(flight->job, outcome.report);
    // A model with data files: its report is also stored under its external-read key (the key a
    // ranged upload of the same model has).
    const std::string& read_key = outcome.report->proto().model().sha256();
    const CheckJob& job = flight->job;
    if (job.data != nullptr && read_key != job.sha256 && job.key.starts_with(job.sha256)) {
      CheckJob alias;
      alias.key = read_key + job.key.substr(job.sha256.size());
      alias.sha256 = read_key;
      alias.options_key = job.options_key;
      sink_(alias, outcome.report);
    }
  }
  if (flight_end_) flight_end_(flight->job.key);
  const std::size_t model_bytes = flight->job.bytes != nullptr ? flight->job.bytes->size() : 0;
  flight->job.bytes.reset();  // the model's memory is given back before any waiter is answered
  if (trimmer_ != nullptr) trimmer_->CheckEnded(model_bytes);

  std::vector<std::pair<std::uint64_t, Completion>> waiters;
  {
    std::lock_guard<std::mutex> lock(mu_);
    waiters = std::move(flight->waiters);
    flight->waiters.clear();
    flights_.erase(flight->job.key);
    --busy_;
    if (!stopped_) DispatchLocked();
    UpdateGaugesLocked();
  }
  for (auto& [id, done] : waiters) {
    CheckOutcome o = outcome;
    o.shared = id != flight->originator;
    done(o);
  }
}

void CheckEngine::Shutdown() {
  std::vector<std::shared_ptr<Flight>> dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (joined_) return;
    stopped_ = true;
    dropped.assign(pending_.begin(), pending_.end());
    pending_.clear();
    for (const auto& f : dropped) flights_.erase(f->job.key);
    UpdateGaugesLocked();
  }
  for (auto& f : dropped) {
    if (flight_end_) flight_end_(f->job.key);
    CheckOutcome o;
    o.kind = CheckOutcome::Kind::kShutdown;
    o.error = "the server is shutting down";
    for (auto& [id, done] : f->waiters) done(o);
  }
  pool_.join();
  std::lock_guard<std::mutex> lock(mu_);
  joined_ = true;
}

bool CheckEngine::HasFlight(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  return flights_.count(key) != 0;
}

std::size_t CheckEngine::queue_depth() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pending_.size();
}

unsigned CheckEngine::busy_workers() const {
  std::lock_guard<std::mutex> lock(mu_);
  return busy_;
}

}  // namespace axqc::server
