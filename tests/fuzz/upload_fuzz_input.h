// The upload-stream fuzz input: a byte string decoded into a sequence of Upload messages, fed to
// axqc::server::UploadAssembler (the state machine behind the Upload RPC and the HTTP body) through
// the Upload stream's adaptation (server/rpc/upload_stream.h), with the invariants checked after
// every step. Shared by the libFuzzer target (fuzz_upload.cc), its seed writer
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
//   tag >= 0xF0   (before the % 5 rules) a data chunk: file index tag & 0x0f (may be out of
//                 range), varint length, then that many bytes.
// flags & 0x40 of a metadata record: external data files follow the options: count byte % 5, then
// per file a name (len byte + bytes), a size mode byte (% 3: the exact total of its data chunks /
// exact + varint - 8 / the varint, the varint read next) and a sha256 mode byte (% 3: correct /
// wrong / the name bytes).
// flags & 0x80 (with 0x40): a ranged upload (UploadMetadata.ranged_data): after each file's sha256
// mode byte (mode 0 is then "none", as a ranged upload wants) a range count byte % 8 and per
// range an offset varint and a length varint (hostile: unsorted, overlapping, empty, past the
// end or wrapping around are all reachable).
// "Exact" and "correct" refer to the concatenation of all chunks sent before the half-close (per
// data file for data chunks).
//
// Tar mode: an input starting with 'T' (0x54) and at least 2 bytes long is an HTTP tar upload
// instead (server/tar_reader.h): byte 1 % 61 + 1 is the size of the pieces the rest is fed in, to
// a TarReader whose first member goes to the assembler (its bytes API) as the model and whose later
// members as data files, as server/http/check.cc does.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "axqc/external_data.h"
#include "axqc/sha256.h"
#include "axqc/v1/axqc.pb.h"
#include "external_reads.h"
#include "model_source.h"
#include "rpc/upload_stream.h"
#include "tar_reader.h"
#include "upload_assembler.h"

