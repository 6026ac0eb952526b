// The operator support matrix of spec section 5, generated from the checker's operator table
// (core/src/optable.cc). docs/rules/operators.md is this Markdown, written by
// `axqc rules --operators`; a test keeps the two byte-identical.
#pragma once

#include <string>
#include <vector>

namespace axqc {

// One operator of the table, in display form.
struct OperatorInfo {
  std::string op_type;                   // "Conv"
  std::string op_class;                  // "quant-only", "passive", "non-quant-only", ...
  std::string section;                   // spec section, e.g. "5.2"
  std::vector<std::string> inputs;       // role of each input slot ("data", "weight", "aux", ...)
  bool variadic_inputs = false;          // the last input role repeats
  std::vector<std::string> outputs;      // "data" or "aux" per output slot
  bool variadic_outputs = false;         // the last output role repeats
  std::vector<std::string> data_types;   // allowed integer types of quantized data inputs
  std::vector<std::string> constraints;  // narrowing flags ("same integer type", "symmetric", ...)
  std::string rule;                      // rule ID used for data-type violations ("" if none)
  std::string note;                      // one line
  int since_opset = 0;                   // the ai.onnx opset that first defined it (0: unknown)
  std::string since_release;             // the first ONNX release with that opset ("1.13")
};

// Every operator with a rule, ordered by spec section (numerically), then table order.
std::vector<OperatorInfo> Operators();

// The support matrix as Markdown (the exact content of docs/rules/operators.md).
std::string OperatorsMarkdown();

}  // namespace axqc
