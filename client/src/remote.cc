// Remote mode of `axqc` (see remote.h). Without AXQC_REMOTE (AXQC_BUILD_SERVER=OFF) the entry
// points only say that this build has no remote support.
#include "remote.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <iostream>
#include <random>
#include <thread>

#include "cli.h"

#ifdef AXQC_REMOTE
#include <google/protobuf/util/json_util.h>
#include <grpcpp/grpcpp.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "axqc/catalog.h"
#include "axqc/checker.h"
#include "axqc/v1/axqc.grpc.pb.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "report_proto.h"
#include "sha256.h"
#include "status_name.h"
#endif

namespace axqc::cli {

std::optional<long long> ParseWindowSeconds(const std::string& text) {
  if (text.empty()) return std::nullopt;
  std::size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits])) != 0) {
    ++digits;
  }
  if (digits == 0 || digits > 9) return std::nullopt;
  const long long n = std::stoll(text.substr(0, digits));
  const std::string unit = text.substr(digits);
  long long mul = 0;
  if (unit.empty() || unit == "s") {
    mul = 1;
  } else if (unit == "m") {
    mul = 60;
  } else if (unit == "h") {
    mul = 3600;
  } else if (unit == "d") {
    mul = 86400;
  } else if (unit == "w") {
    mul = 7LL * 86400;
  } else {
    return std::nullopt;
  }
  if (n <= 0) return std::nullopt;
  return n * mul;
}

std::chrono::milliseconds RetryBackoff(int attempt) {
  const long long base = 200LL << std::min(attempt, 10);
  const long long capped = std::min<long long>(base, 5000);
  thread_local std::mt19937 rng{std::random_device{}()};
  std::uniform_real_distribution<double> jitter(0.8, 1.2);
  return std::chrono::milliseconds(
      static_cast<long long>(static_cast<double>(capped) * jitter(rng)));
}

#ifndef AXQC_REMOTE

namespace {
int NoRemote() {
  std::cerr << "axqc: built without remote support (configure with -DAXQC_BUILD_SERVER=ON for "
               "--server, stats and health)\n";
  return kExitError;
}
}  // namespace

int RunRemoteCheck(const CheckArgs& /*args*/) { return NoRemote(); }
int RunRemoteRules(const RemoteArgs& /*remote*/, const std::string& /*format*/) {
  return NoRemote();
}
int RunRemoteStats(const StatsArgs& /*args*/) { return NoRemote(); }
int RunHealth(const RemoteArgs& /*remote*/, const std::string& /*service*/) { return NoRemote(); }

#else  // AXQC_REMOTE

namespace {

namespace fs = std::filesystem;
using HealthStub = grpc::health::v1::Health;

constexpr std::size_t kChunkBytes = 1u << 20;             // Upload chunk
constexpr std::uint64_t kProgressMinBytes = 16ull << 20;  // progress on a TTY from 16 MiB
constexpr int kMaxReceiveBytes = 1 << 30;                 // big non-conformant reports

bool ReadWholeFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::stringstream buf;
  buf << in.rdbuf();
  *out = buf.str();
  return static_cast<bool>(in) || in.eof();
}

// A channel to the server plus what every call needs.
class Connection {
 public:
  // Returns nullptr (after printing why) when the TLS files cannot be read.
  static std::unique_ptr<Connection> Open(const RemoteArgs& r, int default_retries,
                                          double default_deadline) {
    auto c = std::unique_ptr<Connection>(new Connection());
    c->server_ = r.server;
    c->retries_ = r.retries >= 0 ? r.retries : default_retries;
    c->deadline_ = r.deadline_seconds > 0 ? r.deadline_seconds : default_deadline;
    if (!r.token.empty()) {
      c->token_ = r.token;
    } else if (const char* env = std::getenv("AXQC_TOKEN"); env != nullptr) {
      c->token_ = env;
    }
    std::shared_ptr<grpc::ChannelCredentials> creds;
    const bool tls = r.tls || !r.ca.empty() || !r.cert.empty() || !r.key.empty();
    if (tls) {
      if (r.cert.empty() != r.key.empty()) {
        std::cerr << "axqc: mutual TLS needs both --cert and --key\n";
        return nullptr;
      }
      grpc::SslCredentialsOptions o;
      for (const auto& [path, field] :
           {std::pair{&r.ca, &o.pem_root_certs}, std::pair{&r.cert, &o.pem_cert_chain},
            std::pair{&r.key, &o.pem_private_key}}) {
        if (!path->empty() && !ReadWholeFile(*path, field)) {
          std::cerr << "axqc: cannot read " << *path << "\n";
          return nullptr;
        }
      }
      creds = grpc::SslCredentials(o);
    } else {
      creds = grpc::InsecureChannelCredentials();
    }
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(kMaxReceiveBytes);
    args.SetMaxSendMessageSize(kMaxReceiveBytes);
    args.SetString(GRPC_ARG_PRIMARY_USER_AGENT_STRING, "axqc/" + std::string(ToolVersion()));
    c->channel_ = grpc::CreateCustomChannel(r.server, creds, args);
    c->stub_ = v1::Checker::NewStub(c->channel_);
    c->health_ = HealthStub::NewStub(c->channel_);
    return c;
  }

