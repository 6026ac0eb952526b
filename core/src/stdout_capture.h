// Keeps what the ONNX library prints off stdout. ONNX writes some diagnostics to std::cout (the
// checker's "Warning: Model contains experimental ops: ..."); on the CLI that text would land in
// front of a JSON, SARIF or JUnit report, and in the service in the server's own output.
//
// A process-wide redirect of file descriptor 1 would capture whatever other threads print at the
// same time (the service checks models on several threads), so the capture is per thread
// instead: on first use std::cout gets a stream buffer that forwards every write to the buffer
// it had before, except the writes of a thread that currently holds a StdoutCapture, which go
// into that capture. Other threads' output is untouched and never delayed. ONNX writes nothing to
// C stdio's stdout (printf & co.), only through std::cout.
#pragma once

#include <string>
#include <vector>

namespace axqc::detail {

class StdoutCapture {
 public:
  StdoutCapture();
  ~StdoutCapture();
  StdoutCapture(const StdoutCapture&) = delete;
  StdoutCapture& operator=(const StdoutCapture&) = delete;

  // The non-empty lines written to std::cout by this thread so far (trailing whitespace
  // removed); clears the capture.
  std::vector<std::string> TakeLines();

 private:
  std::string text_;
  std::string* outer_;  // the enclosing capture of this thread, restored on destruction
};

}  // namespace axqc::detail
