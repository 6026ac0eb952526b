// The one escaper of text placed in XML and HTML (the JUnit report, the HTML report and the
// SVG drawings embedded in it): element content and quoted attribute values.
#pragma once

#include <string>
#include <string_view>

namespace axqc::detail {

// Escapes & < > " ' (as &amp; &lt; &gt; &quot; &apos;, entities of both XML 1.0 and HTML5) and
// replaces the control characters XML 1.0 forbids (below 0x20
// except tab, newline and carriage return) with '?'.
inline std::string XmlEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r') {
          out += '?';
        } else {
          out.push_back(c);
        }
    }
  }
  return out;
}

}  // namespace axqc::detail