  v1::Checker::Stub& stub() { return *stub_; }
  HealthStub::Stub& health() { return *health_; }
  const std::string& server() const { return server_; }

  // Deadline and bearer token of one attempt.
  void Prepare(grpc::ClientContext* ctx) const {
    ctx->set_deadline(std::chrono::system_clock::now() +
                      std::chrono::duration_cast<std::chrono::system_clock::duration>(
                          std::chrono::duration<double>(deadline_)));
    if (!token_.empty()) ctx->AddMetadata("authorization", "Bearer " + token_);
  }

  // Runs `attempt(ctx)` with a fresh context until it is not UNAVAILABLE or the retries are used.
  // `request_id` gets the server's x-request-id of the last attempt.
  template <typename F>
  grpc::Status Call(F&& attempt, std::string* request_id = nullptr) const {
    for (int i = 0;; ++i) {
      grpc::ClientContext ctx;
      Prepare(&ctx);
      grpc::Status s = attempt(&ctx);
      if (request_id != nullptr) {
        const auto& md = ctx.GetServerInitialMetadata();
        auto it = md.find("x-request-id");
        if (it != md.end()) request_id->assign(it->second.data(), it->second.size());
      }
      if (s.error_code() != grpc::StatusCode::UNAVAILABLE || i >= retries_) return s;
      std::this_thread::sleep_for(RetryBackoff(i));
    }
  }

  // One line for a failed RPC, with hints for the usual causes.
  std::string Describe(const grpc::Status& s, const std::string& request_id = "") const {
    std::string msg =
        std::string(service::StatusCodeName(s.error_code())) + ": " + s.error_message();
    if (!request_id.empty()) msg += " (request id " + request_id + ")";
    switch (s.error_code()) {
      case grpc::StatusCode::UNAUTHENTICATED:
        msg = "the server " + server_ + " refused the request: " + msg +
              (token_.empty() ? "; it needs a bearer token: pass --token or set AXQC_TOKEN"
                              : "; check the token (--token / AXQC_TOKEN)");
        break;
      case grpc::StatusCode::UNAVAILABLE:
        msg = "cannot reach axqc-server at " + server_ + " (after " + std::to_string(retries_ + 1) +
              " attempt" + (retries_ == 0 ? "" : "s") + "): " + msg;
        break;
      case grpc::StatusCode::DEADLINE_EXCEEDED:
        msg += " (deadline " + std::to_string(static_cast<long long>(deadline_)) +
               " s; raise it with --deadline)";
        break;
      default:
        break;
    }
    return msg;
  }

 private:
  Connection() = default;
  std::string server_;
  std::string token_;
  int retries_ = 0;
  double deadline_ = 30;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Checker::Stub> stub_;
  std::unique_ptr<HealthStub::Stub> health_;
};

v1::CheckOptions ProtoOptions(const CheckArgs& a) {
  v1::CheckOptions o;
  o.set_check_value(a.check_value);
  o.set_max_locations(
      static_cast<std::uint32_t>(std::min<std::size_t>(a.max_locations, service::kMaxLocations)));
  o.set_format(v1::REPORT_FORMAT_PROTOBUF);
  return o;
}

// Fills `m` from a successful response.
void TakeReport(const v1::CheckResponse& resp, ModelResult* m) {
  try {
    m->report = service::FromProto(resp.report());
    m->ok = true;
    m->exit_code = ExitCodeFor(m->report.verdict);
  } catch (const std::exception& e) {
    m->ok = false;
    m->exit_code = kExitError;
    m->error_kind = "server error";
    m->error = m->file + ": unreadable report from the server: " + e.what();
  }
}

