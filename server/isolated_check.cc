#include "isolated_check.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include "worker_pool.h"

namespace axqc::server {

IsolatedChecker MakeIsolatedCheck(const ServerConfig& config, Metrics* metrics, Logger* logger) {
  isolate::PoolOptions options;
  options.program =
      config.worker_program.empty() ? isolate::FindWorkerProgram() : config.worker_program;
  options.size = config.workers;
  options.memory_limit = config.worker_memory_limit != 0
                             ? config.worker_memory_limit
                             : isolate::DefaultMemoryLimit(config.workers);
  options.cpu_seconds = config.worker_cpu_seconds;
  options.max_checks = config.worker_max_checks;
  options.max_rss_bytes = config.worker_max_rss;
  options.on_restart = [metrics, logger](isolate::RestartCause cause, isolate::Failure failure) {
    const char* label = isolate::RestartCauseName(cause, failure);
    metrics->CountWorkerRestart(label);
    if (cause == isolate::RestartCause::kFailure) {
      logger->Warn("worker process replaced", {{"cause", label}});
    } else if (cause == isolate::RestartCause::kIdleExit) {
      // Killed from outside while it had no check (the OOM killer, an operator): no model's fault.
      logger->Warn("worker process died while idle; replaced", {{"cause", label}});
    }
  };
  options.on_rss = [metrics](std::uint64_t sum, std::uint64_t max) {
    metrics->SetWorkerResidentBytes(static_cast<double>(sum), static_cast<double>(max));
  };
  auto pool = std::make_shared<isolate::WorkerPool>(std::move(options));
  metrics->SetWorkerResidentBytes(0, 0);
  IsolatedChecker out;
  out.render_html = [pool](const v1::Report& report, const HtmlOptions& html) {
    const std::string bytes = report.SerializeAsString();
    isolate::CheckInput input;
    input.bytes = bytes;
    input.name = report.model().file();  // what the page is about (logs, tests)
    input.task = isolate::Task::kRenderHtml;
    input.html.rules_url = html.rules_url;
    input.html.home_url = html.home_url;
    input.html.home_label = html.home_label;
    input.html.repair_by_file_name = html.repair_by_file_name;
    input.html.hops = static_cast<std::uint32_t>(std::max(0, html.hops));
    auto u32 = [](std::size_t v) {
      return static_cast<std::uint32_t>(std::min<std::size_t>(v, UINT32_MAX));
    };
    input.html.view_max_nodes = u32(html.view_max_nodes);
    input.html.whole_model_max_nodes = u32(html.whole_model_max_nodes);
    input.html.view_max_edges = u32(html.view_max_edges);
    input.html.whole_model_max_edges = u32(html.whole_model_max_edges);
    input.html.layout_seconds = html.layout_seconds;
    isolate::CheckResult r = pool->Check(input);
    if (r.failure != isolate::Failure::kNone) {
      // The failure is the rendering's (a crash, the CPU or memory limit): the worker was replaced.
      throw std::runtime_error("the HTML report's layout failed in worker process " +
                               std::to_string(r.worker) + ": " + isolate::FailureMessage(r));
    }
    if (r.kind != isolate::ResultKind::kReport) {
      throw std::runtime_error("the HTML report could not be made: " + r.error);
    }
    return std::move(r.report);
  };
  out.check = [pool, metrics](const isolate::ModelBuffer& model, const std::string& name,
                              const CheckOptions& check_options) -> v1::Report {
    isolate::CheckInput input;
    input.model = &model;  // a sealed memfd: handed to the worker as it is
    input.sha256 = check_options.known_sha256;
    input.name = name;
    input.options = check_options;
    if (check_options.external_data != nullptr) {
      // The engine's data files (CheckJob::data) are descriptors the worker gets as they are.
      input.data_files = dynamic_cast<const isolate::DataFileSet*>(check_options.external_data);
      if (input.data_files == nullptr) {
        throw std::runtime_error("external data files must be descriptors for a worker process");
      }
      input.options.external_data = nullptr;
    }
    isolate::CheckResult r = pool->Check(input);
    using isolate::Failure;
    if (r.failure != Failure::kNone && r.not_started) {
      // No worker took the check: nothing ran, nothing is counted as a worker check.
      throw CheckerFailure(CheckerFailure::Cause::kUnavailable,
                           "the checker's worker processes are unavailable: " + r.error);
    }
    if (r.failure != Failure::kNone) {
      metrics->CountWorkerCheck(isolate::FailureName(r.failure));
      CheckerFailure::Cause cause = CheckerFailure::Cause::kWorker;
      switch (r.failure) {
        case Failure::kCrashed:
          cause = CheckerFailure::Cause::kCrashed;
          break;
        case Failure::kMemory:
          cause = CheckerFailure::Cause::kMemory;
          break;
        case Failure::kCpuTime:
          cause = CheckerFailure::Cause::kCpuTime;
          break;
        case Failure::kDeadline:
          cause = CheckerFailure::Cause::kDeadline;
          break;
        default:
          break;
      }
      throw CheckerFailure(cause, isolate::FailureMessage(r), r.worker);
    }
    switch (r.kind) {
      case isolate::ResultKind::kReport: {
        metrics->CountWorkerCheck("ok");
        v1::Report proto;
        if (!proto.ParseFromString(r.report)) {
          throw std::runtime_error("the worker's report does not parse");
        }
        return proto;
      }
      case isolate::ResultKind::kInputError:
        metrics->CountWorkerCheck("input_error");
        throw InputError(r.error);
      default:
        metrics->CountWorkerCheck("internal_error");
        throw std::runtime_error(r.error);
    }
  };
  return out;
}

}  // namespace axqc::server
