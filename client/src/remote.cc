// Remote mode of `axqc` (see remote.h). Without AXQC_REMOTE (AXQC_BUILD_SERVER=OFF) the entry
// points only say that this build has no remote support.
#include "remote.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <random>
#include <thread>

#include "axqc/duration.h"
#include "axqc/external_data.h"
#include "cli.h"
#include "exit_codes.h"

#ifdef AXQC_REMOTE
#include <arpa/inet.h>
#include <fcntl.h>
#include <google/protobuf/util/json_util.h>
#include <grpc/support/log.h>
#include <grpcpp/grpcpp.h>
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "axqc/catalog.h"
#include "axqc/checker.h"
#include "axqc/sha256.h"
#include "axqc/v1/axqc.grpc.pb.h"
#include "axqc/wire/report_proto.h"
#include "axqc/wire/status_name.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "protocol.h"
#endif

namespace axqc::cli {

std::optional<long long> ParseWindowSeconds(const std::string& text) {
  // A unit is required: "30" alone is ambiguous in a window of days and weeks.
  const auto seconds = ParseDurationSeconds(text, "");
  if (!seconds || !(*seconds >= 1) || *seconds > 1e12) return std::nullopt;
  return std::llround(*seconds);
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

int RunRemoteCheck(const CheckArgs& /*args*/, GateSetup& /*gate*/) { return NoRemote(); }
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

// ------------------------------------------------------------------------------------------------
// Transport diagnosis: why a connection failed, found by connecting ourselves.

struct HostPort {
  std::string host;
  std::string port;
};

// "host:port", "[v6]:port", "dns:///host:port" -> parts; nullopt for other target forms.
std::optional<HostPort> SplitTarget(std::string target) {
  if (target.rfind("dns:///", 0) == 0) target = target.substr(7);
  if (target.find("://") != std::string::npos || target.rfind("unix:", 0) == 0) return std::nullopt;
  HostPort hp;
  if (!target.empty() && target.front() == '[') {
    const auto close = target.find(']');
    if (close == std::string::npos || close + 1 >= target.size() || target[close + 1] != ':') {
      return std::nullopt;
    }
    hp.host = target.substr(1, close - 1);
    hp.port = target.substr(close + 2);
  } else {
    const auto colon = target.rfind(':');
    if (colon == std::string::npos) return std::nullopt;
    hp.host = target.substr(0, colon);
    hp.port = target.substr(colon + 1);
  }
  if (hp.host.empty() || hp.port.empty()) return std::nullopt;
  return hp;
}

// A TCP connection with a 3 s connect timeout and 3 s read/write timeouts; -1 and `error` set
// when it fails.
int ConnectTcp(const HostPort& hp, std::string* error) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (const int rc = ::getaddrinfo(hp.host.c_str(), hp.port.c_str(), &hints, &res); rc != 0) {
    *error = "cannot resolve " + hp.host + ": " + ::gai_strerror(rc);
    return -1;
  }
  int fd = -1;
  for (const addrinfo* a = res; a != nullptr && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) continue;
    int rc = ::connect(fd, a->ai_addr, a->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      rc = ::poll(&p, 1, 3000) == 1 ? 0 : -1;
      int err = rc == 0 ? 0 : ETIMEDOUT;
      socklen_t len = sizeof(err);
      if (rc == 0) (void)::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      if (err != 0) {
        errno = err;
        rc = -1;
      }
    }
    if (rc != 0) {
      *error = std::strerror(errno);
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(res);
  if (fd >= 0) {
    (void)::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    timeval tv{3, 0};
    (void)::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    (void)::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  }
  return fd;
}

std::string OpenSslErrors() {
  std::string out;
  while (const unsigned long e = ERR_get_error()) {
    const char* reason = ERR_reason_error_string(e);
    if (reason == nullptr) continue;
    if (!out.empty()) out += "; ";
    out += reason;
  }
  return out;
}

// Why an SSL_connect / SSL_read that returned `ret` failed, when OpenSSL's error queue has nothing
// (the server closed or reset the connection): never an empty reason.
std::string SslFailure(SSL* ssl, int ret, int saved_errno) {
  switch (SSL_get_error(ssl, ret)) {
    case SSL_ERROR_ZERO_RETURN:
      return "the server closed the TLS connection";
    case SSL_ERROR_SYSCALL:
      return saved_errno != 0 ? std::string(std::strerror(saved_errno))
                              : std::string("the server closed the connection");
    case SSL_ERROR_WANT_READ:
    case SSL_ERROR_WANT_WRITE:
      return "no answer from the server within 3 s";
    default:
      return "TLS error " + std::to_string(SSL_get_error(ssl, ret));
  }
}

// While alive, a write to a connection the peer has closed fails with EPIPE instead of raising
// SIGPIPE, whose default action would end axqc before it explains the failure (the probe below
// writes after the handshake; a mutual-TLS server that refuses the client has closed by then).
class IgnoreSigpipe {
 public:
  IgnoreSigpipe() {
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    restore_ = ::sigaction(SIGPIPE, &ignore, &old_) == 0;
  }
  ~IgnoreSigpipe() {
    if (restore_) ::sigaction(SIGPIPE, &old_, nullptr);
  }
  IgnoreSigpipe(const IgnoreSigpipe&) = delete;
  IgnoreSigpipe& operator=(const IgnoreSigpipe&) = delete;

 private:
  struct sigaction old_ {};
  bool restore_ = false;
};

bool Contains(const std::string& text, const char* what) {
  return text.find(what) != std::string::npos;
}

// True when the server at `hp` answers a plaintext HTTP/2 connection preface with a SETTINGS
// frame (a gRPC port without TLS).
bool SpeaksPlaintextHttp2(const HostPort& hp) {
  std::string error;
  const int fd = ConnectTcp(hp, &error);
  if (fd < 0) return false;
  static const char kPreface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\4\0\0\0\0\0";
  bool http2 = false;
  if (::send(fd, kPreface, sizeof(kPreface) - 1, MSG_NOSIGNAL) ==
      static_cast<ssize_t>(sizeof(kPreface) - 1)) {
    unsigned char frame[9];
    std::size_t got = 0;
    while (got < sizeof(frame)) {
      const ssize_t n = ::recv(fd, frame + got, sizeof(frame) - got, 0);
      if (n <= 0) break;
      got += static_cast<std::size_t>(n);
    }
    http2 = got == sizeof(frame) && frame[3] == 0x04;  // frame type SETTINGS
  }
  ::close(fd);
  return http2;
}

// True when the server at `hp` answers a plaintext HTTP/1.x request (GET /readyz), as
// axqc-server's HTTP API (--http-listen) and most web servers do; a gRPC port does not.
bool SpeaksPlaintextHttp1(const HostPort& hp) {
  std::string error;
  const int fd = ConnectTcp(hp, &error);
  if (fd < 0) return false;
  const std::string request = "GET /readyz HTTP/1.0\r\nHost: " + hp.host + "\r\n\r\n";
  bool http1 = false;
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
      static_cast<ssize_t>(request.size())) {
    char head[8];
    std::size_t got = 0;
    while (got < sizeof(head)) {
      const ssize_t n = ::recv(fd, head + got, sizeof(head) - got, 0);
      if (n <= 0) break;
      got += static_cast<std::size_t>(n);
    }
    http1 = got == sizeof(head) && std::string_view(head, 7) == "HTTP/1.";
  }
  ::close(fd);
  return http1;
}

// One sentence on why the transport to the server failed, or "" when the probe finds nothing
// specific (then gRPC's own message stands).
std::string DiagnoseTransport(const RemoteArgs& r, bool tls) {
  const auto hp = SplitTarget(r.server);
  if (!hp) return "";
  std::string error;
  const int fd = ConnectTcp(*hp, &error);
  if (fd < 0) {
    return "nothing accepts connections at " + r.server + " (" + error +
           "): is axqc-server running there, on this port?";
  }
  if (!tls && SpeaksPlaintextHttp1(*hp)) {
    ::close(fd);
    return r.server +
           " answers HTTP/1.1, not gRPC: it looks like axqc-server's HTTP port (--http-listen); "
           "pass its gRPC address (--listen, port 50051 by default), or probe this port with "
           "curl http://" +
           r.server + "/readyz";
  }
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  SSL* ssl = nullptr;
  bool cert_requested = false;
  std::string diagnosis;
  auto finish = [&]() {
    if (ssl != nullptr) SSL_free(ssl);
    if (ctx != nullptr) SSL_CTX_free(ctx);
    ::close(fd);
    ERR_clear_error();
    return diagnosis;
  };
  if (ctx == nullptr) return finish();
  // Called when the server asks for a client certificate (mutual TLS).
  SSL_CTX_set_cert_cb(
      ctx,
      [](SSL* /*ssl*/, void* arg) {
        *static_cast<bool*>(arg) = true;
        return 1;
      },
      &cert_requested);
  if (tls) {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
    if (!r.ca.empty()) {
      (void)SSL_CTX_load_verify_locations(ctx, r.ca.c_str(), nullptr);
    } else {
      (void)SSL_CTX_set_default_verify_paths(ctx);
    }
    if (!r.cert.empty() && !r.key.empty()) {
      (void)SSL_CTX_use_certificate_chain_file(ctx, r.cert.c_str());
      (void)SSL_CTX_use_PrivateKey_file(ctx, r.key.c_str(), SSL_FILETYPE_PEM);
    }
  }
  ssl = SSL_new(ctx);
  if (ssl == nullptr) return finish();
  SSL_set_fd(ssl, fd);
  in6_addr addr6{};
  in_addr addr4{};
  const bool ip = ::inet_pton(AF_INET, hp->host.c_str(), &addr4) == 1 ||
                  ::inet_pton(AF_INET6, hp->host.c_str(), &addr6) == 1;
  if (!ip) {
    // SSL_set_tlsext_host_name without its C cast.
    (void)SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
                   const_cast<char*>(hp->host.c_str()));
  }
  if (tls) {
    if (ip) {
      X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), hp->host.c_str());
    } else {
      SSL_set1_host(ssl, hp->host.c_str());
    }
  }
  const IgnoreSigpipe no_sigpipe;
  ERR_clear_error();
  errno = 0;
  const int connected = SSL_connect(ssl);
  const bool handshake = connected == 1;
  bool read_failed = false;  // the server closed the connection right after the handshake
  std::string errors = OpenSslErrors();
  // What the messages below show: OpenSSL's reasons, or else why the connection ended.
  std::string reason = !errors.empty() || handshake ? errors : SslFailure(ssl, connected, errno);
  if (handshake) {
    // TLS 1.3: the server judges the client certificate after the client finished its part of the
    // handshake; its verdict (an alert) arrives with the first read.
    static const char kPreface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    (void)SSL_write(ssl, kPreface, static_cast<int>(sizeof(kPreface) - 1));
    ERR_clear_error();
    errno = 0;
    char buf[64];
    const int got = SSL_read(ssl, buf, sizeof(buf));
    if (got <= 0) {
      errors = OpenSslErrors();
      reason = !errors.empty() ? errors : SslFailure(ssl, got, errno);
      read_failed = true;
    }
  }
  const long verify = SSL_get_verify_result(ssl);
  const bool plaintext_server = Contains(errors, "wrong version number") ||
                                Contains(errors, "packet length too long") ||
                                Contains(errors, "record layer failure");
  const bool cert_alert =
      Contains(errors, "certificate required") || Contains(errors, "unknown ca") ||
      Contains(errors, "bad certificate") || Contains(errors, "certificate unknown") ||
      Contains(errors, "decrypt error") || Contains(errors, "handshake failure") ||
      Contains(errors, "unsupported certificate");
  const bool has_cert = !r.cert.empty() && !r.key.empty();
  if (!tls) {
    if (handshake ||
        (!plaintext_server && !errors.empty() && !Contains(errors, "unexpected eof"))) {
      diagnosis = "the server at " + r.server +
                  " requires TLS: pass --ca FILE (the CA that signed its certificate) or --tls "
                  "(publicly trusted certificate)";
      if (cert_requested) {
        diagnosis += ", and a client certificate: --cert FILE --key FILE (mutual TLS)";
      }
    }
  } else if (plaintext_server ||
             (!handshake && verify == X509_V_OK && !cert_alert && SpeaksPlaintextHttp2(*hp))) {
    diagnosis = "the server at " + r.server +
                " does not speak TLS (plaintext port): drop --tls, --ca, --cert and --key, or "
                "start the server with --tls-cert-file/--tls-key-file";
  } else if (verify != X509_V_OK) {
    diagnosis = "the server's certificate is not trusted: " +
                std::string(X509_verify_cert_error_string(verify)) +
                (r.ca.empty() ? " (checked against the system's CA certificates; pass --ca FILE "
                                "with the CA that signed it)"
                              : " (checked against --ca " + r.ca + ")");
    if (verify == X509_V_ERR_HOSTNAME_MISMATCH || verify == X509_V_ERR_IP_ADDRESS_MISMATCH) {
      diagnosis += ": connect with a name or address the certificate lists";
    }
  } else if (cert_requested && !has_cert) {
    diagnosis = "the server at " + r.server +
                " requires a client certificate (mutual TLS): pass --cert FILE --key FILE";
  } else if (cert_requested && (cert_alert || read_failed || !handshake)) {
    diagnosis = "the server at " + r.server + " rejected the client certificate " + r.cert + " (" +
                reason +
                "): it must be signed by a CA the server trusts (its --tls-client-ca-file)";
  }
  return finish();
}

