// axqc-server under overload, slow and vanishing clients and hostile references, against an
// in-process server on a loopback port (docs/security.md, "The service"):
//   - a burst of 4x the queue capacity: the excess is refused with RESOURCE_EXHAUSTED while the
//     accepted checks are still blocked, and the server serves normally afterwards;
//   - the budget of bytes held by uploads in progress (--max-inflight-upload-bytes);
//   - the upload idle timeout, and clients that disconnect mid-upload or mid-check: the in-flight
//     gauges return to 0;
//   - URL references: redirects, size and time caps; path references under a symlink swap;
//   - constant-time token comparison (behaviour) and logs without tokens or model bytes.
#include <fcntl.h>
#include <linux/fs.h>
#include <poll.h>
#include <stdio.h>
#include <sys/syscall.h>

// GCC's -Wnull-dereference misfires inside Asio's scheduler (third-party code).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>
#pragma GCC diagnostic pop

#include "auth.h"
#include "axqc/sha256.h"
#include "config.h"
#include "http_stub.h"
#include "metrics.h"
#include "model_source.h"
#include "server_test_util.h"

namespace axqc::test {
namespace {

using grpc::StatusCode;
using Ms = std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

class Reliability : public ::testing::Test {
 protected:
  TempDir dir_;
};

// Waits until every in-flight gauge of `ts` is 0 (generous bound for a loaded machine).
::testing::AssertionResult GaugesReturnToZero(TestServer& ts) {
  Scrape m;
  const bool ok = WaitFor(
      [&] {
        m = ts.Metrics();
        return m.Value("axqc_queue_depth") == 0 && m.Value("axqc_busy_workers") == 0 &&
               m.Value("axqc_inflight_model_bytes") == 0 &&
               m.Value("axqc_inflight_upload_bytes") == 0 && m.Value("axqc_uploads_in_flight") == 0;
      },
      Ms(20000));
  if (ok) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "queue_depth " << m.Value("axqc_queue_depth") << ", busy_workers "
         << m.Value("axqc_busy_workers") << ", inflight_model_bytes "
         << m.Value("axqc_inflight_model_bytes") << ", inflight_upload_bytes "
         << m.Value("axqc_inflight_upload_bytes") << ", uploads_in_flight "
         << m.Value("axqc_uploads_in_flight");
}

// An Upload stream driven step by step by the test.
class UploadStream {
 public:
  explicit UploadStream(v1::Checker::Stub& stub, Ms timeout = Ms(60000)) {
    ctx_.set_deadline(std::chrono::system_clock::now() + timeout);
    writer_ = stub.Upload(&ctx_, &resp_);
  }
  bool Metadata(std::uint64_t size, const std::string& name = "m.onnx") {
    v1::UploadRequest m;
    m.mutable_metadata()->set_file_name(name);
    m.mutable_metadata()->set_size_bytes(size);
    return writer_->Write(m);
  }
  bool Chunk(const std::string& bytes) {
    v1::UploadRequest m;
    m.set_chunk(bytes);
    return writer_->Write(m);
  }
  grpc::Status Finish() {
    writer_->WritesDone();
    return writer_->Finish();
  }
  void Cancel() { ctx_.TryCancel(); }
  const v1::CheckResponse& response() const { return resp_; }

