#include "url_fetch.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <system_error>

// GCC's -Wnull-dereference fires inside Asio's scheduler (scheduler.ipp) when run_for() is
// inlined here; the diagnostic is a false positive in third-party code.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#pragma GCC diagnostic pop

#include "axqc/external_data.h"
#include "axqc/sha256.h"
#include "protocol.h"
#include "request_validation.h"

namespace axqc::server {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

namespace {

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

[[noreturn]] void Bad(const std::string& msg) {
  throw SourceError(grpc::StatusCode::INVALID_ARGUMENT, msg);
}

bool ValidPort(const std::string& p) {
  unsigned v = 0;
  auto [ptr, ec] = std::from_chars(p.data(), p.data() + p.size(), v);
  return ec == std::errc() && ptr == p.data() + p.size() && v >= 1 && v <= 65535;
}

// A data file's body goes to a file instead (written sparse, hashed as it arrives).
struct FileTarget {
  int fd = -1;
  std::uint64_t written = 0;
  axqc::Sha256 hash;
};

// Appends `bytes` to the file (runs of zeros are skipped: the file is sparse there; its size is
// set at the end) and hashes them. Throws std::system_error.
void WriteSparse(FileTarget& f, std::string_view bytes) {
  f.hash.Update(bytes);
  const bool zeros = std::all_of(bytes.begin(), bytes.end(), [](char c) { return c == 0; });
  std::size_t done = zeros ? bytes.size() : 0;
  while (done < bytes.size()) {
    const ssize_t n = ::pwrite(f.fd, bytes.data() + done, bytes.size() - done,
                               static_cast<off_t>(f.written + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::system_error(errno, std::generic_category(), "writing a data file");
    done += static_cast<std::size_t>(n);
  }
  f.written += bytes.size();
}

// A response body received straight into a model buffer (isolate/model_buffer.h: a memfd, written
// with write(); no heap copy of the model, and a worker process is later handed the same memfd).
struct ModelBufferBody {
  struct value_type {
    std::unique_ptr<isolate::ModelBuffer> buffer;
    FileTarget* file = nullptr;  // set: the body goes there, `buffer` stays null
    std::uint64_t size() const {
      return file != nullptr ? file->written : buffer != nullptr ? buffer->size() : 0;
    }
  };

  class reader {
   public:
    template <bool kIsRequest, class Fields>
    reader(http::header<kIsRequest, Fields>& /*header*/, value_type& body) : body_(body) {}

    void init(const boost::optional<std::uint64_t>& length, beast::error_code& ec) {
      ec = {};
      if (body_.file != nullptr) return;
      body_.buffer = std::make_unique<isolate::ModelBuffer>(isolate::ModelBuffer::Backing::kMemfd,
                                                            length ? *length : 0);
      ec = {};
    }

    template <class ConstBufferSequence>
    std::size_t put(const ConstBufferSequence& buffers, beast::error_code& ec) {
      std::size_t n = 0;
      try {
        for (const auto b : beast::buffers_range_ref(buffers)) {
          const std::string_view bytes(static_cast<const char*>(b.data()), b.size());
          if (body_.file != nullptr) {
            WriteSparse(*body_.file, bytes);
          } else {
            body_.buffer->Append(bytes);
          }
          n += b.size();
        }
        ec = {};
      } catch (const std::system_error& e) {
        ec = beast::error_code(e.code().value(), boost::system::generic_category());
      }
      return n;
    }

    void finish(beast::error_code& ec) { ec = {}; }

   private:
    value_type& body_;
  };
};

// Result of one request/response exchange.
struct Hop {
  beast::error_code ec;
  const char* stage = "";
  unsigned status = 0;
  std::string location;
  std::unique_ptr<isolate::ModelBuffer> body;  // the 200 answer's body
  // Bytes of the body charged to the byte budget while it is read (the declared Content-Length
  // up front, else as it arrives).
  Reservation reservation;
  std::string budget_error;  // set when the budget refused the body
};

// One GET over plain TCP or TLS, driven by callbacks on a private io_context.
template <bool kTls>
class GetOp : public std::enable_shared_from_this<GetOp<kTls>> {
 public:
  using Stream = std::conditional_t<kTls, beast::ssl_stream<beast::tcp_stream>, beast::tcp_stream>;

  GetOp(net::io_context& ioc, net::ssl::context* tls, ParsedUrl url,
        std::chrono::steady_clock::time_point deadline, std::uint64_t max_bytes, Hop* out,
        const UrlPolicy* extra, FileTarget* file)
      : extra_(extra),
        resolver_(ioc),
        stream_(MakeStream(ioc, tls)),
        url_(std::move(url)),
        deadline_(deadline),
        max_bytes_(max_bytes),
        out_(out) {
    parser_.body_limit(max_bytes);
    parser_.header_limit(64 * 1024);
    parser_.get().body().file = file;
  }

  void Start() {
    resolver_.async_resolve(
        url_.host, url_.port,
        [self = this->shared_from_this()](beast::error_code ec, tcp::resolver::results_type r) {
          self->OnResolve(ec, std::move(r));
        });
  }

 private:
  static Stream MakeStream(net::io_context& ioc, net::ssl::context* tls) {
    if constexpr (kTls) {
      return Stream(ioc, *tls);
    } else {
      (void)tls;
      return Stream(ioc);
    }
  }
  beast::tcp_stream& Tcp() { return beast::get_lowest_layer(stream_); }
  bool Fail(beast::error_code ec, const char* stage) {
    if (!ec) return false;
    out_->ec = ec;
    out_->stage = stage;
    return true;
  }

  void OnResolve(beast::error_code ec, tcp::resolver::results_type results) {
    if (Fail(ec, "resolve")) return;
    Tcp().expires_at(deadline_);
    Tcp().async_connect(
        results, [self = this->shared_from_this()](beast::error_code e, const tcp::endpoint&) {
          self->OnConnect(e);
        });
  }

  void OnConnect(beast::error_code ec) {
    if (Fail(ec, "connect")) return;
    if constexpr (kTls) {
      // SSL_set_tlsext_host_name without its C cast.
      if (SSL_ctrl(stream_.native_handle(), SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
                   static_cast<void*>(const_cast<char*>(url_.host.c_str()))) != 1) {
        Fail(beast::error_code(static_cast<int>(::ERR_get_error()), net::error::get_ssl_category()),
             "tls");
        return;
      }
      stream_.set_verify_mode(net::ssl::verify_peer);
      stream_.set_verify_callback(net::ssl::host_name_verification(url_.host));
      Tcp().expires_at(deadline_);
      stream_.async_handshake(
          net::ssl::stream_base::client,
          [self = this->shared_from_this()](beast::error_code e) { self->OnReady(e); });
    } else {
      OnReady(ec);
    }
  }

  void OnReady(beast::error_code ec) {
    if (Fail(ec, "tls handshake")) return;
    req_.method(http::verb::get);
    req_.target(url_.target);
    req_.version(11);
    req_.set(http::field::host, url_.HostHeader());
    req_.set(http::field::user_agent, "axqc-server");
    req_.set(http::field::accept, "*/*");
    req_.set(http::field::connection, "close");
    if (extra_ != nullptr) {
      req_.method_string(extra_->method);
      for (const auto& [k, v] : extra_->headers) req_.set(k, v);
      if (!extra_->content_type.empty()) req_.set(http::field::content_type, extra_->content_type);
      if (extra_->method != "GET" || !extra_->body.empty()) {
        req_.body() = extra_->body;
        req_.prepare_payload();
      }
    }
    Tcp().expires_at(deadline_);
    http::async_write(
        stream_, req_,
        [self = this->shared_from_this()](beast::error_code e, std::size_t) { self->OnWrite(e); });
  }

  void OnWrite(beast::error_code ec) {
    if (Fail(ec, "write")) return;
    Tcp().expires_at(deadline_);
    http::async_read_header(
        stream_, buffer_, parser_,
        [self = this->shared_from_this()](beast::error_code e, std::size_t) { self->OnHeader(e); });
  }

  void OnHeader(beast::error_code ec) {
    if (Fail(ec, "read")) return;
    const auto& h = parser_.get();
    out_->status = h.result_int();
    if (out_->status != 200) {
      if (auto it = h.find(http::field::location); it != h.end()) {
        out_->location = std::string(it->value());
      }
      return;  // the body of a non-200 answer is not read
    }
    // The body is charged to the byte budget before it is buffered: a declared length at once
    // (the parser reserves that much memory when the body starts), otherwise as it arrives.
    if (const auto length = parser_.content_length()) {
      if (*length > max_bytes_) {
        Fail(http::error::body_limit, "read");
        return;
      }
      if (!Reserve(*length)) return;
    }
    ReadSome();
  }

  void ReadSome() {
    Tcp().expires_at(deadline_);
    http::async_read_some(
        stream_, buffer_, parser_,
        [self = this->shared_from_this()](beast::error_code e, std::size_t) { self->OnSome(e); });
  }

  void OnSome(beast::error_code ec) {
    if (Fail(ec, "read")) return;
    if (!Reserve(parser_.get().body().size())) return;
    if (!parser_.is_done()) {
      ReadSome();
      return;
    }
    out_->body = std::move(parser_.get().body().buffer);
  }

  // Grows the reservation to `total` bytes; false (and the hop failed) when the budget refuses.
  bool Reserve(std::uint64_t total) {
    Reservation& r = out_->reservation;
    if (total <= r.bytes()) return true;
    try {
      r.Grow(total - r.bytes());
      return true;
    } catch (const SourceError& e) {
      out_->budget_error = e.what();
      return false;
    }
  }

  const UrlPolicy* extra_;  // method, body, headers; null: a plain GET
  tcp::resolver resolver_;
  Stream stream_;
  ParsedUrl url_;
  std::chrono::steady_clock::time_point deadline_;
  std::uint64_t max_bytes_;
  Hop* out_;
  beast::flat_buffer buffer_;
  http::request<http::string_body> req_;
  http::response_parser<ModelBufferBody> parser_;
};

Hop RunHop(const ParsedUrl& url, std::chrono::steady_clock::time_point deadline,
           std::uint64_t max_bytes, ByteBudget& budget, const std::atomic<bool>& cancelled,
           const UrlPolicy* extra, FileTarget* file) {
  net::io_context ioc;
  Hop hop;
  hop.reservation = Reservation(&budget);
  std::optional<net::ssl::context> tls;
  if (url.scheme == "https") {
    tls.emplace(net::ssl::context::tls_client);
    tls->set_default_verify_paths();
    tls->set_options(net::ssl::context::default_workarounds | net::ssl::context::no_sslv2 |
                     net::ssl::context::no_sslv3 | net::ssl::context::no_tlsv1 |
                     net::ssl::context::no_tlsv1_1);
    std::make_shared<GetOp<true>>(ioc, &*tls, url, deadline, max_bytes, &hop, extra, file)->Start();
  } else {
    std::make_shared<GetOp<false>>(ioc, nullptr, url, deadline, max_bytes, &hop, extra, file)
        ->Start();
  }
  // Poll so that a cancelled request stops the fetch within ~50 ms.
  while (!ioc.stopped()) {
    ioc.run_for(std::chrono::milliseconds(50));
    if (cancelled.load()) {
      ioc.stop();
      throw SourceError(grpc::StatusCode::CANCELLED, "request cancelled while fetching the URL");
    }
    if (std::chrono::steady_clock::now() > deadline + std::chrono::seconds(1)) {
      ioc.stop();
      throw SourceError(grpc::StatusCode::UNAVAILABLE, "timed out fetching " + url.Redacted());
    }
  }
  return hop;
}

ParsedUrl ResolveLocation(const ParsedUrl& base, const std::string& location) {
  if (location.find("://") != std::string::npos) return ParseUrl(location);
  if (location.rfind("//", 0) == 0) return ParseUrl(base.scheme + ":" + location);
  ParsedUrl out = base;
  if (!location.empty() && location[0] == '/') {
    out.target = location;
  } else {
    std::string dir = base.target.substr(0, base.target.find('?'));
    dir = dir.substr(0, dir.rfind('/') + 1);
    out.target = dir + location;
  }
  if (const auto hash = out.target.find('#'); hash != std::string::npos) out.target.resize(hash);
  return out;
}

}  // namespace

std::string ParsedUrl::HostHeader() const {
  const std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return explicit_port ? h + ":" + port : h;
}

std::string ParsedUrl::Redacted() const {
  return scheme + "://" + HostHeader() + target.substr(0, target.find('?'));
}

std::string ParsedUrl::FileName() const {
  std::string path = target.substr(0, target.find('?'));
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  const auto slash = path.rfind('/');
  std::string last = slash == std::string::npos ? path : path.substr(slash + 1);
  return last.empty() ? host : last;
}

std::string ParsedUrl::Origin() const {
  const std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return scheme + "://" + h + ":" + port;
}

ParsedUrl ParseUrl(const std::string& url) {
  ParsedUrl out;
  const auto sep = url.find("://");
  if (sep == std::string::npos) Bad("not an http(s) URL");
  out.scheme = Lower(url.substr(0, sep));
  if (out.scheme != "http" && out.scheme != "https") Bad("URL scheme must be http or https");
  std::string rest = url.substr(sep + 3);
  if (const auto hash = rest.find('#'); hash != std::string::npos) rest.resize(hash);
  const auto path_start = rest.find_first_of("/?");
  std::string authority = rest.substr(0, path_start);
  out.target = path_start == std::string::npos ? "/" : rest.substr(path_start);
  if (out.target[0] == '?') out.target = "/" + out.target;
  if (authority.find('@') != std::string::npos) {
    Bad("credentials in URLs are not accepted");
  }
  for (char c : url) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f)
      Bad("URL contains a space or control character");
  }
  std::string port;
  if (!authority.empty() && authority[0] == '[') {
    const auto close = authority.find(']');
    if (close == std::string::npos) Bad("malformed IPv6 host in URL");
    out.host = authority.substr(1, close - 1);
    const std::string after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') Bad("malformed URL authority");
      port = after.substr(1);
    }
  } else {
    const auto colon = authority.rfind(':');
    out.host = authority.substr(0, colon);
    if (colon != std::string::npos) port = authority.substr(colon + 1);
  }
  out.host = Lower(out.host);
  if (out.host.empty()) Bad("URL has no host");
  if (!port.empty()) {
    if (!ValidPort(port)) Bad("URL has an invalid port");
    out.port = port;
    out.explicit_port = true;
  } else {
    out.port = out.scheme == "https" ? "443" : "80";
  }
  return out;
}