// ------------------------------------------------------------------------------------------------
// A channel to the server plus what every call needs.

// gRPC's own log lines (connection errors, handshake failures) are not for the user of a command
// line tool: axqc explains failures itself. GRPC_VERBOSITY or GRPC_TRACE brings them back.
void QuietGrpcLogs() {
  if (std::getenv("GRPC_VERBOSITY") != nullptr || std::getenv("GRPC_TRACE") != nullptr) return;
  gpr_set_log_function([](gpr_log_func_args* /*args*/) {});
}

class Connection {
 public:
  // Returns nullptr (after printing why) when the TLS files cannot be read.
  static std::unique_ptr<Connection> Open(const RemoteArgs& r, int default_retries,
                                          double default_deadline) {
    QuietGrpcLogs();
    auto c = std::unique_ptr<Connection>(new Connection());
    c->args_ = r;
    c->server_ = r.server;
    c->retries_ = r.retries >= 0 ? r.retries : default_retries;
    c->deadline_ = r.deadline_seconds > 0 ? r.deadline_seconds : default_deadline;
    if (!r.token.empty()) {
      c->token_ = r.token;
    } else if (const char* env = std::getenv("AXQC_TOKEN"); env != nullptr) {
      c->token_ = env;
    }
    std::shared_ptr<grpc::ChannelCredentials> creds;
    c->tls_ = r.tls || !r.ca.empty() || !r.cert.empty() || !r.key.empty();
    if (c->tls_) {
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
  bool has_token() const { return !token_.empty(); }

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
      std::string id;
      const auto& md = ctx.GetServerInitialMetadata();
      if (auto it = md.find("x-request-id"); it != md.end()) {
        id.assign(it->second.data(), it->second.size());
      }
      if (request_id != nullptr) *request_id = id;
      // An UNAVAILABLE without the server's request id never reached axqc-server.
      last_unreachable_ = s.error_code() == grpc::StatusCode::UNAVAILABLE && id.empty();
      if (s.error_code() != grpc::StatusCode::UNAVAILABLE || i >= retries_) return s;
      std::this_thread::sleep_for(RetryBackoff(i));
    }
  }

