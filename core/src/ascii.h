// ASCII-only string helpers (locale independent).
#pragma once

#include <cctype>
#include <string>
#include <string_view>

namespace axqc::detail {

inline std::string AsciiLower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace axqc::detail
