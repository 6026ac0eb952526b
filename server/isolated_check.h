// The checker in worker processes (--isolation process): a pool of axqc-worker processes
// (isolate/worker_pool.h) behind a CheckFn. A worker's failure becomes a CheckerFailure; the
// restarts, outcomes and resident sizes go to the metrics.
#pragma once

#include "check_engine.h"
#include "config.h"
#include "logger.h"
#include "metrics.h"

namespace axqc::server {

// The checker and the HTML renderer of one pool of workers; the pool lives as long as either.
struct IsolatedChecker {
  ProtoCheckFn check;        // the worker's report is parsed, not converted
  HtmlRenderFn render_html;  // the report's HTML report, laid out in a worker (Task::kRenderHtml)
};

// Starts the pool (config.workers processes). Throws std::runtime_error when the workers cannot
// start.
IsolatedChecker MakeIsolatedCheck(const ServerConfig& config, Metrics* metrics, Logger* logger);

}  // namespace axqc::server
