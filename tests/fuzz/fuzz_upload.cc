// libFuzzer target: the Upload stream of axqc-server. The input is decoded into a sequence of
// Upload messages (metadata and chunks with fuzzed boundaries and fields, see
// upload_fuzz_input.h) and fed to UploadAssembler, the state machine behind the Upload RPC;
// every invariant violation aborts (libFuzzer reports it as a crash), and ASan/UBSan report
// memory errors, leaks and undefined behaviour.
#include <cstdio>
#include <cstdlib>

#include "upload_fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string error = axqc::fuzz::RunUploadInput(data, size);
  if (!error.empty()) {
    std::fprintf(stderr, "upload invariant violated: %s\n", error.c_str());
    std::abort();
  }
  return 0;
}
