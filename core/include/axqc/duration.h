// Durations as people write them, one grammar for the command line, the server's configuration
// and the HTTP API's query strings.
#pragma once

#include <optional>
#include <string_view>

namespace axqc {

// A non-negative decimal number followed by a unit: ms, s, m (minutes), h, d or w
// ("250ms", "90s", "1.5h", "2w"). Text without a unit is read in `bare_unit` (one of those
// units); with an empty `bare_unit` a unit is required. Surrounding spaces are ignored.
// Returns the duration in seconds (values too large for a double are +infinity, which callers
// bound), or nullopt when the text is not a duration (a sign, an exponent, an unknown unit,
// "inf" or "nan", nothing before the unit).
std::optional<double> ParseDurationSeconds(std::string_view text, std::string_view bare_unit = "s");

}  // namespace axqc
