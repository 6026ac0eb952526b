// libFuzzer target hook_mlflow: the input as an MLflow webhook body, get-download-uri answer and
// artifact URI, through the server's parsing and validation (hook_fuzz_input.h); a violated
// invariant aborts, and ASan/UBSan report memory errors, leaks and undefined behaviour.
#include <cstdio>
#include <cstdlib>

#include "hook_fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string error = axqc::fuzz::RunHookMlflowInput(data, size);
  if (!error.empty()) {
    std::fprintf(stderr, "hook_mlflow invariant violated: %s\n", error.c_str());
    std::abort();
  }
  return 0;
}