bool HostAllowed(const ParsedUrl& url, const std::vector<std::string>& allow_hosts) {
  for (const auto& entry_raw : allow_hosts) {
    const std::string entry = Lower(entry_raw);
    std::string host = entry;
    std::string port;
    if (!entry.empty() && entry[0] == '[') {
      const auto close = entry.find(']');
      if (close == std::string::npos) continue;
      host = entry.substr(1, close - 1);
      if (close + 1 < entry.size() && entry[close + 1] == ':') port = entry.substr(close + 2);
    } else if (std::count(entry.begin(), entry.end(), ':') == 1) {
      const auto colon = entry.find(':');
      host = entry.substr(0, colon);
      port = entry.substr(colon + 1);
    }
    if (host == url.host && (port.empty() || port == url.port)) return true;
  }
  return false;
}

namespace {
SourcedModel Fetch(const std::string& url_text, const UrlPolicy& policy, ByteBudget& budget,
                   const std::atomic<bool>& cancelled, FileTarget* file);
}  // namespace

SourcedModel FetchUrl(const std::string& url_text, const UrlPolicy& policy, ByteBudget& budget,
                      const std::atomic<bool>& cancelled) {
  return Fetch(url_text, policy, budget, cancelled, nullptr);
}

namespace {

// Percent-encodes a normalized data file name for a URL path ('/' kept).
std::string EncodePath(const std::string& name) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : name) {
    if (std::isalnum(c) != 0 || c == '-' || c == '_' || c == '.' || c == '~' || c == '/') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    }
  }
  return out;
}

}  // namespace