 private:
  grpc::ClientContext ctx_;
  v1::CheckResponse resp_;
  std::unique_ptr<grpc::ClientWriter<v1::UploadRequest>> writer_;
};

// ------------------------------------------------------------------------------------------------
// Overload

TEST_F(Reliability, BurstOfFourTimesTheQueueCapacityIsRefusedQuicklyAndServiceRecovers) {
  constexpr int kCapacity = 4;
  constexpr int kBurst = 4 * kCapacity;
  auto gate = std::make_shared<Gate>();
  TestServer ts(dir_, {[](server::ServerConfig& c) {
                         c.workers = 1;
                         c.queue_capacity = kCapacity;
                       },
                       {GatedCheck(gate)}});
  std::vector<std::string> models;
  for (int i = 0; i < kBurst; ++i) models.push_back(ConformantModel("burst" + std::to_string(i)));
  std::vector<grpc::Status> status(kBurst);
  std::vector<v1::CheckResponse> resp(kBurst);
  std::vector<double> seconds(kBurst, 0);
  std::atomic<int> done{0};
  std::vector<std::thread> clients;
  for (int i = 0; i < kBurst; ++i) {
    clients.emplace_back([&, i] {
      const auto t0 = SteadyClock::now();
      status[i] = CheckInline(ts.stub(), models[i], &resp[i], {}, false, Ms(120000));
      seconds[i] = std::chrono::duration<double>(SteadyClock::now() - t0).count();
      done.fetch_add(1);
    });
  }
  // One check runs (blocked at the gate), kCapacity wait; every other request is answered while
  // the gate is still closed, i.e. without waiting for any check.
  const int refused_expected = kBurst - 1 - kCapacity;
  ASSERT_TRUE(WaitFor([&] { return done.load() == refused_expected; }, Ms(30000)))
      << done.load() << " requests answered";
  const Scrape during = ts.Metrics();
  EXPECT_EQ(during.Value("axqc_queue_depth"), kCapacity);
  EXPECT_EQ(during.Value("axqc_busy_workers"), 1);
  EXPECT_EQ(
      during.Value("axqc_requests_total", {{"method", "Check"}, {"code", "RESOURCE_EXHAUSTED"}}),
      refused_expected);
  EXPECT_EQ(gate->calls.load(), 1);
  gate->Open();
  for (auto& t : clients) t.join();
  int ok = 0;
  int exhausted = 0;
  for (int i = 0; i < kBurst; ++i) {
    if (status[i].ok()) {
      ++ok;
      EXPECT_EQ(resp[i].verdict(), v1::VERDICT_CONFORMANT);
    } else {
      EXPECT_EQ(status[i].error_code(), StatusCode::RESOURCE_EXHAUSTED)
          << status[i].error_message();
      EXPECT_NE(status[i].error_message().find("queue is full"), std::string::npos);
      EXPECT_LT(seconds[i], 30.0);  // answered before the gate opened (see above)
      ++exhausted;
    }
  }
  EXPECT_EQ(ok, 1 + kCapacity);
  EXPECT_EQ(exhausted, refused_expected);
  EXPECT_TRUE(GaugesReturnToZero(ts));
  // After the burst a new model is checked at once: no backlog is left.
  v1::CheckResponse after;
  const auto t0 = SteadyClock::now();
  const grpc::Status s = CheckInline(ts.stub(), ConformantModel("after-burst"), &after);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(after.cache(), v1::CACHE_RESULT_MISS);
  EXPECT_LT(std::chrono::duration<double>(SteadyClock::now() - t0).count(), 30.0);
  EXPECT_EQ(gate->calls.load(), 2 + kCapacity);
  // And a refused model is accepted now that there is room.
  for (int i = 0; i < kBurst; ++i) {
    if (status[i].ok()) continue;
    const grpc::Status again = CheckInline(ts.stub(), models[i], &resp[i]);
    ASSERT_TRUE(again.ok()) << again.error_message();
    break;
  }
}

TEST_F(Reliability, UploadsBeyondTheUploadByteBudgetAreRefusedAndTheGaugeShowsTheBytes) {
  const std::string model = ConformantModel("budget");
  const std::uint64_t size = model.size();
  TestServer ts(
      dir_, {[&](server::ServerConfig& c) { c.max_inflight_upload_bytes = size + size / 2; }, {}});
  UploadStream first(ts.stub());
  ASSERT_TRUE(first.Metadata(size));
  ASSERT_TRUE(first.Chunk(model.substr(0, size - 100)));
  // The bytes received are charged (not the declared size).
  ASSERT_TRUE(
      WaitFor([&] { return ts.Metrics().Value("axqc_inflight_upload_bytes") == size - 100; }));
  const Scrape m = ts.Metrics();
  EXPECT_EQ(m.Value("axqc_uploads_in_flight"), 1);
  EXPECT_EQ(m.Value("axqc_inflight_model_bytes"), size - 100);

  // A second upload declaring the same size does not fit in what is free: refused at its
  // metadata.
  {
    UploadStream second(ts.stub());
    ASSERT_TRUE(second.Metadata(size));
    const auto t0 = SteadyClock::now();
    const grpc::Status s = second.Finish();
    EXPECT_EQ(s.error_code(), StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_NE(s.error_message().find("uploads in progress"), std::string::npos)
        << s.error_message();
    EXPECT_LT(std::chrono::duration<double>(SteadyClock::now() - t0).count(), 30.0);
  }
  // Without a declared size it is refused when its bytes pass the budget.
  {
    UploadStream third(ts.stub());
    ASSERT_TRUE(third.Metadata(0));
    for (std::size_t off = 0; off < model.size(); off += 1000) {
      if (!third.Chunk(model.substr(off, 1000))) break;
    }
    const grpc::Status s = third.Finish();
    EXPECT_EQ(s.error_code(), StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
  }
  // The first upload is unaffected.
  ASSERT_TRUE(first.Chunk(model.substr(size - 100)));
  const grpc::Status s = first.Finish();
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(first.response().verdict(), v1::VERDICT_CONFORMANT);
  EXPECT_TRUE(GaugesReturnToZero(ts));
  EXPECT_EQ(ts.Metrics().Value("axqc_requests_total",
                               {{"method", "Upload"}, {"code", "RESOURCE_EXHAUSTED"}}),
            2);
  // With the budget free again, the same upload goes through.
  v1::CheckResponse resp;
  const std::string model2 = ConformantModel("budget2");
  UploadArgs args;
  args.declared_size = model2.size();
  const grpc::Status again = Upload(ts.stub(), model2, &resp, args);
  ASSERT_TRUE(again.ok()) << again.error_message();
}

// ------------------------------------------------------------------------------------------------
// Slow and vanishing clients

TEST_F(Reliability, IdleUploadIsEndedWithDeadlineExceededAndFreesItsBytes) {
  TestServer ts(dir_, {[](server::ServerConfig& c) { c.upload_idle_timeout_seconds = 2; }, {}});
  const std::string model = ConformantModel("slow");
  UploadStream slow(ts.stub());
  ASSERT_TRUE(slow.Metadata(model.size()));
  ASSERT_TRUE(slow.Chunk(model.substr(0, 1000)));
  ASSERT_TRUE(WaitFor([&] { return ts.Metrics().Value("axqc_inflight_upload_bytes") > 0; }));
  EXPECT_EQ(ts.Metrics().Value("axqc_uploads_in_flight"), 1);
  // The next chunk comes 5 s later: the server has given up after 2 s of silence and freed the
  // upload's bytes. (The chunk itself may still be buffered by the client's transport.)
  std::this_thread::sleep_for(Ms(5000));
  EXPECT_EQ(ts.Metrics().Value("axqc_uploads_in_flight"), 0);
  slow.Chunk(model.substr(1000, 1000));
  const grpc::Status s = slow.Finish();
  EXPECT_EQ(s.error_code(), StatusCode::DEADLINE_EXCEEDED) << s.error_message();
  EXPECT_NE(s.error_message().find("idle timeout"), std::string::npos) << s.error_message();
  EXPECT_TRUE(GaugesReturnToZero(ts));
  EXPECT_EQ(ts.Metrics().Value("axqc_requests_total",
                               {{"method", "Upload"}, {"code", "DEADLINE_EXCEEDED"}}),
            1);
  // The timeout is per message, not per upload: chunks every 100 ms for longer than the timeout
  // are fine.
  UploadStream steady(ts.stub());
  ASSERT_TRUE(steady.Metadata(model.size()));
  const std::size_t step = model.size() / 25 + 1;
  for (std::size_t off = 0; off < model.size(); off += step) {
    std::this_thread::sleep_for(Ms(100));
    ASSERT_TRUE(steady.Chunk(model.substr(off, step)));
  }
  const grpc::Status ok = steady.Finish();
  ASSERT_TRUE(ok.ok()) << ok.error_message();
  EXPECT_EQ(steady.response().verdict(), v1::VERDICT_CONFORMANT);
  EXPECT_TRUE(GaugesReturnToZero(ts));
}

// A TCP connection to the HTTP API on 127.0.0.1:`port`.
class RawHttp {
 public:
  explicit RawHttp(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ < 0 || ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      throw std::runtime_error("connect to the HTTP port failed");
    }
  }
  ~RawHttp() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool Send(const std::string& bytes) {
    std::size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
      if (n <= 0) return false;
      done += static_cast<std::size_t>(n);
    }
    return true;
  }
  // Everything until the server closes (or `timeout` passes); sets closed() when it did.
  std::string ReadToClose(Ms timeout) {
    std::string out;
    const auto end = SteadyClock::now() + timeout;
    while (SteadyClock::now() < end) {
      pollfd p{fd_, POLLIN, 0};
      const auto left = std::chrono::duration_cast<Ms>(end - SteadyClock::now()).count();
      if (::poll(&p, 1, static_cast<int>(std::max<long long>(1, left))) <= 0) continue;
      char buf[8192];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) {
        closed_ = true;
        break;
      }
      out.append(buf, static_cast<std::size_t>(n));
    }
    return out;
  }
  bool closed() const { return closed_; }

