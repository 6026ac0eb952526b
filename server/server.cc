#include "server.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <netdb.h>
#include <prometheus/exposer.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "auth.h"
#include "axqc/catalog.h"
#include "axqc/checker.h"
#include "failure_memory.h"
#include "http/api.h"
#include "http/hooks.h"
#include "http/listener.h"
#include "isolated_check.h"
#include "memory.h"
#include "model_source.h"
#include "process_metrics.h"
#include "reflection_v1.h"
#include "report_cache.h"
#include "service.h"
#include "store.h"

namespace axqc::server {

namespace {

constexpr const char* kServiceName = "axqc.v1.Checker";

void WriteReadyFile(const std::string& path, int grpc_port, int metrics_port, int http_port) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << "{\"grpc_port\":" << grpc_port << ",\"metrics_port\":" << metrics_port
        << ",\"http_port\":" << http_port << "}\n";
    if (!out) throw std::runtime_error("cannot write ready file " + path);
  }
  std::filesystem::rename(tmp, path);
}

}  // namespace

std::unique_ptr<Server> Server::Start(const ServerConfig& config, std::shared_ptr<Logger> logger,
                                      const ServerHooks& hooks) {
  ConfigureAllocator();
  std::unique_ptr<Server> s(new Server());
  s->config_ = config;
  FinalizeConfig(s->config_);
  const ServerConfig& c = s->config_;
  s->logger_ = std::move(logger);
  s->metrics_ = std::make_unique<Metrics>();

  if (!c.metrics_listen.empty()) {
    try {
      s->exposer_ = std::make_unique<prometheus::Exposer>(c.metrics_listen, 2);
    } catch (const std::exception& e) {
      throw std::runtime_error("metrics: cannot listen on " + c.metrics_listen + ": " + e.what());
    }
    s->exposer_->RegisterCollectable(s->metrics_->registry());
    s->process_collector_ = std::make_shared<ProcessCollector>();
    s->exposer_->RegisterCollectable(s->process_collector_);
    const auto ports = s->exposer_->GetListeningPorts();
    s->metrics_port_ = ports.empty() ? 0 : ports.front();
  }

  try {
    StoreOptions store_options;
    store_options.pool_size = c.store_pool_size;
    store_options.connect_timeout_seconds = c.store_connect_timeout_seconds;
    store_options.statement_timeout_seconds = c.store_statement_timeout_seconds;
    store_options.claim_lease_seconds = c.claim_lease_seconds;
    s->store_ = OpenStore(StoreLocation(c), store_options);
  } catch (const StoreError& e) {
    throw std::runtime_error(std::string("store: ") + e.what());
  }
  s->reports_ = std::make_unique<ReportCache>(c.cache_bytes, s->store_.get(), s->metrics_.get(),
                                              s->logger_.get());
  s->budget_ = std::make_unique<ByteBudget>(c.max_inflight_bytes, s->metrics_.get());
  s->paths_ = std::make_unique<PathResolver>(c.allowed_roots);
  s->io_ = std::make_unique<boost::asio::thread_pool>(c.io_threads);

  std::string token;
  if (!c.auth_token_file.empty()) token = ReadTokenFile(c.auth_token_file);

  ServiceDeps deps;
  deps.config = &s->config_;
  deps.logger = s->logger_.get();
  deps.metrics = s->metrics_.get();
  deps.store = s->store_.get();
  deps.reports = s->reports_.get();
  deps.budget = s->budget_.get();
  deps.paths = s->paths_.get();
  deps.io = s->io_.get();
  deps.draining = &s->draining_;
  deps.auth_token = token;

  deps.failures = std::make_shared<FailureMemory>(
      c.isolation == "process" ? c.worker_failure_memory_seconds : 0,
      static_cast<std::size_t>(c.worker_failure_memory_bytes), s->metrics_.get());
  ProtoCheckFn check;
  if (hooks.check) {
    check = ToProtoCheck(hooks.check);
  } else if (c.isolation == "process") {
    IsolatedChecker isolated = MakeIsolatedCheck(c, s->metrics_.get(), s->logger_.get());
    check = std::move(isolated.check);
    deps.render_html = std::move(isolated.render_html);
  } else {
    check =
        ToProtoCheck([](std::string_view bytes, const std::string& name,
                        const CheckOptions& options) { return CheckBytes(bytes, name, options); });
  }
  if (c.test_check_delay_seconds > 0) {
    s->logger_->Warn("test-check-delay-seconds is set: every check is slowed down (testing only)",
                     {{"seconds", c.test_check_delay_seconds}});
    check = [inner = std::move(check), delay = c.test_check_delay_seconds](
                const isolate::ModelBuffer& model, const std::string& name,
                const CheckOptions& options) {
      std::this_thread::sleep_for(std::chrono::duration<double>(delay));
      return inner(model, name, options);
    };
  }
  s->engine_ = std::make_unique<CheckEngine>(
      c.workers, c.queue_capacity, std::move(check),
      [reports = s->reports_.get()](const CheckJob& job,
                                    const std::shared_ptr<const CachedReport>& report) {
        reports->Store(job, report);
      },
      s->metrics_.get(),
      // Every check that ends (with or without report, or dropped from the queue) gives up its
      // claim, so that servers waiting for it read the report or check themselves. On the I/O
      // pool: a flight can end on a gRPC thread (cancellation), which must not wait for the store.
      [store = s->store_.get(), io = s->io_.get()](const std::string& key) {
        boost::asio::post(*io, [store, key] { store->ReleaseClaim(key); });
      });
  TrimPolicy trim;
  trim.idle_delay = std::chrono::milliseconds(
      static_cast<std::int64_t>(std::llround(c.memory_trim_idle_seconds * 1000)));
  trim.rss_ceiling = c.memory_trim_rss;
  s->trimmer_ = std::make_unique<MemoryTrimmer>(
      trim,
      [metrics = s->metrics_.get()](const char* reason) { metrics->CountMemoryTrim(reason); });
  s->engine_->set_memory_trimmer(s->trimmer_.get());
  s->reports_->set_memory_trimmer(s->trimmer_.get());
  deps.engine = s->engine_.get();
  s->service_ = std::make_unique<CheckerService>(deps);

  grpc::EnableDefaultHealthCheckService(true);
  // Server reflection: v1alpha from grpc++ itself, v1 (what current clients ask for) from
  // reflection_v1.cc; both describe the health service too.
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  LinkHealthDescriptors();
  s->reflection_v1_ = std::make_unique<ReflectionV1Service>(std::vector<std::string>{
      kServiceName, "grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection",
      "grpc.reflection.v1alpha.ServerReflection"});
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(c.listen, MakeServerCredentials(c), &port);
  // gRPC sets SO_REUSEPORT by default: a second server on the same port would bind as well and
  // take a share of the connections. Without it a port in use is a startup failure.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.RegisterService(s->service_.get());
  builder.RegisterService(s->reflection_v1_.get());
  builder.SetMaxReceiveMessageSize(GrpcReceiveLimit(c));
  builder.SetMaxSendMessageSize(-1);
  s->grpc_ = builder.BuildAndStart();
  if (s->grpc_ == nullptr || port == 0) {
    s->engine_->Shutdown();
    s->io_->join();
    throw std::runtime_error("grpc: cannot listen on " + c.listen +
                             " (the address is in use by another process, or cannot be bound)");
  }
  s->grpc_port_ = port;
  if (auto* health = s->grpc_->GetHealthCheckService()) {
    health->SetServingStatus(true);
    health->SetServingStatus(kServiceName, true);
  }
  if (!c.http_listen.empty()) {
    // The HTTP/JSON API: the same admission layer, handlers and state as the gRPC service.
    http::Api api;
    api.admission = &s->service_->admission();
    api.s = &s->service_->context();
    http::HookSettings hook_settings = http::LoadHookSettings(c);
    if (!hook_settings.mlflow_secret.empty() || !hook_settings.huggingface_secret.empty()) {
      s->hooks_ = std::make_unique<http::Hooks>(std::move(hook_settings), api.admission,
                                                &s->config_, s->logger_.get());
      api.hooks = s->hooks_.get();
    }
    http::ListenerOptions options;
    options.listen = c.http_listen;
    options.max_json_body = c.http_max_json_bytes;
    options.max_connections = c.http_max_connections;
    Metrics* metrics = s->metrics_.get();
    options.on_accept_error = [metrics](const std::string& reason) {
      metrics->CountAcceptError(reason);
    };
    options.on_refused = [metrics] { metrics->CountHttpConnectionRefused(); };
    options.on_connections = [metrics](int delta) {
      metrics->http_connections().Increment(static_cast<double>(delta));
    };
    // The Upload stream's idle timeout applies to HTTP request bodies as well.
    options.body_idle_timeout = std::chrono::milliseconds(
        static_cast<std::int64_t>(std::llround(c.upload_idle_timeout_seconds * 1e3)));
    options.tls_cert_file = c.tls_cert_file;
    options.tls_key_file = c.tls_key_file;
    options.tls_client_ca_file = c.tls_client_ca_file;
    // On failure ~Server shuts the started parts down.
    s->http_ = std::make_unique<http::Listener>(options, http::BuildRouter(api), s->logger_.get());
    s->http_port_ = s->http_->port();
  }
  if (s->hooks_ != nullptr) {
    // Deliveries recorded before a restart, and retries, are worked on from now on.
    try {
      s->hooks_->Start();
    } catch (const StoreError& e) {
      throw std::runtime_error(std::string("store: webhook deliveries: ") + e.what());
    }
  }
  if (!c.ready_file.empty()) {
    WriteReadyFile(c.ready_file, s->grpc_port_, s->metrics_port_, s->http_port_);
  }

  s->logger_->Info("serving", {{"grpc_port", s->grpc_port_},
                               {"metrics_port", s->metrics_port_},
                               {"http_port", s->http_port_},
                               {"listen", c.listen},
                               {"metrics_listen", c.metrics_listen},
                               {"store", s->store_->Describe()},
                               {"workers", c.workers},
                               {"isolation", hooks.check ? "test" : c.isolation},
                               {"queue_capacity", c.queue_capacity},
                               {"allowed_roots", c.allowed_roots},
                               {"url_allow_hosts", c.url_allow_hosts},
                               {"auth", !token.empty()},
                               {"tls", TlsEnabled(c)},
                               {"mtls", !c.tls_client_ca_file.empty()},
                               {"version", std::string(ToolVersion())},
                               {"rule_set_version", std::string(kRuleSetVersion)}});
  return s;
}

