// A job run on a second thread beside the caller's work (axqc::SetParallelChecks).
#pragma once

#include <exception>
#include <functional>
#include <system_error>
#include <thread>
#include <utility>

namespace axqc::detail {

// Beside(parallel, job) starts `job` on a new thread when `parallel`; otherwise (or when no thread
// can be started) it runs `job` right away, in the constructor, so that the sequential order is
// the order of the source. Join() waits for the job and rethrows what it threw. The destructor
// joins too (the job may refer to the caller's locals), dropping the job's exception: an
// exception already on its way out of the caller wins.
class Beside {
 public:
  Beside(bool parallel, std::function<void()> job) : job_(std::move(job)) {
    if (parallel) {
      try {
        thread_ = std::thread([this] { Run(); });
        return;
      } catch (const std::system_error&) {
        // No thread (resource limits, a sandbox): run it here.
      }
    }
    job_();
  }
  Beside(const Beside&) = delete;
  Beside& operator=(const Beside&) = delete;
  ~Beside() {
    if (thread_.joinable()) thread_.join();
  }

  void Join() {
    if (thread_.joinable()) thread_.join();
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  }

 private:
  void Run() {
    try {
      job_();
    } catch (...) {
      error_ = std::current_exception();
    }
  }
  std::function<void()> job_;
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace axqc::detail
