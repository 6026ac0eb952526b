// libFuzzer target `dot`: a report whose graph has fuzzed node, tensor and op names, Q/DQ
// parameters, unit kind and file name (dot_fuzz_input.h) -> RenderDot and RenderHtml, with the
// escaping invariants of dot_fuzz_input.h asserted (a violation aborts: libFuzzer keeps the input).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "dot_fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const axqc::Report r =
      axqc::fuzz::DotFuzzReport(std::string_view(reinterpret_cast<const char*>(data), size));
  std::string problems = axqc::fuzz::DotProblems(r);
  axqc::HtmlOptions o;
  o.rules_url.clear();
  problems += axqc::fuzz::HtmlProblems(r, o);
  if (!problems.empty()) {
    std::fprintf(stderr, "dot invariants violated:\n%s", problems.c_str());
    std::abort();
  }
  return 0;
}
