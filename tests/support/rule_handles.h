// Names derived from a rule ID, shared by the registry and documentation tests.
#pragma once

#include <cctype>
#include <string>
#include <string_view>

namespace axqc::test {

// The typed handle of a rule ID (core/src/rules.h): "qdq/scale-value" -> "kQdqScaleValue".
inline std::string HandleName(std::string_view id) {
  std::string name = "k";
  bool upper = true;
  for (char c : id) {
    if (c == '/' || c == '-') {
      upper = true;
    } else {
      name += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
      upper = false;
    }
  }
  return name;
}

}  // namespace axqc::test