void TakeError(const Connection& c, const grpc::Status& s, const std::string& request_id,
               ModelResult* m) {
  m->ok = false;
  m->exit_code = kExitError;
  // The bytes are not an ONNX model, a path is missing, ...: about the input, as in local mode.
  const bool input = s.error_code() == grpc::StatusCode::INVALID_ARGUMENT ||
                     s.error_code() == grpc::StatusCode::NOT_FOUND ||
                     s.error_code() == grpc::StatusCode::PERMISSION_DENIED;
  m->error_kind = input ? "input error" : "server error";
  m->error = m->file + ": " + c.Describe(s, request_id);
}

class Progress {
 public:
  Progress(const std::string& mode, const std::string& name, std::uint64_t total)
      : name_(name), total_(total) {
    enabled_ = mode == "always" ||
               (mode == "auto" && total >= kProgressMinBytes && ::isatty(STDERR_FILENO) != 0);
  }
  void Update(std::uint64_t sent) {
    if (!enabled_) return;
    const int pct = total_ == 0 ? 100 : static_cast<int>(sent * 100 / total_);
    if (pct == last_) return;
    last_ = pct;
    std::cerr << "\raxqc: uploading " << name_ << " " << std::setw(3) << pct << "% (" << std::fixed
              << std::setprecision(1) << static_cast<double>(sent) / 1048576.0 << " / "
              << static_cast<double>(total_) / 1048576.0 << " MiB)" << std::flush;
  }
  void Done() {
    if (enabled_ && last_ >= 0) std::cerr << "\n";
  }

 private:
  std::string name_;
  std::uint64_t total_;
  bool enabled_ = false;
  int last_ = -1;
};

// A local file: GetReport by hash, Upload on NOT_FOUND.
ModelResult CheckLocalFile(const Connection& c, v1::Checker::Stub& stub, const CheckArgs& a,
                           const std::string& path) {
  ModelResult m;
  m.file = path;
  m.exit_code = kExitError;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    m.error = path + ": not a regular file";
    return m;
  }
  // Hash while reading (models can be large: never hold the file in memory).
  service::Sha256 hasher;
  std::uint64_t size = 0;
  {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      m.error = path + ": cannot open the file";
      return m;
    }
    std::string buf(kChunkBytes, '\0');
    while (in) {
      in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
      const auto n = static_cast<std::size_t>(in.gcount());
      if (n == 0) break;
      hasher.Update(std::string_view(buf.data(), n));
      size += n;
    }
    if (in.bad()) {
      m.error = path + ": read error";
      return m;
    }
  }
  const std::string sha256 = hasher.HexDigest();
  const v1::CheckOptions options = ProtoOptions(a);

  v1::GetReportRequest get;
  get.set_sha256(sha256);
  *get.mutable_options() = options;
  get.set_name(path);
  v1::CheckResponse resp;
  std::string request_id;
  grpc::Status s = c.Call(
      [&](grpc::ClientContext* ctx) {
        resp.Clear();
        return stub.GetReport(ctx, get, &resp);
      },
      &request_id);
  if (s.ok()) {
    TakeReport(resp, &m);
    return m;
  }
  if (s.error_code() != grpc::StatusCode::NOT_FOUND) {
    TakeError(c, s, request_id, &m);
    return m;
  }

  // Unknown to the server: stream the file.
  const std::string name = fs::path(path).filename().string();
  s = c.Call(
      [&](grpc::ClientContext* ctx) {
        resp.Clear();
        auto writer = stub.Upload(ctx, &resp);
        v1::UploadRequest first;
        auto* md = first.mutable_metadata();
        md->set_file_name(path);
        for (const auto& [k, v] : a.labels) (*md->mutable_labels())[k] = v;
        *md->mutable_options() = options;
        md->set_size_bytes(size);
        md->set_sha256(sha256);
        bool ok = writer->Write(first);
        std::ifstream in(path, std::ios::binary);
        Progress progress(a.progress, name, size);
        std::uint64_t sent = 0;
        std::string buf(kChunkBytes, '\0');
        while (ok && in) {
          in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
          const auto n = static_cast<std::size_t>(in.gcount());
          if (n == 0) break;
          v1::UploadRequest msg;
          msg.set_chunk(buf.data(), n);
          ok = writer->Write(msg);
          sent += n;
          progress.Update(sent);
        }
        progress.Done();
        if (ok) writer->WritesDone();
        return writer->Finish();
      },
      &request_id);
  if (s.ok()) {
    TakeReport(resp, &m);
  } else {
    TakeError(c, s, request_id, &m);
  }
  return m;
}

