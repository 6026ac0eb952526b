// libFuzzer target http_query: a request target of the HTTP/JSON API (request line target with
// its query string) through the router, the query parsing of /v1/stats and /v1/models and the
// validation layer (see http_query_fuzz_input.h). An invariant violation aborts (libFuzzer
// reports it as a crash); ASan/UBSan report memory errors and undefined behaviour (e.g. an
// overflowing duration), and protobuf's TimeUtil aborts on a time the validation let through.
#include <cstdio>
#include <cstdlib>

#include "http_query_fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string error = axqc::fuzz::RunHttpQueryInput(data, size);
  if (!error.empty()) {
    std::fprintf(stderr, "http_query invariant violated: %s\n", error.c_str());
    std::abort();
  }
  return 0;
}
