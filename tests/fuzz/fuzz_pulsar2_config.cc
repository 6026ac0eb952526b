// libFuzzer target: a Pulsar2 build configuration (bytes of a config.json) -> the lax-JSON reader,
// the schema walk and the checks against a small QDQ model (axqc/pulsar2.h, docs/pulsar2.md).
//
// Every input must end in findings (or none): the reader bounds the size and the nesting, the
// checks bound the entries and the findings, and the configuration never changes the spec verdict
// (pulsar2_config_fuzz_input.h). A broken invariant traps; any exception escapes (libFuzzer
// reports the abort from std::terminate as a crash), and ASan/UBSan report memory and
// undefined-behaviour errors. Configure with -DAXQC_FUZZ=ON (tests/fuzz/CMakeLists.txt); seeds:
// any config.json, e.g. the output of `axqc pulsar2-config`, and
// tests/fuzz/pulsar2_config_regressions/; dictionary: tests/fuzz/pulsar2.dict.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "pulsar2_config_fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string problems = axqc::fuzz::Pulsar2ConfigProblems(
      std::string_view(reinterpret_cast<const char*>(data), size));
  if (!problems.empty()) {
    std::fputs(problems.c_str(), stderr);
    __builtin_trap();
  }
  return 0;
}
