// Remote mode of `axqc`: talks to axqc-server (axqc.v1.Checker, grpc.health.v1.Health).
//   check: hash the file locally -> GetReport(sha256, record_check: the lookup is this check, with
//          its labels) -> on NOT_FOUND stream it with Upload; --ref sends a server-side path or URL
//          with Check. After a failure to reach the server (or a refused token) the remaining
//          models are not tried.
//   Every RPC has a deadline and is retried with exponential backoff on UNAVAILABLE only. A
//   connection failure is explained by a probe of our own (TCP, then a TLS handshake with the same
//   CA and client certificate): TLS required or not spoken, certificate not trusted, client
//   certificate required or rejected. gRPC's own log lines are silenced unless GRPC_VERBOSITY or
//   GRPC_TRACE is set.
// The entry points are declared in cli.h and defined in remote_check.cc (check) and
// remote_commands.cc (rules, stats, health), over the channel of remote_transport.h (connection,
// TLS, the explanation of an unreachable server); this header has the helpers they share.
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace axqc::cli {

// "7d", "24h", "30m", "90s", "2w" -> seconds; nullopt when invalid (a bare number has no unit and
// is refused: "7" could mean days as well as seconds).
std::optional<long long> ParseWindowSeconds(const std::string& text);

// Backoff before retry number `attempt` (0-based): 200 ms * 2^attempt, at most 5 s, +-20 % jitter.
std::chrono::milliseconds RetryBackoff(int attempt);

}  // namespace axqc::cli