std::string DataFileUrl(const std::string& model_url, const std::string& name) {
  const ParsedUrl base = ParseUrl(model_url);
  std::string dir = base.target.substr(0, base.target.find('?'));
  dir = dir.substr(0, dir.rfind('/') + 1);
  return base.scheme + "://" + base.HostHeader() + dir + EncodePath(name);
}

void FetchDataFiles(SourcedModel& model, const std::string& model_url,
                    const std::map<std::string, std::string>& urls, const UrlPolicy& policy,
                    std::uint64_t max_data_bytes, const std::string& dir,
                    const std::atomic<bool>& cancelled) {
  bool more = false;
  const auto locations = ExternalDataLocations(model.bytes->view(), isolate::kMaxDataFiles, &more);
  if (more) {
    throw SourceError(grpc::StatusCode::INVALID_ARGUMENT,
                      "the model names more than " + std::to_string(isolate::kMaxDataFiles) +
                          " external data files; the service takes at most that many");
  }
  for (const auto& [name, url] : urls) {
    bool named = false;
    for (const auto& loc : locations) {
      named |= ExternalDataNameProblem(loc).empty() && NormalizeExternalDataName(loc) == name;
    }
    if (!named) {
      throw SourceError(
          grpc::StatusCode::INVALID_ARGUMENT,
          "data_files names '" + Clip(name) + "', which no tensor of the model names");
    }
  }
  if (locations.empty()) return;
  if (max_data_bytes == 0) {
    throw SourceError(grpc::StatusCode::RESOURCE_EXHAUSTED,
                      "this server takes no external data files (max-external-data-bytes 0)");
  }
  auto set = std::make_shared<isolate::DataFileSet>();
  // Data files are not held in memory: they count against max-external-data-bytes only.
  ByteBudget unlimited(UINT64_MAX, static_cast<prometheus::Gauge*>(nullptr));
  std::uint64_t total = 0;
  for (const auto& location : locations) {
    // Refused locations are not fetched; the checker reports them.
    if (!ExternalDataNameProblem(location).empty()) continue;
    const std::string name = NormalizeExternalDataName(location);
    if (set->Find(name) != set->count()) continue;
    const auto given = urls.find(name);
    const std::string url = given != urls.end() ? given->second : DataFileUrl(model_url, name);
    int write_fd = -1;
    int read_fd = -1;
    try {
      read_fd = isolate::TempDataFile(dir, &write_fd);
    } catch (const std::system_error& e) {
      throw SourceError(grpc::StatusCode::INTERNAL, e.what());
    }
    FileTarget file;
    file.fd = write_fd;
    UrlPolicy data_policy = policy;
    data_policy.max_bytes = max_data_bytes - total;
    try {
      Fetch(url, data_policy, unlimited, cancelled, &file);
      if (::ftruncate(write_fd, static_cast<off_t>(file.written)) != 0) {
        throw SourceError(grpc::StatusCode::RESOURCE_EXHAUSTED,
                          std::string("cannot store a data file: ") + std::strerror(errno));
      }
    } catch (const SourceError& e) {
      ::close(write_fd);
      ::close(read_fd);
      if (e.too_large()) {
        throw SourceError(grpc::StatusCode::RESOURCE_EXHAUSTED,
                          "the model's external data files are over the limit of " +
                              std::to_string(max_data_bytes) +
                              " bytes all together (max-external-data-bytes)",
                          SourceError::Kind::kTooLarge);
      }
      throw SourceError(e.code(), "external data file '" + Clip(name) + "': " + e.what());
    }
    ::close(write_fd);
    total += file.written;
    try {
      set->Add(name, read_fd, file.written, file.hash.HexDigest());
    } catch (const std::invalid_argument& e) {
      throw SourceError(grpc::StatusCode::INVALID_ARGUMENT, e.what());
    }
  }
  model.graph_sha256 = model.sha256;
  model.sha256 = set->BundleSha256(model.graph_sha256);
  model.data = std::move(set);
}

