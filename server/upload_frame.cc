#include "upload_frame.h"

#include <limits>

namespace axqc::server {

namespace {

// Field tags of axqc.v1.UploadRequest / UploadDataChunk (field number << 3 | wire type).
constexpr std::uint64_t kChunkTag = (2 << 3) | 2;      // UploadRequest.chunk, bytes
constexpr std::uint64_t kDataChunkTag = (3 << 3) | 2;  // UploadRequest.data_chunk, message
constexpr std::uint64_t kFileTag = (1 << 3) | 0;       // UploadDataChunk.file, varint
constexpr std::uint64_t kDataTag = (2 << 3) | 2;       // UploadDataChunk.data, bytes

// A read position over the slices.
class Cursor {
 public:
  explicit Cursor(std::span<const std::string_view> slices) : slices_(slices) {
    for (const auto s : slices) remaining_ += s.size();
  }

  std::size_t remaining() const { return remaining_; }

  bool Byte(std::uint8_t* b) {
    while (slice_ < slices_.size() && offset_ == slices_[slice_].size()) Next();
    if (slice_ == slices_.size()) return false;
    *b = static_cast<std::uint8_t>(slices_[slice_][offset_++]);
    --remaining_;
    return true;
  }

  // A varint in its shortest encoding of at most 5 bytes (values below 2^35; the callers bound
  // them further). Longer or padded encodings are left to protobuf, whose limits differ per field
  // kind (tags and lengths at most 5 bytes, integers 10).
  bool Varint(std::uint64_t* v) {
    *v = 0;
    for (int i = 0; i < 5; ++i) {
      std::uint8_t b = 0;
      if (!Byte(&b)) return false;
      *v |= static_cast<std::uint64_t>(b & 0x7f) << (7 * i);
      if ((b & 0x80) == 0) return i == 0 || b != 0;
    }
    return false;
  }

  // The rest of the input as views (all of it: the callers have checked the length).
  void TakeRest(std::vector<std::string_view>* out) {
    for (; slice_ < slices_.size(); Next()) {
      const std::string_view s = slices_[slice_].substr(offset_);
      if (!s.empty()) out->push_back(s);
    }
    remaining_ = 0;
  }

 private:
  void Next() {
    ++slice_;
    offset_ = 0;
  }

  std::span<const std::string_view> slices_;
  std::size_t slice_ = 0;
  std::size_t offset_ = 0;
  std::size_t remaining_ = 0;
};

// A one-byte tag equal to `tag` (every tag here is below 128).
bool Tag(Cursor& c, std::uint64_t tag) {
  std::uint8_t b = 0;
  return c.Byte(&b) && b == tag;
}

// The length of a length-delimited field that runs exactly to the end of the input, with at
// least one byte and at most 2^31 - 1 (protobuf's limit).
bool LengthIsTheRest(Cursor& c) {
  std::uint64_t length = 0;
  return c.Varint(&length) && length > 0 &&
         length <= static_cast<std::uint64_t>(std::numeric_limits<std::int32_t>::max()) &&
         length == c.remaining();
}

}  // namespace

UploadFrame ReadUploadFrame(std::span<const std::string_view> slices) {
  UploadFrame frame;
  Cursor c(slices);
  std::uint8_t first = 0;
  if (!c.Byte(&first)) return frame;
  if (first == kChunkTag) {
    if (!LengthIsTheRest(c)) return frame;
    frame.size = c.remaining();
    c.TakeRest(&frame.data);
    frame.kind = UploadFrame::Kind::kChunk;
    return frame;
  }
  if (first != kDataChunkTag || !LengthIsTheRest(c)) return frame;
  std::uint8_t next = 0;
  if (!c.Byte(&next)) return frame;
  std::uint64_t file = 0;
  if (next == kFileTag) {
    if (!c.Varint(&file) || file > std::numeric_limits<std::uint32_t>::max()) return frame;
    if (!Tag(c, kDataTag)) return frame;
  } else if (next != kDataTag) {
    return frame;
  }
  if (!LengthIsTheRest(c)) return frame;
  frame.file = static_cast<std::uint32_t>(file);
  frame.size = c.remaining();
  c.TakeRest(&frame.data);
  frame.kind = UploadFrame::Kind::kDataChunk;
  return frame;
}

}  // namespace axqc::server
