// The upload-stream fuzz input: a byte string decoded into a sequence of Upload messages, fed to
// axqc::server::UploadAssembler (the state machine behind the Upload RPC), with the invariants
// checked after every step. Shared by the libFuzzer target (fuzz_upload.cc), its seed writer
// (upload_seeds.cc) and the regression test of the normal suite
// (tests/server/upload_fuzz_regressions_test.cc).
//
// Encoding: records until the input ends, each a tag byte and a payload.
//   tag % 5 == 0  metadata: flags byte; varint; name (len byte + bytes); if flags & 0x10 labels
//                 (count byte, then key and value as len byte + bytes); if flags & 0x20 options
//                 (format byte, max_locations varint, check_value byte).
//                 flags & 3: size_bytes 0 / the exact total of the chunks / exact + varint - 8 /
//                 the varint. (flags >> 2) & 3: sha256 none / the correct one / a wrong one /
//                 the name bytes (usually not hex).
//   tag % 5 == 1, 2  chunk: varint length, then that many bytes (fewer at the end of the input).
//   tag % 5 == 3  a message with no part set.
//   tag % 5 == 4  half-close now (later records are not sent).
// "Exact" and "correct" refer to the concatenation of all chunks sent before the half-close.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "axqc/v1/axqc.pb.h"
#include "model_source.h"
#include "sha256.h"
#include "upload_assembler.h"

namespace axqc::fuzz {

// Limits of the fuzzed assembler: small, so that inputs of a few kB (the example models) reach
// every limit.
inline constexpr std::uint64_t kFuzzMaxModelBytes = 12 * 1024;
inline constexpr std::uint64_t kFuzzModelBudget = 16 * 1024;
inline constexpr std::uint64_t kFuzzUploadBudget = 10 * 1024;

class InputReader {
 public:
  InputReader(const std::uint8_t* data, std::size_t size) : p_(data), end_(data + size) {}
  bool done() const { return p_ >= end_; }
  std::uint8_t Byte() { return done() ? 0 : *p_++; }
  std::uint64_t Varint() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64 && !done(); shift += 7) {
      const std::uint8_t b = *p_++;
      v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) break;
    }
    return v;
  }
  std::string Bytes(std::uint64_t n) {
    const auto avail = static_cast<std::uint64_t>(end_ - p_);
    if (n > avail) n = avail;
    std::string out(reinterpret_cast<const char*>(p_), static_cast<std::size_t>(n));
    p_ += n;
    return out;
  }
  std::string Short() { return Bytes(Byte()); }

 private:
  const std::uint8_t* p_;
  const std::uint8_t* end_;
};

struct DecodedMetadata {
  std::uint8_t flags = 0;
  std::uint64_t number = 0;
  v1::UploadMetadata proto;  // without size_bytes and sha256 (filled once the chunks are known)
};

// Decodes `data` into Upload messages.
inline std::vector<v1::UploadRequest> DecodeUploadInput(const std::uint8_t* data,
                                                        std::size_t size) {
  InputReader in(data, size);
  struct Record {
    int kind;  // 0 metadata, 1 chunk, 3 empty
    DecodedMetadata meta;
    std::string chunk;
  };
  std::vector<Record> records;
  std::string all_chunks;
  while (!in.done()) {
    const int kind = in.Byte() % 5;
    if (kind == 4) break;
    Record r;
    r.kind = kind == 2 ? 1 : kind;
    if (kind == 0) {
      r.meta.flags = in.Byte();
      r.meta.number = in.Varint();
      r.meta.proto.set_file_name(in.Short());
      if (r.meta.flags & 0x10) {
        const int n = in.Byte() % 24;
        for (int i = 0; i < n; ++i) {
          std::string k = in.Short();
          (*r.meta.proto.mutable_labels())[k] = in.Bytes(in.Varint() % 512);
        }
      }
      if (r.meta.flags & 0x20) {
        auto* o = r.meta.proto.mutable_options();
        o->set_format(static_cast<v1::ReportFormat>(static_cast<std::int8_t>(in.Byte())));
        o->set_max_locations(static_cast<std::uint32_t>(in.Varint()));
        o->set_check_value(in.Byte() & 1);
      }
    } else if (kind == 1 || kind == 2) {
      r.chunk = in.Bytes(in.Varint());
      all_chunks += r.chunk;
    }
    records.push_back(std::move(r));
  }
  const std::string sha = service::Sha256Hex(all_chunks);
  std::vector<v1::UploadRequest> out;
  for (auto& r : records) {
    v1::UploadRequest msg;
    if (r.kind == 0) {
      auto* m = msg.mutable_metadata();
      *m = r.meta.proto;
      switch (r.meta.flags & 3) {
        case 0:
          break;
        case 1:
          m->set_size_bytes(all_chunks.size());
          break;
        case 2:
          m->set_size_bytes(all_chunks.size() + r.meta.number - 8);
          break;
        default:
          m->set_size_bytes(r.meta.number);
          break;
      }
      switch ((r.meta.flags >> 2) & 3) {
        case 0:
          break;
        case 1:
          m->set_sha256(sha);
          break;
        case 2:
          m->set_sha256(service::Sha256Hex(sha));
          break;
        default:
          m->set_sha256(r.meta.proto.file_name());
          break;
      }
    } else if (r.kind == 1) {
      msg.set_chunk(std::move(r.chunk));
    }
    out.push_back(std::move(msg));
  }
  return out;
}

