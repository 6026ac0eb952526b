// Scope (2.1) by data paths and quantization intent (RULES.md reading 11): a model is in scope when
// an ai.onnx Q or DQ node lies on an operator's data path, even when its Q/DQ structure is broken,
// or when something else quantizes it (Q/DQ of another domain, DynamicQuantizeLinear, QOperator
// operators, Q/DQ inside model-local functions or control-flow bodies).
#include <string_view>
#include <unordered_map>

#include "context.h"

namespace axqc::detail {

namespace {

bool IsQdqOpType(std::string_view op) { return op == "QuantizeLinear" || op == "DequantizeLinear"; }

// QOperator-format operators: quantized kernels that take scales and zero points as inputs
// (ONNX's and onnxruntime's com.microsoft contrib ops), and weight-only quantized kernels.
bool IsQOperator(std::string_view op) {
  if (op.starts_with("QLinear") || op.starts_with("QOrdered")) return true;
  for (std::string_view q :
       {"ConvInteger", "MatMulInteger", "QGemm", "QAttention", "QEmbedLayerNormalization",
        "DynamicQuantizeMatMul", "DynamicQuantizeLSTM", "MatMulIntegerToFloat", "MatMulNBits",
        "MatMulBnb4", "GatherBlockQuantized", "QuantizeWithOrder", "DequantizeWithOrder",
        "QuantizeBFP", "DequantizeBFP"}) {
    if (op == q) return true;
  }
  return false;
}

std::string Quoted(const onnx::NodeProto& n) {
  return n.op_type() + (n.name().empty() ? std::string() : " '" + n.name() + "'");
}

// The quantizing node kinds that need no model context, with their message and fix.
OtherQuantization Direct(const onnx::NodeProto& n) {
  const std::string& op = n.op_type();
  if (IsQdqOpType(op) && !IsOnnxDomain(n.domain())) {
    return {"a " + op + " of domain '" + n.domain() +
                "', a Q/DQ outside the ai.onnx domain (the ax quant spec knows only ai.onnx "
                "QuantizeLinear/DequantizeLinear)",
            "export ai.onnx QuantizeLinear/DequantizeLinear (opset 21 or later has the 4-bit and "
            "16-bit types that exporters otherwise put in contrib Q/DQ)"};
  }
  if (op == "DynamicQuantizeLinear" && IsOnnxDomain(n.domain())) {
    return {
        "DynamicQuantizeLinear, which computes its scale and zero_point at runtime (dynamic "
        "quantization)",
        "quantize statically: QuantizeLinear/DequantizeLinear with initializer scales and "
        "zero_points"};
  }
  if (IsQOperator(op)) {
    return {"a QOperator-format quantized operator" +
                (IsOnnxDomain(n.domain()) ? std::string() : " of domain '" + n.domain() + "'") +
                "; the ax quant spec covers the QDQ format",
            "export the QDQ format (QuantizeLinear/DequantizeLinear around float operators, e.g. "
            "onnxruntime's quantize_static with quant_format=QuantFormat.QDQ)"};
  }
  return {};
}

// Finds the first quantizing node (ai.onnx Q/DQ included) in a node list, its control-flow
// bodies and the model-local functions it calls; returns its display text ("QuantizeLinear
// 'q1'"). Iterative and bounded: hostile nesting costs no stack.
class Finder {
 public:
  explicit Finder(const onnx::ModelProto* model) : model_(model) {}

  std::string InNodes(const google::protobuf::RepeatedPtrField<onnx::NodeProto>& nodes) {
    std::vector<const google::protobuf::RepeatedPtrField<onnx::NodeProto>*> todo{&nodes};
    std::size_t visited = 0;
    while (!todo.empty() && visited < kMaxGraphs) {
      const auto* list = todo.back();
      todo.pop_back();
      ++visited;
      for (const auto& n : *list) {
        if (IsQdqOpType(n.op_type()) || n.op_type() == "DynamicQuantizeLinear" ||
            IsQOperator(n.op_type())) {
          return Quoted(n);
        }
        for (const auto& a : n.attribute()) {
          if (a.has_g()) todo.push_back(&a.g().node());
          for (const auto& g : a.graphs()) todo.push_back(&g.node());
        }
        if (const auto* f = Function(n); f != nullptr && seen_.emplace(f, true).second) {
          todo.push_back(&f->node());
        }
      }
    }
    return {};
  }

