// Unit tests of the server's parts: report <-> protobuf, sha256, the LRU and report cache, URL
// parsing, path containment, the memory trimmer, the check engine and the failure memory. The
// configuration and the stores have files of their own (server_config_test.cc,
// server_store_test.cc).
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "axqc/render.h"
#include "axqc/sha256.h"
#include "axqc/wire/report_proto.h"
#include "axqc/wire/status_name.h"
#include "check_engine.h"
#include "failure_memory.h"
#include "lru_cache.h"
#include "memory.h"
#include "metrics.h"
#include "model_source.h"
#include "report_cache.h"
#include "request_validation.h"
#include "rpc/upload_stream.h"
#include "server_test_util.h"
#include "url_fetch.h"

namespace axqc::test {
namespace {

// ------------------------------------------------------------------------------------------------
// report <-> proto

Report FullReport() {
  Report r;
  r.verdict = Verdict::kNonConformant;
  r.check_value = true;
  r.tool_version = "0.1.0";
  r.rule_set_version = std::string(kRuleSetVersion);
  r.model.file = "m.onnx";
  r.model.sha256 = std::string(64, 'a');
  r.model.size_bytes = 1234;
  r.model.ir_version = 10;
  r.model.opsets = {{"", 21}, {"com.microsoft", 1}};
  r.model.producer_name = "p";
  r.model.producer_version = "9";
  r.model.node_count = 7;
  r.model.q_count = 2;
  r.model.dq_count = 3;
  r.model.initializer_count = 4;
  Finding f;
  f.rule = "qdq/scale-value";
  f.severity = Severity::kError;
  f.section = "3.1";
  f.message = "scale of x_q is 0";
  f.group_key = "scale <= 0";
  f.op_type = "QuantizeLinear";
  f.nodes = {"x_q", "x_dq"};
  f.tensors = {"x_scale"};
  f.values = {{"scale[0]", "0"}, {"scale[1]", "-1"}};
  f.fingerprint = "0123456789abcdef";
  f.id = "0123456789abcdef:1";
  f.hint = {"qparams-as-numbers", "qparams given as Python numbers", "fold them",
            "constant-to-initializer"};
  Finding w = f;
  w.rule = "qdq/zero-point-value";
  w.severity = Severity::kWarn;
  w.id = "0123456789abcdef:2";
  w.cause = f.id;
  w.hint = {};
  Finding i = f;
  i.rule = "scope/no-quantized-edge";
  i.severity = Severity::kInfo;
  r.findings = {f, w, i};
  FindingGroup g;
  g.rule = f.rule;
  g.severity = f.severity;
  g.section = f.section;
  g.summary = f.group_key;
  g.count = 1;
  g.first = {f};
  r.groups = {g};
  r.summary.causes = 1;
  r.summary.errors = 1;
  r.summary.warnings = 1;
  r.summary.infos = 1;
  r.summary.by_rule = {{"qdq/scale-value", 1}, {"qdq/zero-point-value", 1}};
  r.summary.units_by_kind = {{"op", 3}, {"pattern:silu", 1}};
  r.summary.units_by_op = {{"Conv", 2}};
  r.summary.errors_by_op = {{"QuantizeLinear", 1}};
  r.summary.qdq_edges = 5;
  r.summary.owned_qdq_edges = 4;
  UnitInfo u;
  u.id = 3;
  u.kind = "pattern:silu";
  u.op_type = "Sigmoid";
  u.mode = "quantized";
  u.nodes = {"sig", "mul"};
  u.input_qdq = {"a_dq"};
  u.output_qdq = {"b_q"};
  r.units = {u};
  return r;
}

TEST(ReportProto, RoundTripIsLossless) {
  const Report r = FullReport();
  const v1::Report p = wire::ToProto(r);
  EXPECT_EQ(p.schema(), "axqc.report/v1");
  EXPECT_EQ(p.verdict(), v1::VERDICT_NON_CONFORMANT);
  EXPECT_EQ(p.findings_size(), 3);
  EXPECT_EQ(p.findings(1).severity(), v1::SEVERITY_WARN);
  EXPECT_EQ(p.findings(0).values(1).name(), "scale[1]");
  EXPECT_EQ(p.findings(0).values(1).value(), "-1");
  EXPECT_EQ(p.model().opsets(1).domain(), "com.microsoft");
  EXPECT_EQ(p.summary().units_by_kind().at("pattern:silu"), 1u);
  EXPECT_EQ(p.units(0).output_qdq(0), "b_q");
  const Report back = wire::FromProto(p);
  // The JSON rendering covers every field of the report.
  EXPECT_EQ(RenderJson(back), RenderJson(r));
  EXPECT_EQ(back.model.opsets, r.model.opsets);
  EXPECT_EQ(back.findings[0].values, r.findings[0].values);
  EXPECT_EQ(back.summary.errors_by_op, r.summary.errors_by_op);
  EXPECT_EQ(back.units[0].input_qdq, r.units[0].input_qdq);
  EXPECT_EQ(back.groups[0].first[0].nodes, r.groups[0].first[0].nodes);
  EXPECT_EQ(p.findings(0).fingerprint(), "0123456789abcdef");
  EXPECT_EQ(back.findings[0].fingerprint, "0123456789abcdef");
  // Root causes (docs/causes.md): id, cause link, hint and the summary's cause count.
  EXPECT_EQ(p.findings(1).cause(), "0123456789abcdef:1");
  EXPECT_EQ(p.findings(0).hint().rewrite(), "constant-to-initializer");
  EXPECT_FALSE(p.findings(1).has_hint());
  EXPECT_EQ(p.summary().causes(), 1u);
  EXPECT_EQ(back.findings[1].id, "0123456789abcdef:2");
  EXPECT_EQ(back.findings[1].cause, "0123456789abcdef:1");
  EXPECT_EQ(back.findings[0].hint.id, "qparams-as-numbers");
  EXPECT_EQ(back.findings[0].hint.title, "qparams given as Python numbers");
  EXPECT_EQ(back.summary.causes, 1u);
}

TEST(ReportProto, RealReportRoundTrip) {
  const std::string model = NonConformantModel();
  const Report r = DirectReport(model, "bad.onnx", true);
  EXPECT_EQ(RenderJson(wire::FromProto(wire::ToProto(r))), RenderJson(r));
}

TEST(ReportProto, UnspecifiedEnumsAreRejected) {
  v1::Report p;
  EXPECT_THROW(wire::FromProto(p), std::invalid_argument);
}

TEST(ReportProto, CacheKeyHasShaOptionsAndRuleSet) {
  v1::CheckOptions o;
  EXPECT_EQ(wire::OptionsKey(o), "cv=0;ml=5");
  o.set_check_value(true);
  o.set_max_locations(7);
  o.set_format(v1::REPORT_FORMAT_JSON);  // not part of the key
  EXPECT_EQ(wire::OptionsKey(o), "cv=1;ml=7");
  EXPECT_EQ(wire::CacheKey("abc", o),
            "abc|cv=1;ml=7|" + std::string(kRuleSetVersion) + "|" + wire::kReportRevision);
}

// An OptionsKey back to the query string of the report lookups (the links of ListChecks).
TEST(ReportProto, OptionsQueryOfKeyInvertsOptionsKey) {
  v1::CheckOptions o;
  EXPECT_EQ(wire::OptionsQueryOfKey(wire::OptionsKey(o)).value(), "");
  EXPECT_EQ(wire::OptionsQueryOfKey("").value(), "");  // rows before the options were
  o.set_check_value(true);
  EXPECT_EQ(wire::OptionsQueryOfKey(wire::OptionsKey(o)).value(), "check_value=true");
  o.set_max_locations(7);
  o.add_targets("ax650");
  const std::string key = wire::OptionsKey(o);
  EXPECT_EQ(wire::OptionsQueryOfKey(key).value(),
            "check_value=true&max_locations=7&target=" + wire::TargetsOfKey(key).at(0));
  EXPECT_EQ(wire::TargetsOfKey(key).size(), 1u);
  EXPECT_EQ(wire::CacheKeyOf("abc", key), wire::CacheKey("abc", o));
  o.set_pulsar2_config("{}");
  EXPECT_FALSE(wire::OptionsQueryOfKey(wire::OptionsKey(o)).has_value());
  // Anything OptionsKey does not write is no query.
  for (const char* bad : {"cv=2", "ml=x", "t=AX650", "t=a&b", "zz=1", "cv", "t=,", "=1"}) {
    EXPECT_FALSE(wire::OptionsQueryOfKey(bad).has_value()) << bad;
  }
  EXPECT_TRUE(wire::TargetsOfKey("cv=0;ml=5").empty());
}

// ------------------------------------------------------------------------------------------------
// sha256

// axqc/wire/status_name.h names the codes by number (no gRPC header): the numbers are gRPC's.
TEST(StatusName, NamesEveryGrpcCodeByItsNumber) {
  using grpc::StatusCode;
  const std::vector<std::pair<StatusCode, std::string>> codes = {
      {StatusCode::OK, "OK"},
      {StatusCode::CANCELLED, "CANCELLED"},
      {StatusCode::UNKNOWN, "UNKNOWN"},
      {StatusCode::INVALID_ARGUMENT, "INVALID_ARGUMENT"},
      {StatusCode::DEADLINE_EXCEEDED, "DEADLINE_EXCEEDED"},
      {StatusCode::NOT_FOUND, "NOT_FOUND"},
      {StatusCode::ALREADY_EXISTS, "ALREADY_EXISTS"},
      {StatusCode::PERMISSION_DENIED, "PERMISSION_DENIED"},
      {StatusCode::UNAUTHENTICATED, "UNAUTHENTICATED"},
      {StatusCode::RESOURCE_EXHAUSTED, "RESOURCE_EXHAUSTED"},
      {StatusCode::FAILED_PRECONDITION, "FAILED_PRECONDITION"},
      {StatusCode::ABORTED, "ABORTED"},
      {StatusCode::OUT_OF_RANGE, "OUT_OF_RANGE"},
      {StatusCode::UNIMPLEMENTED, "UNIMPLEMENTED"},
      {StatusCode::INTERNAL, "INTERNAL"},
      {StatusCode::UNAVAILABLE, "UNAVAILABLE"},
      {StatusCode::DATA_LOSS, "DATA_LOSS"},
  };
  for (const auto& [code, name] : codes) {
    EXPECT_EQ(wire::StatusCodeName(code), name);
    EXPECT_EQ(wire::StatusCodeName(static_cast<int>(code)), name);
  }
  EXPECT_STREQ(wire::StatusCodeName(17), "UNKNOWN");
  EXPECT_STREQ(wire::StatusCodeName(-1), "UNKNOWN");
}

TEST(Sha256, KnownVectorsAndStreaming) {
  EXPECT_EQ(axqc::Sha256Hex(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(axqc::Sha256Hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  axqc::Sha256 h;
  h.Update("a");
  h.Update("");
  h.Update("bc");
  EXPECT_EQ(h.HexDigest(), axqc::Sha256Hex("abc"));
  EXPECT_THROW(h.Update("x"), std::logic_error);
  EXPECT_TRUE(axqc::IsSha256Hex(axqc::Sha256Hex("abc")));
  EXPECT_FALSE(axqc::IsSha256Hex(std::string(64, 'A')));
  EXPECT_FALSE(axqc::IsSha256Hex("abc"));
}

// ------------------------------------------------------------------------------------------------
// LRU

std::shared_ptr<const server::CachedReport> ReportOfSize(std::size_t message_bytes) {
  v1::Report r;
  r.mutable_model()->set_file(std::string(message_bytes, 'x'));
  return server::MakeCachedReport(std::move(r));
}

TEST(LruCache, EvictsLeastRecentlyUsedWithinTheByteBound) {
  const auto probe = ReportOfSize(1000);
  server::LruCache sizing(1u << 30);
  sizing.Put("k1", probe);
  const std::size_t cost = sizing.bytes();
  ASSERT_GT(cost, 1000u);

  server::LruCache cache(3 * cost);  // room for exactly three entries of this size
  cache.Put("k1", ReportOfSize(1000));
  cache.Put("k2", ReportOfSize(1000));
  cache.Put("k3", ReportOfSize(1000));
  EXPECT_EQ(cache.entries(), 3u);
  ASSERT_NE(cache.Get("k1"), nullptr);  // k1 becomes the most recent
  cache.Put("k4", ReportOfSize(1000));  // evicts k2
  EXPECT_EQ(cache.entries(), 3u);
  EXPECT_EQ(cache.Get("k2"), nullptr);
  EXPECT_NE(cache.Get("k1"), nullptr);
  EXPECT_NE(cache.Get("k3"), nullptr);
  EXPECT_NE(cache.Get("k4"), nullptr);
  EXPECT_LE(cache.bytes(), 3 * cost);
  cache.Put("huge", ReportOfSize(10 * cost));  // larger than the cache: not kept
  EXPECT_EQ(cache.Get("huge"), nullptr);
  EXPECT_EQ(cache.entries(), 3u);
  server::LruCache off(0);
  off.Put("k", ReportOfSize(1));
  EXPECT_EQ(off.entries(), 0u);
}

// A size limit is told from a busy server by the status's mark, never by its message: the HTTP
// API answers 413 for one and 429 for the other, and a webhook delivery retries only the other.
TEST(OverSizeLimit, IsTypedWhereTheRefusalIsMadeNotReadFromTheMessage) {
  EXPECT_TRUE(server::OverSizeLimit(server::OverSizeLimitStatus("model is big")));
  EXPECT_FALSE(server::OverSizeLimit(grpc::Status(
      grpc::StatusCode::RESOURCE_EXHAUSTED, "model file is 9 bytes, over the limit of 8 bytes")));
  EXPECT_FALSE(server::OverSizeLimit(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "x",
                                                  std::string(server::kOverSizeLimitMark))));
  const server::SourceError too_large(grpc::StatusCode::RESOURCE_EXHAUSTED, "too large",
                                      server::SourceError::Kind::kTooLarge);
  const server::SourceError busy(grpc::StatusCode::RESOURCE_EXHAUSTED, "busy");
  EXPECT_TRUE(server::OverSizeLimit(too_large.status()));
  EXPECT_EQ(too_large.status().error_message(), "too large");
  EXPECT_FALSE(server::OverSizeLimit(busy.status()));
  EXPECT_TRUE(server::OverSizeLimit(
      server::GrpcStatusOf({server::UploadError::kTooLarge, "over max-model-bytes"})));
  for (const auto kind : {server::UploadError::kBusy, server::UploadError::kStorage,
                          server::UploadError::kNoDataFiles}) {
    const grpc::Status s = server::GrpcStatusOf({kind, "no room"});
    EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_FALSE(server::OverSizeLimit(s));
  }
  // What a gRPC client gets: code and message only.
  const grpc::Status sent = server::ForClient(server::OverSizeLimitStatus("model is big"));
  EXPECT_EQ(sent.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(sent.error_message(), "model is big");
  EXPECT_EQ(sent.error_details(), "");
}

// A cached report's JSON is RenderJson's text for the report, made once: for the report's own file
// name and for any other name a request gives (spliced in, escaped as RenderJson escapes it).
TEST(CachedReport, JsonIsRenderJsonOfTheReportMadeOnceForAnyFileName) {
  const Report core = DirectReport(NonConformantModel("json"), "bad model.onnx");
  ASSERT_EQ(core.verdict, Verdict::kNonConformant);
  ASSERT_FALSE(core.findings.empty());
  const server::CachedReport cached(wire::ToProto(core));
  EXPECT_FALSE(cached.json_ready());
  const std::string own = cached.Json();
  EXPECT_TRUE(cached.json_ready());
  EXPECT_EQ(own, RenderJson(wire::FromProto(cached.proto())));
  EXPECT_NE(own.find("\"file\": \"bad model.onnx\""), std::string::npos);
  EXPECT_EQ(cached.Json("bad model.onnx"), own);
  EXPECT_EQ(cached.Json(), own) << "the same bytes every time";
  for (const std::string& name :
       std::vector<std::string>{"renamed.onnx", "quote\"and\\back.onnx", "tab\there.onnx",
                                "\xe6\xa8\xa1\xe5\x9e\x8b.onnx", std::string(5000, 'n')}) {
    Report renamed = wire::FromProto(cached.proto());
    renamed.model.file = name;
    EXPECT_EQ(cached.Json(name), RenderJson(renamed)) << name;
  }
  // Not valid UTF-8: RenderJson refuses it, and so does the kept text.
  EXPECT_THROW((void)cached.Json("bad\xff.onnx"), std::exception);
}

// A report whose node names contain what looks like a file name's JSON string changes nothing:
// only the model's file is replaced.
TEST(CachedReport, OnlyTheModelsFileIsReplaced) {
  v1::Report proto = wire::ToProto(DirectReport(NonConformantModel("names"), "same.onnx"));
  ASSERT_GT(proto.findings_size(), 0);
  proto.mutable_findings(0)->set_message("see \"same.onnx\" and same.onnx");
  const server::CachedReport cached(proto);
  Report renamed = wire::FromProto(proto);
  renamed.model.file = "other.onnx";
  EXPECT_EQ(cached.Json("other.onnx"), RenderJson(renamed));
}

// The report cache: past its byte bound the least recently used reports are evicted, the gauges
// axqc_cache_memory_bytes / axqc_cache_entries follow, and the freed bytes are reported to the
// memory trimmer, which gives them back to the operating system once the server is idle.
TEST(ReportCache, EvictsLeastRecentlyUsedBeyondItsBytesAndTheGaugesFollow) {
  const auto probe = ReportOfSize(1 << 19);
  const std::size_t cost = server::LruCache::Cost("k1", *probe);
  ASSERT_GT(cost, 2u << 20);
  auto store = server::OpenStore(":memory:");
  server::Metrics metrics;
  server::Logger logger(server::LogLevel::kError, "");
  server::ReportCache cache(3 * cost, store.get(), &metrics, &logger);
  std::atomic<int> trims{0};
  server::TrimPolicy policy;
  policy.idle_delay = std::chrono::milliseconds(1);
  server::MemoryTrimmer trimmer(
      policy, [](const char*) {}, [&] { trims.fetch_add(1); }, [] { return std::uint64_t{0}; });
  cache.set_memory_trimmer(&trimmer);

  cache.Put("k1", ReportOfSize(1 << 19));
  cache.Put("k2", ReportOfSize(1 << 19));
  cache.Put("k3", ReportOfSize(1 << 19));
  EXPECT_EQ(cache.entries(), 3u);
  EXPECT_EQ(cache.bytes(), 3 * cost);
  EXPECT_EQ(metrics.cache_entries().Value(), 3);
  EXPECT_EQ(metrics.cache_bytes().Value(), static_cast<double>(3 * cost));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(trims.load(), 0) << "nothing evicted yet: nothing to give back";

  ASSERT_NE(cache.GetMemory("k1"), nullptr);  // k1 becomes the most recently used
  cache.Put("k4", ReportOfSize(1 << 19));     // evicts k2
  EXPECT_EQ(cache.GetMemory("k2"), nullptr);
  EXPECT_NE(cache.GetMemory("k1"), nullptr);
  EXPECT_NE(cache.GetMemory("k3"), nullptr);
  EXPECT_NE(cache.GetMemory("k4"), nullptr);
  EXPECT_EQ(metrics.cache_entries().Value(), 3);
  EXPECT_EQ(metrics.cache_bytes().Value(), static_cast<double>(3 * cost));
  // A report twice the size of the others: evicts the two least recently used (k1, then k3: the
  // Gets above made k4 the most recent).
  const auto big = ReportOfSize(1 << 20);
  cache.Put("k5", big);
  const std::size_t big_cost = server::LruCache::Cost("k5", *big);
  EXPECT_EQ(cache.GetMemory("k1"), nullptr);
  EXPECT_EQ(cache.GetMemory("k3"), nullptr);
  EXPECT_NE(cache.GetMemory("k4"), nullptr);
  EXPECT_NE(cache.GetMemory("k5"), nullptr);
  EXPECT_EQ(cache.entries(), 2u);
  EXPECT_EQ(cache.bytes(), cost + big_cost);
  EXPECT_LE(cache.bytes(), cache.capacity());
  EXPECT_EQ(metrics.cache_entries().Value(), 2);
  EXPECT_EQ(metrics.cache_bytes().Value(), static_cast<double>(cost + big_cost));
  // 3 x ~2 MiB evicted (over kTrimAfterBytes, 4 MiB; the first eviction alone is not): one trim
  // once idle.
  ASSERT_TRUE(WaitFor([&] { return trims.load() == 1; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(trims.load(), 1);
}

// ------------------------------------------------------------------------------------------------
// URL parsing and the allowlist

TEST(Url, ParseAndRedact) {
  auto u = server::ParseUrl("HTTPS://Models.Example.com:8443/a/b/m.onnx?sig=abc#frag");
  EXPECT_EQ(u.scheme, "https");
  EXPECT_EQ(u.host, "models.example.com");
  EXPECT_EQ(u.port, "8443");
  EXPECT_EQ(u.target, "/a/b/m.onnx?sig=abc");
  EXPECT_EQ(u.Redacted(), "https://models.example.com:8443/a/b/m.onnx");
  EXPECT_EQ(u.FileName(), "m.onnx");
  auto v6 = server::ParseUrl("http://[::1]:9000");
  EXPECT_EQ(v6.host, "::1");
  EXPECT_EQ(v6.target, "/");
  EXPECT_EQ(v6.HostHeader(), "[::1]:9000");
  EXPECT_EQ(server::ParseUrl("http://h").port, "80");
  EXPECT_THROW(server::ParseUrl("file:///etc/passwd"), server::SourceError);
  EXPECT_THROW(server::ParseUrl("http://u:p@h/x"), server::SourceError);
  EXPECT_THROW(server::ParseUrl("http://h:99999/x"), server::SourceError);
  EXPECT_THROW(server::ParseUrl("http:///x"), server::SourceError);
  EXPECT_THROW(server::ParseUrl("http://h/a b"), server::SourceError);
}

TEST(Url, Allowlist) {
  const std::vector<std::string> allow = {"models.example.com", "cdn.example.com:8443", "[::1]"};
  EXPECT_TRUE(server::HostAllowed(server::ParseUrl("https://MODELS.example.com/x"), allow));
  EXPECT_TRUE(server::HostAllowed(server::ParseUrl("http://models.example.com:81/x"), allow));
  EXPECT_TRUE(server::HostAllowed(server::ParseUrl("https://cdn.example.com:8443/x"), allow));
  EXPECT_FALSE(server::HostAllowed(server::ParseUrl("https://cdn.example.com/x"), allow));
  EXPECT_FALSE(server::HostAllowed(server::ParseUrl("https://evil.com/models.example.com"), allow));
  EXPECT_FALSE(
      server::HostAllowed(server::ParseUrl("https://models.example.com.evil.com/"), allow));
  EXPECT_TRUE(server::HostAllowed(server::ParseUrl("http://[::1]:5/x"), allow));
}

// ------------------------------------------------------------------------------------------------
// Paths

TEST(Paths, IsWithinComparesWholeComponents) {
  EXPECT_TRUE(server::IsWithin("/srv/models/a.onnx", "/srv/models"));
  EXPECT_TRUE(server::IsWithin("/srv/models/a.onnx", "/srv/models/"));
  EXPECT_TRUE(server::IsWithin("/srv/models", "/srv/models"));
  EXPECT_FALSE(server::IsWithin("/srv/models2/a.onnx", "/srv/models"));
  EXPECT_FALSE(server::IsWithin("/srv", "/srv/models"));
  EXPECT_TRUE(server::IsWithin("/anything", "/"));
}

TEST(Paths, MissingRootIsAStartupError) {
  EXPECT_THROW(server::PathResolver({"/nonexistent/axqc-root"}), std::runtime_error);
}

// ------------------------------------------------------------------------------------------------
// Memory trimmer (when freed memory goes back to the operating system)

struct TrimRecorder {
  std::mutex mu;
  std::vector<std::string> reasons;
  std::atomic<int> trims{0};
  std::atomic<std::uint64_t> rss{0};
  server::MemoryTrimmer Make(std::chrono::milliseconds idle, std::uint64_t ceiling) {
    server::TrimPolicy policy;
    policy.idle_delay = idle;
    policy.rss_ceiling = ceiling;
    return server::MemoryTrimmer(
        policy,
        [this](const char* reason) {
          std::lock_guard<std::mutex> lock(mu);
          reasons.emplace_back(reason);
        },
        [this] { trims.fetch_add(1); }, [this] { return rss.load(); });
  }
  std::vector<std::string> Reasons() {
    std::lock_guard<std::mutex> lock(mu);
    return reasons;
  }
};

constexpr std::uint64_t kBigModel = 64ull << 20;

TEST(MemoryTrimmer, TrimsOnceIdleAfterABigCheck) {
  TrimRecorder r;
  auto trimmer = r.Make(std::chrono::milliseconds(20), 0);
  trimmer.CheckStarted();
  trimmer.CheckEnded(kBigModel);
  ASSERT_TRUE(WaitFor([&] { return r.trims.load() == 1; }));
  EXPECT_EQ(r.Reasons(), std::vector<std::string>{"idle"});
  // Nothing new since: no second trim.
  trimmer.CheckStarted();
  trimmer.CheckEnded(1 << 20);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(r.trims.load(), 1);
}

TEST(MemoryTrimmer, WaitsWhileAnotherCheckRuns) {
  TrimRecorder r;
  auto trimmer = r.Make(std::chrono::milliseconds(1), 0);
  trimmer.CheckStarted();  // a
  trimmer.CheckStarted();  // b
  trimmer.CheckEnded(kBigModel);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(r.trims.load(), 0) << "b still runs: its pages would be faulted in again";
  trimmer.CheckEnded(1 << 20);
  ASSERT_TRUE(WaitFor([&] { return r.trims.load() == 1; }));
  EXPECT_EQ(r.Reasons(), std::vector<std::string>{"idle"});
}

TEST(MemoryTrimmer, SmallChecksNeverTrim) {
  TrimRecorder r;
  auto trimmer = r.Make(std::chrono::milliseconds(1), 1);
  r.rss = 1ull << 40;
  for (int i = 0; i < 3; ++i) {
    trimmer.CheckStarted();
    trimmer.CheckEnded(server::kTrimAfterBytes - 1);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(r.trims.load(), 0);
}

TEST(MemoryTrimmer, MemoryFreedOutsideChecksTrimsOnceIdle) {
  TrimRecorder r;
  auto trimmer = r.Make(std::chrono::milliseconds(1), 0);
  trimmer.MemoryReleased(server::kTrimAfterBytes / 2);
  trimmer.MemoryReleased(server::kTrimAfterBytes / 2 - 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(r.trims.load(), 0) << "less than kTrimAfterBytes freed";
  trimmer.MemoryReleased(1);
  ASSERT_TRUE(WaitFor([&] { return r.trims.load() == 1; }));
  EXPECT_EQ(r.Reasons(), std::vector<std::string>{"idle"});
  // The count starts again after a trim; a running check defers the trim.
  trimmer.CheckStarted();
  trimmer.MemoryReleased(server::kTrimAfterBytes);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(r.trims.load(), 1) << "a check runs: its pages would be faulted in again";
  trimmer.CheckEnded(1);
  ASSERT_TRUE(WaitFor([&] { return r.trims.load() == 2; }));
}

TEST(MemoryTrimmer, OverTheRssCeilingTrimsAtOnce) {
  TrimRecorder r;
  auto trimmer = r.Make(std::chrono::hours(1), 1000);
  trimmer.CheckStarted();
  trimmer.CheckStarted();
  r.rss = 999;
  trimmer.CheckEnded(kBigModel);
  EXPECT_EQ(r.trims.load(), 0) << "under the ceiling: waits for an idle hour";
  r.rss = 1001;
  trimmer.CheckEnded(kBigModel);
  EXPECT_EQ(r.trims.load(), 1);
  EXPECT_EQ(r.Reasons(), std::vector<std::string>{"rss"});
}

TEST(MemoryTrimmer, ZeroDelayTrimsAfterEveryBigCheck) {
  TrimRecorder r;
  auto trimmer = r.Make(std::chrono::milliseconds(0), 0);
  for (int i = 0; i < 2; ++i) {
    trimmer.CheckStarted();
    trimmer.CheckEnded(kBigModel);
  }
  trimmer.CheckStarted();
  trimmer.CheckEnded(1 << 20);
  EXPECT_EQ(r.trims.load(), 2);
  EXPECT_EQ(r.Reasons(), (std::vector<std::string>{"check", "check"}));
}

// ------------------------------------------------------------------------------------------------
// Check engine

TEST(CheckEngine, CancellingTheOnlyWaiterOfAQueuedCheckRemovesIt) {
  server::Metrics metrics;
  auto gate = std::make_shared<Gate>();
  std::atomic<int> sunk{0};
  server::CheckEngine engine(
      1, 4, GatedCheck(gate), [&](const server::CheckJob&, const auto&) { sunk.fetch_add(1); },
      &metrics);
  auto job = [](const std::string& key, const std::string& bytes) {
    server::CheckJob j;
    j.key = key;
    j.sha256 = key;
    j.name = key;
    j.bytes = std::make_shared<const isolate::ModelBuffer>(isolate::ModelBuffer::FromString(bytes));
    return j;
  };
  std::atomic<int> done_a{0}, done_b{0};
  auto ta = engine.Submit(job("a", ConformantModel("a")), [&](const auto&) { done_a++; });
  ASSERT_EQ(ta.status, server::CheckEngine::SubmitStatus::kQueued);
  ASSERT_TRUE(WaitFor([&] { return engine.busy_workers() == 1; }));
  auto tb = engine.Submit(job("b", ConformantModel("b")), [&](const auto&) { done_b++; });
  ASSERT_EQ(tb.status, server::CheckEngine::SubmitStatus::kQueued);
  EXPECT_EQ(engine.queue_depth(), 1u);
  EXPECT_EQ(metrics.queue_depth().Value(), 1);
  EXPECT_TRUE(engine.Cancel("b", tb.waiter));
  EXPECT_EQ(engine.queue_depth(), 0u);
  EXPECT_EQ(metrics.queue_depth().Value(), 0);
  EXPECT_FALSE(engine.Cancel("b", tb.waiter));
  gate->Open();
  ASSERT_TRUE(WaitFor([&] { return done_a.load() == 1; }));
  engine.Shutdown();
  EXPECT_EQ(done_b.load(), 0);
  EXPECT_EQ(gate->calls.load(), 1);
  EXPECT_EQ(sunk.load(), 1);
  EXPECT_EQ(engine.Submit(job("c", "x"), [](const auto&) {}).status,
            server::CheckEngine::SubmitStatus::kStopped);
}

TEST(CheckEngine, InputErrorsAndShutdownOfQueuedChecks) {
  server::Metrics metrics;
  auto gate = std::make_shared<Gate>();
  server::CheckEngine engine(1, 4, GatedCheck(gate), nullptr, &metrics);
  server::CheckJob bad;
  bad.key = "bad";
  bad.bytes = std::make_shared<const isolate::ModelBuffer>(
      isolate::ModelBuffer::FromString(NotOnnxBytes()));
  std::optional<server::CheckOutcome> out_bad, out_queued;
  engine.Submit(bad, [&](const server::CheckOutcome& o) { out_bad = o; });
  ASSERT_TRUE(WaitFor([&] { return engine.busy_workers() == 1; }));
  server::CheckJob queued = bad;
  queued.key = "queued";
  engine.Submit(queued, [&](const server::CheckOutcome& o) { out_queued = o; });
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    gate->Open();
  });
  engine.Shutdown();  // fails the queued check, waits for the running one
  opener.join();
  ASSERT_TRUE(out_bad);
  EXPECT_EQ(out_bad->kind, server::CheckOutcome::Kind::kInputError);
  ASSERT_TRUE(out_queued);
  EXPECT_EQ(out_queued->kind, server::CheckOutcome::Kind::kShutdown);
}

// Models that made workers fail in two different workers are remembered for the configured time,
// then forgotten; the least recently used go first when the memory's byte bound is reached.
TEST(FailureMemory, RemembersForItsTimeAndBoundsItsSize) {
  using Cause = server::CheckerFailure::Cause;
  using std::chrono::seconds;
  const auto t0 = server::FailureMemory::Clock::now();
  // Room for exactly two entries of a one-character hash and message.
  server::FailureMemory memory(60, 2 * server::FailureMemory::Cost("a", "x"));
  EXPECT_FALSE(memory.Remember("aa", Cause::kCrashed, "crashed (signal 9: SIGKILL)", 1, t0));
  EXPECT_FALSE(memory.Find("aa", t0).has_value());  // noted, not remembered
  EXPECT_TRUE(memory.Remember("aa", Cause::kCrashed, "crashed (signal 11: SIGSEGV)", 2, t0));
  auto found = memory.Find("aa", t0 + seconds(59));
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->cause, Cause::kCrashed);
  EXPECT_EQ(found->message, "crashed (signal 11: SIGSEGV)");  // the second failure's
  EXPECT_FALSE(memory.Find("aa", t0 + seconds(61)).has_value());
  EXPECT_FALSE(memory.Find("bb", t0).has_value());
  EXPECT_EQ(memory.entries(), 0u);
  EXPECT_EQ(memory.bytes(), 0u);

  for (const char* sha : {"a", "b", "c"}) {
    const auto t = t0 + seconds(sha[0] - 'a');
    memory.Remember(sha, sha[0] == 'b' ? Cause::kCpuTime : Cause::kMemory, "x", 10, t);
    memory.Remember(sha, sha[0] == 'b' ? Cause::kCpuTime : Cause::kMemory, "x", 11, t);
  }
  EXPECT_FALSE(memory.Find("a", t0 + seconds(3)).has_value());
  EXPECT_EQ(memory.Find("b", t0 + seconds(3))->cause, Cause::kCpuTime);
  EXPECT_EQ(memory.Find("c", t0 + seconds(3))->cause, Cause::kMemory);

  server::FailureMemory off(0);
  off.Remember("aa", Cause::kCrashed, "x", 1, t0);
  off.Remember("aa", Cause::kCrashed, "x", 2, t0);
  EXPECT_FALSE(off.Find("aa", t0).has_value());
  server::FailureMemory no_room(60, 0);
  no_room.Remember("aa", Cause::kCrashed, "x", 1, t0);
  no_room.Remember("aa", Cause::kCrashed, "x", 2, t0);
  EXPECT_FALSE(no_room.Find("aa", t0).has_value());
}

// Remembering past the byte bound forgets the least recently used models (a hit counts as a use,
// whatever the expiry times), and the gauges show the bytes and entries held.
TEST(FailureMemory, EvictsLeastRecentlyUsedBeyondItsBytesAndTheGaugesFollow) {
  using Cause = server::CheckerFailure::Cause;
  const auto t0 = server::FailureMemory::Clock::now();
  const std::string msg(1000, 'e');
  const std::string h1(64, '1'), h2(64, '2'), h3(64, '3'), h4(64, '4');
  const std::size_t cost = server::FailureMemory::Cost(h1, msg);
  ASSERT_GT(cost, 1000u + 128u);
  server::Metrics metrics;
  server::FailureMemory memory(600, 3 * cost, &metrics);
  // Failed in two workers: remembered.
  auto remember = [&](const std::string& sha, Cause cause, const std::string& message) {
    memory.Remember(sha, cause, message, 1, t0);
    memory.Remember(sha, cause, message, 2, t0);
  };
  EXPECT_EQ(metrics.failure_memory_bytes().Value(), 0);
  EXPECT_EQ(metrics.failure_memory_entries().Value(), 0);
  remember(h1, Cause::kCrashed, msg);
  remember(h2, Cause::kMemory, msg);
  remember(h3, Cause::kCpuTime, msg);
  EXPECT_EQ(memory.entries(), 3u);
  EXPECT_EQ(memory.bytes(), 3 * cost);
  EXPECT_EQ(metrics.failure_memory_bytes().Value(), static_cast<double>(3 * cost));
  EXPECT_EQ(metrics.failure_memory_entries().Value(), 3);

  ASSERT_TRUE(memory.Find(h1, t0).has_value());  // h1 becomes the most recently used
  remember(h4, Cause::kCrashed, msg);            // over the bound: evicts h2
  EXPECT_EQ(memory.entries(), 3u);
  EXPECT_LE(memory.bytes(), 3 * cost);
  EXPECT_FALSE(memory.Find(h2, t0).has_value());
  EXPECT_TRUE(memory.Find(h1, t0).has_value());
  EXPECT_TRUE(memory.Find(h3, t0).has_value());
  EXPECT_TRUE(memory.Find(h4, t0).has_value());
  EXPECT_EQ(metrics.failure_memory_bytes().Value(), static_cast<double>(3 * cost));
  EXPECT_EQ(metrics.failure_memory_entries().Value(), 3);

  // A message longer than the whole bound is not kept; remembering a model again replaces it.
  remember(h2, Cause::kCrashed, std::string(4 * cost, 'x'));
  EXPECT_FALSE(memory.Find(h2, t0).has_value());
  remember(h3, Cause::kMemory, "short");
  EXPECT_EQ(memory.Find(h3, t0)->cause, Cause::kMemory);
  EXPECT_EQ(memory.bytes(), 2 * cost + server::FailureMemory::Cost(h3, "short"));
  EXPECT_EQ(metrics.failure_memory_bytes().Value(), static_cast<double>(memory.bytes()));

  // An expired entry found is dropped, and the gauges follow.
  EXPECT_FALSE(memory.Find(h1, t0 + std::chrono::seconds(601)).has_value());
  EXPECT_EQ(memory.entries(), 2u);
  EXPECT_EQ(metrics.failure_memory_entries().Value(), 2);
  EXPECT_EQ(metrics.failure_memory_bytes().Value(), static_cast<double>(memory.bytes()));
}

// One failure is only noted: a worker may be killed during a good model's check (the OOM killer).
// The model is remembered when its check fails in a second worker within the time; a note that
// expires is forgotten; the same worker twice is one failure; failures that are no worker's
// (kUnavailable: no worker took the check) are never noted.
TEST(FailureMemory, RemembersAModelOnlyAfterItFailedInTwoWorkers) {
  using Cause = server::CheckerFailure::Cause;
  using std::chrono::seconds;
  const auto t0 = server::FailureMemory::Clock::now();
  server::FailureMemory memory(60);
  EXPECT_FALSE(memory.Remember("m", Cause::kCrashed, "signal 9", 7, t0));
  EXPECT_FALSE(memory.Find("m", t0 + seconds(1)).has_value());
  EXPECT_FALSE(memory.Remember("m", Cause::kCrashed, "signal 9", 7, t0 + seconds(1)));
  EXPECT_FALSE(memory.Find("m", t0 + seconds(2)).has_value());
  EXPECT_TRUE(memory.Remember("m", Cause::kMemory, "out of memory", 8, t0 + seconds(2)));
  const auto found = memory.Find("m", t0 + seconds(3));
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->cause, Cause::kMemory);
  EXPECT_EQ(found->message, "out of memory");
  // Remembered for the time from the second failure.
  EXPECT_TRUE(memory.Find("m", t0 + seconds(61)).has_value());
  EXPECT_FALSE(memory.Find("m", t0 + seconds(63)).has_value());

  // The first note expires: a failure after that is a first one again.
  EXPECT_FALSE(memory.Remember("n", Cause::kCrashed, "x", 1, t0));
  EXPECT_FALSE(memory.Remember("n", Cause::kCrashed, "x", 2, t0 + seconds(61)));
  EXPECT_FALSE(memory.Find("n", t0 + seconds(62)).has_value());
  EXPECT_TRUE(memory.Remember("n", Cause::kCrashed, "x", 3, t0 + seconds(62)));

  for (int i = 0; i < 3; ++i) {
    EXPECT_FALSE(memory.Remember("u", Cause::kUnavailable, "no worker", 0, t0));
  }
  EXPECT_FALSE(memory.Find("u", t0).has_value());
}

}  // namespace
}  // namespace axqc::test
