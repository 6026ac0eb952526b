// Git LFS pointer files: the few lines of text Git keeps in a working tree in place of a large
// file when Git LFS is not installed or the objects were never pulled (the pointer format of
// git-lfs's docs/spec.md: "version <url>", then sorted "key value" lines with "oid sha256:<hex>"
// and "size <bytes>", at most 1024 bytes). A model or data file cloned that way is not an ONNX
// file, and saying so is more useful than a protobuf parse error.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace axqc {

struct LfsPointer {
  std::string oid;         // "sha256:<64 hex>"
  std::uint64_t size = 0;  // bytes of the real file
};

// The pointer `bytes` hold, or nullopt when they are not a pointer file.
std::optional<LfsPointer> ParseLfsPointer(std::string_view bytes);

// What to tell the user: "a Git LFS pointer file (the real file is N bytes, oid ...), not the
// file itself: run `git lfs pull` ...".
std::string LfsPointerMessage(const LfsPointer& pointer);

}  // namespace axqc
