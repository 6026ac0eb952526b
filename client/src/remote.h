// Remote mode of `axqc`: talks to axqc-server (axqc.v1.Checker, grpc.health.v1.Health).
//   check: hash the file locally -> GetReport(sha256) -> on NOT_FOUND stream it with Upload;
//          --ref sends a server-side path or URL with Check.
//   Every RPC has a deadline and is retried with exponential backoff on UNAVAILABLE only.
// The entry points are declared in cli.h; this header has the helpers the entry points share.
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace axqc::cli {

// "7d", "24h", "30m", "90s", "2w" (a bare number is seconds) -> seconds; nullopt when invalid.
std::optional<long long> ParseWindowSeconds(const std::string& text);

// Backoff before retry number `attempt` (0-based): 200 ms * 2^attempt, at most 5 s, +-20 % jitter.
std::chrono::milliseconds RetryBackoff(int attempt);

}  // namespace axqc::cli
