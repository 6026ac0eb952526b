// CLI policy: the exit codes of `axqc check` (and `axqc fix`) for a verdict. Documented in
// README.md; CI scripts key on them.
#pragma once

#include "axqc/report.h"

namespace axqc {

// 0 conformant, 1 non_conformant, 3 not_applicable (2 is an input or usage error).
inline int ExitCodeFor(Verdict v) {
  switch (v) {
    case Verdict::kConformant:
      return 0;
    case Verdict::kNonConformant:
      return 1;
    case Verdict::kNotApplicable:
      return 3;
  }
  return 2;
}

}  // namespace axqc
