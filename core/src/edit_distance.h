// Edit distance of short names, for "did you mean" suggestions (rule IDs, configuration keys).
#pragma once

#include <algorithm>
#include <cstddef>
#include <string_view>
#include <vector>

namespace axqc {

// Levenshtein distance of `a` and `b`, or `bound` when it is at least that. Names longer than 64
// characters are not compared (their distance is `bound`), so a hostile input costs nothing.
inline std::size_t BoundedEditDistance(std::string_view a, std::string_view b, std::size_t bound) {
  if (a.size() > 64 || b.size() > 64) return bound;
  if ((a.size() > b.size() ? a.size() - b.size() : b.size() - a.size()) >= bound) return bound;
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return std::min(row[b.size()], bound);
}

}  // namespace axqc
