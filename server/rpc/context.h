// What every RPC handler works with: the service's dependencies (built by server.cc) and the state
// the service owns (upload byte budget and idle watchdog, the keys with a check in progress).
#pragma once

#include <atomic>
#include <boost/asio/thread_pool.hpp>
#include <memory>
#include <string>

#include "check_engine.h"
#include "config.h"
#include "failure_memory.h"
#include "idle_watchdog.h"
#include "key_watch.h"
#include "logger.h"
#include "metrics.h"
#include "model_source.h"
#include "report_cache.h"
#include "store.h"

namespace axqc::server {

struct ServiceDeps {
  const ServerConfig* config = nullptr;
  Logger* logger = nullptr;
  Metrics* metrics = nullptr;
  ReportStore* store = nullptr;
  ReportCache* reports = nullptr;  // memory LRU + store + gauges: every report lookup goes here
  CheckEngine* engine = nullptr;
  ByteBudget* budget = nullptr;
  const PathResolver* paths = nullptr;
  boost::asio::thread_pool* io = nullptr;
  const std::atomic<bool>* draining = nullptr;
  std::string auth_token;  // empty: no authentication
  // Models that made a worker process fail, answered at once for a while (isolation).
  std::shared_ptr<FailureMemory> failures;
  // The HTML report's layout: in a worker process with --isolation process, else in-process.
  HtmlRenderFn render_html = RenderHtmlInProcess;
};

struct ServiceContext {
  explicit ServiceContext(ServiceDeps service_deps);

  const ServiceDeps deps;
  // Bytes of Upload streams still being received (--max-inflight-upload-bytes).
  ByteBudget upload_budget;
  // Ends Upload streams that stay silent (--upload-idle-timeout-seconds).
  IdleWatchdog upload_watchdog;
  // Keys with a check in progress on this server (GetReport waits for them).
  KeyWatch watch;
};

}  // namespace axqc::server
