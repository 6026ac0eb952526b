// libFuzzer target upload_frame: an Upload message in slices through the raw Upload handler's
// in-place reader, compared with protobuf's parser (see upload_frame_fuzz_input.h). A
// disagreement aborts (libFuzzer reports it as a crash); ASan/UBSan report reads out of bounds.
#include <cstdio>
#include <cstdlib>

#include "upload_frame_fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string error = axqc::fuzz::RunUploadFrameInput(data, size);
  if (!error.empty()) {
    std::fprintf(stderr, "upload_frame invariant violated: %s\n", error.c_str());
    std::abort();
  }
  return 0;
}
