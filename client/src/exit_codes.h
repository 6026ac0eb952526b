// The exit-code policy of the command line, in one place: what `axqc check`, `axqc fix` and the
// other subcommands exit with, locally and against a server. Documented in README.md and
// docs/ci.md; CI scripts key on these numbers, so they never change.
//
//   0  conformant (with a gate: the gate passes)
//   1  non_conformant (with a gate: findings that count at or above the threshold; also a model
//      that does not fit a requested chip or Pulsar2 configuration, and not_applicable with
//      --fail-on-not-applicable)
//   2  usage or input error (the model or the request: unreadable, not ONNX, a path outside the
//      server's roots, ...; a bad configuration or baseline)
//   3  not_applicable (no Q/DQ on an operator's data path)
//   4  no verdict from the server (unreachable, TLS or token refused, deadline exceeded, server
//      overloaded or failing: retry later; remote mode only)
//
// Several models: the worst of their codes, worst first 4 > 2 > 1 > 3 > 0 (WorstExitCode).
#pragma once

#include "axqc/gate.h"
#include "axqc/report.h"

namespace axqc {

inline constexpr int kExitConformant = 0;
inline constexpr int kExitFail = 1;
inline constexpr int kExitError = 2;
inline constexpr int kExitNotApplicable = 3;
inline constexpr int kExitNoVerdict = 4;

// The exit code of a report's verdict.
inline int ExitCodeFor(Verdict v) {
  switch (v) {
    case Verdict::kConformant:
      return kExitConformant;
    case Verdict::kNonConformant:
      return kExitFail;
    case Verdict::kNotApplicable:
      return kExitNotApplicable;
  }
  return kExitError;
}

// The exit code of a gated report: pass 0, fail 1, not_applicable 3.
inline int ExitCodeFor(const GateResult& gate) {
  switch (gate.verdict) {
    case GateVerdict::kPass:
      return kExitConformant;
    case GateVerdict::kFail:
      return kExitFail;
    case GateVerdict::kNotApplicable:
      return kExitNotApplicable;
  }
  return kExitFail;
}

// How bad an exit code is, for the worst of several: no verdict > input error > non_conformant >
// not_applicable > conformant.
inline int ExitCodeRank(int code) {
  switch (code) {
    case kExitNoVerdict:
      return 4;
    case kExitError:
      return 3;
    case kExitFail:
      return 2;
    case kExitNotApplicable:
      return 1;
    default:
      return 0;
  }
}

inline int WorstExitCode(int a, int b) { return ExitCodeRank(b) > ExitCodeRank(a) ? b : a; }

}  // namespace axqc
