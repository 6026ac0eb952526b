// Versions: the tool, the rule set and the linked ONNX library.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace axqc {

// Tool version string ("0.1.0").
std::string_view ToolVersion();

// The ONNX C++ library axqc is linked against and what it can validate.
struct OnnxLibraryInfo {
  std::string version;          // e.g. "1.20.0"
  std::int64_t max_ir_version;  // highest model IR version it knows (onnx::IR_VERSION)
  int max_opset;                // highest ai.onnx opset it knows
};

const OnnxLibraryInfo& LinkedOnnx();

// One line for --version output: "ONNX 1.20.0 (IR <= 13, ai.onnx opset <= 25)".
std::string LinkedOnnxDescription();

}  // namespace axqc
