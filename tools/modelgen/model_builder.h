// Fluent builder for ONNX ModelProto, used by the test suite, the examples generator and the
// benchmark generator, so that tests read like the graphs they build:
//
//   ModelBuilder b;
//   b.Input("x", onnx::TensorProto::FLOAT, {1, 3, 32, 32});
//   std::string x = b.QDQ("x", "x", QParams::U8());
//   std::string w = b.WeightQDQ("conv_w", {8, 3, 3, 3}, QParams::PerChannel(QType::kS8, s, 0));
//   b.Node("Conv", {x, w}, {"conv_out"}, {ModelBuilder::AttrInts("pads", {1, 1, 1, 1})});
//   b.Output(b.QDQ("conv_out", "conv_out", QParams::U8(0.05f, 0)));
//   onnx::ModelProto m = b.Build();
//
// Everything generated is deterministic: the same calls produce byte-identical files.
// The builder validates nothing on purpose (negative tests need invalid models); only
// contradictory use of the builder itself (e.g. two different initializers under one name)
// throws std::invalid_argument.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace axqc::modelgen {

// ---------------------------------------------------------------- quantization types

// ONNX UINT4, INT4, UINT8, INT8, UINT16, INT16, INT32.
enum class QType { kU4, kS4, kU8, kS8, kU16, kS16, kS32 };

int OnnxElemType(QType t);       // onnx::TensorProto_DataType value
const char* QTypeName(QType t);  // "U4", "S4", "U8", "S8", "U16", "S16", "S32"
int QTypeBits(QType t);          // 4, 8, 16 or 32
bool QTypeSigned(QType t);
int64_t QTypeMin(QType t);  // full storage range, e.g. S8: -128
int64_t QTypeMax(QType t);  // e.g. S8: 127

enum class Storage { kRaw, kTyped };  // raw_data little-endian, or typed fields (int32_data etc.)

// Quantization parameters of one Q/DQ edge.
struct QParams {
  QType type = QType::kU8;
  std::vector<float> scale{0.02f};     // 1 element = per-tensor
  std::vector<int64_t> zero_point{0};  // same length as scale
  std::optional<int64_t> axis;         // set for per-channel
  bool scalar = true;                  // 1-element params as rank-0 (true) or shape [1] (false)
  bool omit_zero_point = false;        // for negative tests: Q/DQ get only 2 inputs
  Storage storage = Storage::kRaw;     // storage of the scale / zero_point initializers
  // For negative tests: writes the zero_point (and weight data) with this ONNX elem type instead
  // of OnnxElemType(type), e.g. FLOAT8E4M3FN or UINT32. Values are written as that type's
  // integer bit patterns.
  std::optional<int> elem_type_override;

  int ElemType() const { return elem_type_override ? *elem_type_override : OnnxElemType(type); }

  static QParams U4(float s = 0.02f, int64_t zp = 8);
  static QParams S4(float s = 0.02f);
  static QParams U8(float s = 0.02f, int64_t zp = 128);
  static QParams S8(float s = 0.02f);
  static QParams U16(float s = 0.0002f, int64_t zp = 32768);
  static QParams S16(float s = 0.0002f);
  static QParams S32(float s = 0.0004f);
  // Per-channel: scale and zero_point shape [C] (zero_point all 0), `axis` set.
  static QParams PerChannel(QType t, std::vector<float> scales, int64_t axis);
};

// bias_scale[c] = in_scale * w_scale[c], computed in FP32 exactly as spec section 4 reads it.
std::vector<float> BiasScales(float in_scale, const std::vector<float>& w_scales);

// ---------------------------------------------------------------- shapes

// One dimension of a declared shape: a value, a symbol, or unknown (neither; default).
struct Dim {
  std::optional<int64_t> value;
  std::string param;
  Dim() = default;
  Dim(int64_t v) : value(v) {}                 // NOLINT(google-explicit-constructor)
  Dim(int v) : value(v) {}                     // NOLINT(google-explicit-constructor)
  Dim(std::string p) : param(std::move(p)) {}  // NOLINT(google-explicit-constructor)
  Dim(const char* p) : param(p) {}             // NOLINT(google-explicit-constructor)
};

