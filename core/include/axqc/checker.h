// Public entry points of the checker pipeline:
//   load model -> index graph -> read quant params -> group nodes into units -> apply rules ->
//   report.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "axqc/report.h"

namespace axqc {

// Seconds spent in each pipeline stage of one check (benchmarks, bench/), added to the fields.
// Stages that do not run for a model (read for CheckBytes) stay 0. Wall-clock time, or the
// calling thread's CPU time when `thread_cpu` is set (steadier on a loaded machine).
struct StageTimings {
  bool thread_cpu = false;
  double read_s = 0;        // reading the model file (CheckFile only)
  double sha256_s = 0;      // hashing the model bytes
  double parse_s = 0;       // protobuf parse (+ external data validation for CheckFile)
  double onnx_check_s = 0;  // ONNX checker (full check) + strict shape inference
  double guards_s = 0;      // axqc's own work around it: tensor storage guards, declared value_info
  double index_s = 0;       // graph index
  double quant_s = 0;       // quant params
  double units_s = 0;       // units / ownership (patterns)
  double rules_s = 0;       // every rule
  double report_s = 0;      // assembling the Report (grouping, summaries); not rendering
};

struct CheckOptions {
  bool check_value = false;         // spec 2.5: -c / --check-value
  std::size_t max_locations = 5;    // per finding group
  bool include_units = true;        // fill Report::units (ownership map)
  StageTimings* timings = nullptr;  // when set, filled with the time of each stage
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
