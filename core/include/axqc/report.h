// Report model shared by the CLI, the service and every renderer.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "axqc/catalog.h"
#include "axqc/external_data.h"

namespace axqc {

enum class Verdict { kConformant, kNonConformant, kNotApplicable };
std::string_view VerdictName(Verdict v);  // "conformant", "non_conformant", "not_applicable"

// How a finding counts toward the CI gate (axqc/gate.h). The checker leaves every finding
// kCounted; the gate marks the ones a waiver or the baseline accepts.
enum class FindingState {
  kCounted,    // counts toward the gate's verdict
  kWaived,     // accepted by a waiver of the configuration (Finding::waiver_*)
  kBaselined,  // present in the baseline: a known finding, not a new one
};

// What a producer artifact that a root cause comes from is, and what to do about it
// (docs/causes.md): the `axqc fix` rewrite that repairs it, or the change on the producer side.
struct Hint {
  std::string id;       // stable ID of the artifact, e.g. "qparams-as-numbers" (docs/causes.md)
  std::string title;    // short name of the artifact, e.g. "qparams given as Python numbers"
  std::string text;     // what the producer did and what to change
  std::string rewrite;  // ID of the `axqc fix` rewrite that repairs it ("" = producer side only)
};

// One violation (or note) at one place in the graph.
struct Finding {
  std::string rule;  // rule ID from the catalog
  Severity severity = Severity::kError;
  std::string section;               // spec section
  std::string message;               // specific message, names the node/tensor and values
  std::string group_key;             // name-free text; identical (rule, group_key) findings group
  std::string op_type;               // op type of the unit or node involved ("" if none)
  std::vector<std::string> nodes;    // node names involved (first is the primary one)
  std::vector<std::string> tensors;  // tensor names involved
  std::vector<std::pair<std::string, std::string>>
      values;  // values involved, e.g. {"scale[3]", "0"}
  // 16 hex digits identifying the finding across runs, file renames and node/tensor renames:
  // built from the rule, its kind (group_key) and the graph structure around the primary node,
  // never from names (recipe: docs/report-schema.md). Findings at structurally identical places
  // share it; FingerprintOccurrences numbers them.
  std::string fingerprint;
  // "<fingerprint>:<occurrence>": unique within the report and as stable as the fingerprint
  // (the occurrence numbers findings of one fingerprint in report order). "" in reports of
  // servers that predate it.
  std::string id;
  // The id of the finding that causes this one ("" = a root cause). Decided by the causal links
  // of the checker (core/src/causes.cc, docs/causes.md); following `cause` always ends at a root.
  std::string cause;
  // Root causes recognised as a producer artifact carry one hint; empty id = none.
  Hint hint;
  // Gate state (set by ApplyGate on the client side; never by the checker or the service).
  FindingState state = FindingState::kCounted;
  std::string waiver_reason;  // kWaived: the waiver's reason
  std::string waiver_source;  // kWaived: where the waiver is declared, e.g. "axqc.toml:12"
};

std::string_view FindingStateName(FindingState s);  // "counted", "waived", "baselined"

// Findings with the same rule and group_key, with a count and the first locations.
struct FindingGroup {
  std::string rule;
  Severity severity = Severity::kError;
  std::string section;
  std::string summary;  // group_key
  std::size_t count = 0;
  std::vector<Finding> first;  // up to ReportOptions::max_locations, in graph order
};

struct ModelFacts {
  std::string file;    // path or caller-supplied name
  std::string sha256;  // hex of the model file bytes
  std::uint64_t size_bytes = 0;
  std::int64_t ir_version = 0;
  std::vector<std::pair<std::string, std::int64_t>> opsets;  // domain ("" = ai.onnx), version
  std::string producer_name;
  std::string producer_version;
  std::size_t node_count = 0;
  std::size_t q_count = 0;
  std::size_t dq_count = 0;
  std::size_t initializer_count = 0;
};

// One unit of the ownership map: a single-operator unit or a pattern instance.
struct UnitInfo {
  std::size_t id = 0;
  std::string kind;     // "op", "pattern:silu", "passive", "requantize", ...
  std::string op_type;  // op type of the anchor node
  std::string mode;     // "quantized", "non_quant", "native_int", ...
  std::vector<std::string> nodes;
  std::vector<std::string> input_qdq;   // boundary DQ nodes feeding the unit
  std::vector<std::string> output_qdq;  // boundary Q nodes leaving the unit
};

// The model's main graph as the pictures need it (the HTML and DOT reports, render.h): nodes with
// their unit and, for Q/DQ nodes, their quantization parameters; tensors by index. Either the
// whole graph (`complete`) or an excerpt (GraphExcerpt: the neighbourhoods of the findings).
struct GraphNode {
  std::string name;     // display name (as in findings)
  std::string op_type;  // "Conv", "QuantizeLinear", ...
  std::string domain;   // "" = ai.onnx
  int unit = -1;        // index into Report::units; -1 for Q/DQ nodes and nodes of no unit
  // Q/DQ nodes only: integer type, granularity, scale and zero point, e.g.
  // "U8 per-tensor scale=0.0235 zp=128" (values as far as they are readable).
  std::string quant;
  std::vector<int> inputs;   // tensor indices by slot, -1 for an omitted input
  std::vector<int> outputs;  // tensor indices by slot, -1 for an omitted output
};

struct GraphTensor {
  std::string name;
  int producer = -1;         // node index, -1 for graph inputs and initializers
  bool initializer = false;  // a constant (weights, scales): drawn as an edge label only
  bool graph_input = false;
  bool graph_output = false;
};

struct ModelGraph {
  bool complete = false;         // every node of the model (false: an excerpt)
  std::size_t model_nodes = 0;   // node count of the whole model
  std::vector<GraphNode> nodes;  // topological order
  std::vector<GraphTensor> tensors;
};

struct Summary {
  // Root causes: distinct causes among the findings without a `cause` that are errors or
  // warnings (roots with one hint are one cause; other roots count by rule and kind).
  std::size_t causes = 0;
  std::size_t errors = 0;
  std::size_t warnings = 0;
  std::size_t infos = 0;
  std::map<std::string, std::size_t> by_rule;        // rule ID -> findings
  std::map<std::string, std::size_t> units_by_kind;  // unit kind -> count
  std::map<std::string, std::size_t> units_by_op;    // op type -> units anchored on it
  std::map<std::string, std::size_t> errors_by_op;   // op type -> error findings
  std::size_t qdq_edges = 0;                         // Q->DQ pairs and DQ-only constants
  std::size_t owned_qdq_edges = 0;
};

enum class GateVerdict { kPass, kFail, kNotApplicable };
std::string_view GateVerdictName(GateVerdict v);  // "pass", "fail", "not_applicable"

// Findings by severity.
struct SeverityCounts {
  std::size_t errors = 0;
  std::size_t warnings = 0;
  std::size_t infos = 0;
  void Add(Severity s);
  std::size_t total() const { return errors + warnings + infos; }
};

// A waiver of the configuration that no longer does its job: expired (its findings count again)
// or unused (matched no finding of the models it applies to in this run).
struct StaleWaiver {
  std::string source;  // "axqc.toml:12"
  std::string file;    // the configuration file ("axqc.toml")
  int line = 0;        // 1-based line of the waiver in `file`
  std::string status;  // "expired" or "unused"
  std::string what;    // the waiver's selectors, e.g. "rule=role/* node=/backbone/*"
  std::string reason;
  std::string expires;          // "YYYY-MM-DD" or ""
  std::size_t matched = 0;      // findings of this run it matches (expired: they count again)
  std::string Message() const;  // one sentence for logs and CI annotations
};

// The CI gate's view of one report: the checker's findings after waivers and a baseline.
struct GateResult {
  bool active = false;  // a configuration, baseline or --fail-on was applied (shown in reports)
  GateVerdict verdict = GateVerdict::kPass;
  Severity fail_on = Severity::kError;  // findings of this severity or worse fail the gate
  std::string config;                   // configuration file used ("" = none)
  std::string baseline;                 // baseline file used ("" = none)
  SeverityCounts counted;               // findings that count (new ones, with a baseline)
  SeverityCounts waived;
  SeverityCounts baselined;
  std::size_t baseline_fixed = 0;          // baseline entries of this model no longer found
  std::vector<StaleWaiver> stale_waivers;  // relevant to this model
};

// Chip targets (axqc/targets.h, docs/targets.md): whether the model fits a chip's documented NPU
// operator table. Judged beside the spec verdict, never part of it.
enum class TargetVerdict { kFits, kDoesNotFit, kFitsWithNotes };
std::string_view TargetVerdictName(TargetVerdict v);  // "fits", "does_not_fit", "fits_with_notes"
TargetVerdict TargetVerdictFromName(std::string_view name);  // unknown: kDoesNotFit

// True for the rule IDs of the chip targets ("target/..."): they never change the spec verdict.
bool IsTargetRule(std::string_view rule);

// A node that keeps the model off a chip: the first error finding of a rule at that node.
struct TargetBlocker {
  std::string rule;     // "target/op-unsupported", ...
  std::string op_type;  // "" for model-level findings (opset)
  std::string node;     // "" for model-level findings
};

struct TargetResult {
  std::string chip;         // "ax620e"
  std::string name;         // "AX620E"
  std::string source;       // the profile's source: repository@commit:file
  std::string doc_version;  // the Pulsar2 documentation version of the table
  TargetVerdict verdict = TargetVerdict::kFits;
  std::size_t errors = 0;  // target error findings of this chip
  std::size_t notes = 0;   // target info findings (efficiency notes, limits not checked)
  std::vector<TargetBlocker> blocking;
};

struct Report {
  static constexpr const char* kSchema = "axqc.report/v1";
  Verdict verdict = Verdict::kNotApplicable;
  bool check_value = false;
  std::string tool_version;
  std::string rule_set_version;
  ModelFacts model;
  Summary summary;
  std::vector<Finding> findings;     // every finding, deterministic order
  std::vector<FindingGroup> groups;  // grouped view of `findings`
  std::vector<UnitInfo> units;       // ownership map
  GateResult gate;                   // CI gate (client side); inactive unless one was applied
  // Chip targets requested (CheckOptions::targets), in profile order; empty without targets. Their
  // findings (rules target/*) are in `findings` too.
  std::vector<TargetResult> targets;
  // The graph for pictures (CheckOptions::include_graph); null when not collected. Not part of
  // the JSON report; the service stores an excerpt with the report (axqc.v1.Report.graph).
  std::shared_ptr<const ModelGraph> graph;
  // The byte ranges of the external data files the check read (per file, merged, by name), for a
  // model checked from memory with its data files (CheckOptions::external_data); empty otherwise.
  // Not part of the JSON report: the service keys reports by these bytes (ExternalReadKey).
  std::vector<ExternalFileRanges> external_reads;
};

// One root cause of a report: the root findings (no `cause`) of one hint, or of one rule and kind
// when they have none, and every finding that leads back to them.
struct CauseGroup {
  std::string key;                        // the hint's id, or "<rule>\n<kind>"
  Severity severity = Severity::kInfo;    // the most severe root
  Hint hint;                              // of the roots (empty id = none)
  std::vector<std::size_t> roots;         // indices into Report::findings, report order
  std::vector<std::size_t> consequences;  // indices of the findings that lead back to a root
};

// The root cause of each finding: the index of the finding its `cause` chain ends at (itself for
// a root; itself too when the chain names an unknown id or loops).
std::vector<std::size_t> RootOfEach(const Report& report);

// The report's root causes: errors first, then warnings, then infos; within a severity the
// causes that explain more findings first, then by first appearance.
std::vector<CauseGroup> GroupCauses(const Report& report);

// Fills summary counts, groups and the verdict from `findings`. `owned_edges` decides
// not_applicable. `max_locations` bounds FindingGroup::first.
void FinalizeReport(Report& report, std::size_t max_locations = 5);

}  // namespace axqc
