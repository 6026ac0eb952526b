// axqc-server: the conformance checker service. See docs/operations.md.
#include <absl/synchronization/mutex.h>
#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "config.h"
#include "logger.h"
#include "server.h"

int main(int argc, char** argv) {
  // Block SIGTERM/SIGINT before any thread exists: every thread inherits the mask and the main
  // thread receives them with sigwait.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  // A client that disconnects must never kill the process.
  signal(SIGPIPE, SIG_IGN);
  // gRPC locks Abseil mutexes on every call. Debian's Abseil is built with its lock-order
  // (deadlock) detection on, which keeps a graph of every mutex and lock edge: a few percent of
  // the server's CPU on cached lookups (docs/performance.md). The server's own locks are
  // std::mutex.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);

  axqc::server::ConfigResult parsed;
  try {
    parsed = axqc::server::LoadConfig(std::vector<std::string>(argv, argv + argc),
                                      axqc::server::ProcessEnv());
  } catch (const std::exception& e) {
    std::cerr << "axqc-server: configuration error: " << e.what() << "\n";
    return 2;
  }
  for (const auto& note : parsed.notes) std::cerr << "axqc-server: note: " << note << "\n";
  if (parsed.exit_code) {
    (*parsed.exit_code == 0 ? std::cout : std::cerr) << parsed.message;
    return *parsed.exit_code;
  }

  std::shared_ptr<axqc::server::Logger> logger;
  try {
    logger = std::make_shared<axqc::server::Logger>(
        axqc::server::ParseLogLevel(parsed.config.log_level), parsed.config.log_file);
  } catch (const std::exception& e) {
    std::cerr << "axqc-server: " << e.what() << "\n";
    return 2;
  }

  if (!parsed.config.log_file.empty()) {
    for (const auto& note : parsed.notes) logger->Warn("configuration", {{"note", note}});
  }

  std::unique_ptr<axqc::server::Server> server;
  try {
    server = axqc::server::Server::Start(parsed.config, logger);
  } catch (const std::exception& e) {
    logger->Error("startup failed", {{"error", e.what()}});
    return 1;
  }

  int sig = 0;
  sigwait(&signals, &sig);
  logger->Info("signal received", {{"signal", sig == SIGTERM ? "SIGTERM" : "SIGINT"}});
  server->Shutdown();
  server.reset();
  return 0;
}