void Server::SetNotServing() {
  draining_.store(true);
  if (grpc_ != nullptr) {
    if (auto* health = grpc_->GetHealthCheckService()) {
      // Sets every service NOT_SERVING (and notifies Watch streams); later updates are ignored.
      health->Shutdown();
    }
  }
}

void Server::Shutdown() {
  std::lock_guard<std::mutex> lock(shutdown_mu_);
  if (shut_down_ || grpc_ == nullptr) return;  // already done, or Start() failed half-way
  shut_down_ = true;
  const auto t0 = std::chrono::steady_clock::now();
  logger_->Info("shutdown started", {{"grace_period_seconds", config_.grace_period_seconds},
                                     {"shutdown_delay_seconds", config_.shutdown_delay_seconds},
                                     {"queued_checks", engine_->queue_depth()},
                                     {"running_checks", engine_->busy_workers()}});
  SetNotServing();
  // No new attempt of a webhook delivery; those in progress end with the checks (a cancelled one
  // is retried after the restart).
  if (hooks_ != nullptr) hooks_->Stop();
  if (config_.shutdown_delay_seconds > 0) {
    std::this_thread::sleep_for(std::chrono::duration<double>(config_.shutdown_delay_seconds));
  }
  // Stops accepting; in-flight RPCs get the grace period, then are cancelled.
  auto lap = [last = std::chrono::steady_clock::now()]() mutable {
    const auto now = std::chrono::steady_clock::now();
    const double ms = std::chrono::duration<double, std::milli>(now - last).count();
    last = now;
    return std::round(ms * 10) / 10;
  };
  grpc_->Shutdown(std::chrono::system_clock::now() +
                  std::chrono::duration_cast<std::chrono::system_clock::duration>(
                      std::chrono::duration<double>(config_.grace_period_seconds)));
  const double rpc_drain_ms = lap();
  engine_->Shutdown();
  const double checks_ms = lap();
  io_->join();
  const double io_ms = lap();
  // Every HTTP request has been answered (its call finished with the I/O pool): close the port.
  if (http_ != nullptr) http_->Stop();
  bool flushed = true;
  try {
    store_->Flush();
  } catch (const StoreError& e) {
    flushed = false;
    logger_->Error("store flush failed", {{"error", e.what()}});
  }
  const double flush_ms = lap();
  logger_->Info(
      "shutdown complete",
      {{"duration_ms",
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count()},
       {"rpc_drain_ms", rpc_drain_ms},
       {"checks_ms", checks_ms},
       {"io_ms", io_ms},
       {"flush_ms", flush_ms},
       {"store_flushed", flushed}});
}

