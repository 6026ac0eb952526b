// Small helpers over the ONNX protobuf types: type names, attributes, tensor values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <onnx/onnx_pb.h>

namespace axqc::detail {

std::string ElemTypeName(int elem_type);  // "FLOAT", "INT8", ... or "type(N)"
bool IsFloatType(int elem_type);          // FLOAT, DOUBLE, FLOAT16, BFLOAT16
bool IsIntegerType(int elem_type);        // any (u)int incl. 4-bit and BOOL
// Bits per element for fixed-size types (4 for INT4/UINT4), 0 for STRING/UNDEFINED/unknown.
int ElemBits(int elem_type);

const onnx::AttributeProto* FindAttr(const onnx::NodeProto& n, std::string_view name);
std::optional<std::int64_t> AttrInt(const onnx::NodeProto& n, std::string_view name);
std::optional<float> AttrFloat(const onnx::NodeProto& n, std::string_view name);

// Element count of a tensor's dims; nullopt on negative dims or int64 overflow.
std::optional<std::int64_t> ElementCount(const onnx::TensorProto& t);

// Reads external data bytes of a tensor (path-loaded models only). Set by the loader.
struct ExternalDataReader {
  virtual ~ExternalDataReader() = default;
  // Returns the bytes, or nullopt if unavailable. `max_bytes` bounds what may be read.
  virtual std::optional<std::string> Read(const onnx::TensorProto& t, std::size_t max_bytes) const = 0;
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

// Formats a float compactly ("0.0123", "1.2e-05").
std::string FormatNumber(double v);
// "[a, b, c, ...]" with at most `max` elements.
std::string FormatList(const std::vector<double>& v, std::size_t max = 8);
std::string FormatList(const std::vector<std::int64_t>& v, std::size_t max = 8);
std::string FormatDims(const std::vector<std::int64_t>& dims);

}  // namespace axqc::detail