  // True when the last call failed because the server could not be reached or refused the
  // credentials: the following calls would fail the same way.
  bool Unusable(const grpc::Status& s) const {
    return (s.error_code() == grpc::StatusCode::UNAVAILABLE && last_unreachable_) ||
           s.error_code() == grpc::StatusCode::UNAUTHENTICATED;
  }

  // One line for a failed RPC, with the cause when it is known.
  std::string Describe(const grpc::Status& s, const std::string& request_id = "") const {
    std::string msg = std::string(wire::StatusCodeName(s.error_code())) + ": " + s.error_message();
    if (!request_id.empty()) msg += " (request id " + request_id + ")";
    switch (s.error_code()) {
      case grpc::StatusCode::UNAUTHENTICATED:
        msg = "the server " + server_ + " refused the request: " + msg +
              (token_.empty() ? "; it needs a bearer token: pass --token or set AXQC_TOKEN"
                              : "; check the token (--token / AXQC_TOKEN)");
        break;
      case grpc::StatusCode::UNAVAILABLE:
        if (last_unreachable_) {
          if (!diagnosed_) {
            diagnosis_ = DiagnoseTransport(args_, tls_);
            diagnosed_ = true;
          }
          msg = "cannot reach axqc-server at " + server_ + " (after " +
                std::to_string(retries_ + 1) + " attempt" + (retries_ == 0 ? "" : "s") +
                "): " + (diagnosis_.empty() ? msg : diagnosis_ + " [" + msg + "]");
        }
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
  RemoteArgs args_;
  std::string server_;
  std::string token_;
  bool tls_ = false;
  int retries_ = 0;
  double deadline_ = 30;
  mutable bool last_unreachable_ = false;
  mutable bool diagnosed_ = false;
  mutable std::string diagnosis_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Checker::Stub> stub_;
  std::unique_ptr<HealthStub::Stub> health_;
};

// Exit code of a failed RPC: 2 when the request or the model is at fault, 4 when the server gave
// no verdict (unreachable, credentials, deadline, overload, server failure).
int ExitCodeForStatus(const grpc::Status& s) {
  switch (s.error_code()) {
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::NOT_FOUND:
    case grpc::StatusCode::PERMISSION_DENIED:
    case grpc::StatusCode::FAILED_PRECONDITION:
    case grpc::StatusCode::OUT_OF_RANGE:
      return kExitError;
    default:
      return kExitNoVerdict;
  }
}

// The metadata of an Upload of the model file at `path` (full or ranged): name, labels, options,
// the graph file's size and sha256.
void FillUploadMetadata(const CheckArgs& a, const std::string& path,
                        const v1::CheckOptions& options, std::uint64_t size,
                        const std::string& graph_sha256, v1::UploadMetadata* md) {
  md->set_file_name(path);
  for (const auto& [k, v] : a.labels) (*md->mutable_labels())[k] = v;
  *md->mutable_options() = options;
  md->set_size_bytes(size);
  md->set_sha256(graph_sha256);
}

v1::CheckOptions ProtoOptions(const CheckArgs& a) {
  v1::CheckOptions o;
  o.set_check_value(a.check_value);
  o.set_max_locations(
      static_cast<std::uint32_t>(std::min<std::size_t>(a.max_locations, wire::kMaxLocations)));
  o.set_format(v1::REPORT_FORMAT_PROTOBUF);
  for (const auto& t : a.targets) o.add_targets(t);
  if (a.pulsar2_config_text) o.set_pulsar2_config(*a.pulsar2_config_text);
  return o;
}

// Fills `m` from a successful response. `recorded`: the request is a row of the server's history.
void TakeReport(const v1::CheckResponse& resp, ModelResult* m, bool recorded) {
  try {
    m->report = wire::FromProto(resp.report());
    m->ok = true;
    m->request_id = resp.request_id();
    m->recorded = recorded && !resp.request_id().empty();
    m->exit_code = ExitCodeFor(m->report.verdict);
  } catch (const std::exception& e) {
    m->ok = false;
    m->exit_code = kExitNoVerdict;
    m->error_kind = "server error";
    m->error = m->file + ": unreadable report from the server: " + e.what();
  }
}

void TakeError(const Connection& c, const grpc::Status& s, const std::string& request_id,
               ModelResult* m) {
  m->ok = false;
  m->exit_code = ExitCodeForStatus(s);
  // The bytes are not an ONNX model, a path is missing, ...: about the input, as in local mode.
  m->error_kind = m->exit_code == kExitError ? "input error" : "no verdict from the server";
  m->error = m->file + ": " + c.Describe(s, request_id);
  m->stop = c.Unusable(s);
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

// An external data file of a local model, read from beside it.
struct LocalDataFile {
  std::string name;  // normalized, as the model's tensors name it
  std::string path;
  std::uint64_t size = 0;
  std::string sha256;
};

// The external data files the model at `path` names (ExternalDataLocations), found beside it with
// the command line's own rules: a location the checker refuses, or one that does not resolve to a
// regular file inside the model's folder, is not sent (the server's check then names it). Empty
// for a model without external data. `*error` is set when a file cannot be read.
std::vector<LocalDataFile> LocalDataFiles(const std::string& path, std::string* error,
                                          bool hash = true) {
  std::vector<LocalDataFile> out;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  struct stat st {};
  std::vector<std::string> locations;
  if (::fstat(fd, &st) == 0 && st.st_size > 0) {
    const auto len = static_cast<std::size_t>(st.st_size);
    void* map = ::mmap(nullptr, len, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map != MAP_FAILED) {
      locations = ExternalDataLocations(std::string_view(static_cast<const char*>(map), len),
                                        isolate::kMaxDataFiles + 1);
      ::munmap(map, len);
    }
  }
  ::close(fd);
  if (locations.empty()) return out;
  std::error_code ec;
  const fs::path dir = fs::canonical(fs::absolute(path).parent_path(), ec);
  if (ec) return out;
  for (const auto& location : locations) {
    if (!ExternalDataNameProblem(location).empty()) continue;
    LocalDataFile f;
    f.name = NormalizeExternalDataName(location);
    const fs::path target = fs::canonical(dir / f.name, ec);
    if (ec || !fs::is_regular_file(target, ec)) continue;
    const fs::path rel = target.lexically_relative(dir);
    if (rel.empty() || *rel.begin() == "..") continue;
    f.path = target.string();
    if (!hash) {
      f.size = static_cast<std::uint64_t>(fs::file_size(target, ec));
      if (ec) {
        *error = f.path + ": cannot read its size";
        return {};
      }
      out.push_back(std::move(f));
      continue;
    }
    axqc::Sha256 hasher;
    std::ifstream in(f.path, std::ios::binary);
    std::string buf(kChunkBytes, '\0');
    while (in) {
      in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
      const auto n = static_cast<std::size_t>(in.gcount());
      if (n == 0) break;
      hasher.Update(std::string_view(buf.data(), n));
      f.size += n;
    }
    if (in.bad()) {
      *error = f.path + ": read error";
      return {};
    }
    f.sha256 = hasher.HexDigest();
    out.push_back(std::move(f));
  }
  return out;
}

// The bundle hash of a model and its data files (isolate/data_files.h), the key the server uses.
std::string BundleSha256(const std::string& graph_sha256, const std::vector<LocalDataFile>& files) {
  std::vector<const LocalDataFile*> sorted;
  for (const auto& f : files) sorted.push_back(&f);
  std::sort(sorted.begin(), sorted.end(),
            [](const LocalDataFile* x, const LocalDataFile* y) { return x->name < y->name; });
  std::string text = "axqc-external-data/1\n" + graph_sha256 + "\n";
  for (const LocalDataFile* f : sorted) {
    text += f->name + "\n" + std::to_string(f->size) + "\n" + f->sha256 + "\n";
  }
  return axqc::Sha256Hex(text);
}

// A ranged upload (UploadMetadata.ranged_data) of a model with external data files: the graph file
// and each data file's size first, then the byte ranges the server names in
// CheckResponse.external_ranges, until it answers with a report (at most kRangedRounds uploads).
constexpr int kRangedRounds = 4;

ModelResult CheckRanged(const Connection& c, v1::Checker::Stub& stub, const CheckArgs& a,
                        const std::string& path, std::uint64_t size,
                        const std::string& graph_sha256, const std::vector<LocalDataFile>& files) {
  ModelResult m;
  m.file = path;
  m.exit_code = kExitError;
  const v1::CheckOptions options = ProtoOptions(a);
  const std::string name = fs::path(path).filename().string();
  std::vector<std::vector<ExternalRange> > ranges(files.size());
  v1::CheckResponse resp;
  std::string request_id;
  for (int round = 0; round < kRangedRounds; ++round) {
    std::uint64_t total = size;
    for (const auto& r : ranges) {
      for (const auto& b : r) total += b.length;
    }
    grpc::Status s = c.Call(
        [&](grpc::ClientContext* ctx) {
          resp.Clear();
          auto writer = stub.Upload(ctx, &resp);
          v1::UploadRequest first;
          auto* md = first.mutable_metadata();
          FillUploadMetadata(a, path, options, size, graph_sha256, md);
          md->set_ranged_data(true);
          for (std::size_t i = 0; i < files.size(); ++i) {
            auto* d = md->add_data_files();
            d->set_name(files[i].name);
            d->set_size_bytes(files[i].size);
            for (const auto& r : ranges[i]) {
              auto* pr = d->add_ranges();
              pr->set_offset(r.offset);
              pr->set_length(r.length);
            }
          }
          bool ok = writer->Write(first);
          Progress progress(a.progress, name, total);
          std::uint64_t sent = 0;
          std::string buf(kChunkBytes, '\0');
          {
            std::ifstream in(path, std::ios::binary);
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
          }
          for (std::size_t i = 0; ok && i < files.size(); ++i) {
            if (ranges[i].empty()) continue;
            std::ifstream in(files[i].path, std::ios::binary);
            for (const auto& r : ranges[i]) {
              in.seekg(static_cast<std::streamoff>(r.offset));
              std::uint64_t left = r.length;
              while (ok && left > 0) {
                const auto want =
                    static_cast<std::size_t>(std::min<std::uint64_t>(left, buf.size()));
                in.read(buf.data(), static_cast<std::streamsize>(want));
                if (static_cast<std::size_t>(in.gcount()) != want) {
                  ctx->TryCancel();
                  ok = false;
                  break;
                }
                v1::UploadRequest msg;
                msg.mutable_data_chunk()->set_file(static_cast<std::uint32_t>(i));
                msg.mutable_data_chunk()->set_data(buf.data(), want);
                ok = writer->Write(msg);
                left -= want;
                sent += want;
                progress.Update(sent);
              }
            }
          }
          progress.Done();
          if (ok) writer->WritesDone();
          return writer->Finish();
        },
        &request_id);
    if (!s.ok()) {
      TakeError(c, s, request_id, &m);
      return m;
    }
    if (resp.external_ranges_size() == 0) {
      TakeReport(resp, &m, true);
      return m;
    }
    // The server names the ranges its check reads: take them (only of files sent, inside them).
    std::vector<std::vector<ExternalRange> > next(files.size());
    for (const auto& fr : resp.external_ranges()) {
      std::size_t i = 0;
      while (i < files.size() && files[i].name != fr.name()) ++i;
      std::vector<ExternalRange> r;
      for (const auto& b : fr.ranges()) r.push_back({b.offset(), b.length()});
      const std::string why = i < files.size() ? RangesProblem(r, files[i].size) : "unknown file";
      if (!why.empty()) {
        m.error = path + ": the server asked for ranges of data file '" + fr.name().substr(0, 200) +
                  "' that are not valid (" + why + ")";
        return m;
      }
      next[i] = std::move(r);
    }
    if (next == ranges) break;  // asked again for what was sent: no progress
    ranges = std::move(next);
  }
  m.error = path +
            ": the server kept asking for other byte ranges of the external data files "
            "(a ranged upload did not converge); try --full-upload";
  return m;
}

// A local file: GetReport by hash, Upload on NOT_FOUND. A model with external data files is
// looked up by its bundle hash and uploaded with its data files (UploadMetadata.data_files).
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
  axqc::Sha256 hasher;
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
  const std::string graph_sha256 = hasher.HexDigest();
  std::string data_error;
  if (!a.full_upload) {
    // External data: only the bytes the check reads are sent (a ranged upload).
    const std::vector<LocalDataFile> ranged = LocalDataFiles(path, &data_error, false);
    if (!data_error.empty()) {
      m.error = data_error;
      return m;
    }
    if (!ranged.empty()) return CheckRanged(c, stub, a, path, size, graph_sha256, ranged);
  }
  const std::vector<LocalDataFile> data_files = LocalDataFiles(path, &data_error);
  if (!data_error.empty()) {
    m.error = data_error;
    return m;
  }
  const std::string sha256 =
      data_files.empty() ? graph_sha256 : BundleSha256(graph_sha256, data_files);
  std::uint64_t total = size;
  for (const auto& f : data_files) total += f.size;
  const v1::CheckOptions options = ProtoOptions(a);

  // Hash first: the lookup is this check (recorded with its labels when the server knows the
  // model); NOT_FOUND means "upload it".
  v1::GetReportRequest get;
  get.set_sha256(sha256);
  *get.mutable_options() = options;
  get.set_name(path);
  get.set_record_check(a.record);
  for (const auto& [k, v] : a.labels) (*get.mutable_labels())[k] = v;
  v1::CheckResponse resp;
  std::string request_id;
  grpc::Status s = c.Call(
      [&](grpc::ClientContext* ctx) {
        resp.Clear();
        return stub.GetReport(ctx, get, &resp);
      },
      &request_id);
  if (s.ok()) {
    TakeReport(resp, &m, a.record);
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
        FillUploadMetadata(a, path, options, size, graph_sha256, md);
        for (const auto& f : data_files) {
          auto* d = md->add_data_files();
          d->set_name(f.name);
          d->set_size_bytes(f.size);
          d->set_sha256(f.sha256);
        }
        bool ok = writer->Write(first);
        Progress progress(a.progress, name, total);
        std::uint64_t sent = 0;
        std::string buf(kChunkBytes, '\0');
        // The model, then each data file (index -1: the model).
        for (int file = -1; ok && file < static_cast<int>(data_files.size()); ++file) {
          std::ifstream in(file < 0 ? path : data_files[static_cast<std::size_t>(file)].path,
                           std::ios::binary);
          while (ok && in) {
            in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
            const auto n = static_cast<std::size_t>(in.gcount());
            if (n == 0) break;
            v1::UploadRequest msg;
            if (file < 0) {
              msg.set_chunk(buf.data(), n);
            } else {
              msg.mutable_data_chunk()->set_file(static_cast<std::uint32_t>(file));
              msg.mutable_data_chunk()->set_data(buf.data(), n);
            }
            ok = writer->Write(msg);
            sent += n;
            progress.Update(sent);
          }
        }
        progress.Done();
        if (ok) writer->WritesDone();
        return writer->Finish();
      },
      &request_id);
  if (s.ok()) {
    TakeReport(resp, &m, true);
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
    TakeReport(resp, &m, true);
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
    << c.invalid_input() << "  pass rate " << (c.has_pass_rate() ? Percent(c.pass_rate()) : "n/a");
  if (c.gated() > 0) {
    // Clients that applied waivers or a baseline and reported their gate (RecordGate).
    o << "  gate passed " << c.gate_passed() << "/" << c.gated() << " (waived "
      << c.waived_findings() << ", baselined " << c.baselined_findings() << ")";
  }
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

// Sends the gate outcome of every recorded check to the server (RecordGate), which adds it to
// the check's history row. Best effort: the run's verdict does not depend on it; a server that
// predates RecordGate (UNIMPLEMENTED) is left alone.
void RecordGateOutcomes(const Connection& c, v1::Checker::Stub& stub,
                        const std::vector<ModelResult>& results) {
  for (const auto& m : results) {
    if (!m.ok || !m.recorded) continue;
    const GateResult& g = m.report.gate;
    v1::RecordGateRequest req;
    req.set_request_id(m.request_id);
    req.set_sha256(m.report.model.sha256);
    auto* o = req.mutable_outcome();
    o->set_passed(g.verdict != GateVerdict::kFail);
    o->set_counted_errors(g.counted.errors);
    o->set_counted_warnings(g.counted.warnings);
    o->set_waived_errors(g.waived.errors);
    o->set_waived_warnings(g.waived.warnings);
    o->set_baselined_errors(g.baselined.errors);
    o->set_baselined_warnings(g.baselined.warnings);
    v1::RecordGateResponse resp;
    const grpc::Status s = c.Call([&](grpc::ClientContext* ctx) {
      resp.Clear();
      return stub.RecordGate(ctx, req, &resp);
    });
    if (s.error_code() == grpc::StatusCode::UNIMPLEMENTED) return;
    if (!s.ok()) {
      std::cerr << "axqc: note: the server did not record the gate outcome of " << m.file << ": "
                << c.Describe(s) << "\n";
    }
  }
}

}  // namespace

int RunRemoteCheck(const CheckArgs& args, GateSetup& gate) {
  auto c = Connection::Open(args.remote, 4, 600);
  if (c == nullptr) return kExitError;
  std::vector<ModelResult> results;
  std::string stopped;  // why the server cannot be used; the remaining models are not tried
  auto run = [&](const std::string& what, bool ref) {
    if (!stopped.empty()) {
      ModelResult m;
      m.file = what;
      m.exit_code = kExitNoVerdict;
      m.error_kind = "no verdict from the server";
      m.error = what + ": not checked: " + stopped;
      results.push_back(std::move(m));
      return;
    }
    results.push_back(ref ? CheckRef(*c, c->stub(), args, what)
                          : CheckLocalFile(*c, c->stub(), args, what));
    if (results.back().stop) {
      stopped = "the server failed for " + what + " before (see above)";
    }
  };
  for (const auto& path : args.models) run(path, false);
  for (const auto& ref : args.refs) run(ref, true);
  // Waivers and the baseline apply here, to the server's reports (its cache stays per model);
  // the outcome goes back to the server's history.
  if (!ApplyGateToResults(args, gate, results)) return kExitError;
  if (gate.policy.active && stopped.empty()) RecordGateOutcomes(*c, c->stub(), results);
  ApplyTargetExitCodes(args, results);
  ApplyNotApplicableExitCodes(args, results);
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
    return ExitCodeForStatus(s);
  }
  if (format == "json") {
    nlohmann::json rules = nlohmann::json::array();
    for (const auto& r : resp.rules()) {
      std::string sev = "error";
      try {
        sev = std::string(SeverityName(wire::SeverityFromProto(r.severity())));
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
      sev = std::string(SeverityName(wire::SeverityFromProto(r.severity())));
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
      std::cerr << "axqc: --since expects a duration with a unit, like 2w, 7d, 24h, 30m or 90s, "
                   "got '"
                << args.since << "'\n";
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
    return ExitCodeForStatus(s);
  }
  if (args.format == "json") {
    // A window without decided requests has no pass rate: null rather than absent.
    auto j = nlohmann::ordered_json::parse(ProtoJson(resp));
    auto null_rate = [](nlohmann::ordered_json& counts) {
      if (counts.is_object() && !counts.contains("pass_rate")) counts["pass_rate"] = nullptr;
    };
    null_rate(j["total"]);
    if (j.contains("groups")) {
      for (auto& g : j["groups"]) null_rate(g["counts"]);
    }
    std::cout << j.dump(2) << "\n";
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
    // Describe first: its probe of the transport may take seconds, and the line is written whole.
    const std::string why = c->Describe(s);
    std::cerr << "axqc: health: " << why << "\n";
    return kExitNoVerdict;
  }
  const std::string status =
      grpc::health::v1::HealthCheckResponse::ServingStatus_Name(resp.status());
  std::cout << status << "\n";
  return resp.status() == grpc::health::v1::HealthCheckResponse::SERVING ? 0 : 1;
}

#endif  // AXQC_REMOTE

}  // namespace axqc::cli
