// Whether a check may use a second thread (docs/performance.md, "Two cores").
#pragma once

namespace axqc {

// Process-wide, on by default: CheckFile / CheckBytes run the work that does not wait for ONNX's
// checker (hashing the bytes, checking tensor storage, indexing the graph, reading Q/DQ values) on
// a second thread beside parsing, the checker and shape inference; the report is the same either
// way. Turn it off before checking where no thread may be started (the sandboxed worker: its
// seccomp filter allows no clone) or to measure the one-thread path (AXQC_BENCH_SEQUENTIAL).
void SetParallelChecks(bool on);
bool ParallelChecks();

}  // namespace axqc
