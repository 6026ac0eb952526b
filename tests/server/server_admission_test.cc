// The service's cross-cutting layers, end to end against an in-process server:
//   - admission (server/rpc/admission.h): every method of the axqc.v1.Checker descriptor is
//     refused without the bearer token, counted and logged under its own method name, and refused
//     while the server drains; a new RPC registered without admission (or not implemented) fails;
//   - the report cache (server/report_cache.h): every path keeps the cache gauges true, and an
//     unreadable stored report is a miss everywhere (Check/Upload check again; GetReport answers
//     NOT_FOUND saying so).
#include <google/protobuf/descriptor.h>
#include <google/protobuf/util/message_differencer.h>
#include <grpcpp/generic/generic_stub.h>

#include <future>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "axqc/catalog.h"
#include "axqc/sha256.h"
#include "axqc/wire/report_proto.h"
#include "server_test_util.h"
#include "store.h"

namespace axqc::test {
namespace {

using google::protobuf::util::MessageDifferencer;
using grpc::StatusCode;

class ServiceLayers : public ::testing::Test {
 protected:
  TempDir dir_;
};

const google::protobuf::ServiceDescriptor& CheckerDescriptor() {
  const auto* service = v1::CheckRequest::descriptor()->file()->FindServiceByName("Checker");
  if (service == nullptr) throw std::runtime_error("axqc.v1.Checker not in the descriptor pool");
  return *service;
}

// Calls `method` of axqc.v1.Checker with an empty request message (a valid encoding of every
// request message; for the client-streaming Upload, a stream of one empty message).
grpc::Status CallEmpty(grpc::GenericStub& stub, const google::protobuf::MethodDescriptor& method,
                       const std::string& token, const std::string& bytes = {}) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
  grpc::Slice empty(bytes);
  grpc::ByteBuffer request(&empty, 1);
  grpc::ByteBuffer response;
  std::promise<grpc::Status> done;
  stub.UnaryCall(&ctx, "/" + method.service()->full_name() + "/" + method.name(),
                 grpc::StubOptions(), &request, &response,
                 [&done](grpc::Status s) { done.set_value(std::move(s)); });
  return done.get_future().get();
}

// Request log lines per method with status `code`.
std::map<std::string, int> LoggedRequests(const std::string& log, const std::string& code) {
  std::map<std::string, int> n;
  std::istringstream lines(log);
  std::string line;
  while (std::getline(lines, line)) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || j.value("msg", "") != "request" || j.value("code", "") != code) {
      continue;
    }
    ++n[j.value("method", "")];
  }
  return n;
}

TEST_F(ServiceLayers, EveryRpcOfTheServiceIsAdmitted) {
  const std::string token = "s3cr3t-admission";
  WriteFile(dir_ / "token", token + "\n");
  TestServer ts(
      dir_, {[&](server::ServerConfig& c) { c.auth_token_file = (dir_ / "token").string(); }, {}});
  grpc::GenericStub stub(grpc::CreateChannel("127.0.0.1:" + std::to_string(ts.server().grpc_port()),
                                             grpc::InsecureChannelCredentials()));
  const auto& service = CheckerDescriptor();
  ASSERT_EQ(service.full_name(), "axqc.v1.Checker");
  ASSERT_GE(service.method_count(),
            6);  // Check, Upload, GetReport, GetStats, ListRules, RecordGate

  for (int i = 0; i < service.method_count(); ++i) {
    const auto& method = *service.method(i);
    SCOPED_TRACE(method.name());
    EXPECT_EQ(CallEmpty(stub, method, "").error_code(), StatusCode::UNAUTHENTICATED);
    EXPECT_EQ(CallEmpty(stub, method, token + "x").error_code(), StatusCode::UNAUTHENTICATED);
    // With the token the handler runs: never UNAUTHENTICATED, and implemented.
    const StatusCode admitted = CallEmpty(stub, method, token).error_code();
    EXPECT_NE(admitted, StatusCode::UNAUTHENTICATED);
    EXPECT_NE(admitted, StatusCode::UNIMPLEMENTED);
  }
  // The refusals are requests like any other: one metric sample and one log line each, under
  // the proto's method name.
  const Scrape m = ts.Metrics();
  const auto logged = LoggedRequests(ts.Log(), "UNAUTHENTICATED");
  for (int i = 0; i < service.method_count(); ++i) {
    const std::string name = service.method(i)->name();
    SCOPED_TRACE(name);
    EXPECT_EQ(m.Value("axqc_requests_total", {{"code", "UNAUTHENTICATED"}, {"method", name}}), 2);
    EXPECT_EQ(logged.count(name) ? logged.at(name) : 0, 2);
  }
  EXPECT_EQ(ts.Log().find(token), std::string::npos);

  // Draining: every RPC is refused, even with the token.
  ts.server().SetNotServing();
  for (int i = 0; i < service.method_count(); ++i) {
    const auto& method = *service.method(i);
    SCOPED_TRACE(method.name());
    const grpc::Status s = CallEmpty(stub, method, token);
    EXPECT_EQ(s.error_code(), StatusCode::UNAVAILABLE);
    EXPECT_EQ(s.error_message(), "the server is shutting down");
  }
}