// ---------------------------------------------------------------- builder

class ModelBuilder {
 public:
  explicit ModelBuilder(int64_t opset = 21, int64_t ir_version = 10, std::string graph_name = "g");

  // Graph inputs / outputs. elem_type is an onnx::TensorProto_DataType value; a negative dim in
  // an int64 shape is an unknown dim (neither value nor symbol), use the *Dims forms for symbols.
  ModelBuilder& Input(const std::string& name, int elem_type, const std::vector<int64_t>& shape);
  ModelBuilder& InputDims(const std::string& name, int elem_type, const std::vector<Dim>& shape);
  ModelBuilder& Output(const std::string& name, int elem_type, const std::vector<int64_t>& shape);
  ModelBuilder& OutputDims(const std::string& name, int elem_type, const std::vector<Dim>& shape);
  // Type and shape taken from shape inference at Build(); left without a type when inference
  // cannot determine the elem type.
  ModelBuilder& Output(const std::string& name);

  // Explicit value_info (kept as given; inference never overrides it). Unranked: no shape.
  ModelBuilder& ValueInfo(const std::string& name, int elem_type, const std::vector<Dim>& shape);
  ModelBuilder& ValueInfoUnranked(const std::string& name, int elem_type);

  // ------------------------------------------------------------ initializers
  ModelBuilder& InitF32(const std::string& name, const std::vector<int64_t>& dims,
                        const std::vector<float>& values, Storage s = Storage::kRaw);
  ModelBuilder& InitF32Fill(const std::string& name, const std::vector<int64_t>& dims, float v);
  // Deterministic pseudo-random values in [lo, hi) (seeded by the name).
  ModelBuilder& InitF32Rand(const std::string& name, const std::vector<int64_t>& dims,
                            float lo = -1.0f, float hi = 1.0f);
  // Integer initializer of any integer elem type: INT4/UINT4 (packed two per byte, low nibble
  // first, odd counts padded), INT8/UINT8/INT16/UINT16/INT32/INT64/UINT32/UINT64/BOOL, and
  // FLOAT8* types (values are bit patterns). Typed storage: int32_data for <= 32-bit types (4-bit
  // packed one byte per entry), int64_data for INT64, uint64_data for UINT32/UINT64.
  ModelBuilder& InitInt(const std::string& name, int elem_type, const std::vector<int64_t>& dims,
                        const std::vector<int64_t>& values, Storage s = Storage::kRaw);
  ModelBuilder& InitTensor(onnx::TensorProto t);  // raw escape hatch

  // Tensor makers (also useful with InitTensor after tweaking, or AttrT).
  static onnx::TensorProto MakeF32(const std::string& name, const std::vector<int64_t>& dims,
                                   const std::vector<float>& values, Storage s = Storage::kRaw);
  static onnx::TensorProto MakeInt(const std::string& name, int elem_type,
                                   const std::vector<int64_t>& dims,
                                   const std::vector<int64_t>& values, Storage s = Storage::kRaw);

  // ------------------------------------------------------------ nodes
  // Adds a node. Name defaults to "<op>_<n>" (n counts nodes of that op_type). A node in a
  // domain without an opset import gets one at version 1 at Build().
  ModelBuilder& Node(const std::string& op_type, std::vector<std::string> inputs,
                     std::vector<std::string> outputs, std::vector<onnx::AttributeProto> attrs = {},
                     const std::string& name = "", std::string domain = "");
  // Additional opset import (e.g. "com.microsoft", 1), or override of the default domain's.
  ModelBuilder& Opset(const std::string& domain, int64_t version);

  static onnx::AttributeProto AttrI(const std::string& name, int64_t v);
  static onnx::AttributeProto AttrF(const std::string& name, float v);
  static onnx::AttributeProto AttrInts(const std::string& name, const std::vector<int64_t>& v);
  static onnx::AttributeProto AttrFloats(const std::string& name, const std::vector<float>& v);
  static onnx::AttributeProto AttrS(const std::string& name, const std::string& v);
  static onnx::AttributeProto AttrT(const std::string& name, onnx::TensorProto t);
  static onnx::AttributeProto AttrG(const std::string& name, onnx::GraphProto g);

