// Remote mode of `axqc` (see remote.h): the helpers every build has. The entry points are in
// remote_check.cc (check) and remote_commands.cc (rules, stats, health), over the transport of
// remote_transport.h; those files are built only with AXQC_BUILD_SERVER. Without it
// (AXQC_REMOTE undefined) the entry points below only say that this build has no remote support.
#include "remote.h"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <random>

#include "axqc/duration.h"
#include "cli.h"
#include "exit_codes.h"

namespace axqc::cli {

std::optional<long long> ParseWindowSeconds(const std::string& text) {
  // A unit is required: "30" alone is ambiguous in a window of days and weeks.
  const auto seconds = ParseDurationSeconds(text, "");
  if (!seconds || !(*seconds >= 1) || *seconds > 1e12) return std::nullopt;
  return std::llround(*seconds);
}

std::chrono::milliseconds RetryBackoff(int attempt) {
  const long long base = 200LL << std::min(attempt, 10);
  const long long capped = std::min<long long>(base, 5000);
  thread_local std::mt19937 rng{std::random_device{}()};
  std::uniform_real_distribution<double> jitter(0.8, 1.2);
  return std::chrono::milliseconds(
      static_cast<long long>(static_cast<double>(capped) * jitter(rng)));
}

#ifndef AXQC_REMOTE

namespace {
int NoRemote() {
  std::cerr << "axqc: built without remote support (configure with -DAXQC_BUILD_SERVER=ON for "
               "--server, stats and health)\n";
  return kExitError;
}
}  // namespace

int RunRemoteCheck(const CheckArgs& /*args*/, GateSetup& /*gate*/) { return NoRemote(); }
int RunRemoteRules(const RemoteArgs& /*remote*/, const std::string& /*format*/) {
  return NoRemote();
}
int RunRemoteStats(const StatsArgs& /*args*/) { return NoRemote(); }
int RunHealth(const RemoteArgs& /*remote*/, const std::string& /*service*/) { return NoRemote(); }

#endif  // !AXQC_REMOTE

}  // namespace axqc::cli
