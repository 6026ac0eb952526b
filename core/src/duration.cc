#include "axqc/duration.h"

#include <array>
#include <cctype>
#include <charconv>
#include <limits>
#include <string>
#include <utility>

namespace axqc {
namespace {

std::optional<double> UnitSeconds(std::string_view unit) {
  static constexpr std::array<std::pair<std::string_view, double>, 6> kUnits{{
      {"ms", 0.001},
      {"s", 1},
      {"m", 60},
      {"h", 3600},
      {"d", 86400},
      {"w", 7 * 86400},
  }};
  for (const auto& [name, seconds] : kUnits) {
    if (unit == name) return seconds;
  }
  return std::nullopt;
}

std::string_view Trimmed(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())) != 0) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())) != 0) s.remove_suffix(1);
  return s;
}

}  // namespace

std::optional<double> ParseDurationSeconds(std::string_view text, std::string_view bare_unit) {
  const std::string_view t = Trimmed(text);
  // The number: digits with at most one decimal point, at least one digit.
  std::size_t end = 0;
  bool digit = false;
  bool point = false;
  for (; end < t.size(); ++end) {
    const char c = t[end];
    if (std::isdigit(static_cast<unsigned char>(c)) != 0) {
      digit = true;
    } else if (c == '.' && !point) {
      point = true;
    } else {
      break;
    }
  }
  if (!digit) return std::nullopt;
  const std::string_view unit = t.substr(end);
  const auto factor = UnitSeconds(unit.empty() ? bare_unit : unit);
  if (!factor) return std::nullopt;
  double number = 0;
  const auto [ptr, ec] =
      std::from_chars(t.data(), t.data() + end, number, std::chars_format::fixed);
  if (ec == std::errc::result_out_of_range) return std::numeric_limits<double>::infinity();
  if (ec != std::errc() || ptr != t.data() + end) return std::nullopt;
  return number * *factor;
}

}  // namespace axqc
