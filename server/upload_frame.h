// One message of the Upload stream read where gRPC received it. The Upload RPC is registered as a
// raw method (rpc/upload.cc): its messages arrive as gRPC byte buffers, a list of slices. A model
// or data chunk (nearly every message of an upload) is recognised in its plain encoding, and its
// bytes are handed on as views into those slices: no copy into a protobuf string. Everything
// else (the metadata, other encodings, unknown fields, malformed bytes) is `kOther`, which the
// caller parses as an axqc.v1.UploadRequest as before; so the server accepts and refuses exactly
// what protobuf's parser does. The fuzz target tests/fuzz/fuzz_upload_frame.cc compares the two.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace axqc::server {

struct UploadFrame {
  enum class Kind {
    kOther,      // parse the message with protobuf
    kChunk,      // UploadRequest.chunk with at least one byte, and nothing else
    kDataChunk,  // UploadRequest.data_chunk {file, data} with at least one byte, and nothing else
  };
  Kind kind = Kind::kOther;
  std::uint32_t file = 0;              // kDataChunk: UploadDataChunk.file
  std::vector<std::string_view> data;  // the bytes, as non-empty pieces of the input slices
  std::size_t size = 0;                // their total length
};

// Reads one serialized UploadRequest given as consecutive slices (empty slices allowed).
// The data views point into `slices`' memory.
UploadFrame ReadUploadFrame(std::span<const std::string_view> slices);

}  // namespace axqc::server