// Encodes a well-formed upload of `model`: metadata with the exact size and sha256 (when asked),
// then chunks of `chunk` bytes, then a half-close.
inline std::string EncodeUpload(const std::string& model, std::size_t chunk, bool size, bool sha,
                                const std::string& name) {
  auto varint = [](std::string& out, std::uint64_t v) {
    do {
      std::uint8_t b = v & 0x7f;
      v >>= 7;
      if (v != 0) b |= 0x80;
      out.push_back(static_cast<char>(b));
    } while (v != 0);
  };
  std::string out;
  out.push_back(0);  // metadata
  out.push_back(static_cast<char>((size ? 1 : 0) | (sha ? 4 : 0) | 0x10 | 0x20));
  varint(out, 0);
  out.push_back(static_cast<char>(name.size()));
  out += name;
  out.push_back(1);  // one label
  out.push_back(4);
  out += "team";
  varint(out, 4);
  out += "fuzz";
  out.push_back(1);  // format JSON
  varint(out, 5);
  out.push_back(0);
  for (std::size_t off = 0; off < model.size(); off += chunk) {
    const std::string part = model.substr(off, chunk);
    out.push_back(1);
    varint(out, part.size());
    out += part;
  }
  out.push_back(4);  // half-close
  return out;
}

// Feeds the decoded messages to an UploadAssembler and checks its invariants. Returns an empty
// string when they hold, else a description of the first violation.
inline std::string RunUploadInput(const std::uint8_t* data, std::size_t size) {
  using grpc::StatusCode;
  const std::vector<v1::UploadRequest> msgs = DecodeUploadInput(data, size);
  server::ByteBudget model_budget(kFuzzModelBudget, static_cast<prometheus::Gauge*>(nullptr));
  server::ByteBudget upload_budget(kFuzzUploadBudget, static_cast<prometheus::Gauge*>(nullptr));
  auto allowed = [](StatusCode c) {
    return c == StatusCode::OK || c == StatusCode::INVALID_ARGUMENT ||
           c == StatusCode::RESOURCE_EXHAUSTED;
  };
  std::string sent;
  bool failed = false;
  {
    server::UploadAssembler a(kFuzzMaxModelBytes, &model_budget, &upload_budget);
    for (const auto& m : msgs) {
      const grpc::Status s = a.Add(m);
      if (!allowed(s.error_code())) return "Add returned status " + std::to_string(s.error_code());
      if (failed && s.ok()) return "Add accepted a message after the upload failed";
      if (!s.ok()) failed = true;
      if (s.ok() && m.part_case() == v1::UploadRequest::kChunk) sent += m.chunk();
      if (upload_budget.used() != a.reserved()) return "upload budget differs from the reservation";
      // Exactly the received bytes are charged: a declared size holds no budget.
      if (a.reserved() != a.received()) return "reserved bytes differ from the received bytes";
      if (model_budget.used() < a.received()) return "model budget below the received bytes";
      if (a.received() > kFuzzMaxModelBytes) return "more than max_model_bytes held";
      if (failed && (a.received() != 0 || model_budget.used() != 0 || upload_budget.used() != 0)) {
        return "a failed upload still holds bytes";
      }
      if (!failed && a.received() != sent.size()) return "received() differs from the chunks sent";
    }
    server::LoadedModel model;
    const grpc::Status s = a.Finish(&model);
    if (!allowed(s.error_code())) return "Finish returned status " + std::to_string(s.error_code());
    if (s.ok()) {
      if (failed) return "Finish accepted an upload that had failed";
      if (msgs.empty() || msgs.front().part_case() != v1::UploadRequest::kMetadata) {
        return "accepted an upload without metadata first";
      }
      const auto& meta = msgs.front().metadata();
      if (model.bytes == nullptr || model.bytes->view() != sent) return "assembled bytes differ";
      if (model.sha256 != service::Sha256Hex(sent)) return "wrong sha256";
      if (meta.size_bytes() != 0 && meta.size_bytes() != sent.size()) {
        return "accepted a size that differs from the declared one";
      }
      if (!meta.sha256().empty() && meta.sha256() != model.sha256) {
        return "accepted a sha256 that differs from the declared one";
      }
      if (sent.size() > kFuzzMaxModelBytes) return "accepted a model over max_model_bytes";
      if (upload_budget.used() != 0) return "upload budget not released after Finish";
      if (model_budget.used() != sent.size()) return "model budget differs from the model size";
      model.bytes.reset();
      if (model_budget.used() != 0) return "model budget not released with the bytes";
    } else if (model_budget.used() != 0 || upload_budget.used() != 0) {
      return "a refused upload still holds budget";
    }
    if (a.Add(v1::UploadRequest()).ok()) return "Add accepted a message after the end";
  }
  if (model_budget.used() != 0 || upload_budget.used() != 0) return "budget leaked";
  return {};
}

}  // namespace axqc::fuzz
