// Stage 2: index the main graph: producers, consumers, initializers, tensor types and shapes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <onnx/onnx_pb.h>

#include "onnx_util.h"

namespace axqc::detail {

struct Use {
  int node;  // consumer node index
  int slot;  // input slot; -1 for an implicit use from a subgraph (If/Loop/Scan body)
};

struct TensorType {
  int elem_type = 0;                  // 0 = unknown
  bool has_shape = false;
  std::vector<std::int64_t> dims;     // -1 = symbolic or unknown dimension
  bool complete = false;              // elem type and every dim known (value or symbol)
};

class GraphIndex {
 public:
  // `declared` collects tensors that carried value_info before shape inference ran.
  GraphIndex(const onnx::GraphProto& g, const ExternalDataReader* ext);

  const onnx::GraphProto& graph() const { return g_; }
  int node_count() const { return g_.node_size(); }
  const onnx::NodeProto& node(int i) const { return g_.node(i); }
  // Display name of a node: its name, or "<op_type>#<index>" when unnamed.
  const std::string& NodeName(int i) const { return names_[static_cast<std::size_t>(i)]; }
  const std::vector<int>& topo_order() const { return topo_; }

  // -1 when the tensor has no producer node.
  int Producer(std::string_view tensor) const;
  const std::vector<Use>& Consumers(std::string_view tensor) const;
  const onnx::TensorProto* Initializer(std::string_view tensor) const;
  bool IsGraphInput(std::string_view tensor) const;   // excludes initializer-backed inputs
  bool IsGraphOutput(std::string_view tensor) const { return outputs_.contains(tensor); }
  // Type info from value_info / inputs / outputs / initializers (after inference).
  const TensorType* Type(std::string_view tensor) const;
  int ElemType(std::string_view tensor) const;
  // Shape dims if known (rank and dims; -1 for unknown dims).
  std::optional<std::vector<std::int64_t>> Dims(std::string_view tensor) const;

  const ExternalDataReader* external() const { return ext_; }

 private:
  const onnx::GraphProto& g_;
  const ExternalDataReader* ext_;
  std::vector<std::string> names_;
  std::vector<int> topo_;
  std::unordered_map<std::string_view, int> producer_;
  std::unordered_map<std::string_view, std::vector<Use>> consumers_;
  std::unordered_map<std::string_view, const onnx::TensorProto*> inits_;
  std::unordered_set<std::string_view> inputs_;
  std::unordered_set<std::string_view> outputs_;
  std::unordered_map<std::string_view, TensorType> types_;
};

TensorType TypeFromProto(const onnx::TypeProto& t);

}  // namespace axqc::detail
