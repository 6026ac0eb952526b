// `axqc check --isolate`: the checker in one sandboxed worker process (isolate/worker_pool.h),
// the same worker and sandbox as axqc-server's. Reports are identical to in-process checks.
#pragma once

#include <memory>
#include <string>

#include "axqc/checker.h"

namespace axqc::cli {

class IsolatedChecker {
 public:
  virtual ~IsolatedChecker() = default;
  // Like CheckFile: throws InputError for an unreadable model, std::runtime_error when the worker
  // failed on it ("the checker crashed on this model (signal 11: SIGSEGV)", memory limit).
  virtual Report Check(const std::string& path, const CheckOptions& options) = 0;
};

// Starts the worker. Throws std::runtime_error (worker missing, built without isolation).
std::unique_ptr<IsolatedChecker> MakeIsolatedChecker();

}  // namespace axqc::cli