  // ------------------------------------------------------------ Q/DQ helpers
  // They add the scale / zero_point initializers "<prefix>_scale" / "<prefix>_zp" (shared when
  // Quantize and Dequantize use one prefix) and the nodes "<prefix>_q" / "<prefix>_dq".
  std::string Quantize(const std::string& x, const std::string& prefix, const QParams& p);
  std::string Dequantize(const std::string& xq, const std::string& prefix, const QParams& p);
  std::string QDQ(const std::string& x, const std::string& prefix, const QParams& p);
  // Adds only the "<prefix>_scale" / "<prefix>_zp" initializers; returns {scale, zp} names
  // (zp empty when p.omit_zero_point).
  std::pair<std::string, std::string> QParamInits(const std::string& prefix, const QParams& p);

  // Weights. The data initializer is named `prefix`; values are generated deterministically and
  // lie inside p.type's range (the float weight is exactly (q - zp) * scale).
  // FP32 initializer -> Q -> DQ; returns the DQ output.
  std::string WeightQDQ(const std::string& prefix, const std::vector<int64_t>& dims,
                        const QParams& p);
  // Integer initializer of p.type -> DQ; returns the DQ output.
  std::string WeightIntDQ(const std::string& prefix, const std::vector<int64_t>& dims,
                          const QParams& p);
  // INT32 initializer [channels] -> DQ with per-channel scale `scales` (axis 0, zp 0).
  std::string BiasInt32DQ(const std::string& prefix, int64_t channels, std::vector<float> scales);

  // ------------------------------------------------------------ options
  ModelBuilder& SetProducer(std::string name, std::string version);
  ModelBuilder& DocString(std::string doc);  // the model's doc_string
  // Default true: Build() runs ONNX shape inference and records value_info for every node output
  // that is not a graph output and has a complete inferred type (elem type + every dim a value or
  // a symbol). Never throws because of inference.
  ModelBuilder& AutoValueInfo(bool on);
  ModelBuilder& DropValueInfo(const std::string& tensor);  // for negative tests

  // ------------------------------------------------------------ output
  onnx::ModelProto Build() const;
  std::string Serialize() const;             // Build() serialized
  void Save(const std::string& path) const;  // writes the file, creating parent dirs
  // Writes any (e.g. hand-edited) model the same way.
  static void SaveModel(const onnx::ModelProto& model, const std::string& path);
  // Moves every initializer whose raw_data has >= threshold_bytes into `data_file` (a path
  // relative to the model's directory), sequentially, with location/offset/length set.
  void SaveWithExternalData(const std::string& path, const std::string& data_file,
                            std::size_t threshold_bytes = 1024) const;

  // Introspection.
  bool HasInitializer(const std::string& name) const;
  int64_t opset() const { return opset_; }

 private:
  void AddInit(onnx::TensorProto t);
  std::string NextNodeName(const std::string& op_type);

  int64_t opset_;
  int64_t ir_version_;
  std::string graph_name_;
  std::string producer_name_ = "axqc-modelgen";
  std::string producer_version_ = "0.1.0";
  std::string doc_string_;
  bool auto_value_info_ = true;
  std::vector<onnx::ValueInfoProto> inputs_;
  std::vector<onnx::ValueInfoProto> outputs_;
  std::set<std::string> untyped_outputs_;
  std::vector<onnx::ValueInfoProto> value_infos_;
  std::vector<onnx::TensorProto> initializers_;
  std::unordered_map<std::string, std::size_t> init_index_;  // name -> position in initializers_
  std::vector<onnx::NodeProto> nodes_;
  std::map<std::string, int64_t> opsets_;  // extra imports (domain -> version)
  std::map<std::string, int> node_counters_;
  std::set<std::string> dropped_value_info_;
};

}  // namespace axqc::modelgen