  const onnx::FunctionProto* Function(const onnx::NodeProto& n) const {
    if (model_ == nullptr) return nullptr;
    for (const auto& f : model_->functions()) {
      if (f.name() == n.op_type() && f.domain() == n.domain() && f.overload() == n.overload()) {
        return &f;
      }
    }
    return nullptr;
  }

 private:
  static constexpr std::size_t kMaxGraphs = 4096;
  const onnx::ModelProto* model_;
  std::unordered_map<const onnx::FunctionProto*, bool> seen_;
};

// Is input `slot` (-1: a use inside a subgraph) of `node` a data input for scope? Operators in
// the table: their data roles; non-quant-only (5.9), unsupported and uncovered operators: every
// input. Q/DQ and Constant nodes are no operators.
bool DataInput(const Context& c, int node, int slot) {
  const auto& n = c.g.node(node);
  if (c.q.Of(node) != nullptr) return false;
  if (n.op_type() == "Constant" && IsOnnxDomain(n.domain())) return false;
  const auto* spec = FindOp(n.op_type(), n.domain());
  if (spec == nullptr || spec->cls == OpClass::kNonQuant || spec->cls == OpClass::kUnsupported) {
    return true;
  }
  return slot >= 0 && IsDataRole(spec->InputRole(slot));
}

bool DataOutput(const Context& c, int node, int id) {
  const auto& n = c.g.node(node);
  if (c.q.Of(node) != nullptr) return false;
  if (n.op_type() == "Constant" && IsOnnxDomain(n.domain())) return false;
  const auto* spec = FindOp(n.op_type(), n.domain());
  if (spec == nullptr || spec->cls == OpClass::kNonQuant || spec->cls == OpClass::kUnsupported) {
    return true;
  }
  const auto outs = c.g.OutputIds(node);
  for (std::size_t s = 0; s < outs.size(); ++s) {
    if (outs[s] == id) return spec->OutputRole(static_cast<int>(s)) == OutRole::kData;
  }
  return false;
}

bool OnDataPath(const Context& c, const QuantParams& p) {
  if (const int prod = c.g.ProducerOf(p.x_id); prod >= 0 && DataOutput(c, prod, p.x_id)) {
    return true;
  }
  for (const auto& use : c.g.ConsumersOf(p.y_id)) {
    if (DataInput(c, use.node, use.slot)) return true;
  }
  return false;
}

}  // namespace

OtherQuantization QuantizedOtherwise(const Context& c, int node) {
  const auto& n = c.g.node(node);
  if (c.q.Of(node) != nullptr) return {};
  if (auto d = Direct(n); !d.what.empty()) return d;
  Finder finder(c.model);
  if (const auto* f = finder.Function(n); f != nullptr) {
    const std::string inner = finder.InNodes(f->node());
    if (inner.empty()) return {};
    return {"a call of the model-local function '" +
                (f->domain().empty() ? std::string() : f->domain() + ".") + f->name() +
                "', whose body contains " + inner +
                "; axqc checks the main graph, not function bodies",
            "inline the model-local functions (e.g. onnx.inliner.inline_local_functions) and "
            "check the inlined model"};
  }
  bool has_body = false;
  for (const auto& a : n.attribute()) has_body |= a.has_g() || a.graphs_size() > 0;
  if (!has_body) return {};
  std::string inner;
  for (const auto& a : n.attribute()) {
    if (inner.empty() && a.has_g()) inner = finder.InNodes(a.g().node());
    for (const auto& g : a.graphs()) {
      if (inner.empty()) inner = finder.InNodes(g.node());
    }
  }
  if (inner.empty()) return {};
  return {"control flow whose body contains " + inner +
              "; quantization inside control-flow bodies is covered by no rule",
          "keep the quantized computation in the main graph (unroll or move it out of the "
          "control-flow body)"};
}

bool InScope(const Context& c) {
  for (const auto* nodes : {&c.q.q_nodes(), &c.q.dq_nodes()}) {
    for (int n : *nodes) {
      if (OnDataPath(c, *c.q.Of(n))) return true;
    }
  }
  for (int i = 0; i < c.g.node_count(); ++i) {
    if (!QuantizedOtherwise(c, i).what.empty()) return true;
  }
  return false;
}

}  // namespace axqc::detail
