// libFuzzer target json_body: the input as the JSON body of POST /v1/check, through the server's
// parsing and validation (hook_fuzz_input.h); a violated invariant aborts, and ASan/UBSan report
// memory errors, leaks and undefined behaviour.
#include <cstdio>
#include <cstdlib>

#include "hook_fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string error = axqc::fuzz::RunJsonBodyInput(data, size);
  if (!error.empty()) {
    std::fprintf(stderr, "json_body invariant violated: %s\n", error.c_str());
    std::abort();
  }
  return 0;
}
