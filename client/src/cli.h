// The `axqc` command line: shared option structs and the subcommand entry points.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "axqc/render.h"
#include "axqc/report.h"

namespace axqc::cli {

// Exit codes of every subcommand (local and remote): 0 conformant, 1 non_conformant,
// 2 usage or input error (the model or the request: unreadable, not ONNX, path outside the
// server's roots, ...), 3 not_applicable, 4 no verdict from the server (unreachable, TLS or token
// refused, deadline exceeded, server overloaded or failing: retry later; remote mode only).
inline constexpr int kExitError = 2;
inline constexpr int kExitNoVerdict = 4;

// Connection to axqc-server (remote mode).
struct RemoteArgs {
  std::string server;           // HOST:PORT; "" = local mode
  bool tls = false;             // TLS (implied by ca/cert/key)
  std::string ca;               // PEM roots; "" = system roots
  std::string cert;             // client certificate chain (mutual TLS)
  std::string key;              // client private key (mutual TLS)
  std::string token;            // bearer token; "" = $AXQC_TOKEN
  double deadline_seconds = 0;  // per RPC; 0 = the subcommand's default
  int retries =
      -1;  // extra attempts on UNAVAILABLE (backoff); -1 = default (check 4, others 2, health 0)
};

struct CheckArgs {
  std::vector<std::string> models;
  bool check_value = false;
  std::string format = "text";  // text | json | junit | sarif | github
  std::string output;           // -o FILE ("" = stdout)
  bool explain = false;
  std::string color = "auto";  // auto | always | never
  std::size_t max_locations = 5;
  // Remote only.
  RemoteArgs remote;
  std::vector<std::string> refs;              // --ref PATH|URL (server-side references)
  std::map<std::string, std::string> labels;  // --label k=v
  std::string progress = "auto";              // auto | always | never (upload progress)
  bool record = true;  // a known model's lookup is recorded as a check (--no-record: not)
};

struct StatsArgs {
  RemoteArgs remote;
  std::string since;                          // "7d", "24h", "30m", "90s"; "" = all history
  std::string by;                             // group by this label
  std::map<std::string, std::string> labels;  // filter
  unsigned top = 10;
  std::string format = "text";  // text | json
};

struct FixArgs {
  std::string model;
  std::string output;             // -o OUT
  std::vector<std::string> only;  // --only ID,... (repeatable)
  bool dry_run = false;
  bool check_value = false;
  std::string format = "text";   // text | json
  std::int64_t ir_version = -1;  // --ir-version N; -1 = not given
  std::size_t max_locations = 5;
};

// Outcome of checking one model: a report, or an error message.
struct ModelResult {
  std::string file;
  bool ok = false;
  Report report;
  std::string error;                       // when !ok
  std::string error_kind = "input error";  // printed before `error` on stderr
  int exit_code = 0;                       // ExitCodeFor(verdict), kExitError or kExitNoVerdict
  bool stop = false;  // remote: the server cannot be used (unreachable, token refused)
};

// Renders all results in `args.format` to args.output (or stdout) and returns the worst exit code
// (no verdict > input error > non_conformant > not_applicable > conformant). Shared by local and
// remote mode.
int EmitResults(const CheckArgs& args, const std::vector<ModelResult>& results);

int RunLocalCheck(const CheckArgs& args);
// `axqc fix` (client/src/fix.cc).
int RunFix(const FixArgs& args);
int RunFixList();
int RunRules(const std::string& format, bool operators);

// Remote mode (client/src/remote.cc; without AXQC_REMOTE they print "built without remote
// support" and return kExitError).
int RunRemoteCheck(const CheckArgs& args);
int RunRemoteRules(const RemoteArgs& remote, const std::string& format);
int RunRemoteStats(const StatsArgs& args);
int RunHealth(const RemoteArgs& remote, const std::string& service);

}  // namespace axqc::cli