// A server-side reference: Check with path or url.
ModelResult CheckRef(const Connection& c, v1::Checker::Stub& stub, const CheckArgs& a,
                     const std::string& ref) {
  ModelResult m;
  m.file = ref;
  v1::CheckRequest req;
  const bool url = ref.rfind("http://", 0) == 0 || ref.rfind("https://", 0) == 0;
  if (url) {
    req.set_url(ref);
  } else {
    req.set_path(ref.rfind("file://", 0) == 0 ? ref.substr(7) : ref);
  }
  req.set_name(ref);
  for (const auto& [k, v] : a.labels) (*req.mutable_labels())[k] = v;
  *req.mutable_options() = ProtoOptions(a);
  v1::CheckResponse resp;
  std::string request_id;
  const grpc::Status s = c.Call(
      [&](grpc::ClientContext* ctx) {
        resp.Clear();
        return stub.Check(ctx, req, &resp);
      },
      &request_id);
  if (s.ok()) {
    TakeReport(resp, &m);
  } else {
    TakeError(c, s, request_id, &m);
  }
  return m;
}

std::string Percent(double rate) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(1) << rate * 100.0 << "%";
  return o.str();
}

std::string CountsLine(const v1::VerdictCounts& c) {
  std::ostringstream o;
  o << "requests " << c.requests() << "  conformant " << c.conformant() << "  non_conformant "
    << c.non_conformant() << "  not_applicable " << c.not_applicable() << "  invalid_input "
    << c.invalid_input() << "  pass rate " << Percent(c.pass_rate());
  return o.str();
}

std::string ProtoJson(const google::protobuf::Message& msg) {
  std::string out;
  google::protobuf::util::JsonPrintOptions o;
  o.add_whitespace = true;
  o.preserve_proto_field_names = true;
  o.always_print_primitive_fields = true;
  (void)google::protobuf::util::MessageToJsonString(msg, &out, o);
  return out;
}

std::string Pad(std::string_view s, std::size_t width) {
  std::string out(s);
  out += std::string(s.size() < width ? width - s.size() : 1, ' ');
  return out;
}

}  // namespace

int RunRemoteCheck(const CheckArgs& args) {
  auto c = Connection::Open(args.remote, 4, 600);
  if (c == nullptr) return kExitError;
  std::vector<ModelResult> results;
  for (const auto& path : args.models) results.push_back(CheckLocalFile(*c, c->stub(), args, path));
  for (const auto& ref : args.refs) results.push_back(CheckRef(*c, c->stub(), args, ref));
  return EmitResults(args, results);
}

int RunRemoteRules(const RemoteArgs& remote, const std::string& format) {
  auto c = Connection::Open(remote, 2, 30);
  if (c == nullptr) return kExitError;
  v1::ListRulesResponse resp;
  std::string request_id;
  const grpc::Status s = c->Call(
      [&](grpc::ClientContext* ctx) {
        resp.Clear();
        return c->stub().ListRules(ctx, v1::ListRulesRequest(), &resp);
      },
      &request_id);
  if (!s.ok()) {
    std::cerr << "axqc: " << c->Describe(s, request_id) << "\n";
    return kExitError;
  }
  if (format == "json") {
    nlohmann::json rules = nlohmann::json::array();
    for (const auto& r : resp.rules()) {
      std::string sev = "error";
      try {
        sev = std::string(SeverityName(service::SeverityFromProto(r.severity())));
      } catch (const std::exception&) {
        sev = "unknown";
      }
      rules.push_back({{"id", r.id()},
                       {"severity", sev},
                       {"check_value", r.check_value()},
                       {"section", r.section()},
                       {"summary", r.summary()},
                       {"fix", r.fix()}});
    }
    std::cout << nlohmann::json{{"rule_set_version", resp.rule_set_version()},
                                {"tool_version", resp.tool_version()},
                                {"server", c->server()},
                                {"rules", rules}}
                     .dump(2)
              << "\n";
    return 0;
  }
  std::cout << "ax quant spec rule set " << resp.rule_set_version() << " (axqc-server "
            << c->server() << ", version " << resp.tool_version() << ")\n";
  for (const auto& r : resp.rules()) {
    std::string sev = "?";
    try {
      sev = std::string(SeverityName(service::SeverityFromProto(r.severity())));
    } catch (const std::exception&) {
    }
    std::cout << "  " << Pad(r.id(), 32) << sev << (r.check_value() ? " [cv]" : "     ")
              << std::string(sev.size() < 7 ? 7 - sev.size() : 1, ' ') << Pad(r.section(), 6)
              << r.summary() << "\n";
  }
  return 0;
}

