// Shared state of the rule stage: the indexes built by earlier stages, the finding emitter and
// the record of which Q/DQ nodes each rule claimed (Ownership, for closure, 2.3).
#pragma once

#include <set>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "axqc/checker.h"
#include "axqc/report.h"
#include "graph_index.h"
#include "optable.h"
#include "ownership.h"
#include "quant.h"
#include "rules.h"
#include "units.h"

namespace axqc::detail {

// Collects findings; drops [cv] rules when check_value is off; removes exact duplicates
// (the same rule at the same node and tensor, e.g. one Q/DQ edge seen from both of its units).
// Rules are named by their typed handle (rules.h): an ID missing from the catalog does not
// compile.
class Emitter {
 public:
  Emitter(const GraphIndex* g, bool check_value) : g_(g), check_value_(check_value) {}

  struct Args {
    RuleId rule;
    int node = -1;  // primary node (ordering and location)
    std::string message;
    std::string group_key;  // name-free summary for grouping
    std::vector<std::string> tensors = {};
    std::vector<std::pair<std::string, std::string>> values = {};
    std::vector<int> more_nodes = {};
  };
  void Emit(Args a);
  bool enabled(RuleId rule) const;
  bool check_value() const { return check_value_; }

  // Findings in deterministic order (graph order of the primary node, then rule, then message).
  // `primary_nodes`, when given, receives the primary node index of each finding (-1: none).
  std::vector<Finding> Take(std::vector<int>* primary_nodes = nullptr);

 private:
  const GraphIndex* g_;
  bool check_value_;
  std::vector<std::pair<int, Finding>> out_;
  std::set<std::tuple<std::string, int, std::string, std::string>> seen_;
};

struct Context {
  const onnx::ModelProto* model = nullptr;  // for model-local functions (reading 11)
  // By tensor id, whether the producer declared a complete value_info (before shape inference
  // added its own); read by CheckOnnxBase. Empty: none declared.
  std::vector<bool> declared_value_info;
  const GraphIndex& g;
  const QuantTable& q;
  const Units& units;  // units and modes: decided before the rules, read-only here
  Emitter& out;
  bool check_value;
  Ownership claims;  // what the rules claim (Q/DQ with a purpose, owned edges, boundaries)
  std::vector<int> topo_pos;

  Context(const GraphIndex& gi, const QuantTable& qt, const Units& u, Emitter& e, bool cv);
  // Shorthands for the claims every rule makes (see Ownership).
  void ClaimDq(int dq, int unit) { claims.ClaimDq(dq, unit); }
  void ClaimQ(int qn, int unit) { claims.ClaimQ(qn, unit); }
  void Touch(int dq) { claims.Touch(dq); }
  void Explain(int node) { claims.Explain(node); }
  bool EdgeOwned(int node) const { return claims.EdgeOwned(node); }
  const Unit& UnitAt(int unit) const { return units.all()[static_cast<std::size_t>(unit)]; }
  std::string Name(int node) const { return std::string(g.NodeName(node)); }
  const std::string& Op(int node) const { return g.node(node).op_type(); }
};

// Stages of the rule pass, one per file under checks/, run in the order of kRuleStages
// (checks/stages.cc) by RunRuleStages.
void CheckOnnxBase(Context& c);         // 2.2: Constant nodes, value_info (declared_value_info)
void CheckQdqNodes(Context& c);         // 3.1, 3.2, 3.3 per Q/DQ node; integer types
void CheckQdqEdges(Context& c);         // 3.4, 3.5: pairing, fan-out, DQ sources, requantize
void CheckComputeUnits(Context& c);     // 4, 5: quant-only operators and patterns
void CheckReluClip(Context& c);         // 5.15, 5.16 standalone Relu/Clip
void CheckPassiveUnits(Context& c);     // 5.10, 5.11, 5.13, 5.14, 6.6
void CheckRequantizeUnits(Context& c);  // 6.7
void CheckPatterns(Context& c);         // 6.1: internal Q/DQ and escapes; ambiguity
void CheckClosure(Context& c);          // 2.3: uncovered/unsupported nodes, orphan Q/DQ

// One stage of the rule pass: its name (for timings and docs) and its function.
struct RuleStage {
  const char* name;
  void (*run)(Context& c);
};
// Every rule stage, in the order they run: each stage may rely on the claims of the stages before
// it (Ownership), and closure, which reports what nobody claimed, comes last.
std::span<const RuleStage> RuleStages();
// Runs every stage of RuleStages() on `c`, in order.
void RunRuleStages(Context& c);

// Scope (2.1, RULES.md reading 11), checks/scope.cc.
// What quantizes `node` other than ai.onnx Q/DQ in the main graph, as a phrase for messages, and
// how to fix it; empty when nothing does: Q/DQ of another domain, DynamicQuantizeLinear,
// QOperator-format operators, a call of a model-local function or a control-flow node whose
// body contains any of these or Q/DQ.
struct OtherQuantization {
  std::string what;  // e.g. "a QuantizeLinear of domain 'com.microsoft' ..."
  std::string fix;
};
OtherQuantization QuantizedOtherwise(const Context& c, int node);
// In scope: an ai.onnx Q or DQ node lies on an operator's data path (consumes an operator's data
// output or feeds an operator's data input), or some node is quantized otherwise.
bool InScope(const Context& c);

}  // namespace axqc::detail
