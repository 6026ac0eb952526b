// The checker in worker processes (--isolation process): a pool of axqc-worker processes
// (isolate/worker_pool.h) behind a CheckFn. A worker's failure becomes a CheckerFailure; the
// restarts, outcomes and resident sizes go to the metrics.
#pragma once

#include "check_engine.h"
#include "config.h"
#include "logger.h"
#include "metrics.h"

namespace axqc::server {

// Starts the pool (config.workers processes) and returns the checker that uses it (the worker's
// report is parsed, not converted); the pool lives as long as the function. Throws
// std::runtime_error when the workers cannot start.
ProtoCheckFn MakeIsolatedCheck(const ServerConfig& config, Metrics* metrics, Logger* logger);

}  // namespace axqc::server
