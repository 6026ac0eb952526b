// libFuzzer target: model bytes -> load + check, in both check_value modes.
//
// axqc::InputError is the documented outcome for bytes that are not a usable model. Any other
// exception escapes (libFuzzer reports the abort from std::terminate as a crash), and ASan/UBSan
// report memory and undefined-behaviour errors, leaks, timeouts and out-of-memory.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "axqc/checker.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  for (bool check_value : {false, true}) {
    axqc::CheckOptions options;
    options.check_value = check_value;
    try {
      auto report = axqc::CheckBytes(bytes, "fuzz.onnx", options);
      (void)report;
    } catch (const axqc::InputError&) {
      return 0;  // not a model: the second mode would fail the same way
    }
  }
  return 0;
}