grpc::Status GetReport(v1::Checker::Stub& stub, const std::string& sha256, bool record,
                       v1::CheckResponse* resp) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  v1::GetReportRequest req;
  req.set_sha256(sha256);
  req.set_record_check(record);
  return stub.GetReport(&ctx, req, resp);
}

// A GetReport answered from the store keeps the report in memory and the gauges say so, like the
// store hits of Check and Upload.
// Upload is a raw method (rpc/upload.cc): a message protobuf cannot parse is the client's error,
// named as such, and a plain chunk before the metadata is refused as before.
TEST_F(ServiceLayers, UploadRefusesMalformedMessagesAsInvalidArgument) {
  TestServer ts(dir_);
  grpc::GenericStub stub(grpc::CreateChannel("127.0.0.1:" + std::to_string(ts.server().grpc_port()),
                                             grpc::InsecureChannelCredentials()));
  const auto& upload = *CheckerDescriptor().FindMethodByName("Upload");
  grpc::Status s = CallEmpty(stub, upload, "",
                             std::string("\x12\x05"
                                         "abc",
                                         5));  // truncated
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "an Upload message is not a valid axqc.v1.UploadRequest");
  s = CallEmpty(stub, upload, "",
                std::string("\x12\x03"
                            "abc",
                            5));  // a chunk, no metadata
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "the first Upload message must carry metadata");
  const Scrape m = ts.Metrics();
  EXPECT_EQ(m.Value("axqc_requests_total", {{"code", "INVALID_ARGUMENT"}, {"method", "Upload"}}),
            2);
  EXPECT_EQ(m.Value("axqc_uploads_in_flight"), 0);
}

TEST_F(ServiceLayers, GetReportStoreHitUpdatesTheCacheGauges) {
  const std::string model = NonConformantModel("gauges");
  v1::CheckResponse checked;
  {
    TestServer ts(dir_);
    ASSERT_TRUE(CheckInline(ts.stub(), model, &checked).ok());
  }
  TestServer ts(dir_);
  EXPECT_EQ(ts.Metrics().Value("axqc_cache_entries"), 0);
  v1::CheckResponse found;
  ASSERT_TRUE(GetReport(ts.stub(), checked.sha256(), false, &found).ok());
  EXPECT_EQ(found.cache(), v1::CACHE_RESULT_STORE_HIT);
  EXPECT_TRUE(MessageDifferencer::Equals(found.report(), checked.report()));
  Scrape m = ts.Metrics();
  EXPECT_EQ(m.Value("axqc_cache_entries"), 1);
  EXPECT_GT(m.Value("axqc_cache_memory_bytes"), 0);
  EXPECT_EQ(m.Value("axqc_report_lookups_total", {{"result", "store_hit"}}), 1);
  // Now in memory, for lookups and checks alike.
  ASSERT_TRUE(GetReport(ts.stub(), checked.sha256(), false, &found).ok());
  EXPECT_EQ(found.cache(), v1::CACHE_RESULT_MEMORY_HIT);
  v1::CheckResponse again;
  ASSERT_TRUE(CheckInline(ts.stub(), model, &again).ok());
  EXPECT_EQ(again.cache(), v1::CACHE_RESULT_MEMORY_HIT);
  m = ts.Metrics();
  EXPECT_EQ(m.Value("axqc_cache_entries"), 1);
  EXPECT_EQ(m.Value("axqc_store_errors_total"), 0);
}

