// Public entry points of the checker pipeline:
//   load model -> index graph -> read quant params -> group nodes into units -> apply rules -> report.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "axqc/report.h"

namespace axqc {

struct CheckOptions {
  bool check_value = false;        // spec 2.5: -c / --check-value
  std::size_t max_locations = 5;   // per finding group
  bool include_units = true;       // fill Report::units (ownership map)
};

// Not an ONNX model, unreadable file, unsafe external data: no verdict, an input error.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Checks the model file at `path`. External data is resolved inside the model's directory only.
// Throws InputError.
Report CheckFile(const std::string& path, const CheckOptions& options);

// Checks a serialized model held in memory. `name` is used in the report; external data is not
// available for in-memory models (tensors stored externally are an input error). Throws InputError.
Report CheckBytes(std::string_view bytes, const std::string& name, const CheckOptions& options);

// Tool version string ("0.1.0").
std::string_view ToolVersion();

// Exit code of `axqc check` for a verdict: 0 conformant, 1 non_conformant, 3 not_applicable.
int ExitCodeFor(Verdict v);

}  // namespace axqc
