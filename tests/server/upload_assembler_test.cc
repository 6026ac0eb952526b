// UploadAssembler (the state machine behind the Upload stream and the HTTP body) without gRPC, and
// the upload fuzz target's regression inputs: every file in tests/fuzz/upload_regressions/ is
// decoded and replayed with the invariants of the fuzz target (upload_fuzz_input.h).
#include "upload_assembler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "axqc/sha256.h"
#include "model_source.h"
#include "rpc/upload_stream.h"
#include "upload_fuzz_input.h"

namespace axqc::test {
namespace {

namespace fs = std::filesystem;
using grpc::StatusCode;
using server::ByteBudget;
using server::SourcedModel;
using server::UploadAssembler;
using server::UploadError;
using server::UploadStatus;

// The assembler fed as the Upload RPC feeds it (rpc/upload_stream.h), with the gRPC statuses.
grpc::Status Add(UploadAssembler& a, const v1::UploadRequest& msg) {
  return server::GrpcStatusOf(server::AddUploadMessage(a, msg));
}
grpc::Status Take(UploadAssembler& a, v1::UploadRequest* msg) {
  return server::GrpcStatusOf(server::TakeUploadMessage(a, msg));
}
grpc::Status Finish(UploadAssembler& a, SourcedModel* model) {
  return server::GrpcStatusOf(a.Finish(model));
}

v1::UploadRequest Meta(std::uint64_t size = 0, const std::string& sha = "") {
  v1::UploadRequest r;
  r.mutable_metadata()->set_file_name("m.onnx");
  r.mutable_metadata()->set_size_bytes(size);
  r.mutable_metadata()->set_sha256(sha);
  return r;
}

v1::UploadRequest Chunk(const std::string& bytes) {
  v1::UploadRequest r;
  r.set_chunk(bytes);
  return r;
}

struct Budgets {
  ByteBudget model{1000, static_cast<prometheus::Gauge*>(nullptr)};
  ByteBudget upload{600, static_cast<prometheus::Gauge*>(nullptr), "upload budget exhausted"};
};

TEST(UploadAssembler, AssemblesChunksAndKeepsTheModelBytesCharged) {
  Budgets b;
  const std::string model(300, 'm');
  SourcedModel out;
  {
    UploadAssembler a(500, &b.model, &b.upload);
    ASSERT_TRUE(Add(a, Meta(300, axqc::Sha256Hex(model))).ok());
    // The declared size holds nothing; the bytes are charged as they arrive.
    EXPECT_EQ(b.upload.used(), 0u);
    EXPECT_EQ(b.model.used(), 0u);
    ASSERT_TRUE(Add(a, Chunk(model.substr(0, 1))).ok());
    ASSERT_TRUE(Add(a, Chunk(model.substr(1, 200))).ok());
    EXPECT_EQ(b.upload.used(), 201u);
    EXPECT_EQ(b.model.used(), 201u);
    ASSERT_TRUE(Add(a, Chunk("")).ok());
    ASSERT_TRUE(Add(a, Chunk(model.substr(201))).ok());
    EXPECT_EQ(a.received(), 300u);
    ASSERT_TRUE(Finish(a, &out).ok());
    EXPECT_EQ(b.upload.used(), 0u);
  }
  ASSERT_NE(out.bytes, nullptr);
  EXPECT_EQ(out.bytes->view(), model);
  EXPECT_EQ(out.sha256, axqc::Sha256Hex(model));
  EXPECT_EQ(b.model.used(), 300u);
  out.bytes.reset();
  EXPECT_EQ(b.model.used(), 0u);
}

// Large uploads: the chunks' strings are taken (not copied) and hashed and written into the model
// buffer (a sealed memfd) on the upload's own thread.
TEST(UploadAssembler, LargeUploadsArePipelinedIntoASealedMemfd) {
  std::string model(UploadAssembler::kPipelineBytes + 3 * 65536 + 17, '\0');
  for (std::size_t i = 0; i < model.size(); ++i) model[i] = static_cast<char>(i * 131 + i / 4096);
  for (const bool declared : {true, false}) {
    ByteBudget budget(model.size(), static_cast<prometheus::Gauge*>(nullptr));
    UploadAssembler a(model.size(), &budget, nullptr);
    ASSERT_TRUE(Add(a, Meta(declared ? model.size() : 0)).ok());
    EXPECT_EQ(a.pipelined(), false);
    std::size_t taken = 0;
    for (std::size_t off = 0; off < model.size(); off += 65536) {
      v1::UploadRequest msg = Chunk(model.substr(off, 65536));
      const std::size_t n = msg.chunk().size();
      ASSERT_TRUE(Take(a, &msg).ok());
      if (a.pipelined()) {
        EXPECT_TRUE(msg.chunk().empty());  // taken, not copied
        ++taken;
      } else {
        EXPECT_EQ(msg.chunk().size(), n);
      }
    }
    EXPECT_TRUE(a.pipelined());
    // Declared: the whole upload is pipelined; undeclared: from the chunk that reaches
    // kPipelineBytes on.
    EXPECT_EQ(taken, declared
                         ? (model.size() + 65535) / 65536
                         : 1 + (model.size() - UploadAssembler::kPipelineBytes + 65535) / 65536);
    EXPECT_EQ(a.received(), model.size());
    SourcedModel out;
    ASSERT_TRUE(Finish(a, &out).ok());
    EXPECT_EQ(out.sha256, axqc::Sha256Hex(model));
    ASSERT_NE(out.bytes, nullptr);
    EXPECT_TRUE(out.bytes->sealed());
    ASSERT_EQ(out.bytes->backing(), isolate::ModelBuffer::Backing::kMemfd);
    EXPECT_EQ(out.bytes->size(), model.size());
    EXPECT_TRUE(out.bytes->view() == model);
    EXPECT_EQ(budget.used(), model.size());
    out.bytes.reset();
    EXPECT_EQ(budget.used(), 0u);
  }
}

// Chunks given as pieces of memory held by their owner (the raw Upload handler's gRPC slices):
// hashed and stored where they lie, small and pipelined uploads alike, with the same limits as a
// chunk string; the owners are released once their bytes are stored.
TEST(UploadAssembler, ChunkPiecesAreStoredWhereTheyLieAndTheirOwnersReleased) {
  std::string big(UploadAssembler::kPipelineBytes + 3 * 65536 + 17, '\0');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 131 + i / 4096);
  for (const std::string& model : {std::string(1000, 'p'), big}) {
    ByteBudget budget(model.size(), static_cast<prometheus::Gauge*>(nullptr));
    UploadAssembler a(model.size(), &budget, nullptr);
    ASSERT_TRUE(Add(a, Meta(model.size())).ok());
    std::vector<std::weak_ptr<const void>> owners;
    for (std::size_t off = 0; off < model.size(); off += 65536) {
      // Each chunk in three pieces of one owned copy (as gRPC's slices of one message).
      auto owned = std::make_shared<const std::string>(model.substr(off, 65536));
      const std::string_view v(*owned);
      const std::size_t third = v.size() / 3;
      owners.push_back(owned);
      ASSERT_TRUE(
          a.AddChunkPieces({v.substr(0, third), v.substr(third, third), v.substr(2 * third)},
                           std::move(owned))
              .ok());
    }
    EXPECT_EQ(a.pipelined(), model.size() >= UploadAssembler::kPipelineBytes);
    EXPECT_EQ(a.received(), model.size());
    SourcedModel out;
    ASSERT_TRUE(Finish(a, &out).ok());
    EXPECT_EQ(out.sha256, axqc::Sha256Hex(model));
    ASSERT_NE(out.bytes, nullptr);
    EXPECT_TRUE(out.bytes->view() == model);
    for (const auto& w : owners) EXPECT_TRUE(w.expired());
    EXPECT_EQ(budget.used(), model.size());
  }
  // The limits see the whole chunk, not its pieces: the refusal names the total.
  UploadAssembler small(10, nullptr, nullptr);
  ASSERT_TRUE(Add(small, Meta()).ok());
  const std::string bytes = "0123456789ab";
  const UploadStatus st = small.AddChunkPieces(
      {std::string_view(bytes).substr(0, 6), std::string_view(bytes).substr(6)}, nullptr);
  EXPECT_EQ(st.kind, UploadError::kTooLarge);
  EXPECT_NE(st.message.find("12"), std::string::npos) << st.message;
}

// An upload whose declared sha256 names a cached report: the bytes are only hashed (small and
// pipelined uploads alike), charged to no budget and never stored; a mismatch is still refused.
TEST(UploadAssembler, HashOnlyUploadsProveTheirSha256WithoutKeepingTheBytes) {
  std::string big(UploadAssembler::kPipelineBytes + 65536 + 5, '\0');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 7 + i / 999);
  for (const std::string& model : {std::string(300, 'h'), big}) {
    ByteBudget budget(model.size(), static_cast<prometheus::Gauge*>(nullptr));
    ByteBudget uploads(model.size(), static_cast<prometheus::Gauge*>(nullptr));
    UploadAssembler a(model.size(), &budget, &uploads);
    EXPECT_FALSE(a.HashOnly()) << "before the metadata";
    ASSERT_TRUE(Add(a, Meta(model.size(), axqc::Sha256Hex(model))).ok());
    ASSERT_TRUE(a.HashOnly());
    EXPECT_TRUE(a.hash_only());
    for (std::size_t off = 0; off < model.size(); off += 65536) {
      v1::UploadRequest msg = Chunk(model.substr(off, 65536));
      ASSERT_TRUE(Take(a, &msg).ok());
      EXPECT_EQ(budget.used(), 0u);
      EXPECT_EQ(uploads.used(), 0u);
    }
    EXPECT_EQ(a.received(), model.size());
    EXPECT_EQ(a.pipelined(), model.size() >= UploadAssembler::kPipelineBytes);
    SourcedModel out;
    ASSERT_TRUE(Finish(a, &out).ok());
    EXPECT_EQ(out.sha256, axqc::Sha256Hex(model));
    EXPECT_EQ(out.bytes, nullptr);
    EXPECT_EQ(budget.used(), 0u);
  }
  {  // other bytes than declared
    ByteBudget budget(1000, static_cast<prometheus::Gauge*>(nullptr));
    UploadAssembler a(1000, &budget, nullptr);
    ASSERT_TRUE(Add(a, Meta(3, axqc::Sha256Hex("abc"))).ok());
    ASSERT_TRUE(a.HashOnly());
    ASSERT_TRUE(Add(a, Chunk("abd")).ok());
    SourcedModel out;
    const grpc::Status s = Finish(a, &out);
    EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(s.error_message().find("sha256 mismatch"), std::string::npos);
    EXPECT_EQ(out.bytes, nullptr);
  }
  {  // nothing declared, or bytes already received: not possible
    UploadAssembler a(1000, nullptr, nullptr);
    ASSERT_TRUE(Add(a, Meta(3)).ok());
    EXPECT_FALSE(a.HashOnly());
    UploadAssembler b(1000, nullptr, nullptr);
    ASSERT_TRUE(Add(b, Meta(3, axqc::Sha256Hex("abc"))).ok());
    ASSERT_TRUE(Add(b, Chunk("a")).ok());
    EXPECT_FALSE(b.HashOnly());
    ASSERT_TRUE(Add(b, Chunk("bc")).ok());
    SourcedModel out;
    ASSERT_TRUE(Finish(b, &out).ok());
    ASSERT_NE(out.bytes, nullptr);
    EXPECT_EQ(out.bytes->view(), "abc");
  }
}