// A stored report that does not parse is a miss on every path: counted as a store error and
// logged; GetReport (no model bytes) answers NOT_FOUND saying so; a Check, which has the model,
// checks it again and its report replaces the stored one.
TEST_F(ServiceLayers, UnreadableStoredReportIsNotFoundByHashAndCheckedAgainWithTheModel) {
  const std::string model = NonConformantModel("unreadable");
  const std::string sha = axqc::Sha256Hex(model);
  {
    auto store = server::OpenStore((dir_ / "store.sqlite3").string());
    server::StoredReport r;
    r.cache_key = wire::CacheKey(sha, v1::CheckOptions());
    r.sha256 = sha;
    r.options = wire::OptionsKey(v1::CheckOptions());
    r.rule_set_version = std::string(kRuleSetVersion);
    r.verdict = "non_conformant";
    r.report = NotOnnxBytes();  // not a Report either
    store->PutReport(r);
    store->Flush();
  }
  TestServer ts(dir_);
  for (bool record : {false, true}) {
    SCOPED_TRACE(record ? "record_check" : "plain lookup");
    v1::CheckResponse resp;
    const grpc::Status s = GetReport(ts.stub(), sha, record, &resp);
    EXPECT_EQ(s.error_code(), StatusCode::NOT_FOUND);
    EXPECT_EQ(s.error_message(),
              "the stored report for this sha256 with these options and rule set " +
                  std::string(kRuleSetVersion) +
                  " is unreadable; send the model (Check or Upload) to check it again");
  }
  Scrape m = ts.Metrics();
  EXPECT_EQ(m.Value("axqc_store_errors_total"), 2);
  EXPECT_EQ(m.Value("axqc_report_lookups_total", {{"result", "not_found"}}), 2);
  EXPECT_EQ(m.Value("axqc_cache_entries"), 0);

  v1::CheckResponse checked;
  ASSERT_TRUE(CheckInline(ts.stub(), model, &checked).ok());
  EXPECT_EQ(checked.cache(), v1::CACHE_RESULT_MISS);
  EXPECT_EQ(checked.verdict(), v1::VERDICT_NON_CONFORMANT);
  m = ts.Metrics();
  EXPECT_EQ(m.Value("axqc_store_errors_total"), 3);
  EXPECT_EQ(m.Value("axqc_cache_lookups_total", {{"result", "miss"}}), 1);
  const std::string log = ts.Log();
  std::size_t warnings = 0;
  for (auto at = log.find("stored report unreadable"); at != std::string::npos;
       at = log.find("stored report unreadable", at + 1)) {
    ++warnings;
  }
  EXPECT_EQ(warnings, 3u);

  // The fresh report replaced the unreadable one: a new server reads it from the store.
  ts.Stop();
  TestServer fresh(dir_);
  v1::CheckResponse found;
  ASSERT_TRUE(GetReport(fresh.stub(), sha, false, &found).ok());
  EXPECT_EQ(found.cache(), v1::CACHE_RESULT_STORE_HIT);
  EXPECT_TRUE(MessageDifferencer::Equals(found.report(), checked.report()));
  EXPECT_EQ(fresh.Metrics().Value("axqc_store_errors_total"), 0);
}

}  // namespace
}  // namespace axqc::test
