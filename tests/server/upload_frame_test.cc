// The raw Upload handler's in-place reader (server/upload_frame.h): which messages it reads in
// place and with which bytes, and that it agrees with protobuf's parser on the fuzz target's
// seeds and regression inputs (tests/fuzz/upload_frame_seeds/), on every split of encoded
// messages, and on every one-byte change of them.
#include "upload_frame.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "axqc/v1/axqc.pb.h"
#include "upload_frame_fuzz_input.h"

namespace axqc::test {
namespace {

namespace fs = std::filesystem;
using server::ReadUploadFrame;
using server::UploadFrame;

std::string Joined(const UploadFrame& f) {
  std::string s;
  for (const auto p : f.data) s += p;
  return s;
}

std::string Encoded(const v1::UploadRequest& msg) {
  std::string s;
  EXPECT_TRUE(msg.SerializeToString(&s));
  return s;
}

v1::UploadRequest Chunk(std::string bytes) {
  v1::UploadRequest m;
  m.set_chunk(std::move(bytes));
  return m;
}

v1::UploadRequest DataChunk(std::uint32_t file, std::string bytes) {
  v1::UploadRequest m;
  m.mutable_data_chunk()->set_file(file);
  m.mutable_data_chunk()->set_data(std::move(bytes));
  return m;
}

TEST(UploadFrame, ReadsAChunkInPlaceAcrossSlices) {
  const std::string bytes(70000, 'w');  // a three-byte length
  const std::string msg = Encoded(Chunk(bytes));
  // Cut inside the tag/length header, between header and data, and inside the data.
  const auto slices = fuzz::SplitMessage(msg, {1, 2, 4, 4, 5000, 69000});
  const UploadFrame f = ReadUploadFrame(slices);
  ASSERT_EQ(f.kind, UploadFrame::Kind::kChunk);
  EXPECT_EQ(f.size, bytes.size());
  EXPECT_EQ(Joined(f), bytes);
  // Views into the slices: the data of the last slice is not copied.
  EXPECT_EQ(f.data.back().data(), slices.back().data());
  EXPECT_EQ(f.data.size(), 3u);  // [4,5000), [5000,69000), [69000,end); the empty slice skipped
}

TEST(UploadFrame, ReadsADataChunkWithItsFileIndex) {
  UploadFrame f = ReadUploadFrame(fuzz::SplitMessage(Encoded(DataChunk(7, "weights")), {3}));
  ASSERT_EQ(f.kind, UploadFrame::Kind::kDataChunk);
  EXPECT_EQ(f.file, 7u);
  EXPECT_EQ(Joined(f), "weights");
  // File 0 is not written by protobuf: the data field comes first.
  f = ReadUploadFrame(fuzz::SplitMessage(Encoded(DataChunk(0, "w")), {}));
  ASSERT_EQ(f.kind, UploadFrame::Kind::kDataChunk);
  EXPECT_EQ(f.file, 0u);
  f = ReadUploadFrame(fuzz::SplitMessage(Encoded(DataChunk(4294967295u, "w")), {}));
  ASSERT_EQ(f.kind, UploadFrame::Kind::kDataChunk);
  EXPECT_EQ(f.file, 4294967295u);
}

TEST(UploadFrame, LeavesEverythingElseToProtobuf) {
  v1::UploadRequest metadata;
  metadata.mutable_metadata()->set_file_name("model.onnx");
  const std::string chunk = Encoded(Chunk("abc"));
  const std::vector<std::string> others = {
      Encoded(metadata),
      Encoded(Chunk("")),                  // an empty chunk (the assembler decides)
      Encoded(DataChunk(1, "")),           // an empty data chunk
      chunk + chunk,                       // two chunks: protobuf keeps the last
      chunk + std::string("\x28\x01", 2),  // an unknown field after the chunk
      chunk.substr(0, chunk.size() - 1),   // truncated
      std::string("\x12\x83\x00"
                  "abc",
                  6),  // the length padded to two bytes
      std::string("\x92\x00\x03"
                  "abc",
                  6),                               // the tag padded to two bytes
      std::string("\x1a\x05\x12\x01w\x08\x01", 7),  // data before file
      "",
  };
  for (const auto& msg : others) {
    SCOPED_TRACE(testing::PrintToString(msg));
    const UploadFrame f = ReadUploadFrame(fuzz::SplitMessage(msg, {2}));
    EXPECT_EQ(f.kind, UploadFrame::Kind::kOther);
    EXPECT_TRUE(f.data.empty());
    EXPECT_EQ(fuzz::CheckUploadFrame(fuzz::SplitMessage(msg, {2})), "");
  }
}

TEST(UploadFrame, AgreesWithProtobufOnEverySplitAndOneByteChange) {
  const std::vector<std::string> messages = {
      Encoded(Chunk("0123456789")), Encoded(Chunk(std::string(200, 'x'))),
      Encoded(DataChunk(3, "abcdef")), Encoded(DataChunk(0, "a")),
      Encoded(DataChunk(300, std::string(130, 'y')))};
  std::size_t in_place = 0, checked = 0;
  for (const auto& msg : messages) {
    for (std::size_t cut = 0; cut <= msg.size(); ++cut) {
      const auto slices = fuzz::SplitMessage(msg, {cut});
      EXPECT_NE(ReadUploadFrame(slices).kind, UploadFrame::Kind::kOther) << cut;
      EXPECT_EQ(fuzz::CheckUploadFrame(slices), "") << cut;
    }
    // Every value of each of the first 8 bytes (the headers), every position of a random byte.
    std::mt19937 rng(42);
    for (std::size_t i = 0; i < msg.size(); ++i) {
      for (int v = 0; v < 256; ++v) {
        if (i >= 8 && v % 37 != 0) continue;
        std::string changed = msg;
        changed[i] = static_cast<char>(v);
        const auto slices = fuzz::SplitMessage(changed, {rng() % (changed.size() + 1)});
        EXPECT_EQ(fuzz::CheckUploadFrame(slices), "") << i << " " << v;
        if (ReadUploadFrame(slices).kind != UploadFrame::Kind::kOther) ++in_place;
        ++checked;
      }
    }
  }
  EXPECT_GT(in_place, 100u);  // the changes in the data keep most messages readable in place
  EXPECT_GT(checked, 5000u);
}

TEST(UploadFrame, FuzzSeedsAndRegressionsPass) {
  std::size_t n = 0;
  for (const char* dir : {"upload_frame_seeds", "upload_frame_regressions"}) {
    const fs::path d = fs::path(AXQC_SOURCE_DIR) / "tests" / "fuzz" / dir;
    if (!fs::exists(d)) continue;
    for (const auto& e : fs::directory_iterator(d)) {
      std::ifstream in(e.path(), std::ios::binary);
      std::ostringstream s;
      s << in.rdbuf();
      const std::string bytes = s.str();
      EXPECT_EQ(fuzz::RunUploadFrameInput(reinterpret_cast<const std::uint8_t*>(bytes.data()),
                                          bytes.size()),
                "")
          << e.path();
      ++n;
    }
  }
  EXPECT_GE(n, 14u);
}

}  // namespace
}  // namespace axqc::test
