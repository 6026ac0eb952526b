// libFuzzer target hook_hf: the input as a Hugging Face webhook body, through the server's parsing
// and validation (hook_fuzz_input.h); a violated invariant aborts, and ASan/UBSan report memory
// errors, leaks and undefined behaviour.
#include <cstdio>
#include <cstdlib>

#include "hook_fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string error = axqc::fuzz::RunHookHfInput(data, size);
  if (!error.empty()) {
    std::fprintf(stderr, "hook_hf invariant violated: %s\n", error.c_str());
    std::abort();
  }
  return 0;
}