namespace {

SourcedModel Fetch(const std::string& url_text, const UrlPolicy& policy, ByteBudget& budget,
                   const std::atomic<bool>& cancelled, FileTarget* file) {
  if (policy.allow_hosts.empty()) {
    throw SourceError(grpc::StatusCode::PERMISSION_DENIED,
                      "URL references are disabled on this server (no --url-allow-host)");
  }
  ParsedUrl url = ParseUrl(url_text);
  const std::string first_origin = url.Origin();
  const bool custom = policy.method != "GET" || !policy.body.empty() || !policy.headers.empty() ||
                      !policy.content_type.empty();
  const auto deadline = std::chrono::steady_clock::now() + policy.timeout;
  for (unsigned redirects = 0;; ++redirects) {
    if (!HostAllowed(url, policy.allow_hosts)) {
      throw SourceError(grpc::StatusCode::PERMISSION_DENIED,
                        "URL host " + url.HostHeader() + " is not in the server's allowlist");
    }
    const bool same_origin = url.Origin() == first_origin;
    Hop hop = RunHop(url, deadline, policy.max_bytes, budget, cancelled,
                     custom && same_origin ? &policy : nullptr, file);
    if (!hop.budget_error.empty()) {
      throw SourceError(grpc::StatusCode::RESOURCE_EXHAUSTED, hop.budget_error);
    }
    if (hop.ec) {
      if (hop.ec == http::error::body_limit) {
        throw SourceError(grpc::StatusCode::RESOURCE_EXHAUSTED,
                          "model at " + url.Redacted() + " is over the limit of " +
                              std::to_string(policy.max_bytes) + " bytes",
                          SourceError::Kind::kTooLarge);
      }
      if (hop.ec == beast::error::timeout) {
        throw SourceError(grpc::StatusCode::UNAVAILABLE, "timed out fetching " + url.Redacted());
      }
      throw SourceError(
          grpc::StatusCode::UNAVAILABLE,
          std::string("fetching ") + url.Redacted() + ": " + hop.stage + ": " + hop.ec.message());
    }
    if (hop.status == 200 && file != nullptr) return SourcedModel{};
    if (hop.status == 200) {
      Reservation reservation = std::move(hop.reservation);
      isolate::ModelBuffer body =
          hop.body != nullptr ? std::move(*hop.body) : isolate::ModelBuffer();  // no body at all
      if (body.size() > reservation.bytes()) reservation.Grow(body.size() - reservation.bytes());
      SourcedModel out;
      try {
        body.Seal();
        out.sha256 = axqc::Sha256Hex(body.view());
      } catch (const std::system_error& e) {
        throw SourceError(grpc::StatusCode::INTERNAL,
                          "fetching " + url.Redacted() + ": " + e.what());
      }
      out.bytes = AccountedBytes(std::move(body), std::move(reservation));
      return out;
    }
    const bool redirect = hop.status == 301 || hop.status == 302 || hop.status == 303 ||
                          hop.status == 307 || hop.status == 308;
    if (redirect && !hop.location.empty() && policy.method == "GET") {
      if (redirects >= policy.max_redirects) {
        throw SourceError(grpc::StatusCode::UNAVAILABLE,
                          "too many redirects fetching " + url.Redacted());
      }
      ParsedUrl next = ResolveLocation(url, hop.location);
      if (url.scheme == "https" && next.scheme != "https") {
        throw SourceError(grpc::StatusCode::PERMISSION_DENIED,
                          "redirect from https to http refused");
      }
      url = std::move(next);
      continue;
    }
    if (hop.status == 404 || hop.status == 410) {
      throw SourceError(grpc::StatusCode::NOT_FOUND,
                        "HTTP " + std::to_string(hop.status) + " for " + url.Redacted());
    }
    throw SourceError(grpc::StatusCode::UNAVAILABLE,
                      "HTTP " + std::to_string(hop.status) + " for " + url.Redacted());
  }
}

}  // namespace

}  // namespace axqc::server
