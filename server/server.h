// axqc-server as a library: builds the store, cache, worker pool, gRPC server (axqc.v1.Checker,
// grpc.health.v1, reflection) and the Prometheus exposer from a ServerConfig. Tests start it
// in-process on a loopback port; main.cc wraps it with signal handling.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "check_engine.h"
#include "config.h"
#include "logger.h"
#include "metrics.h"

namespace grpc {
class Server;
}
namespace prometheus {
class Exposer;
}
namespace boost::asio {
class thread_pool;
}

namespace axqc::server {

namespace http {
class Hooks;
class Listener;
}  // namespace http

class ReportStore;
class ReportCache;
class ByteBudget;
class PathResolver;
class CheckerService;
class ProcessCollector;
class ReflectionV1Service;

struct ServerHooks {
  CheckFn check;  // replaces axqc::CheckBytes when set (tests)
};

class Server {
 public:
  // Starts serving. Throws std::runtime_error (with a message naming the failing part) when a
  // port cannot be bound, the store cannot be opened, an allowed root is missing, ...
  static std::unique_ptr<Server> Start(const ServerConfig& config, std::shared_ptr<Logger> logger,
                                       const ServerHooks& hooks = {});
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  int grpc_port() const { return grpc_port_; }
  int metrics_port() const { return metrics_port_; }  // 0 when metrics are disabled
  int http_port() const { return http_port_; }        // 0 when the HTTP API is disabled
  Metrics& metrics() { return *metrics_; }
  const ServerConfig& config() const { return config_; }

  // Graceful shutdown: health NOT_SERVING, new RPCs refused with UNAVAILABLE, wait
  // shutdown_delay, stop accepting and drain in-flight RPCs for up to the grace period (then
  // cancel them), wait for running checks, flush the store. Idempotent; blocks until done.
  void Shutdown();
  // Health status only (for tests and the first step of Shutdown).
  void SetNotServing();

 private:
  Server() = default;
  void StopExposer();

  ServerConfig config_;
  std::shared_ptr<Logger> logger_;
  std::unique_ptr<Metrics> metrics_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  std::shared_ptr<ProcessCollector> process_collector_;
  std::unique_ptr<ReportStore> store_;
  std::unique_ptr<ReportCache> reports_;
  std::unique_ptr<ByteBudget> budget_;
  std::unique_ptr<PathResolver> paths_;
  std::unique_ptr<boost::asio::thread_pool> io_;
  std::unique_ptr<MemoryTrimmer> trimmer_;  // outlives the engine
  std::unique_ptr<CheckEngine> engine_;
  std::unique_ptr<CheckerService> service_;
  std::unique_ptr<ReflectionV1Service> reflection_v1_;
  std::unique_ptr<grpc::Server> grpc_;
  std::unique_ptr<http::Hooks> hooks_;
  std::unique_ptr<http::Listener> http_;
  std::atomic<bool> draining_{false};
  std::mutex shutdown_mu_;
  bool shut_down_ = false;
  int grpc_port_ = 0;
  int metrics_port_ = 0;
  int http_port_ = 0;
};

}  // namespace axqc::server
