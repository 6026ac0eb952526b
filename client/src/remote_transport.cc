// The transport of remote mode (remote_transport.h): the channel and its credentials, and why a
// connection failed, found by connecting ourselves.
#include "remote_transport.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <grpc/support/log.h>
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string_view>

#include "axqc/version.h"
#include "axqc/wire/status_name.h"
#include "exit_codes.h"

namespace axqc::cli {

namespace {

constexpr int kMaxReceiveBytes = 1 << 30;  // big non-conformant reports

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

}  // namespace

std::unique_ptr<Connection> Connection::Open(const RemoteArgs& r, int default_retries,
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

std::string Connection::Describe(const grpc::Status& s, const std::string& request_id) const {
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
        msg = "cannot reach axqc-server at " + server_ + " (after " + std::to_string(retries_ + 1) +
              " attempt" + (retries_ == 0 ? "" : "s") +
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

}  // namespace axqc::cli