Server::~Server() {
  Shutdown();
  http_.reset();
  hooks_.reset();
  grpc_.reset();
  reflection_v1_.reset();
  service_.reset();
  engine_.reset();
  io_.reset();
  store_.reset();
  StopExposer();
}

void Server::StopExposer() {
  if (exposer_ == nullptr) return;
  // civetweb's listener thread notices the stop flag only when its poll() returns, which takes up
  // to two seconds on an idle port. Connecting to the port while the exposer is being destroyed
  // wakes it, so shutdown takes milliseconds.
  std::atomic<bool> stopped{false};
  std::thread waker([&] {
    std::string host = "127.0.0.1";
    const auto colon = config_.metrics_listen.rfind(':');
    if (colon != std::string::npos && colon > 0) {
      std::string h = config_.metrics_listen.substr(0, colon);
      if (h.size() >= 2 && h.front() == '[') h = h.substr(1, h.size() - 2);
      if (h == "::") {
        host = "::1";
      } else if (h != "0.0.0.0" && !h.empty()) {
        host = h;
      }
    }
    const std::string port = std::to_string(metrics_port_);
    while (!stopped.load()) {
      addrinfo hints{};
      hints.ai_socktype = SOCK_STREAM;
      addrinfo* res = nullptr;
      if (::getaddrinfo(host.c_str(), port.c_str(), &hints, &res) == 0 && res != nullptr) {
        const int fd = ::socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC, res->ai_protocol);
        if (fd >= 0) {
          (void)::connect(fd, res->ai_addr, res->ai_addrlen);
          ::close(fd);
        }
        ::freeaddrinfo(res);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  exposer_.reset();
  stopped.store(true);
  waker.join();
}

}  // namespace axqc::server
