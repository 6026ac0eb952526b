// The `axqc fix` command line a report prints for a cause with a rewrite (text and HTML reports):
// one that runs as printed, the model's name quoted for a POSIX shell when it needs it.
#pragma once

#include <string>
#include <string_view>

namespace axqc::detail {

// `s` as one word of a POSIX shell command line: unchanged when it is made only of characters no
// shell treats specially, else in single quotes (a quote inside written '\'').
inline std::string ShellWord(std::string_view s) {
  bool plain = !s.empty();
  for (const char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-' || c == '.' || c == '/' || c == ':' || c == '@' ||
                    c == '%' || c == '+' || c == ',' || c == '=';
    if (!ok) plain = false;
  }
  if (plain) return std::string(s);
  std::string out = "'";
  for (const char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

// "axqc fix MODEL -o FIXED.onnx --only REWRITE"
inline std::string FixCommand(std::string_view model_file, std::string_view rewrite) {
  return "axqc fix " + ShellWord(model_file) + " -o FIXED.onnx --only " + ShellWord(rewrite);
}

}  // namespace axqc::detail