int RunRemoteStats(const StatsArgs& args) {
  v1::GetStatsRequest req;
  if (!args.since.empty()) {
    const auto seconds = ParseWindowSeconds(args.since);
    if (!seconds) {
      std::cerr << "axqc: --since expects a duration like 7d, 24h, 30m or 90s, got '" << args.since
                << "'\n";
      return kExitError;
    }
    req.mutable_window()->set_seconds(*seconds);
  }
  req.set_group_by(args.by);
  for (const auto& [k, v] : args.labels) (*req.mutable_label_filter())[k] = v;
  req.set_top_rules(args.top);
  auto c = Connection::Open(args.remote, 2, 30);
  if (c == nullptr) return kExitError;
  v1::GetStatsResponse resp;
  std::string request_id;
  const grpc::Status s = c->Call(
      [&](grpc::ClientContext* ctx) {
        resp.Clear();
        return c->stub().GetStats(ctx, req, &resp);
      },
      &request_id);
  if (!s.ok()) {
    std::cerr << "axqc: " << c->Describe(s, request_id) << "\n";
    return kExitError;
  }
  if (args.format == "json") {
    std::cout << ProtoJson(resp);
    return 0;
  }
  auto ts = [](const google::protobuf::Timestamp& t) -> std::string {
    if (t.seconds() == 0 && t.nanos() == 0) return "the beginning";
    const std::time_t secs = static_cast<std::time_t>(t.seconds());
    std::tm tm{};
    gmtime_r(&secs, &tm);
    std::ostringstream o;
    o << std::put_time(&tm, "%Y-%m-%dT%H:%M:%SZ");
    return o.str();
  };
  std::cout << "axqc-server " << c->server() << ": requests from "
            << (resp.has_since() ? ts(resp.since()) : std::string("the beginning")) << " to "
            << ts(resp.until()) << "\n";
  std::cout << "  total: " << CountsLine(resp.total()) << "\n";
  if (!args.by.empty()) {
    std::cout << "by " << args.by << ":\n";
    for (const auto& g : resp.groups()) {
      std::cout << "  " << Pad(g.label_value().empty() ? "(none)" : g.label_value(), 20)
                << CountsLine(g.counts()) << "\n";
    }
  }
  if (resp.top_failing_rules_size() > 0) {
    std::cout << "top failing rules:\n";
    for (const auto& r : resp.top_failing_rules()) {
      std::cout << "  " << Pad(r.rule(), 32) << r.requests() << " request"
                << (r.requests() == 1 ? "" : "s") << ", " << r.findings() << " finding"
                << (r.findings() == 1 ? "" : "s") << "\n";
    }
  }
  return 0;
}

int RunHealth(const RemoteArgs& remote, const std::string& service) {
  auto c = Connection::Open(remote, 0, 5);
  if (c == nullptr) return kExitError;
  grpc::health::v1::HealthCheckRequest req;
  req.set_service(service);
  grpc::health::v1::HealthCheckResponse resp;
  const grpc::Status s = c->Call([&](grpc::ClientContext* ctx) {
    resp.Clear();
    return c->health().Check(ctx, req, &resp);
  });
  if (!s.ok()) {
    std::cerr << "axqc: health: " << c->Describe(s) << "\n";
    return kExitError;
  }
  const std::string status =
      grpc::health::v1::HealthCheckResponse::ServingStatus_Name(resp.status());
  std::cout << status << "\n";
  return resp.status() == grpc::health::v1::HealthCheckResponse::SERVING ? 0 : 1;
}

#endif  // AXQC_REMOTE

}  // namespace axqc::cli