 private:
  int fd_ = -1;
  bool closed_ = false;
};

std::string ModelPost(std::uint64_t content_length, bool close) {
  return "POST /v1/check?name=m.onnx HTTP/1.1\r\nHost: 127.0.0.1\r\n"
         "Content-Type: application/octet-stream\r\nContent-Length: " +
         std::to_string(content_length) + "\r\n" + (close ? "Connection: close\r\n" : "") + "\r\n";
}

// Two HTTP bodies that declare 1 GiB each (the default upload budget is 2 GiB) and then stall
// hold only the bytes they sent: a gRPC upload and an HTTP upload still go through.
TEST_F(Reliability, StalledHttpBodiesHoldOnlyTheBytesTheySent) {
  TestServer ts(dir_, {[](server::ServerConfig& c) { c.http_listen = "127.0.0.1:0"; }, {}});
  const int port = ts.server().http_port();
  ASSERT_GT(port, 0);
  std::vector<std::unique_ptr<RawHttp>> stalled;
  for (int i = 0; i < 2; ++i) {
    stalled.push_back(std::make_unique<RawHttp>(port));
    // 100 KiB: the server hands the body on in pieces of 64 KiB.
    ASSERT_TRUE(stalled.back()->Send(ModelPost(1ull << 30, false) + std::string(100 << 10, 'x')));
  }
  ASSERT_TRUE(WaitFor([&] {
    const Scrape m = ts.Metrics();
    return m.Value("axqc_uploads_in_flight") == 2 &&
           m.Value("axqc_inflight_upload_bytes") == 2 * 65536;
  })) << ts.Metrics().body;

  const std::string model = ConformantModel("past-stalled-bodies");
  v1::CheckResponse resp;
  UploadArgs args;
  args.declared_size = model.size();
  const grpc::Status up = Upload(ts.stub(), model, &resp, args);
  ASSERT_TRUE(up.ok()) << up.error_code() << ": " << up.error_message();
  EXPECT_EQ(resp.verdict(), v1::VERDICT_CONFORMANT);

  const std::string model2 = ConformantModel("past-stalled-bodies-http");
  RawHttp post(port);
  ASSERT_TRUE(post.Send(ModelPost(model2.size(), true) + model2));
  const std::string answer = post.ReadToClose(Ms(30000));
  EXPECT_EQ(answer.rfind("HTTP/1.1 200 ", 0), 0u) << answer.substr(0, 400);
  EXPECT_NE(answer.find("X-Axqc-Verdict: conformant"), std::string::npos) << answer.substr(0, 400);

  EXPECT_EQ(ts.Metrics().Value("axqc_inflight_upload_bytes"), 2 * 65536);
  stalled.clear();
  EXPECT_TRUE(GaugesReturnToZero(ts));
}

// An HTTP body that stops arriving is abandoned after --upload-idle-timeout-seconds (not the
// connection's 120 s): the connection is closed, its bytes freed, the call counted as
// DEADLINE_EXCEEDED. A body that keeps arriving, slowly, for longer than the timeout is fine.
TEST_F(Reliability, StalledHttpBodyIsClosedAfterTheUploadIdleTimeout) {
  TestServer ts(dir_, {[](server::ServerConfig& c) {
                         c.http_listen = "127.0.0.1:0";
                         c.upload_idle_timeout_seconds = 2;
                       },
                       {}});
  const int port = ts.server().http_port();
  RawHttp stalled(port);
  ASSERT_TRUE(stalled.Send(ModelPost(1ull << 30, false) + std::string(1000, 'x')));
  ASSERT_TRUE(WaitFor([&] { return ts.Metrics().Value("axqc_uploads_in_flight") == 1; }));
  const auto t0 = SteadyClock::now();
  const std::string answer = stalled.ReadToClose(Ms(30000));
  const double waited = std::chrono::duration<double>(SteadyClock::now() - t0).count();
  EXPECT_TRUE(stalled.closed());
  EXPECT_GE(waited, 1.5);
  EXPECT_LT(waited, 15.0);
  EXPECT_EQ(answer, "");  // closed without an answer
  EXPECT_TRUE(GaugesReturnToZero(ts));
  EXPECT_EQ(ts.Metrics().Value("axqc_requests_total",
                               {{"method", "Upload"}, {"code", "DEADLINE_EXCEEDED"}}),
            1);
  EXPECT_NE(ts.Log().find("http: request body idle; connection closed"), std::string::npos);

  // 25 pieces 200 ms apart (5 s in all): never 2 s without a byte.
  const std::string model = ConformantModel("slow-http-body");
  RawHttp slow(port);
  ASSERT_TRUE(slow.Send(ModelPost(model.size(), true)));
  const std::size_t step = model.size() / 25 + 1;
  for (std::size_t off = 0; off < model.size(); off += step) {
    std::this_thread::sleep_for(Ms(200));
    ASSERT_TRUE(slow.Send(model.substr(off, step)));
  }
  const std::string ok = slow.ReadToClose(Ms(30000));
  EXPECT_EQ(ok.rfind("HTTP/1.1 200 ", 0), 0u) << ok.substr(0, 400);
}

TEST_F(Reliability, UploadThatNeverSendsMetadataIsEndedToo) {
  TestServer ts(dir_, {[](server::ServerConfig& c) { c.upload_idle_timeout_seconds = 0.5; }, {}});
  UploadStream silent(ts.stub());
  ASSERT_TRUE(WaitFor([&] { return ts.Metrics().Value("axqc_uploads_in_flight") == 1; }));
  ASSERT_TRUE(
      WaitFor([&] { return ts.Metrics().Value("axqc_uploads_in_flight") == 0; }, Ms(20000)));
  EXPECT_EQ(silent.Finish().error_code(), StatusCode::DEADLINE_EXCEEDED);
  EXPECT_TRUE(GaugesReturnToZero(ts));
}

TEST_F(Reliability, ClientsVanishingMidUploadAndMidCheckLeaveNoWorkerOrBufferBehind) {
  auto gate = std::make_shared<Gate>();
  TestServer ts(dir_, {[](server::ServerConfig& c) {
                         c.workers = 1;
                         c.queue_capacity = 4;
                       },
                       {GatedCheck(gate)}});
  // 1. Mid-upload: three streams with half their bytes sent, then the clients go away.
  {
    const std::string model = ConformantModel("gone");
    std::vector<std::unique_ptr<UploadStream>> streams;
    for (int i = 0; i < 3; ++i) {
      streams.push_back(std::make_unique<UploadStream>(ts.stub()));
      ASSERT_TRUE(streams.back()->Metadata(model.size()));
      ASSERT_TRUE(streams.back()->Chunk(model.substr(0, model.size() / 2)));
    }
    // Bytes are charged as they arrive: half of each model, not the declared size.
    ASSERT_TRUE(WaitFor([&] {
      return ts.Metrics().Value("axqc_inflight_upload_bytes") ==
             3.0 * static_cast<double>(model.size() / 2);
    }));
    EXPECT_EQ(ts.Metrics().Value("axqc_uploads_in_flight"), 3);
    for (auto& s : streams) s->Cancel();
    for (auto& s : streams) EXPECT_EQ(s->Finish().error_code(), StatusCode::CANCELLED);
    EXPECT_TRUE(GaugesReturnToZero(ts));
  }
  // 2. Mid-check: one check running (blocked), one upload queued; both clients go away.
  {
    grpc::ClientContext running_ctx;
    v1::CheckRequest req;
    req.set_content(ConformantModel("running"));
    v1::CheckResponse running_resp;
    grpc::Status running_status;
    std::thread running(
        [&] { running_status = ts.stub().Check(&running_ctx, req, &running_resp); });
    ASSERT_TRUE(WaitFor([&] { return gate->calls.load() == 1; }));

    const std::string queued_model = ConformantModel("queued");
    UploadStream queued(ts.stub());
    ASSERT_TRUE(queued.Metadata(queued_model.size()));
    ASSERT_TRUE(queued.Chunk(queued_model));
    std::thread finisher([&] { EXPECT_EQ(queued.Finish().error_code(), StatusCode::CANCELLED); });
    ASSERT_TRUE(WaitFor([&] { return ts.Metrics().Value("axqc_queue_depth") == 1; }));
    EXPECT_EQ(ts.Metrics().Value("axqc_inflight_model_bytes"),
              static_cast<double>(req.content().size() + queued_model.size()));

    queued.Cancel();
    running_ctx.TryCancel();
    finisher.join();
    running.join();
    EXPECT_EQ(running_status.error_code(), StatusCode::CANCELLED);
    // The queued check left the queue and gave its bytes back; the running one cannot be
    // interrupted and still holds its worker until it ends.
    ASSERT_TRUE(WaitFor([&] { return ts.Metrics().Value("axqc_queue_depth") == 0; }));
    ASSERT_TRUE(WaitFor([&] {
      return ts.Metrics().Value("axqc_inflight_model_bytes") ==
             static_cast<double>(req.content().size());
    }));
    EXPECT_EQ(ts.Metrics().Value("axqc_busy_workers"), 1);
    gate->Open();
    EXPECT_TRUE(GaugesReturnToZero(ts));
    EXPECT_EQ(gate->calls.load(), 1);  // the queued model never ran
    // The abandoned check's report was still stored.
    grpc::ClientContext ctx;
    v1::GetReportRequest get;
    get.set_sha256(axqc::Sha256Hex(req.content()));
    v1::CheckResponse got;
    const grpc::Status s = ts.stub().GetReport(&ctx, get, &got);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(got.verdict(), v1::VERDICT_CONFORMANT);
  }
  // A client's cancellation reaches the server asynchronously: wait for the request counters.
  EXPECT_TRUE(WaitFor([&] {
    return ts.Metrics().Value("axqc_requests_total",
                              {{"method", "Upload"}, {"code", "CANCELLED"}}) == 4;
  }));
  EXPECT_TRUE(WaitFor([&] {
    return ts.Metrics().Value("axqc_requests_total",
                              {{"method", "Check"}, {"code", "CANCELLED"}}) == 1;
  }));
  EXPECT_EQ(
      ts.Metrics().Value("axqc_requests_total", {{"method", "Upload"}, {"code", "CANCELLED"}}), 4);
  EXPECT_EQ(ts.Metrics().Value("axqc_requests_total", {{"method", "Check"}, {"code", "CANCELLED"}}),
            1);
  EXPECT_EQ(HealthStatus(ts.health()), grpc::health::v1::HealthCheckResponse::SERVING);
}

// ------------------------------------------------------------------------------------------------
// URL references against a loopback HTTP server with programmable answers.

void Send(boost::asio::ip::tcp::socket& sock, const std::string& text) {
  boost::system::error_code ec;
  boost::asio::write(sock, boost::asio::buffer(text), ec);
}

grpc::Status CheckUrl(v1::Checker::Stub& stub, const std::string& url, v1::CheckResponse* resp) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  v1::CheckRequest req;
  req.set_url(url);
  return stub.Check(&ctx, req, resp);
}

