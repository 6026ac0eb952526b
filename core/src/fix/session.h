// The rewrite engine of `axqc fix` (include/axqc/fix.h): the state one run shares between its
// rewrites, graph helpers, and the rewrites themselves (one file each, listed in table.cc).
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "axqc/fix.h"
#include "onnx_util.h"

namespace axqc::detail::fix {

// Types of the main graph's values as ONNX shape inference sees them (run on a copy of the
// model, with the checker's guarded schemas).
class TypeMap {
 public:
  const onnx::TypeProto* Find(std::string_view name) const;
  // Elem type of a tensor value; 0 when unknown.
  int ElemType(std::string_view name) const;
  // Rank, when the shape is known.
  std::optional<int> Rank(std::string_view name) const;
  // Every dim, when each one is a value (a static shape).
  std::optional<std::vector<std::int64_t>> StaticDims(std::string_view name) const;
  // "[batch, 16, ?]" or "unknown".
  std::string DimsText(std::string_view name) const;

  bool strict_ok = false;  // strict inference passed (false: the lenient result)
  std::string error;       // strict inference's message when it failed
  std::unordered_map<std::string, onnx::TypeProto> types;
};

// Where a place of the model is reported: a node's name (or "<op_type>#<index>"), or a tensor.
std::string NodeLabel(const onnx::NodeProto& n, int index);

bool IsOnnxDomain(const onnx::NodeProto& n);  // "" or "ai.onnx"
// The model's ai.onnx opset version (0 when not imported).
std::int64_t OnnxOpset(const onnx::ModelProto& m);

// Calls f(graph) on the main graph and every subgraph (If/Loop/Scan bodies), outer before inner.
void ForEachGraph(onnx::GraphProto& g, const std::function<void(onnx::GraphProto&)>& f);

// Removes the nodes of `g` whose index is in `drop`, keeping the others in order.
void RemoveNodes(onnx::GraphProto& g, const std::vector<bool>& drop);

// Every name read by a node input anywhere in `g` (subgraphs included), with counts.
std::unordered_map<std::string, int> UseCounts(const onnx::GraphProto& g);

// Replaces every node input named like a key of `alias` (in `g` and its subgraphs) by its value.
void RenameInputs(onnx::GraphProto& g, const std::unordered_map<std::string, std::string>& alias);

// Integer values of a small INT64/INT32 tensor (nullopt otherwise).
std::optional<std::vector<std::int64_t>> SmallInts(const onnx::TensorProto& t,
                                                   const ExternalDataReader* ext,
                                                   std::size_t max_elems = 4096);

// A tensor of `elem_type` and `dims` whose elements are all zero (raw_data; packed for 4-bit).
onnx::TensorProto ZeroTensor(const std::string& name, int elem_type,
                             const std::vector<std::int64_t>& dims);

class Session;

// Removes the main graph's initializers named in `dropped` (names read by nodes a rewrite removed)
// that nothing reads any more and that are no graph input or output; returns how many.
std::size_t DropUnusedInitializers(Session& s, const std::unordered_set<std::string>& dropped);

class Session {
 public:
  Session(onnx::ModelProto& model, const ExternalDataReader* ext, const FixOptions& options)
      : model_(model), ext_(ext), options_(options) {}

  onnx::ModelProto& model() { return model_; }
  onnx::GraphProto& graph() { return *model_.mutable_graph(); }
  const ExternalDataReader* ext() const { return ext_; }
  const FixOptions& options() const { return options_; }
  std::size_t max_locations() const { return options_.max_locations; }

  // Types after shape inference of the model as it is now (computed once per change).
  const TypeMap& Types();
  // The copy of the model that Types() inferred (same node order as model()).
  const onnx::ModelProto& Inferred();
  // To call after a rewrite changed the graph (types, names and initializers are looked up
  // again).
  void Changed() {
    types_.reset();
    names_collected_ = false;
    tensor_names_.clear();
    node_names_.clear();
    inits_.clear();
  }

  // A tensor name used nowhere in the model yet, derived from `base`; reserved on return.
  std::string NewTensorName(const std::string& base);
  std::string NewNodeName(const std::string& base);

  // Outcome of the rewrite that runs now.
  void Begin(RewriteOutcome* out) { out_ = out; }
  void Applied(const std::string& place);
  void Skipped(const std::string& place, const std::string& reason);
  void Note(const std::string& note) { out_->note = note; }
  // Forgets the skips reported so far (a rewrite that runs in passes keeps its last pass's).
  void ResetSkips() {
    out_->skipped = 0;
    out_->first_skips.clear();
  }

  // Initializer lookup in the main graph (nullptr when absent). `constant` additionally requires
  // that it is not also a graph input (which a caller could override at run time).
  const onnx::TensorProto* Initializer(std::string_view name);
  const onnx::TensorProto* ConstantInitializer(std::string_view name);
  void InitializersChanged() { inits_.clear(); }

 private:
  void CollectNames();

  onnx::ModelProto& model_;
  const ExternalDataReader* ext_;
  const FixOptions& options_;
  RewriteOutcome* out_ = nullptr;
  std::unique_ptr<onnx::ModelProto> inferred_;
  std::optional<TypeMap> types_;
  std::unordered_set<std::string> tensor_names_, node_names_;
  bool names_collected_ = false;
  std::unordered_map<std::string, const onnx::TensorProto*> inits_;
  std::unordered_set<std::string> graph_inputs_;
};

// The rewrites (fix/<name>.cc). Each edits session.model() in place and reports through
// session.Applied / Skipped.
void InlineFunctions(Session& s);
void ConstantToInitializer(Session& s);
void IdentityOfInitializer(Session& s);
void CastOfInitializer(Session& s);
void ContribQdqToOnnx(Session& s);
void FoldShape(Session& s);
void ReshapeCopyDims(Session& s);
void ExplicitZeroPoint(Session& s);
void PositiveAxis(Session& s);
void RequantizeIdentity(Session& s);
void ValueInfo(Session& s);
void Int4WeightStorage(Session& s);
void IrVersion(Session& s);

// Lowest IR version the model can declare, with the reasons (the features that need more than
// IR 3, strongest first). `ignore_functions`: model-local functions are not counted (they are
// about to be inlined).
struct IrNeed {
  std::int64_t ir = 3;
  std::vector<std::pair<std::int64_t, std::string>> reasons;  // (IR, what needs it)
};
IrNeed MinimumIrVersion(const onnx::ModelProto& m, bool ignore_functions);

struct RewriteEntry {
  RewriteInfo info;
  void (*run)(Session&);
};
std::span<const RewriteEntry> RewriteTable();

}  // namespace axqc::detail::fix