namespace axqc::fuzz {

// Limits of the fuzzed assembler: small, so that inputs of a few kB (the example models) reach
// every limit.
inline constexpr std::uint64_t kFuzzMaxModelBytes = 12 * 1024;
inline constexpr std::uint64_t kFuzzModelBudget = 16 * 1024;
inline constexpr std::uint64_t kFuzzUploadBudget = 10 * 1024;
inline constexpr std::uint64_t kFuzzMaxDataBytes = 8 * 1024;

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

struct DecodedDataFile {
  std::string name;
  std::uint8_t size_mode = 0;
  std::uint64_t number = 0;
  std::uint8_t sha_mode = 0;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;  // ranged uploads
};

struct DecodedMetadata {
  std::uint8_t flags = 0;
  std::uint64_t number = 0;
  v1::UploadMetadata proto;  // without size_bytes and sha256 (filled once the chunks are known)
  std::vector<DecodedDataFile> files;
};

// Decodes `data` into Upload messages.
inline std::vector<v1::UploadRequest> DecodeUploadInput(const std::uint8_t* data,
                                                        std::size_t size) {
  InputReader in(data, size);
  struct Record {
    int kind;  // 0 metadata, 1 chunk, 3 empty, 5 data chunk
    DecodedMetadata meta;
    std::string chunk;
    std::uint32_t file = 0;
  };
  std::vector<Record> records;
  std::string all_chunks;
  std::map<std::uint32_t, std::string> data_chunks;
  while (!in.done()) {
    const std::uint8_t tag = in.Byte();
    if (tag >= 0xF0) {
      Record r;
      r.kind = 5;
      r.file = tag & 0x0f;
      r.chunk = in.Bytes(in.Varint());
      data_chunks[r.file] += r.chunk;
      records.push_back(std::move(r));
      continue;
    }
    const int kind = tag % 5;
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
      if (r.meta.flags & 0x40) {
        const int n = in.Byte() % 5;
        for (int i = 0; i < n; ++i) {
          DecodedDataFile f;
          f.name = in.Short();
          f.size_mode = in.Byte() % 3;
          if (f.size_mode != 0) f.number = in.Varint();
          f.sha_mode = in.Byte() % 3;
          if (r.meta.flags & 0x80) {
            const int k = in.Byte() % 8;
            for (int j = 0; j < k; ++j) {
              const std::uint64_t offset = in.Varint();
              f.ranges.emplace_back(offset, in.Varint());
            }
          }
          r.meta.files.push_back(std::move(f));
        }
      }
    } else if (kind == 1 || kind == 2) {
      r.chunk = in.Bytes(in.Varint());
      all_chunks += r.chunk;
    }
    records.push_back(std::move(r));
  }
  const std::string sha = axqc::Sha256Hex(all_chunks);
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
          m->set_sha256(axqc::Sha256Hex(sha));
          break;
        default:
          m->set_sha256(r.meta.proto.file_name());
          break;
      }
      const bool ranged = (r.meta.flags & 0xc0) == 0xc0;
      if (ranged) m->set_ranged_data(true);
      for (std::size_t i = 0; i < r.meta.files.size(); ++i) {
        const auto& f = r.meta.files[i];
        const std::string& bytes = data_chunks[static_cast<std::uint32_t>(i)];
        auto* d = m->add_data_files();
        d->set_name(f.name);
        d->set_size_bytes(f.size_mode == 0   ? bytes.size()
                          : f.size_mode == 1 ? bytes.size() + f.number - 8
                                             : f.number);
        const std::string real = axqc::Sha256Hex(bytes);
        if (ranged && f.sha_mode == 0) {
          // none
        } else {
          d->set_sha256(f.sha_mode == 0 ? real : f.sha_mode == 1 ? axqc::Sha256Hex(real) : f.name);
        }
        for (const auto& [offset, length] : f.ranges) {
          auto* range = d->add_ranges();
          range->set_offset(offset);
          range->set_length(length);
        }
      }
    } else if (r.kind == 1) {
      msg.set_chunk(std::move(r.chunk));
    } else if (r.kind == 5) {
      msg.mutable_data_chunk()->set_file(r.file);
      msg.mutable_data_chunk()->set_data(std::move(r.chunk));
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

inline void AppendVarint(std::string& out, std::uint64_t v) {
  do {
    std::uint8_t b = v & 0x7f;
    v >>= 7;
    if (v != 0) b |= 0x80;
    out.push_back(static_cast<char>(b));
  } while (v != 0);
}

// Encodes a ranged upload of `model` with one data file "weights.bin" of `data.size()` bytes of
// which only `ranges` (offset, length) are sent: metadata (exact model size and sha256, the file's
// size, no sha256, the ranges), the model in one chunk, the ranges' bytes in chunks of 5 bytes.
inline std::string EncodeRangedUpload(
    const std::string& model, const std::string& data,
    const std::vector<std::pair<std::uint64_t, std::uint64_t>>& ranges) {
  std::string out;
  out.push_back(0);                                       // metadata
  out.push_back(static_cast<char>(1 | 4 | 0x40 | 0x80));  // exact size, sha256, ranged data
  AppendVarint(out, 0);
  out.push_back(10);
  out += "model.onnx";
  out.push_back(1);  // one data file
  out.push_back(11);
  out += "weights.bin";
  out.push_back(2);  // size: the varint
  AppendVarint(out, data.size());
  out.push_back(0);  // no sha256
  out.push_back(static_cast<char>(ranges.size()));
  std::string sent;
  for (const auto& [offset, length] : ranges) {
    AppendVarint(out, offset);
    AppendVarint(out, length);
    sent += data.substr(offset, length);
  }
  out.push_back(1);  // chunk
  AppendVarint(out, model.size());
  out += model;
  for (std::size_t off = 0; off < sent.size(); off += 5) {
    const std::string part = sent.substr(off, 5);
    out.push_back(static_cast<char>(0xF0));  // data chunk of file 0
    AppendVarint(out, part.size());
    out += part;
  }
  out.push_back(4);
  return out;
}

// Encodes an upload of `model` with one data file "weights.bin" holding `data`: metadata (exact
// sizes, correct sha256), the model in one chunk, the data file in chunks of 64 bytes.
inline std::string EncodeUploadWithData(const std::string& model, const std::string& data) {
  std::string out;
  out.push_back(0);             // metadata
  out.push_back(1 | 4 | 0x40);  // exact size, correct sha256, data files
  AppendVarint(out, 0);
  out.push_back(10);
  out += "model.onnx";
  out.push_back(1);  // one data file
  out.push_back(11);
  out += "weights.bin";
  out.push_back(0);  // exact size
  out.push_back(0);  // correct sha256
  out.push_back(1);  // chunk
  AppendVarint(out, model.size());
  out += model;
  for (std::size_t off = 0; off < data.size(); off += 64) {
    const std::string part = data.substr(off, 64);
    out.push_back(static_cast<char>(0xF0));  // data chunk of file 0
    AppendVarint(out, part.size());
    out += part;
  }
  out.push_back(4);
  return out;
}

// A ustar member (header and contents padded to 512 bytes) for tar-mode inputs.
inline std::string TarMember(const std::string& name, const std::string& bytes, char type = '0') {
  std::string h(512, '\0');
  h.replace(0, name.size(), name);
  auto octal = [&](std::size_t at, std::size_t width, unsigned long long v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%0*llo", static_cast<int>(width - 1), v);
    h.replace(at, width - 1, buf);
  };
  octal(100, 8, 0644);
  octal(108, 8, 0);
  octal(116, 8, 0);
  octal(124, 12, bytes.size());
  octal(136, 12, 0);
  h[156] = type;
  h.replace(257, 6, std::string("ustar\0", 6));
  h.replace(263, 2, "00");
  h.replace(148, 8, "        ");
  unsigned sum = 0;
  for (char c : h) sum += static_cast<unsigned char>(c);
  char buf[8];
  std::snprintf(buf, sizeof buf, "%06o", sum);
  h.replace(148, 7, std::string(buf, 6) + '\0');
  std::string out = h + bytes;
  out.append((512 - bytes.size() % 512) % 512, '\0');
  return out;
}

// Feeds the decoded messages to an UploadAssembler and checks its invariants. Returns an empty
// string when they hold, else a description of the first violation.
// Reads all of a descriptor (pread from 0).
inline std::string ReadFd(int fd, std::uint64_t size) {
  std::string out(static_cast<std::size_t>(size), '\0');
  std::size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::pread(fd, out.data() + done, out.size() - done, static_cast<off_t>(done));
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  out.resize(done);
  return out;
}

inline std::string RunTarInput(const std::uint8_t* data, std::size_t size);

// The invariants of an accepted ranged upload: every file has its declared size and exactly the
// listed ranges (valid: sorted, non-empty, inside, apart), their bytes are the bytes sent for the
// file at those offsets, the bytes sent are within the limit, and the key is that of the ranges
// sent (server/external_reads.h).
inline std::string CheckRanged(const v1::UploadMetadata& meta, const server::SourcedModel& model,
                               std::map<std::uint32_t, std::string>& data_sent) {
  if (!model.data->partial()) return "a ranged upload gave a complete data file set";
  std::uint64_t total = 0;
  std::size_t ranges = 0;
  for (int i = 0; i < meta.data_files_size(); ++i) {
    const auto idx = static_cast<std::size_t>(i);
    const auto& f = meta.data_files(i);
    if (!f.sha256().empty()) return "accepted a declared sha256 in a ranged upload";
    if (model.data->size(idx) != f.size_bytes()) return "ranged data file size differs";
    std::vector<ExternalRange> listed;
    for (const auto& r : f.ranges()) listed.push_back({r.offset(), r.length()});
    if (!RangesProblem(listed, f.size_bytes()).empty()) return "accepted invalid ranges";
    if (model.data->sent(idx) != listed) return "kept ranges differ from the listed ones";
    ranges += listed.size();
    std::string at_ranges;
    for (const auto& r : listed) {
      std::string piece(static_cast<std::size_t>(r.length), '\0');
      if (!model.data->Read(idx, r.offset, piece.data(), piece.size())) return "range unreadable";
      at_ranges += piece;
    }
    if (at_ranges != data_sent[static_cast<std::uint32_t>(i)]) return "ranged bytes differ";
    total += at_ranges.size();
  }
  if (total > kFuzzMaxDataBytes) return "ranged bytes over the limit";
  if (ranges > server::UploadAssembler::kMaxRanges) return "more ranges than the limit";
  if (model.sha256 != server::SentRangesKey(*model.data, model.graph_sha256)) {
    return "wrong key of a ranged upload";
  }
  return {};
}

inline std::string RunUploadInput(const std::uint8_t* data, std::size_t size) {
  using grpc::StatusCode;
  if (size >= 2 && data[0] == 'T') return RunTarInput(data, size);
  // 'H': the upload of a model whose report is cached (UploadAssembler::HashOnly after the
  // metadata): hashed, charged to no budget, never stored.
  const bool hash_only = size >= 2 && data[0] == 'H';
  if (hash_only) {
    ++data;
    --size;
  }
  const std::vector<v1::UploadRequest> msgs = DecodeUploadInput(data, size);
  server::ByteBudget model_budget(kFuzzModelBudget, static_cast<prometheus::Gauge*>(nullptr));
  server::ByteBudget upload_budget(kFuzzUploadBudget, static_cast<prometheus::Gauge*>(nullptr));
  auto allowed = [](StatusCode c) {
    return c == StatusCode::OK || c == StatusCode::INVALID_ARGUMENT ||
           c == StatusCode::RESOURCE_EXHAUSTED;
  };
  std::string sent;
  std::map<std::uint32_t, std::string> data_sent;
  bool failed = false;
  {
    server::UploadAssembler a(kFuzzMaxModelBytes, &model_budget, &upload_budget);
    a.AllowDataFiles(kFuzzMaxDataBytes, "");
    for (const auto& m : msgs) {
      const grpc::Status s = server::GrpcStatusOf(server::AddUploadMessage(a, m));
      if (!allowed(s.error_code())) return "Add returned status " + std::to_string(s.error_code());
      if (failed && s.ok()) return "Add accepted a message after the upload failed";
      if (!s.ok()) failed = true;
      if (hash_only && s.ok() && m.part_case() == v1::UploadRequest::kMetadata &&
          a.received() == 0) {
        const bool taken = a.HashOnly();
        if (taken != (!m.metadata().sha256().empty() && m.metadata().data_files_size() == 0)) {
          return "HashOnly taken or refused against its conditions";
        }
      }
      if (s.ok() && m.part_case() == v1::UploadRequest::kChunk) sent += m.chunk();
      if (s.ok() && m.part_case() == v1::UploadRequest::kDataChunk) {
        data_sent[m.data_chunk().file()] += m.data_chunk().data();
      }
      if (upload_budget.used() != a.reserved()) return "upload budget differs from the reservation";
      // Exactly the received bytes are charged: a declared size holds no budget; a hash-only
      // upload holds none at all.
      if (a.hash_only()) {
        if (a.reserved() != 0 || model_budget.used() != 0) return "a hash-only upload holds bytes";
      } else {
        if (a.reserved() != a.received()) return "reserved bytes differ from the received bytes";
        if (model_budget.used() < a.received()) return "model budget below the received bytes";
      }
      if (a.received() > kFuzzMaxModelBytes) return "more than max_model_bytes held";
      if (failed && (a.received() != 0 || model_budget.used() != 0 || upload_budget.used() != 0)) {
        return "a failed upload still holds bytes";
      }
      if (!failed && a.received() != sent.size()) return "received() differs from the chunks sent";
    }
    server::SourcedModel model;
    const grpc::Status s = server::GrpcStatusOf(a.Finish(&model));
    if (!allowed(s.error_code())) return "Finish returned status " + std::to_string(s.error_code());
    if (s.ok()) {
      if (failed) return "Finish accepted an upload that had failed";
      if (msgs.empty() || msgs.front().part_case() != v1::UploadRequest::kMetadata) {
        return "accepted an upload without metadata first";
      }
      const auto& meta = msgs.front().metadata();
      if (a.hash_only()) {
        if (model.bytes != nullptr) return "a hash-only upload kept its bytes";
        if (meta.sha256() != axqc::Sha256Hex(sent) || model.sha256 != meta.sha256()) {
          return "a hash-only upload accepted bytes that do not hash to the declared sha256";
        }
        if (meta.size_bytes() != 0 && meta.size_bytes() != sent.size()) {
          return "accepted a size that differs from the declared one";
        }
        if (sent.size() > kFuzzMaxModelBytes) return "accepted a model over max_model_bytes";
        return "";
      }
      if (model.bytes == nullptr || model.bytes->view() != sent) return "assembled bytes differ";
      if (meta.size_bytes() != 0 && meta.size_bytes() != sent.size()) {
        return "accepted a size that differs from the declared one";
      }
      // The declared sha256 is the graph file's (with data files, model.sha256 is the bundle's).
      const std::string& graph_sha = model.data != nullptr ? model.graph_sha256 : model.sha256;
      if (!meta.sha256().empty() && meta.sha256() != graph_sha) {
        return "accepted a sha256 that differs from the declared one";
      }
      if (sent.size() > kFuzzMaxModelBytes) return "accepted a model over max_model_bytes";
      // Data files: exactly those listed, each with the bytes sent for it, its declared size and
      // sha256, all within the limit; the key is the bundle hash.
      if ((meta.data_files_size() == 0) != (model.data == nullptr)) {
        return "data files accepted differ from the listed ones";
      }
      if (model.data != nullptr) {
        if (model.data->count() != static_cast<std::size_t>(meta.data_files_size())) {
          return "data file count differs from the metadata";
        }
        if (meta.ranged_data()) return CheckRanged(meta, model, data_sent);
        if (model.data->total_bytes() > kFuzzMaxDataBytes) return "data files over the limit";
        for (int i = 0; i < meta.data_files_size(); ++i) {
          const auto idx = static_cast<std::size_t>(i);
          const std::string& bytes = data_sent[static_cast<std::uint32_t>(i)];
          if (model.data->size(idx) != meta.data_files(i).size_bytes() ||
              model.data->size(idx) != bytes.size()) {
            return "data file size differs from the declared or sent size";
          }
          if (ReadFd(model.data->fd(idx), bytes.size()) != bytes) return "data file bytes differ";
          if (axqc::Sha256Hex(bytes) != meta.data_files(i).sha256()) {
            return "accepted a data file whose sha256 differs from the declared one";
          }
          if (!ExternalDataNameProblem(meta.data_files(i).name()).empty()) {
            return "accepted a data file name the checker refuses";
          }
        }
        if (model.graph_sha256 != axqc::Sha256Hex(sent) ||
            model.sha256 != model.data->BundleSha256(model.graph_sha256)) {
          return "wrong bundle sha256";
        }
      } else if (model.sha256 != axqc::Sha256Hex(sent)) {
        return "wrong sha256";
      }
      if (upload_budget.used() != 0) return "upload budget not released after Finish";
      if (model_budget.used() != sent.size()) return "model budget differs from the model size";
      model.bytes.reset();
      if (model_budget.used() != 0) return "model budget not released with the bytes";
    } else if (model_budget.used() != 0 || upload_budget.used() != 0) {
      return "a refused upload still holds budget";
    }
    if (server::AddUploadMessage(a, v1::UploadRequest()).ok()) {
      return "Add accepted a message after the end";
    }
  }
  if (model_budget.used() != 0 || upload_budget.used() != 0) return "budget leaked";
  return {};
}

// Tar mode (see the encoding above): the HTTP tar upload's path, server/http/check.cc.
inline std::string RunTarInput(const std::uint8_t* data, std::size_t size) {
  using grpc::StatusCode;
  server::ByteBudget model_budget(kFuzzModelBudget, static_cast<prometheus::Gauge*>(nullptr));
  server::ByteBudget upload_budget(kFuzzUploadBudget, static_cast<prometheus::Gauge*>(nullptr));
  auto allowed = [](StatusCode c) {
    return c == StatusCode::OK || c == StatusCode::INVALID_ARGUMENT ||
           c == StatusCode::RESOURCE_EXHAUSTED;
  };
  const std::size_t piece = data[1] % 61 + 1;
  const std::string_view body(reinterpret_cast<const char*>(data) + 2, size - 2);
  {
    server::UploadAssembler a(kFuzzMaxModelBytes, &model_budget, &upload_budget);
    a.AllowDataFiles(kFuzzMaxDataBytes, "");
    std::string model_dir;
    std::int64_t current = -1;
    std::map<std::int64_t, std::string> received;
    server::TarReader* reader_ptr = nullptr;
    server::TarReader reader(
        [&](const std::string& name, std::uint64_t member_size) -> grpc::Status {
          if (reader_ptr->members() == 1) {
            const auto slash = name.rfind('/');
            model_dir = slash == std::string::npos ? "" : name.substr(0, slash + 1);
            v1::UploadMetadata meta;
            meta.set_file_name("tar.onnx");
            meta.set_size_bytes(member_size);
            current = -1;
            return server::GrpcStatusOf(a.Begin(meta));
          }
          if (name.compare(0, model_dir.size(), model_dir) != 0) {
            return grpc::Status(StatusCode::INVALID_ARGUMENT, "not below the model's folder");
          }
          std::uint32_t index = 0;
          const server::UploadStatus st =
              a.BeginDataFile(name.substr(model_dir.size()), member_size, &index);
          current = static_cast<std::int64_t>(index);
          return server::GrpcStatusOf(st);
        },
        [&](std::string_view bytes) -> grpc::Status {
          received[current] += bytes;
          if (current >= 0) {
            return server::GrpcStatusOf(a.AddDataBytes(static_cast<std::uint32_t>(current), bytes));
          }
          return server::GrpcStatusOf(a.AddChunk(bytes));
        });
    reader_ptr = &reader;
    grpc::Status st;
    for (std::size_t off = 0; st.ok() && off < body.size(); off += piece) {
      st = reader.Feed(body.substr(off, piece));
      if (!allowed(st.error_code())) return "tar Feed returned " + std::to_string(st.error_code());
    }
    if (st.ok()) st = reader.Finish();
    if (!allowed(st.error_code())) return "tar Finish returned " + std::to_string(st.error_code());
    if (reader.members() > server::TarReader::kMaxMembers) return "more tar members than allowed";
    if (st.ok()) {
      server::SourcedModel model;
      st = server::GrpcStatusOf(a.Finish(&model));
      if (!allowed(st.error_code())) return "Finish returned " + std::to_string(st.error_code());
      if (st.ok()) {
        if (model.bytes == nullptr || model.bytes->view() != received[-1]) {
          return "tar: assembled model bytes differ from the first member";
        }
        if (model.data != nullptr) {
          if (model.data->total_bytes() > kFuzzMaxDataBytes) return "tar: data over the limit";
          for (std::size_t i = 0; i < model.data->count(); ++i) {
            const std::string& bytes = received[static_cast<std::int64_t>(i)];
            if (ReadFd(model.data->fd(i), model.data->size(i)) != bytes) {
              return "tar: data file bytes differ from the member";
            }
          }
        }
      }
    } else {
      a.Abort();
    }
  }
  if (model_budget.used() != 0 || upload_budget.used() != 0) return "tar: budget leaked";
  return {};
}

}  // namespace axqc::fuzz
