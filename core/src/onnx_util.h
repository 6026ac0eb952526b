// Small helpers over the ONNX protobuf types: type names, attributes, tensor values.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "axqc/external_data.h"

namespace axqc::detail {

std::string ElemTypeName(int elem_type);  // "FLOAT", "INT8", ... or "type(N)"
bool IsFloatType(int elem_type);          // FLOAT, DOUBLE, FLOAT16, BFLOAT16
bool IsIntegerType(int elem_type);        // any (u)int incl. 4-bit and BOOL
// Bits per element for fixed-size types (4 for INT4/UINT4), 0 for STRING/UNDEFINED/unknown.
int ElemBits(int elem_type);

// The default ONNX domain, written "" or "ai.onnx". One predicate for the operator table, the
// pattern matchers, the Q/DQ reader and the rules: an explicit "ai.onnx" changes nothing.
inline bool IsOnnxDomain(std::string_view domain) { return domain.empty() || domain == "ai.onnx"; }
// `n` is the ai.onnx operator `op_type`.
inline bool IsOnnxOp(const onnx::NodeProto& n, std::string_view op_type) {
  return n.op_type() == op_type && IsOnnxDomain(n.domain());
}

// Where an ai.onnx operator comes from: the opset that first defined it (the since_version of its
// oldest schema in the linked ONNX library) and the first ONNX release of that opset
// (docs/Versioning.md of ONNX). Empty when the linked library does not know the operator.
struct OpOrigin {
  int opset = 0;
  std::string release;  // "1.18", ...; empty for opsets newer than this table
};
std::optional<OpOrigin> OnnxOpOrigin(std::string_view op_type);
// The first ONNX release that shipped ai.onnx opset `opset` ("1.0" ... "1.22"); empty if unknown.
std::string OnnxReleaseOfOpset(int opset);

const onnx::AttributeProto* FindAttr(const onnx::NodeProto& n, std::string_view name);
std::optional<std::int64_t> AttrInt(const onnx::NodeProto& n, std::string_view name);
std::optional<float> AttrFloat(const onnx::NodeProto& n, std::string_view name);

// Element count of a tensor's dims; nullopt on negative dims or int64 overflow.
std::optional<std::int64_t> ElementCount(const onnx::TensorProto& t);

// Reads external data bytes of a tensor (path-loaded models only). Set by the loader.
struct ExternalDataReader {
  virtual ~ExternalDataReader() = default;
  // Returns the bytes, or nullopt if unavailable. `max_bytes` bounds what may be read.
  virtual std::optional<std::string> Read(const onnx::TensorProto& t,
                                          std::size_t max_bytes) const = 0;
  // The byte ranges read so far, per file (merged); empty for readers that do not record them.
  virtual std::vector<ExternalFileRanges> Reads() const { return {}; }
};

// Values of a tensor. Returns nullopt when the values are not readable (external data without a
// reader, size mismatch, unsupported type, more than `max_elems` elements).
std::optional<std::vector<double>> ReadFloats(const onnx::TensorProto& t,
                                              const ExternalDataReader* ext,
                                              std::size_t max_elems = 1u << 20);
std::optional<std::vector<std::int64_t>> ReadInts(const onnx::TensorProto& t,
                                                  const ExternalDataReader* ext,
                                                  std::size_t max_elems = 1u << 20);

// Checks raw_data / typed field sizes against dims and type (incl. packed 4-bit).
// Returns an empty string when consistent, else a description of the mismatch.
std::string CheckTensorStorage(const onnx::TensorProto& t);

bool IsExternal(const onnx::TensorProto& t);

// Where ForEachTensor found a tensor.
struct TensorSite {
  const onnx::NodeProto* node = nullptr;  // owner of an attribute tensor; null for initializers
  bool subgraph = false;                  // below the main graph (or in a model-local function)
  bool sparse = false;                    // values or indices of a sparse tensor
  std::string Describe(const onnx::TensorProto& t) const;  // "initializer 'w'", ...
};

// Calls f(tensor, site) on every TensorProto of the graph and its subgraphs: initializers,
// sparse initializers, tensor and sparse-tensor attributes. Iterative (explicit work list), so
// the nesting depth costs no stack.
template <typename F>
void ForEachTensor(const onnx::GraphProto& root, F&& f) {
  struct Item {
    const onnx::GraphProto* g;
    bool sub;
  };
  std::vector<Item> todo{{&root, false}};
  auto attrs = [&](const onnx::NodeProto& n, bool sub) {
    for (const auto& a : n.attribute()) {
      const TensorSite at{&n, sub, false};
      const TensorSite sp{&n, sub, true};
      if (a.has_t()) f(a.t(), at);
      for (const auto& t : a.tensors()) f(t, at);
      if (a.has_sparse_tensor()) {
        f(a.sparse_tensor().values(), sp);
        f(a.sparse_tensor().indices(), sp);
      }
      for (const auto& st : a.sparse_tensors()) {
        f(st.values(), sp);
        f(st.indices(), sp);
      }
      if (a.has_g()) todo.push_back({&a.g(), true});
      for (const auto& sg : a.graphs()) todo.push_back({&sg, true});
    }
  };
  while (!todo.empty()) {
    const auto [g, sub] = todo.back();
    todo.pop_back();
    for (const auto& t : g->initializer()) f(t, TensorSite{nullptr, sub, false});
    for (const auto& st : g->sparse_initializer()) {
      f(st.values(), TensorSite{nullptr, sub, true});
      f(st.indices(), TensorSite{nullptr, sub, true});
    }
    for (const auto& n : g->node()) attrs(n, sub);
  }
}

// The same over the main graph and the model-local functions' nodes.
template <typename F>
void ForEachTensor(const onnx::ModelProto& m, F&& f) {
  ForEachTensor(m.graph(), f);
  for (const auto& fn : m.functions()) {
    onnx::GraphProto body;  // a view would need the walker over node lists; functions are small
    *body.mutable_node() = fn.node();
    ForEachTensor(body, [&](const onnx::TensorProto& t, TensorSite site) {
      site.subgraph = true;
      f(t, site);
    });
  }
}

// Model strings (names, op types, ONNX messages) made safe for every report consumer: valid
// UTF-8 (JSON, protobuf string fields) without control characters (no terminal escape
// injection). Invalid sequences and C0/C1 controls become U+FFFD; tab, CR and LF become spaces.
std::string CleanText(std::string_view s);
void CleanTextInPlace(std::string& s);

// "1 consumer", "3 consumers": a count with its noun in the right number (regular plurals).
std::string Count(std::int64_t n, std::string_view noun);

// Formats a float compactly ("0.0123", "1.2e-05").
std::string FormatNumber(double v);
// "[a, b, c, ...]" with at most `max` elements.
std::string FormatList(const std::vector<double>& v, std::size_t max = 8);
std::string FormatList(const std::vector<std::int64_t>& v, std::size_t max = 8);
std::string FormatDims(const std::vector<std::int64_t>& dims);

}  // namespace axqc::detail
