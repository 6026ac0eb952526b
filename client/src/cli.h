// The `axqc` command line: shared option structs and the subcommand entry points.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "axqc/gate.h"
#include "axqc/render.h"
#include "axqc/report.h"
#include "exit_codes.h"

namespace axqc::cli {

// Exit codes of every subcommand: exit_codes.h (kExitError, kExitNoVerdict, ...).
using axqc::kExitError;
using axqc::kExitNoVerdict;

// The document `axqc check --format json` prints, whatever the number of models
// (docs/report-schema.md): {"schema": "axqc.report/v2", "reports": [...], "statistics": [...]};
// each entry of "reports" is a model's report object (Report::kSchema, as the service returns
// it) or its input error. v1 printed a bare report for one model and an array for several.
inline constexpr const char* kReportDocumentSchema = "axqc.report/v2";

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
  bool check_value_given = false;  // -c or --no-check-value on the command line
  std::string format = "text";     // text | json | junit | sarif | github | gitlab | html | dot
  std::string output;              // -o FILE ("" = stdout)
  std::string rules_url = "docs/rules/";  // --rules-url: base of the rule links in html
  bool explain = false;
  std::string color = "auto";  // auto | always | never
  std::size_t max_locations = 5;
  bool max_locations_given = false;
  // The gate (docs/ci.md, "Waivers and baselines").
  std::string config;          // --config FILE; "" = axqc.toml found from the working directory up
  bool no_config = false;      // --no-config
  std::string baseline;        // --baseline FILE
  std::string write_baseline;  // --write-baseline FILE
  std::string fail_on;         // --fail-on error|warn; "" = the configuration's, else error
  // --fail-on not_applicable (or fail_on_not_applicable in axqc.toml): a model that is not a QDQ
  // model (verdict not_applicable, exit 3) fails the check (exit 1), so a pipeline that expects
  // quantized models does not pass a float export.
  bool fail_on_not_applicable = false;
  bool github_annotations = false;  // --github-annotations: workflow commands on stderr too
  // --select / --ignore RULE[,RULE] (rule IDs, prefixes "qdq/", globs; axqc/gate.h RuleSelection):
  // --select replaces the configuration's select and ignore, --ignore adds to its ignore.
  std::vector<std::string> select;
  bool select_given = false;
  std::vector<std::string> ignore;
  // --exclude GLOB (repeatable): paths below a directory argument left out (ExpandModelPaths).
  std::vector<std::string> exclude;
  bool exit_zero = false;   // --exit-zero: findings never fail (exit 0 instead of 1 and 3)
  bool statistics = false;  // --statistics: findings counted per rule instead of the reports
  bool isolate = false;     // --isolate: local checks run in a sandboxed worker process
  // --target CHIP (repeatable, "all"): chip targets judged beside the spec (docs/targets.md);
  // canonical chip names after validation. A model that does not fit one fails (exit 1).
  std::vector<std::string> targets;
  // --pulsar2-config FILE: a Pulsar2 build configuration judged against each model
  // (docs/pulsar2.md); `pulsar2_config_text` is its content, read once before the checks. A
  // pulsar2 error finding fails the check (exit 1).
  std::string pulsar2_config;
  std::optional<std::string> pulsar2_config_text;
  // Remote only.
  RemoteArgs remote;
  std::vector<std::string> refs;              // --ref PATH|URL (server-side references)
  std::map<std::string, std::string> labels;  // --label k=v
  std::string progress = "auto";              // auto | always | never (upload progress)
  // Remote, a model with external data: send the data files whole (else only the byte ranges the
  // check reads: a ranged upload).
  bool full_upload = false;
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

// `axqc targets` (client/src/targets.cc).
struct TargetsArgs {
  std::vector<std::string> args;  // model files, or one chip name (its profile)
  bool list = false;              // --list
  std::vector<std::string> diff;  // --diff A B
  std::string format = "text";    // text | json
  bool check_value = false;
};

// `axqc pulsar2-config` (client/src/pulsar2.cc).
struct Pulsar2ConfigArgs {
  std::string model;
  std::string target = "ax650";  // --target CHIP
  std::string output;            // -o FILE ("" = stdout)
};

struct FixArgs {
  std::string model;
  std::string output;              // -o OUT
  std::vector<std::string> only;   // --only ID,... (repeatable)
  std::vector<std::string> apply;  // --apply ID,... (opt-in rewrites; repeatable)
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
  std::string request_id;  // remote: the server's id of the check request
  bool recorded = false;   // remote: the check is a row of the server's history (RecordGate)
  std::string error;       // when !ok
  std::string error_kind = "input error";  // printed before `error` on stderr
  int exit_code = 0;                       // ExitCodeFor(verdict), kExitError or kExitNoVerdict
  bool stop = false;  // remote: the server cannot be used (unreachable, token refused)
};

// The gate of one run: the policy from the configuration, the baseline and the flags.
struct GateSetup {
  GatePolicy policy;
  std::string write_baseline;        // --write-baseline FILE ("" = none)
  std::optional<Baseline> previous;  // its current content, when the file exists
};

// Replaces each directory of args.models by the *.onnx files below it (recursive, sorted by path;
// symbolic links to directories are not followed, links to files only when the file lies below
// the directory), leaving out the paths args.exclude matches; files given by name stay as they
// are. Duplicates are dropped. Prints the problem and returns false (exit 2) when a directory
// cannot be read or holds no model.
bool ExpandModelPaths(CheckArgs& args);

// Finds or loads the configuration (--config, --no-config), applies its [check] defaults to
// `args` where the command line gave none, and reads the baseline. Prints the problem and returns
// nullopt when the configuration or baseline cannot be used (exit 2).
std::optional<GateSetup> PrepareGate(CheckArgs& args);

// Applies the gate to the reports of `results` (ApplyGate) and sets their exit codes; with
// --write-baseline writes the baseline of this run, which then is the gate's baseline. Prints
// stale waivers on stderr. False (after printing why) when the baseline cannot be written.
bool ApplyGateToResults(const CheckArgs& args, GateSetup& gate, std::vector<ModelResult>& results);

// Renders all results in `args.format` to args.output (or stdout) and returns the worst exit code
// (no verdict > input error > non_conformant > not_applicable > conformant; with --exit-zero 1 and
// 3 become 0). Shared by local and remote mode. With --statistics the text format prints the
// counts per rule instead of the reports, and json adds them to the document ("statistics").
int EmitResults(const CheckArgs& args, const std::vector<ModelResult>& results);

int RunLocalCheck(const CheckArgs& args, GateSetup& gate);
// `axqc fix` (client/src/fix.cc).
int RunFix(const FixArgs& args);
int RunFixList();
int RunRules(const std::string& format, bool operators);
int RunTargets(const TargetsArgs& args);
int RunPulsar2Config(const Pulsar2ConfigArgs& args);
// Reads the --pulsar2-config file into args.pulsar2_config_text; false (message printed) when it
// cannot be read. A file beyond the size bound is read up to one byte more than the bound (the
// checker reports it as pulsar2/config-invalid).
bool ReadPulsar2Config(CheckArgs& args);
// With --target: exit 1 for a model with a counted target error, unless a worse code stands.
void ApplyTargetExitCodes(const CheckArgs& args, std::vector<ModelResult>& results);
// --fail-on not_applicable: a not_applicable model exits 1 (its report is unchanged).
void ApplyNotApplicableExitCodes(const CheckArgs& args, std::vector<ModelResult>& results);

// Remote mode (client/src/remote.cc; without AXQC_REMOTE they print "built without remote
// support" and return kExitError).
int RunRemoteCheck(const CheckArgs& args, GateSetup& gate);
int RunRemoteRules(const RemoteArgs& remote, const std::string& format);
int RunRemoteStats(const StatsArgs& args);
int RunHealth(const RemoteArgs& remote, const std::string& service);

}  // namespace axqc::cli
