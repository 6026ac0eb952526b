// Label values of reports in metrics, logs, history rows and the store: verdicts and cache results.
#pragma once

#include "axqc/v1/axqc.pb.h"

namespace axqc::server {

inline const char* VerdictLabel(v1::Verdict v) {
  switch (v) {
    case v1::VERDICT_CONFORMANT:
      return "conformant";
    case v1::VERDICT_NON_CONFORMANT:
      return "non_conformant";
    case v1::VERDICT_NOT_APPLICABLE:
      return "not_applicable";
    default:
      return "unknown";
  }
}

inline const char* CacheLabel(v1::CacheResult c) {
  switch (c) {
    case v1::CACHE_RESULT_MISS:
      return "miss";
    case v1::CACHE_RESULT_MEMORY_HIT:
      return "memory_hit";
    case v1::CACHE_RESULT_STORE_HIT:
      return "store_hit";
    case v1::CACHE_RESULT_SHARED:
      return "shared";
    default:
      return "";
  }
}

}  // namespace axqc::server
