// The input of the fuzz target upload_frame (fuzz_upload_frame.cc) and of its test
// (tests/server/upload_frame_test.cc): an Upload message as gRPC hands it to the raw Upload
// handler, split into slices. Byte 0 is the number n of split points (at most 16), the next n
// bytes their positions (each taken modulo the message length + 1, so empty slices occur), the
// rest the message. ReadUploadFrame (server/upload_frame.h) must agree with protobuf's parser
// whenever it reads a chunk in place: same field, same file index, same bytes, every piece a
// non-empty part of one slice.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "axqc/v1/axqc.pb.h"
#include "upload_frame.h"

namespace axqc::fuzz {

// The message's bytes split at `cuts` (positions, sorted here; duplicates give empty slices).
inline std::vector<std::string_view> SplitMessage(std::string_view message,
                                                  std::vector<std::size_t> cuts) {
  std::sort(cuts.begin(), cuts.end());
  std::vector<std::string_view> slices;
  std::size_t at = 0;
  for (std::size_t cut : cuts) {
    cut = std::min(cut, message.size());
    slices.push_back(message.substr(at, cut - at));
    at = cut;
  }
  slices.push_back(message.substr(at));
  return slices;
}

// "" when ReadUploadFrame agrees with protobuf on `slices`, else what differs.
inline std::string CheckUploadFrame(const std::vector<std::string_view>& slices) {
  const server::UploadFrame frame = server::ReadUploadFrame(slices);
  if (frame.kind == server::UploadFrame::Kind::kOther) {
    return frame.data.empty() && frame.size == 0 ? "" : "kOther with data";
  }
  std::string joined, data;
  for (const auto s : slices) joined += s;
  std::size_t total = 0;
  for (const auto piece : frame.data) {
    if (piece.empty()) return "an empty piece";
    const bool inside = std::any_of(slices.begin(), slices.end(), [&](std::string_view s) {
      return piece.data() >= s.data() && piece.data() + piece.size() <= s.data() + s.size();
    });
    if (!inside) return "a piece outside the slices";
    total += piece.size();
    data += piece;
  }
  if (total != frame.size) return "size is not the sum of the pieces";
  if (frame.size == 0) return "a chunk of no bytes read in place";
  v1::UploadRequest msg;
  if (!msg.ParseFromString(joined)) return "read in place, but protobuf rejects the message";
  if (frame.kind == server::UploadFrame::Kind::kChunk) {
    if (msg.part_case() != v1::UploadRequest::kChunk) return "kChunk, but protobuf has no chunk";
    if (msg.chunk() != data) return "kChunk bytes differ from protobuf's";
  } else {
    if (msg.part_case() != v1::UploadRequest::kDataChunk) {
      return "kDataChunk, but protobuf has no data_chunk";
    }
    if (msg.data_chunk().file() != frame.file) return "kDataChunk file differs from protobuf's";
    if (msg.data_chunk().data() != data) return "kDataChunk bytes differ from protobuf's";
  }
  // Nothing else in the message (fields protobuf keeps aside).
  if (!msg.GetReflection()->GetUnknownFields(msg).empty() ||
      !msg.data_chunk().GetReflection()->GetUnknownFields(msg.data_chunk()).empty()) {
    return "read in place, but the message holds unknown fields";
  }
  return "";
}

inline std::string RunUploadFrameInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return "";
  const std::size_t n = std::min<std::size_t>(data[0] % 17, size - 1);
  const std::string_view message(reinterpret_cast<const char*>(data) + 1 + n, size - 1 - n);
  std::vector<std::size_t> cuts;
  for (std::size_t i = 0; i < n; ++i) cuts.push_back(data[1 + i] % (message.size() + 1));
  return CheckUploadFrame(SplitMessage(message, std::move(cuts)));
}

}  // namespace axqc::fuzz
