// Time spent in each stage of one check (CheckOptions::timings; benchmarks, bench/).
#pragma once

namespace axqc {

// Seconds spent in each pipeline stage of one check, added to the fields. Stages that do not run
// for a model (read for CheckBytes) stay 0. Wall-clock time, or the calling thread's CPU time
// when `thread_cpu` is set (steadier on a loaded machine).
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

}  // namespace axqc
