// Runs checks on a Boost.Asio thread pool behind a bounded queue, with single flight: concurrent
// requests for the same cache key (model bytes + options + rule-set version) share one check.
// A waiter that goes away (cancelled, deadline) is removed; a queued check without waiters leaves
// the queue and frees its slot. A running check cannot be interrupted: it completes, and its
// report is still persisted and cached.
#pragma once

#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "axqc/checker.h"
#include "axqc/render_graph.h"
#include "axqc/v1/axqc.pb.h"
#include "cached_report.h"
#include "data_files.h"
#include "memory.h"
#include "metrics.h"
#include "model_buffer.h"

namespace axqc::server {

// The checker; axqc::CheckBytes in production, replaceable in tests. The options carry the
// model's sha256 as the server computed it (CheckOptions::known_sha256): the loader does not hash
// the bytes again.
using CheckFn =
    std::function<Report(std::string_view bytes, const std::string& name, const CheckOptions&)>;
// A checker that answers with the report in its protobuf form, the form the engine keeps (worker
// processes send that form: no conversion to the core's Report and back). It gets the sealed
// model buffer itself, so that a worker process can be handed its memfd.
using ProtoCheckFn = std::function<v1::Report(const isolate::ModelBuffer& model,
                                              const std::string& name, const CheckOptions&)>;
// `check` of the buffer's bytes followed by the conversion to protobuf.
ProtoCheckFn ToProtoCheck(CheckFn check);

// Lays out the HTML report of a report (axqc::RenderHtml). In-process (RenderHtmlInProcess) or,
// with --isolation process, in a worker process under the limits of a check. Throws
// std::runtime_error with the cause when the document could not be made.
using HtmlRenderFn = std::function<std::string(const v1::Report& report, const HtmlOptions&)>;
std::string RenderHtmlInProcess(const v1::Report& report, const HtmlOptions& options);

// Thrown by a CheckFn whose checker ran in a worker process that failed on the model
// (--isolation process): the request is answered with the cause (check_pipeline.cc).
// kUnavailable: no worker took the check (each one tried was gone before it received the model,
// or none was available): not the model's failure, never remembered (failure_memory.h).
class CheckerFailure : public std::runtime_error {
 public:
  enum class Cause { kCrashed, kMemory, kCpuTime, kDeadline, kWorker, kUnavailable };
  // `worker`: the serial number of the worker process the check failed in (0: none).
  CheckerFailure(Cause cause, const std::string& message, std::uint64_t worker = 0)
      : std::runtime_error(message), cause_(cause), worker_(worker) {}
  Cause cause() const { return cause_; }
  std::uint64_t worker() const { return worker_; }

 private:
  Cause cause_;
  std::uint64_t worker_;
};

struct CheckJob {
  std::string key;     // cache key
  std::string sha256;  // computed by this server from `bytes`
  std::string name;
  std::string options_key;
  CheckOptions options;
  std::shared_ptr<const isolate::ModelBuffer> bytes;  // sealed
  // The model's external data files (CheckOptions::external_data), or null. With them, `sha256`
  // is the bundle hash (DataFileSet::BundleSha256).
  std::shared_ptr<const isolate::DataFileSet> data;
  // With data files: the sha256 of the graph file alone. The report's sha256 becomes the
  // external-read key of the graph and the bytes the check read (external_reads.h); its report is
  // stored under that key too.
  std::string graph_sha256;
};

struct CheckOutcome {
  // kRangesNeeded, kRangesRefused: a ranged upload whose check read other bytes than were sent
  // (external_reads.h): the client's part, never the model's.
  enum class Kind {
    kReport,
    kInputError,
    kInternalError,
    kShutdown,
    kCheckerFailed,
    kRangesNeeded,
    kRangesRefused
  };
  Kind kind = Kind::kInternalError;
  std::shared_ptr<const CachedReport> report;                     // kReport
  std::string error;                                              // otherwise
  CheckerFailure::Cause cause = CheckerFailure::Cause::kCrashed;  // kCheckerFailed
  std::uint64_t worker = 0;                                       // kCheckerFailed
  bool shared = false;                     // this waiter joined a check started by another request
  std::vector<ExternalFileRanges> needed;  // kRangesNeeded
};

using Completion = std::function<void(const CheckOutcome&)>;
// Called once per successful check, on the worker, before any waiter is completed.
using ResultSink = std::function<void(const CheckJob&, const std::shared_ptr<const CachedReport>&)>;
// Called once for every flight (one check of a key) that ends: after the check ran (any outcome,
// after the sink), when its last waiter left it in the queue, or when shutdown dropped it.
using FlightEnd = std::function<void(const std::string& key)>;

class CheckEngine {
 public:
  CheckEngine(unsigned workers, std::size_t queue_capacity, ProtoCheckFn check, ResultSink sink,
              Metrics* metrics, FlightEnd flight_end = {});
  CheckEngine(unsigned workers, std::size_t queue_capacity, CheckFn check, ResultSink sink,
              Metrics* metrics, FlightEnd flight_end = {})
      : CheckEngine(workers, queue_capacity, ToProtoCheck(std::move(check)), std::move(sink),
                    metrics, std::move(flight_end)) {}
  ~CheckEngine();
  CheckEngine(const CheckEngine&) = delete;
  CheckEngine& operator=(const CheckEngine&) = delete;

  enum class SubmitStatus { kQueued, kJoined, kQueueFull, kStopped };
  struct Ticket {
    SubmitStatus status;
    std::uint64_t waiter = 0;  // for Cancel; valid for kQueued and kJoined
  };
  // `done` is called exactly once unless the waiter is cancelled first (then never), on a worker
  // thread (or the caller of Shutdown). `admitted`, when set, is called with the status before
  // Submit returns and before `done` can run (under the engine's lock: keep it short).
  Ticket Submit(CheckJob job, Completion done,
                const std::function<void(SubmitStatus)>& admitted = {});
  // Removes the waiter; returns true when it was still waiting (its completion will not run).
  bool Cancel(const std::string& key, std::uint64_t waiter);
  // Stops accepting, fails queued checks with kShutdown, waits for running checks.
  void Shutdown();

  // True while a check of `key` is queued or running.
  bool HasFlight(const std::string& key) const;
  std::size_t queue_depth() const;
  // Told when each check starts and ends (server/memory.h: when to give freed memory back).
  // Set before the first Submit; null (the default): no trimming.
  void set_memory_trimmer(MemoryTrimmer* trimmer) { trimmer_ = trimmer; }
  unsigned busy_workers() const;
  unsigned workers() const { return workers_; }

 private:
  using Clock = std::chrono::steady_clock;
  struct Flight {
    CheckJob job;
    std::uint64_t originator = 0;
    std::vector<std::pair<std::uint64_t, Completion>> waiters;
    Clock::time_point enqueued;
    bool running = false;
  };
  void DispatchLocked();
  void Run(const std::shared_ptr<Flight>& flight);
  void UpdateGaugesLocked();

  const unsigned workers_;
  const std::size_t capacity_;
  ProtoCheckFn check_;
  ResultSink sink_;
  Metrics* metrics_;
  FlightEnd flight_end_;
  MemoryTrimmer* trimmer_ = nullptr;
  boost::asio::thread_pool pool_;

  mutable std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<Flight>> flights_;
  std::deque<std::shared_ptr<Flight>> pending_;
  unsigned busy_ = 0;
  std::uint64_t next_waiter_ = 1;
  bool stopped_ = false;
  bool joined_ = false;
};

}  // namespace axqc::server
