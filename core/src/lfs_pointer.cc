#include "lfs_pointer.h"

#include <charconv>

namespace axqc {

namespace {

constexpr std::size_t kMaxPointerBytes = 1024;

bool IsHex(std::string_view s) {
  for (const char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace

std::optional<LfsPointer> ParseLfsPointer(std::string_view bytes) {
  if (bytes.size() > kMaxPointerBytes) return std::nullopt;
  LfsPointer out;
  bool version = false;
  bool size = false;
  std::size_t line_no = 0;
  while (!bytes.empty()) {
    const std::size_t end = bytes.find('\n');
    if (end == std::string_view::npos) return std::nullopt;  // every line ends with LF
    const std::string_view line = bytes.substr(0, end);
    bytes.remove_prefix(end + 1);
    const std::size_t space = line.find(' ');
    if (space == std::string_view::npos || space == 0) return std::nullopt;
    const std::string_view key = line.substr(0, space);
    const std::string_view value = line.substr(space + 1);
    if (line_no++ == 0) {
      // The first line names the spec; older clients wrote the hawser URL.
      if (key != "version" || (value != "https://git-lfs.github.com/spec/v1" &&
                               value != "https://hawser.github.com/spec/v1")) {
        return std::nullopt;
      }
      version = true;
    } else if (key == "oid") {
      if (!value.starts_with("sha256:") || value.size() != 7 + 64 || !IsHex(value.substr(7))) {
        return std::nullopt;
      }
      out.oid = std::string(value);
    } else if (key == "size") {
      const auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), out.size);
      if (ec != std::errc() || p != value.data() + value.size()) return std::nullopt;
      size = true;
    }
  }
  if (!version || out.oid.empty() || !size) return std::nullopt;
  return out;
}

std::string LfsPointerMessage(const LfsPointer& pointer) {
  return "a Git LFS pointer file, not the file itself (the real file is " +
         std::to_string(pointer.size) + " bytes, " + pointer.oid.substr(0, 7 + 12) +
         "...): its content was never downloaded; install Git LFS and run `git lfs pull` in the "
         "repository (or download the file from where it is stored)";
}

}  // namespace axqc
