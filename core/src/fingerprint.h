// Finding fingerprints: an identity of a finding that survives node and tensor renames (another
// exporter, another export of the same network) and file renames. The recipe is documented in
// docs/report-schema.md ("Fingerprints"); changing it changes every fingerprint, so it carries a
// version ("axqc-fp/1") and a change must bump it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "axqc/report.h"
#include "graph_index.h"

namespace axqc::detail {

// Sets Finding::fingerprint of every finding. `primary[i]` is the node index of findings[i]'s
// primary node in `g` (-1: the finding has none). `g` may be null: rule, kind and op type only.
void AssignFingerprints(const GraphIndex* g, std::vector<Finding>& findings,
                        const std::vector<int>& primary);

// The first 16 hex digits of sha256(text).
std::string ShortHash(std::string_view text);

}  // namespace axqc::detail
