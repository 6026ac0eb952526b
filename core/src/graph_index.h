// Stage 2: index the main graph: producers, consumers, initializers, tensor types and shapes.
//
// Every tensor name of the graph is interned once into a dense id (one pass over the strings);
// producers, consumers (CSR), initializers, flags and types are arrays indexed by id, and every
// node's inputs and outputs are ids by slot, so the later stages work with ids (InputId,
// OutputId) and pay a hash probe only for a name that does not come from a node slot.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "onnx_util.h"

namespace axqc::detail {

struct Use {
  int node;  // consumer node index
  int slot;  // input slot; -1 for an implicit use from a subgraph (If/Loop/Scan body)
};

struct TensorType {
  int elem_type = 0;  // 0 = unknown
  bool has_shape = false;
  std::vector<std::int64_t> dims;  // -1 = symbolic or unknown dimension
  bool complete = false;           // elem type and every dim known (value or symbol)
};

// Open-addressing hash set of names (views into storage that outlives it) -> dense ids.
class NameTable {
 public:
  void Reserve(std::size_t names);
  // The id of `name`, inserting it with the next id when new.
  int Intern(std::string_view name);
  // -1 when absent.
  int Find(std::string_view name) const;
  std::string_view Name(int id) const { return names_[static_cast<std::size_t>(id)]; }
  int size() const { return static_cast<int>(names_.size()); }

 private:
  struct Slot {
    std::uint32_t tag = 0;  // upper hash bits | 1 (0 = empty)
    std::int32_t id = -1;
  };
  void Grow();
  std::vector<Slot> slots_;
  std::vector<std::string_view> names_;
};

class GraphIndex {
 public:
  GraphIndex(const onnx::GraphProto& g, const ExternalDataReader* ext);
  // Everything but the tensor types, from the graph as it is now (before shape inference adds
  // its value_info); RecordTypes() adds them later. Builds the same ids as the constructor above
  // would on the graph before inference; reads the graph only (nodes, initializers, inputs,
  // outputs and value_info names), so that it can run beside the ONNX checker.
  struct TypesLater {};
  GraphIndex(const onnx::GraphProto& g, const ExternalDataReader* ext, TypesLater);
  // Tensor types from the graph's inputs, value_info (the declared entries and those shape
  // inference added since), outputs and initializers.
  void RecordTypes();

  const onnx::GraphProto& graph() const { return g_; }
  int node_count() const { return g_.node_size(); }
  const onnx::NodeProto& node(int i) const { return g_.node(i); }
  // Display name of a node: its name, or "<op_type>#<index>" when unnamed or duplicated.
  std::string_view NodeName(int i) const { return names_[static_cast<std::size_t>(i)]; }
  const std::vector<int>& topo_order() const { return topo_; }

  // Dense tensor ids: every name used in the graph (node inputs and outputs, graph inputs and
  // outputs, initializers, value_info). -1 for an unknown name. A hash probe on the characters:
  // for a node's slot, InputId / OutputId are array reads.
  int TensorId(std::string_view tensor) const { return ids_.Find(tensor); }
  std::string_view TensorName(int id) const { return ids_.Name(id); }
  int tensor_count() const { return ids_.size(); }
  // Ids of a node's inputs and outputs by slot; -1 for an empty (omitted) name.
  std::span<const int> InputIds(int node) const;
  std::span<const int> OutputIds(int node) const;

  // By id; -1 (an omitted name) has no producer, consumers, initializer or type. These are the
  // only accessors: a caller with a name looks its id up once with TensorId (or takes it from a
  // node's slot with InputId / OutputId) and keeps the id.
  int ProducerOf(int id) const {
    return id < 0 ? -1 : tensors_[static_cast<std::size_t>(id)].producer;
  }
  std::span<const Use> ConsumersOf(int id) const;
  const onnx::TensorProto* InitializerOf(int id) const {
    return id < 0 ? nullptr : tensors_[static_cast<std::size_t>(id)].init;
  }
  // Type info from value_info / inputs / outputs / initializers (after inference); 0 / nullopt
  // when unknown. Shape dims: rank and dims, -1 for an unknown dim.
  int ElemTypeOf(int id) const;
  std::optional<std::vector<std::int64_t>> DimsOf(int id) const;
  // A graph input that no initializer backs.
  bool IsGraphInputId(int id) const {
    return id >= 0 && tensors_[static_cast<std::size_t>(id)].input;
  }
  bool IsGraphOutputId(int id) const {
    return id >= 0 && tensors_[static_cast<std::size_t>(id)].output;
  }
  // The id of a node's input/output slot, -1 when the node or the slot is out of range or the
  // name omitted.
  int InputId(int node, int slot) const;
  int OutputId(int node, int slot) const;

  // Ids of the graph's value_info entries as they were when the index was built (before shape
  // inference appended its own), in declaration order.
  std::span<const int> DeclaredValueInfoIds() const { return declared_.value_info; }

  const ExternalDataReader* external() const { return ext_; }

 private:
  struct Tensor {
    int producer = -1;
    std::uint32_t uses_begin = 0, uses_end = 0;  // into uses_
    const onnx::TensorProto* init = nullptr;
    bool input = false, output = false, typed = false;
  };
  // A tensor's recorded type; its dims are dims_[dims_begin, dims_begin + rank).
  struct StoredType {
    std::int32_t elem_type = 0;
    bool has_shape = false;
    std::uint32_t dims_begin = 0, rank = 0;
  };
  const onnx::GraphProto& g_;
  const ExternalDataReader* ext_;
  std::vector<std::string_view> names_;
  std::deque<std::string> made_names_;  // storage of generated node names
  std::vector<int> topo_;
  NameTable ids_;
  // Construction steps, in order.
  struct DeclaredIds {
    std::vector<int> initializers, inputs, value_info, outputs;  // ids in declaration order
  };
  void NameNodes();
  DeclaredIds InternTensors();
  void RecordTensors(const DeclaredIds& d);
  DeclaredIds declared_;
  std::vector<std::pair<int, int>> ImplicitUses() const;
  void BuildConsumers(const std::vector<std::pair<int, int>>& implicit);
  void SortTopologically();
  std::vector<Tensor> tensors_;
  // Types in one flat record per id (meaningful when Tensor::typed) and all their dims in one
  // array: no allocation per tensor. A type recorded again (a graph output after its value_info)
  // appends its dims anew.
  std::vector<StoredType> types_;
  std::vector<std::int64_t> dims_;
  // Records `t` as the type of `id` (as TypeFromProto reads it; a non-tensor type records an
  // unknown element type and no shape).
  void SetType(int id, const onnx::TypeProto& t);
  const StoredType* Stored(int id) const;
  std::vector<Use> uses_;                 // consumers, grouped by tensor
  std::vector<std::uint32_t> io_begin_;   // node -> offset into io_ (inputs, then outputs)
  std::vector<std::uint32_t> out_begin_;  // node -> offset of its outputs in io_
  std::vector<int> io_;
};

TensorType TypeFromProto(const onnx::TypeProto& t);

}  // namespace axqc::detail