TEST_F(Reliability, UrlRedirectsSizeAndTimeCaps) {
  const std::string model = ConformantModel("url-caps");
  // A second server that is not in the allowlist (same host, other port).
  HttpStub other(
      [&](boost::asio::ip::tcp::socket& sock, const std::string&, const std::atomic<bool>&) {
        Send(sock, "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(model.size()) +
                       "\r\nConnection: close\r\n\r\n" + model);
      });
  std::atomic<int> slow_bytes{0};
  HttpStub http([&](boost::asio::ip::tcp::socket& sock, const std::string& target,
                    const std::atomic<bool>& stop) {
    const std::string port = std::to_string(other.port());
    if (target == "/m.onnx") {
      Send(sock, "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(model.size()) +
                     "\r\nConnection: close\r\n\r\n" + model);
    } else if (target == "/hop1") {  // allowed -> allowed -> other port
      Send(sock, "HTTP/1.1 302 Found\r\nLocation: /hop2\r\nContent-Length: 0\r\n\r\n");
    } else if (target == "/hop2") {
      Send(sock, "HTTP/1.1 307 Temporary Redirect\r\nLocation: http://127.0.0.1:" + port +
                     "/m.onnx\r\nContent-Length: 0\r\n\r\n");
    } else if (target == "/to-name") {  // same address, by a name that is not allowed
      Send(sock, "HTTP/1.1 301 Moved\r\nLocation: http://localhost:" +
                     std::to_string(sock.local_endpoint().port()) +
                     "/m.onnx\r\nContent-Length: 0\r\n\r\n");
    } else if (target == "/loop") {
      Send(sock, "HTTP/1.1 302 Found\r\nLocation: /loop\r\nContent-Length: 0\r\n\r\n");
    } else if (target == "/big-no-length") {  // no Content-Length: read until close
      Send(sock, "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + std::string(200000, 'x'));
    } else if (target == "/big-chunked") {
      std::string body = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
      for (int i = 0; i < 50; ++i) body += "1000\r\n" + std::string(0x1000, 'y') + "\r\n";
      Send(sock, body + "0\r\n\r\n");
    } else if (target == "/slow") {  // 10 bytes every 100 ms, far longer than the time cap
      Send(sock, "HTTP/1.1 200 OK\r\nContent-Length: 40000\r\n\r\n");
      for (int i = 0; i < 4000 && !stop.load(); ++i) {
        boost::system::error_code ec;
        boost::asio::write(sock, boost::asio::buffer(std::string(10, 'z')), ec);
        if (ec) break;
        slow_bytes.fetch_add(10);
        std::this_thread::sleep_for(Ms(100));
      }
    } else if (target == "/slow-header") {  // never finishes the header
      Send(sock, "HTTP/1.1 200 OK\r\n");
      for (int i = 0; i < 300 && !stop.load(); ++i) {
        boost::system::error_code ec;
        boost::asio::write(sock, boost::asio::buffer(std::string("X-Pad: 1\r\n")), ec);
        if (ec) break;
        std::this_thread::sleep_for(Ms(100));
      }
    } else {
      Send(sock, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
    }
  });
  TestServer ts(dir_, {[&](server::ServerConfig& c) {
                         c.url_allow_hosts = {"127.0.0.1:" + std::to_string(http.port())};
                         c.url_timeout_seconds = 1;
                         c.url_max_redirects = 3;
                         c.max_model_bytes = 100000;
                         c.max_inline_bytes = 100000;
                       },
                       {}});
  v1::CheckResponse resp;
  grpc::Status s = CheckUrl(ts.stub(), http.Url("/m.onnx"), &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp.sha256(), axqc::Sha256Hex(model));

  // Redirects to a host (or port) outside the allowlist are refused without connecting there.
  for (const char* path : {"/hop1", "/to-name"}) {
    s = CheckUrl(ts.stub(), http.Url(path), &resp);
    EXPECT_EQ(s.error_code(), StatusCode::PERMISSION_DENIED) << path << ": " << s.error_message();
    EXPECT_NE(s.error_message().find("not in the server's allowlist"), std::string::npos);
  }
  EXPECT_EQ(other.requests.load(), 0);
  s = CheckUrl(ts.stub(), http.Url("/loop"), &resp);
  EXPECT_EQ(s.error_code(), StatusCode::UNAVAILABLE);
  EXPECT_NE(s.error_message().find("too many redirects"), std::string::npos) << s.error_message();

  // Bodies over max_model_bytes, with and without a length.
  for (const char* path : {"/big-no-length", "/big-chunked"}) {
    s = CheckUrl(ts.stub(), http.Url(path), &resp);
    EXPECT_EQ(s.error_code(), StatusCode::RESOURCE_EXHAUSTED) << path << ": " << s.error_message();
  }

  // A body (or header) that trickles in: refused at the time cap (1 s), not when it ends.
  for (const char* path : {"/slow", "/slow-header"}) {
    const auto t0 = SteadyClock::now();
    s = CheckUrl(ts.stub(), http.Url(path), &resp);
    const double took = std::chrono::duration<double>(SteadyClock::now() - t0).count();
    EXPECT_EQ(s.error_code(), StatusCode::UNAVAILABLE) << path << ": " << s.error_message();
    EXPECT_NE(s.error_message().find("timed out"), std::string::npos) << s.error_message();
    EXPECT_GE(took, 0.9) << path;
    EXPECT_LT(took, 20.0) << path;  // the full body would take 400 s
  }
  EXPECT_LT(slow_bytes.load(), 40000);
  EXPECT_TRUE(GaugesReturnToZero(ts));
}

TEST_F(Reliability, UrlBodiesAreChargedToTheByteBudgetWhileTheyDownload) {
  constexpr int kLength = 30000;
  std::atomic<bool> release{false};
  HttpStub http([&](boost::asio::ip::tcp::socket& sock, const std::string& target,
                    const std::atomic<bool>& stop) {
    if (target != "/slow") {
      Send(sock, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
      return;
    }
    // Half the body, then nothing until the test has looked at the gauge.
    Send(sock, "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(kLength) + "\r\n\r\n" +
                   std::string(kLength / 2, 'z'));
    while (!release.load() && !stop.load()) std::this_thread::sleep_for(Ms(10));
  });
  TestServer ts(dir_, {[&](server::ServerConfig& c) {
                         c.url_allow_hosts = {"127.0.0.1"};
                         c.url_timeout_seconds = 60;
                         c.max_model_bytes = 50000;
                         c.max_inline_bytes = 50000;
                         c.max_inflight_bytes = 50000;
                       },
                       {}});
  v1::CheckResponse resp;
  grpc::Status s;
  std::thread fetch([&] { s = CheckUrl(ts.stub(), http.Url("/slow"), &resp); });
  // The declared length is reserved before the body is buffered...
  EXPECT_TRUE(WaitFor([&] { return ts.Metrics().Value("axqc_inflight_model_bytes") == kLength; },
                      Ms(20000)));
  // ... so an inline model that does not fit beside it is refused meanwhile.
  v1::CheckResponse inline_resp;
  const grpc::Status inline_status = CheckInline(ts.stub(), std::string(25000, 'q'), &inline_resp);
  EXPECT_EQ(inline_status.error_code(), StatusCode::RESOURCE_EXHAUSTED)
      << inline_status.error_message();
  release.store(true);  // the server closes the connection: a truncated body
  fetch.join();
  EXPECT_EQ(s.error_code(), StatusCode::UNAVAILABLE) << s.error_message();
  EXPECT_TRUE(GaugesReturnToZero(ts));
}

// ------------------------------------------------------------------------------------------------
// Path references: a directory swapped for a symlink to outside the root, over and over, while
// requests resolve paths through it. No request may ever read the file outside.

TEST_F(Reliability, PathResolutionUnderASymlinkSwapNeverLeavesTheRoot) {
  const std::string inside = ConformantModel("inside");
  const std::string outside = ConformantModel("outside");
  const fs::path root = dir_ / "root";
  WriteFile(root / "d/m.onnx", inside);
  WriteFile(dir_ / "outside/m.onnx", outside);
  fs::create_directory_symlink(dir_ / "outside", root / "alt");
  server::PathResolver resolver({root.string()});
  server::ByteBudget budget(1ull << 30, static_cast<prometheus::Gauge*>(nullptr));
  // Sanity: the link itself is refused, the directory read.
  EXPECT_EQ(resolver.Load("d/m.onnx", 1 << 20, budget).sha256, axqc::Sha256Hex(inside));
  try {
    resolver.Load("alt/m.onnx", 1 << 20, budget);
    ADD_FAILURE() << "read through a symlink out of the root";
  } catch (const server::SourceError& e) {
    EXPECT_EQ(e.code(), StatusCode::PERMISSION_DENIED);
  }

  std::atomic<bool> stop{false};
  std::atomic<long> swaps{0};
  std::thread swapper([&] {
    // Atomically exchanges root/d (the directory) and root/alt (the symlink).
    while (!stop.load()) {
      if (::syscall(SYS_renameat2, AT_FDCWD, (root / "d").c_str(), AT_FDCWD, (root / "alt").c_str(),
                    RENAME_EXCHANGE) != 0) {
        ADD_FAILURE() << "renameat2: " << std::strerror(errno);
        return;
      }
      swaps.fetch_add(1);
    }
  });
  int read_inside = 0;
  int refused = 0;
  int read_outside = 0;
  const auto end = SteadyClock::now() + std::chrono::seconds(3);
  while (SteadyClock::now() < end || read_inside == 0 || refused == 0) {
    for (const char* p : {"d/m.onnx", "alt/m.onnx"}) {
      try {
        const auto m = resolver.Load(p, 1 << 20, budget);
        if (m.sha256 == axqc::Sha256Hex(outside)) {
          ++read_outside;
        } else {
          EXPECT_EQ(m.sha256, axqc::Sha256Hex(inside));
          ++read_inside;
        }
      } catch (const server::SourceError& e) {
        EXPECT_TRUE(e.code() == StatusCode::PERMISSION_DENIED || e.code() == StatusCode::NOT_FOUND)
            << e.what();
        ++refused;
      }
    }
    if (SteadyClock::now() > end + std::chrono::seconds(30)) break;
  }
  stop.store(true);
  swapper.join();
  RecordProperty("read_inside", read_inside);
  RecordProperty("refused", refused);
  RecordProperty("swaps", static_cast<int>(swaps.load()));
  EXPECT_EQ(read_outside, 0);
  EXPECT_GT(read_inside, 0);
  EXPECT_GT(refused, 0);
  EXPECT_GT(swaps.load(), 100);
  EXPECT_EQ(budget.used(), 0u);
}

// ------------------------------------------------------------------------------------------------
// The settings

TEST(ReliabilityConfig, UploadBudgetAndIdleTimeoutFromFlagsAndEnvironment) {
  auto env = [](std::map<std::string, std::string> vars) -> server::EnvLookup {
    return [vars](const std::string& name) -> std::optional<std::string> {
      auto it = vars.find(name);
      if (it == vars.end()) return std::nullopt;
      return it->second;
    };
  };
  auto r = server::LoadConfig({"axqc-server"}, env({}));
  ASSERT_FALSE(r.exit_code) << r.message;
  EXPECT_EQ(r.config.max_inflight_upload_bytes, 2ull << 30);
  EXPECT_EQ(r.config.upload_idle_timeout_seconds, 60.0);
  r = server::LoadConfig({"axqc-server", "--max-inflight-upload-bytes", "64MiB"},
                         env({{"AXQC_UPLOAD_IDLE_TIMEOUT_SECONDS", "2.5"}}));
  ASSERT_FALSE(r.exit_code) << r.message;
  EXPECT_EQ(r.config.max_inflight_upload_bytes, 64ull << 20);
  EXPECT_EQ(r.config.upload_idle_timeout_seconds, 2.5);
  try {
    server::LoadConfig({"axqc-server", "--upload-idle-timeout-seconds", "-1"}, env({}));
    ADD_FAILURE() << "a negative timeout was accepted";
  } catch (const server::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("upload-idle-timeout-seconds"), std::string::npos);
  }
}

// ------------------------------------------------------------------------------------------------
// Tokens and logs

TEST(BearerToken, MatchesOnlyTheExactToken) {
  const std::string token = "s3cr3t-Token_value";
  EXPECT_TRUE(server::BearerTokenMatches("Bearer s3cr3t-Token_value", token));
  for (const std::string& wrong :
       {std::string(), std::string("Bearer "), std::string("Bearer s3cr3t-Token_valu"),
        std::string("Bearer s3cr3t-Token_value "), std::string("Bearer s3cr3t-Token_valuf"),
        std::string("bearer s3cr3t-Token_value"), std::string("Bearer  s3cr3t-Token_value"),
        std::string("s3cr3t-Token_value"), std::string("Bearer S3CR3T-TOKEN_VALUE"),
        std::string("Bearer s3cr3t-Token_value\0", 26), "Bearer " + token + token}) {
    EXPECT_FALSE(server::BearerTokenMatches(wrong, token)) << wrong;
  }
}

TEST_F(Reliability, LogsNeverContainTheTokenOrModelBytes) {
  const std::string token = "tok-Q9vX2-secret-4f1e";
  WriteFile(dir_ / "token", token + "\n");
  TestServer ts(
      dir_, {[&](server::ServerConfig& c) { c.auth_token_file = (dir_ / "token").string(); }, {}});
  // Distinctive bytes in the model: the doc string and graph name carry the tag.
  const std::string marker = "ZqMarker7c1d";
  const std::string model = ConformantModel(marker);
  ASSERT_NE(model.find(marker), std::string::npos);
  auto with_token = [&](grpc::ClientContext& ctx, const std::string& t) {
    ctx.AddMetadata("authorization", "Bearer " + t);
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  };
  v1::CheckResponse resp;
  {
    grpc::ClientContext ctx;
    with_token(ctx, token);
    v1::CheckRequest req;
    req.set_content(model);
    req.set_name("m.onnx");
    ASSERT_TRUE(ts.stub().Check(&ctx, req, &resp).ok());
  }
  {  // Upload with a wrong declared sha256 (the error names hashes only).
    grpc::ClientContext ctx;
    with_token(ctx, token);
    auto writer = ts.stub().Upload(&ctx, &resp);
    v1::UploadRequest m;
    m.mutable_metadata()->set_sha256(std::string(64, 'a'));
    writer->Write(m);
    v1::UploadRequest c;
    c.set_chunk(model);
    writer->Write(c);
    writer->WritesDone();
    EXPECT_EQ(writer->Finish().error_code(), StatusCode::INVALID_ARGUMENT);
  }
  {  // Bytes that are not a model, with the marker inside.
    grpc::ClientContext ctx;
    with_token(ctx, token);
    v1::CheckRequest req;
    req.set_content(NotOnnxBytes() + marker);
    EXPECT_EQ(ts.stub().Check(&ctx, req, &resp).error_code(), StatusCode::INVALID_ARGUMENT);
  }
  {  // A wrong token.
    grpc::ClientContext ctx;
    with_token(ctx, token + "-wrong");
    v1::CheckRequest req;
    req.set_content(model);
    EXPECT_EQ(ts.stub().Check(&ctx, req, &resp).error_code(), StatusCode::UNAUTHENTICATED);
  }
  ts.Stop();
  const std::string log = ts.Log();
  // Four request lines were written, and neither the token nor any model bytes.
  std::size_t requests = 0;
  for (std::size_t p = log.find("\"msg\":\"request\""); p != std::string::npos;
       p = log.find("\"msg\":\"request\"", p + 1)) {
    ++requests;
  }
  EXPECT_EQ(requests, 4u) << log;
  EXPECT_EQ(log.find(token), std::string::npos);
  EXPECT_EQ(log.find("Q9vX2"), std::string::npos);
  EXPECT_EQ(log.find(marker), std::string::npos);
  EXPECT_EQ(log.find("this is not an ONNX model"), std::string::npos);
  EXPECT_NE(log.find(axqc::Sha256Hex(model)), std::string::npos);  // hashes are logged
}

}  // namespace
}  // namespace axqc::test