TEST(UploadAssembler, PipelinedUploadsFailAndAbortCleanly) {
  const std::string chunk(1 << 20, 'q');
  {  // A declared sha256 that the bytes do not match.
    ByteBudget budget(64ull << 20, static_cast<prometheus::Gauge*>(nullptr));
    UploadAssembler a(64ull << 20, &budget, nullptr);
    ASSERT_TRUE(Add(a, Meta(6 * chunk.size(), axqc::Sha256Hex("other bytes"))).ok());
    for (int i = 0; i < 6; ++i) ASSERT_TRUE(Add(a, Chunk(chunk)).ok());
    EXPECT_TRUE(a.pipelined());
    SourcedModel out;
    const grpc::Status s = Finish(a, &out);
    EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(s.error_message().find("sha256 mismatch"), std::string::npos);
    EXPECT_EQ(out.bytes, nullptr);
    EXPECT_EQ(budget.used(), 0u);
  }
  {  // Over the size limit while pipelined; then aborted mid-stream.
    ByteBudget budget(64ull << 20, static_cast<prometheus::Gauge*>(nullptr));
    UploadAssembler a(5 * chunk.size(), &budget, nullptr);
    ASSERT_TRUE(Add(a, Meta()).ok());
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(Add(a, Chunk(chunk)).ok());
    EXPECT_TRUE(a.pipelined());
    EXPECT_EQ(Add(a, Chunk("x")).error_code(), StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_FALSE(a.pipelined());
    EXPECT_EQ(budget.used(), 0u);
  }
  {
    ByteBudget budget(64ull << 20, static_cast<prometheus::Gauge*>(nullptr));
    UploadAssembler a(64ull << 20, &budget, nullptr);
    ASSERT_TRUE(Add(a, Meta(8 * chunk.size())).ok());
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(Add(a, Chunk(chunk)).ok());
    a.Abort();
    EXPECT_EQ(budget.used(), 0u);
    EXPECT_EQ(Add(a, Chunk(chunk)).error_code(), StatusCode::INVALID_ARGUMENT);  // ended
  }
}

TEST(UploadAssembler, UndeclaredSizeGrowsWithTheChunks) {
  Budgets b;
  UploadAssembler a(500, &b.model, &b.upload);
  ASSERT_TRUE(Add(a, Meta()).ok());
  EXPECT_EQ(b.upload.used(), 0u);
  ASSERT_TRUE(Add(a, Chunk(std::string(120, 'x'))).ok());
  EXPECT_EQ(b.upload.used(), 120u);
  EXPECT_EQ(b.model.used(), 120u);
}

TEST(UploadAssembler, OrderAndFieldErrors) {
  Budgets b;
  {
    UploadAssembler a(500, &b.model, &b.upload);
    const grpc::Status s = Add(a, Chunk("x"));
    EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(s.error_message(), "the first Upload message must carry metadata");
    EXPECT_EQ(Add(a, Meta()).error_code(), StatusCode::INVALID_ARGUMENT);  // already ended
  }
  {
    UploadAssembler a(500, &b.model, &b.upload);
    ASSERT_TRUE(Add(a, Meta(10)).ok());
    EXPECT_EQ(Add(a, Meta(10)).error_message(), "only the first Upload message may carry metadata");
    EXPECT_EQ(b.model.used(), 0u);
    EXPECT_EQ(b.upload.used(), 0u);
  }
  {
    UploadAssembler a(500, &b.model, &b.upload);
    ASSERT_TRUE(Add(a, Meta()).ok());
    EXPECT_EQ(Add(a, v1::UploadRequest()).error_message(),
              "every Upload message after the first must carry a chunk");
  }
  {
    UploadAssembler a(500, &b.model, &b.upload);
    EXPECT_EQ(Add(a, Meta(0, "ABC")).error_code(), StatusCode::INVALID_ARGUMENT);
  }
  {
    UploadAssembler a(500, &b.model, &b.upload);
    v1::UploadRequest m = Meta();
    (*m.mutable_metadata()->mutable_labels())["bad key"] = "v";
    EXPECT_EQ(Add(a, m).error_code(), StatusCode::INVALID_ARGUMENT);
  }
  {
    UploadAssembler a(500, &b.model, &b.upload);
    SourcedModel out;
    EXPECT_EQ(Finish(a, &out).error_message(),
              "empty Upload stream: metadata and model bytes expected");
  }
  {  // More than declared, fewer than declared, wrong sha256.
    UploadAssembler a(500, &b.model, &b.upload);
    ASSERT_TRUE(Add(a, Meta(3)).ok());
    EXPECT_EQ(Add(a, Chunk("abcd")).error_code(), StatusCode::INVALID_ARGUMENT);
  }
  {
    UploadAssembler a(500, &b.model, &b.upload);
    ASSERT_TRUE(Add(a, Meta(3)).ok());
    ASSERT_TRUE(Add(a, Chunk("ab")).ok());
    SourcedModel out;
    EXPECT_EQ(Finish(a, &out).error_message(), "received 2 bytes, declared size_bytes 3");
    EXPECT_EQ(out.bytes, nullptr);
  }
  {
    UploadAssembler a(500, &b.model, &b.upload);
    ASSERT_TRUE(Add(a, Meta(0, axqc::Sha256Hex("abd"))).ok());
    ASSERT_TRUE(Add(a, Chunk("abc")).ok());
    SourcedModel out;
    const grpc::Status s = Finish(a, &out);
    EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(s.error_message().find("sha256 mismatch"), std::string::npos);
  }
  EXPECT_EQ(b.model.used(), 0u);
  EXPECT_EQ(b.upload.used(), 0u);
}

TEST(UploadAssembler, LimitsAreResourceExhausted) {
  Budgets b;
  {  // Declared size over the model limit: refused before any byte.
    UploadAssembler a(500, &b.model, &b.upload);
    const grpc::Status s = Add(a, Meta(501));
    EXPECT_EQ(s.error_code(), StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_EQ(s.error_message(), "model is 501 bytes or more, over the limit of 500");
  }
  {  // Undeclared, the bytes go over the model limit.
    UploadAssembler a(500, &b.model, &b.upload);
    ASSERT_TRUE(Add(a, Meta()).ok());
    ASSERT_TRUE(Add(a, Chunk(std::string(400, 'x'))).ok());
    EXPECT_EQ(Add(a, Chunk(std::string(101, 'x'))).error_code(), StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_EQ(b.upload.used(), 0u);
  }
  {  // A declared size that does not fit in what the upload budget (600) has free: refused at
     // its metadata.
    UploadAssembler a1(500, &b.model, &b.upload);
    UploadAssembler a2(500, &b.model, &b.upload);
    ASSERT_TRUE(Add(a1, Meta(400)).ok());
    ASSERT_TRUE(Add(a1, Chunk(std::string(300, 'x'))).ok());
    const grpc::Status s = Add(a2, Meta(400));
    EXPECT_EQ(s.error_code(), StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_EQ(s.error_message(), "upload budget exhausted");
    EXPECT_EQ(b.upload.used(), 300u);
    ASSERT_TRUE(Add(a2, Meta(200)).error_code() == StatusCode::INVALID_ARGUMENT);  // ended
  }
  EXPECT_EQ(b.upload.used(), 0u);  // the destructor released a1's reservation
  EXPECT_EQ(b.model.used(), 0u);
}

// Declared sizes hold no budget: streams that declared the whole budget and stalled do not keep
// another upload out; the bytes that arrive are what counts.
TEST(UploadAssembler, DeclaredSizesHoldNoBudgetOnlyReceivedBytesDo) {
  Budgets b;  // upload budget 600
  UploadAssembler stalled1(500, &b.model, &b.upload);
  UploadAssembler stalled2(500, &b.model, &b.upload);
  ASSERT_TRUE(Add(stalled1, Meta(500)).ok());
  ASSERT_TRUE(Add(stalled2, Meta(500)).ok());
  EXPECT_EQ(b.upload.used(), 0u);
  EXPECT_EQ(b.model.used(), 0u);
  EXPECT_EQ(stalled1.reserved(), 0u);
  {
    const std::string model(450, 'm');
    UploadAssembler a(500, &b.model, &b.upload);
    ASSERT_TRUE(Add(a, Meta(450)).ok());
    ASSERT_TRUE(Add(a, Chunk(model)).ok());
    EXPECT_EQ(b.upload.used(), 450u);
    SourcedModel out;
    ASSERT_TRUE(Finish(a, &out).ok());
    EXPECT_EQ(out.bytes->view(), model);
  }
  // The bytes of a stalled stream are charged when they arrive, and refused over the budget.
  ASSERT_TRUE(Add(stalled1, Chunk(std::string(400, 'x'))).ok());
  EXPECT_EQ(b.upload.used(), 400u);
  const grpc::Status s = Add(stalled2, Chunk(std::string(201, 'x')));
  EXPECT_EQ(s.error_code(), StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(s.error_message(), "upload budget exhausted");
  stalled1.Abort();
  EXPECT_EQ(b.upload.used(), 0u);
  EXPECT_EQ(b.model.used(), 0u);
}

// Each refusal carries its kind, from which the front doors choose their status: the HTTP status
// (HttpStatusOf) and the gRPC code (GrpcStatusOf). A size limit is kTooLarge (413), a busy server
// kBusy (429), whatever their messages say.
TEST(UploadAssembler, RefusalsCarryTheirKind) {
  Budgets b;  // model budget 1000, upload budget 600
  v1::UploadMetadata meta;
  meta.set_file_name("m.onnx");
  auto expect_kind = [](const UploadStatus& s, UploadError kind, unsigned http, StatusCode code) {
    EXPECT_EQ(s.kind, kind) << s.message;
    EXPECT_FALSE(s.ok());
    EXPECT_FALSE(s.message.empty());
    EXPECT_EQ(server::HttpStatusOf(s.kind), http) << s.message;
    EXPECT_EQ(server::GrpcStatusOf(s).error_code(), code) << s.message;
    EXPECT_EQ(server::GrpcStatusOf(s).error_message(), s.message);
  };
  {  // Declared size over max_model_bytes.
    UploadAssembler a(500, &b.model, &b.upload);
    meta.set_size_bytes(501);
    expect_kind(a.Begin(meta), UploadError::kTooLarge, 413, StatusCode::RESOURCE_EXHAUSTED);
    // Refused: the upload has ended, later calls are kInvalid.
    expect_kind(a.AddChunk("x"), UploadError::kInvalid, 400, StatusCode::INVALID_ARGUMENT);
  }
  {  // Bytes over max_model_bytes.
    UploadAssembler a(500, &b.model, &b.upload);
    meta.set_size_bytes(0);
    ASSERT_TRUE(a.Begin(meta).ok());
    ASSERT_TRUE(a.AddChunk(std::string(500, 'x')).ok());
    expect_kind(a.AddChunk("x"), UploadError::kTooLarge, 413, StatusCode::RESOURCE_EXHAUSTED);
  }
  {  // The upload budget has no room: at the metadata, and for the bytes.
    UploadAssembler holder(1000, &b.model, &b.upload);
    meta.set_size_bytes(0);
    ASSERT_TRUE(holder.Begin(meta).ok());
    ASSERT_TRUE(holder.AddChunk(std::string(500, 'x')).ok());
    UploadAssembler a1(1000, &b.model, &b.upload);
    meta.set_size_bytes(200);
    expect_kind(a1.Begin(meta), UploadError::kBusy, 429, StatusCode::RESOURCE_EXHAUSTED);
    UploadAssembler a2(1000, &b.model, &b.upload);
    meta.set_size_bytes(0);
    ASSERT_TRUE(a2.Begin(meta).ok());
    expect_kind(a2.AddChunk(std::string(101, 'x')), UploadError::kBusy, 429,
                StatusCode::RESOURCE_EXHAUSTED);
  }
  {  // Data files on a server that takes none.
    UploadAssembler a(500, &b.model, &b.upload);
    v1::UploadMetadata m = meta;
    auto* f = m.add_data_files();
    f->set_name("w.bin");
    f->set_size_bytes(10);
    f->set_sha256(axqc::Sha256Hex("0123456789"));
    expect_kind(a.Begin(m), UploadError::kNoDataFiles, 429, StatusCode::RESOURCE_EXHAUSTED);
  }
  {  // Data files over max-external-data-bytes: declared, and announced (the tar upload).
    UploadAssembler a(500, &b.model, &b.upload);
    a.AllowDataFiles(100, "");
    v1::UploadMetadata m = meta;
    auto* f = m.add_data_files();
    f->set_name("w.bin");
    f->set_size_bytes(101);
    f->set_sha256(axqc::Sha256Hex("x"));
    expect_kind(a.Begin(m), UploadError::kTooLarge, 413, StatusCode::RESOURCE_EXHAUSTED);
    UploadAssembler t(500, &b.model, &b.upload);
    t.AllowDataFiles(100, "");
    ASSERT_TRUE(t.Begin(meta).ok());
    std::uint32_t index = 0;
    ASSERT_TRUE(t.BeginDataFile("a.bin", 60, &index).ok());
    expect_kind(t.BeginDataFile("b.bin", 41, &index), UploadError::kTooLarge, 413,
                StatusCode::RESOURCE_EXHAUSTED);
  }
  {  // Invalid metadata, bytes that do not match the declaration, calls out of order.
    UploadAssembler a(500, &b.model, &b.upload);
    v1::UploadMetadata m = meta;
    m.set_sha256("ABC");
    expect_kind(a.Begin(m), UploadError::kInvalid, 400, StatusCode::INVALID_ARGUMENT);
    UploadAssembler c(500, &b.model, &b.upload);
    m.set_sha256(axqc::Sha256Hex("abd"));
    ASSERT_TRUE(c.Begin(m).ok());
    ASSERT_TRUE(c.AddChunk("abc").ok());
    SourcedModel out;
    expect_kind(c.Finish(&out), UploadError::kInvalid, 400, StatusCode::INVALID_ARGUMENT);
    UploadAssembler d(500, &b.model, &b.upload);
    expect_kind(d.AddChunk("x"), UploadError::kInvalid, 400, StatusCode::INVALID_ARGUMENT);
    UploadAssembler e(500, &b.model, &b.upload);
    ASSERT_TRUE(e.Begin(meta).ok());
    expect_kind(e.Begin(meta), UploadError::kInvalid, 400, StatusCode::INVALID_ARGUMENT);
    expect_kind(e.AddChunk("x"), UploadError::kInvalid, 400, StatusCode::INVALID_ARGUMENT);
  }
  EXPECT_TRUE(UploadStatus::Ok().ok());
  EXPECT_EQ(server::HttpStatusOf(UploadError::kNone), 0u);
  EXPECT_TRUE(server::GrpcStatusOf(UploadStatus::Ok()).ok());
  EXPECT_EQ(server::HttpStatusOf(UploadError::kStorage), 429u);
  EXPECT_EQ(server::HttpStatusOf(UploadError::kInternal), 500u);
  EXPECT_EQ(server::GrpcStatusOf({UploadError::kStorage, "disk"}).error_code(),
            StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(server::GrpcStatusOf({UploadError::kInternal, "bug"}).error_code(),
            StatusCode::INTERNAL);
  EXPECT_EQ(b.model.used(), 0u);
  EXPECT_EQ(b.upload.used(), 0u);
}

// The bytes API (the HTTP body's path): the metadata, then bytes as they come, copied or taken.
TEST(UploadAssembler, TakesBytesCopiedOrTaken) {
  Budgets b;
  const std::string model = "0123456789abcdef";
  v1::UploadMetadata meta;
  meta.set_file_name("m.onnx");
  meta.set_size_bytes(model.size());
  meta.set_sha256(axqc::Sha256Hex(model));
  UploadAssembler a(500, &b.model, &b.upload);
  ASSERT_TRUE(a.Begin(meta).ok());
  ASSERT_TRUE(a.AddChunk(std::string_view(model).substr(0, 5)).ok());
  std::string rest = model.substr(5);
  ASSERT_TRUE(a.AddChunk(&rest).ok());
  EXPECT_EQ(a.received(), model.size());
  SourcedModel out;
  ASSERT_TRUE(a.Finish(&out).ok());
  EXPECT_EQ(out.bytes->view(), model);
  EXPECT_EQ(out.sha256, axqc::Sha256Hex(model));
  EXPECT_EQ(a.AddChunk("x").kind, UploadError::kInvalid);  // ended
}

TEST(UploadAssembler, AbortReleasesEverything) {
  Budgets b;
  UploadAssembler a(500, &b.model, &b.upload);
  ASSERT_TRUE(Add(a, Meta()).ok());
  ASSERT_TRUE(Add(a, Chunk(std::string(250, 'x'))).ok());
  a.Abort();
  EXPECT_EQ(a.received(), 0u);
  EXPECT_EQ(b.model.used(), 0u);
  EXPECT_EQ(b.upload.used(), 0u);
  a.Abort();
}

// ------------------------------------------------------------------------------------------------
// The fuzz target's driver and its regression inputs.

TEST(UploadFuzzInput, EncodedUploadsAreAccepted) {
  const std::string model = "not checked here, any bytes do " + std::string(5000, '\x01');
  for (std::size_t chunk : {std::size_t{1}, std::size_t{7}, std::size_t{4096}, model.size()}) {
    for (bool size : {false, true}) {
      for (bool sha : {false, true}) {
        const std::string in = fuzz::EncodeUpload(model, chunk, size, sha, "m.onnx");
        const auto* data = reinterpret_cast<const std::uint8_t*>(in.data());
        const auto msgs = fuzz::DecodeUploadInput(data, in.size());
        ASSERT_EQ(msgs.size(), 1 + (model.size() + chunk - 1) / chunk);
        EXPECT_EQ(msgs[0].metadata().size_bytes(), size ? model.size() : 0u);
        EXPECT_EQ(msgs[0].metadata().sha256(), sha ? axqc::Sha256Hex(model) : "");
        EXPECT_EQ(fuzz::RunUploadInput(data, in.size()), "");
        // The same upload of a model whose report is cached (hash only).
        const std::string hashed = "H" + in;
        EXPECT_EQ(fuzz::RunUploadInput(reinterpret_cast<const std::uint8_t*>(hashed.data()),
                                       hashed.size()),
                  "");
        // And the assembler accepts it.
        ByteBudget mb(fuzz::kFuzzModelBudget, static_cast<prometheus::Gauge*>(nullptr));
        UploadAssembler a(fuzz::kFuzzMaxModelBytes, &mb, nullptr);
        for (const auto& m : msgs) ASSERT_TRUE(Add(a, m).ok());
        SourcedModel out;
        ASSERT_TRUE(Finish(a, &out).ok());
        EXPECT_EQ(out.bytes->view(), model);
      }
    }
  }
}

// The data-file, tar and hash-only encodings of the fuzz input: accepted as written, and no
// mutation of them (byte flips, insertions, deletions, truncations, for
// AXQC_UPLOAD_MUTATION_SECONDS, default 1 s) breaks an invariant. A quick, uninstrumented companion
// of tests/fuzz/run.sh upload.
TEST(UploadFuzzInput, DataFileAndTarInputsHoldTheInvariantsUnderMutation) {
  const std::string model = "model bytes, not checked here " + std::string(3000, '\x02');
  const std::string data = std::string(200, '\0') + std::string(300, '\x05');
  const std::string upload = fuzz::EncodeUploadWithData(model, data);
  const std::string ranged = fuzz::EncodeRangedUpload(model, data, {{3, 9}, {198, 4}, {490, 10}});
  const std::string hashed = "H" + fuzz::EncodeUpload(model, 700, true, true, "m.onnx");
  const std::string tar = std::string("T\x07") + fuzz::TarMember("m/", "", '5') +
                          fuzz::TarMember("m/model.onnx", model) +
                          fuzz::TarMember("m/weights.bin", data) + std::string(1024, '\0');
  for (const std::string* in : {&upload, &ranged, &tar, &hashed}) {
    EXPECT_EQ(fuzz::RunUploadInput(reinterpret_cast<const std::uint8_t*>(in->data()), in->size()),
              "");
  }
  {
    // The ranged upload keeps the file's size and only the ranges' bytes, at their offsets.
    const auto rmsgs = fuzz::DecodeUploadInput(reinterpret_cast<const std::uint8_t*>(ranged.data()),
                                               ranged.size());
    ByteBudget rb(fuzz::kFuzzModelBudget, static_cast<prometheus::Gauge*>(nullptr));
    UploadAssembler ra(fuzz::kFuzzMaxModelBytes, &rb, nullptr);
    ra.AllowDataFiles(fuzz::kFuzzMaxDataBytes, "");
    for (const auto& m : rmsgs) ASSERT_TRUE(Add(ra, m).ok());
    SourcedModel rout;
    ASSERT_TRUE(Finish(ra, &rout).ok());
    ASSERT_NE(rout.data, nullptr);
    EXPECT_TRUE(rout.data->partial());
    EXPECT_EQ(rout.data->size(0), data.size());
    std::string expect(data.size(), '\0');
    for (const auto& [o, l] :
         std::vector<std::pair<std::size_t, std::size_t>>{{3, 9}, {198, 4}, {490, 10}}) {
      expect.replace(o, l, data.substr(o, l));
    }
    EXPECT_EQ(fuzz::ReadFd(rout.data->fd(0), data.size()), expect);
    EXPECT_EQ(rout.sha256, server::SentRangesKey(*rout.data, rout.graph_sha256));
    EXPECT_NE(rout.sha256, rout.graph_sha256);
  }
  const auto msgs =
      fuzz::DecodeUploadInput(reinterpret_cast<const std::uint8_t*>(upload.data()), upload.size());
  ASSERT_FALSE(msgs.empty());
  ASSERT_EQ(msgs[0].metadata().data_files_size(), 1);
  EXPECT_EQ(msgs[0].metadata().data_files(0).size_bytes(), data.size());
  ByteBudget mb(fuzz::kFuzzModelBudget, static_cast<prometheus::Gauge*>(nullptr));
  UploadAssembler a(fuzz::kFuzzMaxModelBytes, &mb, nullptr);
  a.AllowDataFiles(fuzz::kFuzzMaxDataBytes, "");
  for (const auto& m : msgs) ASSERT_TRUE(Add(a, m).ok());
  SourcedModel out;
  ASSERT_TRUE(Finish(a, &out).ok());
  ASSERT_NE(out.data, nullptr);
  EXPECT_EQ(out.data->name(0), "weights.bin");
  EXPECT_EQ(fuzz::ReadFd(out.data->fd(0), data.size()), data);

  const char* env = std::getenv("AXQC_UPLOAD_MUTATION_SECONDS");
  const double seconds = env != nullptr ? std::atof(env) : 1.0;
  std::mt19937_64 rng(35);
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  std::uint64_t runs = 0;
  while (std::chrono::steady_clock::now() < end) {
    const std::uint64_t pick = rng() % 4;
    // 3: a plain upload with its sha256 declared, of a model whose report is cached (hash only).
    std::string in = pick == 0 ? upload : pick == 1 ? ranged : pick == 2 ? tar : hashed;
    const int edits = 1 + static_cast<int>(rng() % 8);
    for (int e = 0; e < edits && !in.empty(); ++e) {
      const std::size_t at = rng() % in.size();
      switch (rng() % 4) {
        case 0:
          in[at] = static_cast<char>(rng());
          break;
        case 1:
          in.insert(at, 1 + rng() % 16, static_cast<char>(rng()));
          break;
        case 2:
          in.erase(at, 1 + rng() % 64);
          break;
        default:
          in.resize(at);
          break;
      }
    }
    const std::string error =
        fuzz::RunUploadInput(reinterpret_cast<const std::uint8_t*>(in.data()), in.size());
    ASSERT_EQ(error, "") << "after " << runs << " runs";
    ++runs;
  }
  std::cout << "UploadFuzzInput mutations: " << runs << " inputs in " << seconds << " s\n";
}

fs::path RegressionDir() {
  return fs::path(AXQC_SOURCE_DIR) / "tests" / "fuzz" / "upload_regressions";
}

std::vector<std::string> RegressionFiles() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(RegressionDir(), ec)) {
    if (e.is_regular_file()) names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

TEST(UploadFuzzRegression, DirectoryIsNotEmpty) { EXPECT_FALSE(RegressionFiles().empty()); }

class UploadFuzzRegression : public testing::TestWithParam<std::string> {};

TEST_P(UploadFuzzRegression, InvariantsHold) {
  std::ifstream in(RegressionDir() / GetParam(), std::ios::binary);
  const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  EXPECT_EQ(fuzz::RunUploadInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()),
            "")
      << GetParam();
}

std::string TestName(const testing::TestParamInfo<std::string>& info) {
  std::string s = info.param;
  for (char& c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return s;
}

INSTANTIATE_TEST_SUITE_P(Inputs, UploadFuzzRegression, testing::ValuesIn(RegressionFiles()),
                         TestName);

}  // namespace
}  // namespace axqc::test
