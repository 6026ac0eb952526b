// `axqc fix`: semantics-preserving rewrites of a QDQ model that remove exporter artifacts
// (Constant nodes, de-duplication Identity nodes, static shape subgraphs, missing value_info, ...)
// so that a check reports the model's real defects.
//
// Every rewrite has a stable ID (public contract, like the rule IDs) and a page under
// docs/fixes/<id>.md. A rewrite never changes a scale, zero_point, type or granularity, never
// removes a Q/DQ node and never changes a computed value; where it cannot prove that on a model,
// it leaves the place alone and reports it as skipped, with the reason.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "axqc/report.h"

namespace axqc {

struct RewriteInfo {
  std::string_view id;       // e.g. "constant-to-initializer"
  std::string_view summary;  // one line
  bool by_default;           // runs without --only (ir-version runs only with --ir-version)
  bool opt_in = false;       // runs only when named by --apply (FixOptions::apply), never else
};

// Every rewrite, in the order they run.
std::span<const RewriteInfo> Rewrites();
// nullptr when unknown.
const RewriteInfo* FindRewrite(std::string_view id);

struct FixOptions {
  std::vector<std::string> only;           // rewrite IDs to run; empty = every default rewrite
  std::vector<std::string> apply;          // opt-in rewrites to run as well (--apply ID)
  std::optional<std::int64_t> ir_version;  // --ir-version N: lower the model's IR version to N
  bool check_value = false;                // the before/after checks run with -c
  std::size_t max_locations = 5;           // nodes and skips listed per rewrite
};

// What one rewrite did on one model.
struct RewriteOutcome {
  std::string id;
  std::size_t applied = 0;         // places rewritten
  std::vector<std::string> first;  // the first places (node or tensor names), graph order
  std::size_t skipped = 0;         // places it could not prove safe and left alone
  std::vector<std::pair<std::string, std::string>> first_skips;  // (place, reason)
  std::string note;                                              // e.g. "IR 10 -> 8"; "" when none
};

struct FixResult {
  std::string input;
  std::string output;  // "" for a dry run
  bool dry_run = false;
  bool written = false;
  std::string data_file;                 // external data file written next to the output, or ""
  std::vector<RewriteOutcome> rewrites;  // one per selected rewrite, in run order
  Report before;                         // the input as given
  Report after;                 // the fixed model (the written file; in memory for a dry run)
  std::size_t applied() const;  // sum of RewriteOutcome::applied
};

// The fix cannot be done as asked (e.g. --ir-version below what the model uses, the model is not
// valid ONNX, an unknown rewrite ID). Nothing is written. `before` is set when the input was
// checked before the refusal.
class FixRefused : public std::runtime_error {
 public:
  FixRefused(const std::string& what, std::optional<Report> before = std::nullopt)
      : std::runtime_error(what), before_(std::move(before)) {}
  const std::optional<Report>& before() const { return before_; }

 private:
  std::optional<Report> before_;
};

// Fixes the model file `input` and writes the result to `output` (external data, if any, goes to
// "<output>.data" next to it); a dry run (`output` empty) writes nothing. Throws InputError for
// an unreadable input (as CheckFile does), FixRefused when the fix cannot be done, and
// std::runtime_error when the output cannot be written.
FixResult FixFile(const std::string& input, const std::string& output, const FixOptions& options);

// The same on a serialized model in memory (no external data); the fixed model's bytes go to
// `fixed` (when not null).
FixResult FixBytes(std::string_view bytes, const std::string& name, const FixOptions& options,
                   std::string* fixed);

}  // namespace axqc
