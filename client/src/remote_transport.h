// The transport of remote mode (remote_transport.cc): the channel to axqc-server with its TLS
// credentials, deadline, bearer token and retries, and the explanation of a server that cannot be
// reached (a probe of our own: TCP, then a TLS handshake with the same CA and client
// certificate). Used by the check (remote_check.cc) and the other commands (remote_commands.cc).
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "axqc/v1/axqc.grpc.pb.h"
#include "cli.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "remote.h"

namespace axqc::cli {

using HealthStub = grpc::health::v1::Health;

// A channel to the server plus what every call needs.
class Connection {
 public:
  // Returns nullptr (after printing why) when the TLS files cannot be read.
  static std::unique_ptr<Connection> Open(const RemoteArgs& r, int default_retries,
                                          double default_deadline);

  v1::Checker::Stub& stub() { return *stub_; }
  HealthStub::Stub& health() { return *health_; }
  const std::string& server() const { return server_; }
  bool has_token() const { return !token_.empty(); }

  // Deadline and bearer token of one attempt.
  void Prepare(grpc::ClientContext* ctx) const {
    ctx->set_deadline(std::chrono::system_clock::now() +
                      std::chrono::duration_cast<std::chrono::system_clock::duration>(
                          std::chrono::duration<double>(deadline_)));
    if (!token_.empty()) ctx->AddMetadata("authorization", "Bearer " + token_);
  }

  // Runs `attempt(ctx)` with a fresh context until it is not UNAVAILABLE or the retries are used.
  // `request_id` gets the server's x-request-id of the last attempt.
  template <typename F>
  grpc::Status Call(F&& attempt, std::string* request_id = nullptr) const {
    for (int i = 0;; ++i) {
      grpc::ClientContext ctx;
      Prepare(&ctx);
      grpc::Status s = attempt(&ctx);
      std::string id;
      const auto& md = ctx.GetServerInitialMetadata();
      if (auto it = md.find("x-request-id"); it != md.end()) {
        id.assign(it->second.data(), it->second.size());
      }
      if (request_id != nullptr) *request_id = id;
      // An UNAVAILABLE without the server's request id never reached axqc-server.
      last_unreachable_ = s.error_code() == grpc::StatusCode::UNAVAILABLE && id.empty();
      if (s.error_code() != grpc::StatusCode::UNAVAILABLE || i >= retries_) return s;
      std::this_thread::sleep_for(RetryBackoff(i));
    }
  }

  // True when the last call failed because the server could not be reached or refused the
  // credentials: the following calls would fail the same way.
  bool Unusable(const grpc::Status& s) const {
    return (s.error_code() == grpc::StatusCode::UNAVAILABLE && last_unreachable_) ||
           s.error_code() == grpc::StatusCode::UNAUTHENTICATED;
  }

  // One line for a failed RPC, with the cause when it is known.
  std::string Describe(const grpc::Status& s, const std::string& request_id = "") const;

 private:
  Connection() = default;
  RemoteArgs args_;
  std::string server_;
  std::string token_;
  bool tls_ = false;
  int retries_ = 0;
  double deadline_ = 30;
  mutable bool last_unreachable_ = false;
  mutable bool diagnosed_ = false;
  mutable std::string diagnosis_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Checker::Stub> stub_;
  std::unique_ptr<HealthStub::Stub> health_;
};

// Exit code of a failed RPC: 2 when the request or the model is at fault, 4 when the server gave
// no verdict (unreachable, credentials, deadline, overload, server failure).
int ExitCodeForStatus(const grpc::Status& s);

}  // namespace axqc::cli
