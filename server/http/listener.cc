#include "http/listener.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <limits>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

// GCC's -Wnull-dereference fires inside Asio's scheduler; a false positive in third-party code.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/dispatch.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#pragma GCC diagnostic pop

#include "http/errors.h"

namespace axqc::server::http {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bh = beast::http;
using tcp = net::ip::tcp;

namespace {

constexpr std::size_t kChunk = 64 * 1024;
constexpr auto kIdle = std::chrono::seconds(120);

std::string PeerName(const tcp::socket& socket) {
  beast::error_code ec;
  const auto ep = socket.remote_endpoint(ec);
  if (ec) return "unknown";
  const auto addr = ep.address();
  return (addr.is_v6() ? "ipv6:[" + addr.to_string() + "]:" : "ipv4:" + addr.to_string() + ":") +
         std::to_string(ep.port());
}

// One open connection counted against ListenerOptions::max_connections while it exists.
class ConnectionSlot {
 public:
  ConnectionSlot(std::atomic<unsigned>* open, const ListenerOptions* options)
      : open_(open), options_(options) {
    open_->fetch_add(1);
    if (options_->on_connections) options_->on_connections(1);
  }
  ~ConnectionSlot() {
    open_->fetch_sub(1);
    if (options_->on_connections) options_->on_connections(-1);
  }
  ConnectionSlot(const ConnectionSlot&) = delete;
  ConnectionSlot& operator=(const ConnectionSlot&) = delete;

 private:
  std::atomic<unsigned>* open_;
  const ListenerOptions* options_;
};

// A connection over max_connections: the 503 answer, then what the client still sends is read
// and dropped for at most 1 s before the close (closing with unread bytes would reset the
// connection and could destroy the answer before the client reads it).
class Refusal : public std::enable_shared_from_this<Refusal> {
 public:
  Refusal(tcp::socket&& socket, std::string answer, std::atomic<unsigned>* lingering)
      : socket_(std::move(socket)),
        timer_(socket_.get_executor()),
        answer_(std::move(answer)),
        lingering_(lingering) {
    lingering_->fetch_add(1);
  }
  ~Refusal() { lingering_->fetch_sub(1); }

  void Start() {
    net::dispatch(socket_.get_executor(), [self = shared_from_this()] {
      self->timer_.expires_after(std::chrono::seconds(1));
      self->timer_.async_wait([self](beast::error_code ec) {
        if (!ec) self->Close();
      });
      net::async_write(self->socket_, net::buffer(self->answer_),
                       [self](beast::error_code ec, std::size_t) {
                         if (ec) return self->Close();
                         self->socket_.shutdown(tcp::socket::shutdown_send, ec);
                         self->Drain();
                       });
    });
  }

 private:
  void Drain() {
    socket_.async_read_some(net::buffer(buf_),
                            [self = shared_from_this()](beast::error_code ec, std::size_t) {
                              if (ec) return self->Close();
                              self->Drain();
                            });
  }
  void Close() {
    if (closed_) return;
    closed_ = true;
    timer_.cancel();
    beast::error_code ec;
    socket_.close(ec);
  }

  tcp::socket socket_;
  net::steady_timer timer_;
  std::string answer_;
  std::atomic<unsigned>* lingering_;
  char buf_[4096];
  bool closed_ = false;
};

// The reason label of a failed accept.
std::string AcceptErrorReason(const beast::error_code& ec) {
  if (ec.category() == boost::system::system_category()) {
    switch (ec.value()) {
      case EMFILE:
        return "emfile";
      case ENFILE:
        return "enfile";
      case ENOBUFS:
        return "enobufs";
      case ENOMEM:
        return "enomem";
      default:
        break;
    }
  }
  return "other";
}

template <bool kTls>
class Session : public std::enable_shared_from_this<Session<kTls>> {
 public:
  using Stream = std::conditional_t<kTls, beast::ssl_stream<beast::tcp_stream>, beast::tcp_stream>;

  Session(tcp::socket&& socket, net::ssl::context* tls, std::shared_ptr<const Router> router,
          const ListenerOptions* options, Logger* logger, std::unique_ptr<ConnectionSlot> slot)
      : stream_(MakeStream(std::move(socket), tls)),
        router_(std::move(router)),
        options_(options),
        logger_(logger),
        slot_(std::move(slot)) {}

  void Start() {
    peer_ = PeerName(beast::get_lowest_layer(stream_).socket());
    net::dispatch(stream_.get_executor(), [self = this->shared_from_this()] {
      if constexpr (kTls) {
        beast::get_lowest_layer(self->stream_).expires_after(std::chrono::seconds(30));
        self->stream_.async_handshake(net::ssl::stream_base::server, [self](beast::error_code ec) {
          if (ec) return;  // no (valid) client certificate, ...
          self->ReadHeader();
        });
      } else {
        self->ReadHeader();
      }
    });
  }

 private:
  static Stream MakeStream(tcp::socket&& socket, net::ssl::context* tls) {
    if constexpr (kTls) {
      return Stream(std::move(socket), *tls);
    } else {
      (void)tls;
      return Stream(std::move(socket));
    }
  }

  void ReadHeader() {
    parser_.emplace();
    parser_->header_limit(64 * 1024);
    parser_->body_limit(std::numeric_limits<std::uint64_t>::max());  // enforced per endpoint
    sink_.reset();
    body_.clear();
    replied_ = false;
    beast::get_lowest_layer(stream_).expires_after(kIdle);
    bh::async_read_header(stream_, buffer_, *parser_,
                          [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
                            self->OnHeader(ec);
                          });
  }

  void OnHeader(beast::error_code ec) {
    if (ec) {
      if (ec != bh::error::end_of_stream && ec != net::error::eof) {
        logger_->Debug("http: request header not read", {{"peer", peer_}, {"error", ec.message()}});
      }
      return Close();
    }
    const auto& h = parser_->get();
    request_ = Request();
    request_.method = std::string(h.method_string());
    request_.target = std::string(h.target());
    request_.peer = peer_;
    for (const auto& field : h) {
      std::string name(field.name_string());
      for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      request_.headers[name] = std::string(field.value());
    }
    if (auto len = parser_->content_length()) request_.content_length = *len;
    keep_alive_ = h.keep_alive();
    const std::string request_id = request_.Header("x-request-id");
    if (!SplitTarget(request_.target, &request_.path, &request_.query)) {
      return Send(ErrorResponse(
          grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "malformed request target"),
          request_id));
    }
    const auto match = router_->Find(request_);
    if (match.route == nullptr) {
      if (match.path_known) {
        std::string allow;
        for (const auto& m : match.allowed) allow += (allow.empty() ? "" : ", ") + m;
        Response r = ErrorResponse(grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                                                request_.method + " is not allowed on " +
                                                    request_.path + " (allowed: " + allow + ")"),
                                   request_id, 405);
        r.headers.emplace_back("Allow", allow);
        return Send(std::move(r));
      }
      return Send(ErrorResponse(
          grpc::Status(grpc::StatusCode::NOT_FOUND,
                       "no such endpoint: " + request_.path + " (see /v1/openapi.json)"),
          request_id));
    }
    route_ = match.route;
    if (route_->streams && route_->stream && route_->streams(request_)) {
      sink_ = route_->stream(request_, MakeReply());
      if (sink_ == nullptr) return;  // replied already; the body is not read
      return ContinueThenRead();
    }
    if (request_.content_length && *request_.content_length > options_->max_json_body) {
      return Send(ErrorResponse(
          grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                       "request body of " + std::to_string(*request_.content_length) +
                           " bytes is over the limit of " +
                           std::to_string(options_->max_json_body) + " bytes for this endpoint"),
          request_id, 413));
    }
    ContinueThenRead();
  }

  // Answers "Expect: 100-continue" (curl sends it with bodies over 1 MiB), then reads the body.
  void ContinueThenRead() {
    auto expect = request_.Header("expect");
    for (auto& c : expect) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (expect == "100-continue" && !parser_->is_done()) {
      auto cont = std::make_shared<bh::response<bh::empty_body>>(bh::status::continue_, 11);
      bh::async_write(stream_, *cont,
                      [self = this->shared_from_this(), cont](beast::error_code ec, std::size_t) {
                        if (ec) return self->Fail();
                        self->ReadBody();
                      });
      return;
    }
    ReadBody();
  }

  // The body is read into chunks of kChunk bytes (each handed on when full or at the end), a read
  // at a time: every read that brings bytes restarts the body idle timer.
  void ReadBody() {
    if (parser_->is_done()) return BodyDone();
    chunk_.resize(kChunk);
    filled_ = 0;
    ReadMore();
  }

  void ReadMore() {
    parser_->get().body().data = chunk_.data() + filled_;
    parser_->get().body().size = chunk_.size() - filled_;
    beast::get_lowest_layer(stream_).expires_after(BodyIdle());
    bh::async_read_some(
        stream_, buffer_, *parser_,
        [self = this->shared_from_this()](beast::error_code ec, std::size_t) { self->OnBody(ec); });
  }

  std::chrono::milliseconds BodyIdle() const {
    return options_->body_idle_timeout.count() > 0
               ? options_->body_idle_timeout
               : std::chrono::duration_cast<std::chrono::milliseconds>(kIdle);
  }

  void OnBody(beast::error_code ec) {
    if (ec == bh::error::need_buffer) ec = {};
    if (ec == beast::error::timeout) {
      const double seconds = std::chrono::duration<double>(BodyIdle()).count();
      logger_->Warn("http: request body idle; connection closed",
                    {{"peer", peer_}, {"path", request_.path}, {"idle_seconds", seconds}});
      if (sink_ != nullptr) {
        auto sink = std::move(sink_);
        sink->IdleTimeout(seconds);
      }
      return Close();
    }
    if (ec) {
      logger_->Debug("http: request body not read", {{"peer", peer_}, {"error", ec.message()}});
      return Fail();
    }
    filled_ = chunk_.size() - parser_->get().body().size;
    if (replied_) return;  // the endpoint answered early (error): stop reading
    if (filled_ < chunk_.size() && !parser_->is_done()) return ReadMore();
    const std::size_t n = filled_;
    if (n > 0) {
      if (sink_ != nullptr) {
        if (!sink_->Chunk(std::string_view(chunk_.data(), n))) {
          sink_.reset();
          keep_alive_ = false;  // the rest of the body is not read
          return;
        }
      } else {
        if (body_.size() + n > options_->max_json_body) {
          keep_alive_ = false;
          return Send(ErrorResponse(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                                                 "request body is over the limit of " +
                                                     std::to_string(options_->max_json_body) +
                                                     " bytes for this endpoint"),
                                    request_.Header("x-request-id"), 413));
        }
        body_.append(chunk_.data(), n);
      }
    }
    if (parser_->is_done()) return BodyDone();
    ReadBody();
  }

  void BodyDone() {
    if (sink_ != nullptr) {
      auto sink = std::move(sink_);
      sink->End();
      return;
    }
    request_.body = std::move(body_);
    route_->handle(request_, MakeReply());
  }

  // A reply that any thread may call; it is written on this connection's strand.
  Reply MakeReply() {
    return [self = this->shared_from_this(), gen = generation_](Response r) {
      net::post(self->stream_.get_executor(), [self, gen, r = std::move(r)]() mutable {
        if (gen != self->generation_) return;
        self->Send(std::move(r));
      });
    };
  }

  void Send(Response r) {
    if (replied_) return;
    replied_ = true;
    ++generation_;
    if (!parser_->is_done()) keep_alive_ = false;  // unread body: close after the answer
    auto res = std::make_shared<bh::response<bh::string_body>>();
    res->version(11);
    res->result(r.status);
    res->set(bh::field::server, "axqc-server");
    res->set(bh::field::content_type, r.content_type);
    if (!r.request_id.empty()) res->set("X-Request-Id", r.request_id);
    for (const auto& [k, v] : r.headers) res->set(k, v);
    res->body() = std::move(r.body);
    res->keep_alive(keep_alive_);
    res->prepare_payload();
    beast::get_lowest_layer(stream_).expires_after(kIdle);
    bh::async_write(stream_, *res,
                    [self = this->shared_from_this(), res](beast::error_code ec, std::size_t) {
                      if (ec) return self->Close();
                      if (!self->parser_->is_done()) return self->Linger();
                      if (!self->keep_alive_) return self->Close();
                      self->ReadHeader();
                    });
  }

  // After an early answer (the body was refused): stop sending, read and discard what the client
  // is still sending for a moment, then close. Closing with unread bytes would reset the
  // connection and could destroy the answer before the client reads it.
  void Linger() {
    if (!lingering_) {  // at most 2 s in all
      lingering_ = true;
      beast::error_code ec;
      beast::get_lowest_layer(stream_).socket().shutdown(tcp::socket::shutdown_send, ec);
      beast::get_lowest_layer(stream_).expires_after(std::chrono::seconds(2));
    }
    chunk_.resize(kChunk);
    beast::get_lowest_layer(stream_).async_read_some(
        net::buffer(chunk_), [self = this->shared_from_this()](beast::error_code e, std::size_t) {
          if (e) return self->Close();
          self->Linger();
        });
  }

  void Fail() {
    if (sink_ != nullptr) {
      auto sink = std::move(sink_);
      sink->Abort();
    }
    Close();
  }

  void Close() {
    ++generation_;
    beast::error_code ec;
    if constexpr (kTls) {
      beast::get_lowest_layer(stream_).socket().shutdown(tcp::socket::shutdown_both, ec);
    } else {
      stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    }
    beast::get_lowest_layer(stream_).close();
  }

  Stream stream_;
  std::shared_ptr<const Router> router_;
  const ListenerOptions* options_;
  Logger* logger_;
  std::unique_ptr<ConnectionSlot> slot_;
  std::string peer_;
  beast::flat_buffer buffer_;
  std::optional<bh::request_parser<bh::buffer_body>> parser_;
  std::vector<char> chunk_;
  std::size_t filled_ = 0;  // bytes of chunk_ read so far
  std::string body_;
  Request request_;
  const Route* route_ = nullptr;
  std::unique_ptr<BodySink> sink_;
  bool keep_alive_ = true;
  bool replied_ = false;
  bool lingering_ = false;
  std::uint64_t generation_ = 0;  // replies of an earlier request on this connection are dropped
};

}  // namespace

struct Listener::Impl {
  // Refused connections lingering at once (each holds a descriptor for at most 1 s); beyond, a
  // refused connection is closed without an answer.
  static constexpr unsigned kMaxLingering = 64;
  // A failed accept is logged at most once per this interval (with the count of failures).
  static constexpr auto kAcceptLogInterval = std::chrono::seconds(10);

  // Before the io_context: connections and refusals still pending when it is destroyed count
  // themselves out in these.
  ListenerOptions options;
  std::atomic<unsigned> open{0};
  std::atomic<unsigned> lingering{0};
  std::shared_ptr<const Router> router;
  Logger* logger = nullptr;
  net::io_context ioc;
  std::optional<net::ssl::context> tls;
  std::optional<tcp::acceptor> acceptor;
  std::optional<net::steady_timer> accept_timer;
  std::vector<std::thread> threads;
  std::atomic<bool> stopped{false};
  int port = 0;
  // Accept failures (one accept is pending at a time: only its handler touches these).
  std::chrono::milliseconds accept_backoff{0};
  std::uint64_t accept_failures = 0;  // since the last log line
  std::chrono::steady_clock::time_point accept_logged{};

  void Accept() {
    acceptor->async_accept(net::make_strand(ioc), [this](beast::error_code ec, tcp::socket s) {
      if (stopped.load()) return;
      if (ec) return AcceptFailed(ec);
      accept_backoff = std::chrono::milliseconds(0);
      if (open.load() >= options.max_connections) {
        Refuse(std::move(s));
      } else if (tls) {
        std::make_shared<Session<true>>(std::move(s), &*tls, router, &options, logger,
                                        std::make_unique<ConnectionSlot>(&open, &options))
            ->Start();
      } else {
        std::make_shared<Session<false>>(std::move(s), nullptr, router, &options, logger,
                                         std::make_unique<ConnectionSlot>(&open, &options))
            ->Start();
      }
      Accept();
    });
  }

  // Out of descriptors (EMFILE, ENFILE) or memory: accepting again at once fails again at once
  // (the connection stays in the backlog), so wait, doubling from 50 ms to 1 s, and log once per
  // interval. Other errors (a connection reset before it was accepted) wait 10 ms.
  void AcceptFailed(const beast::error_code& ec) {
    const std::string reason = AcceptErrorReason(ec);
    if (options.on_accept_error) options.on_accept_error(reason);
    if (reason == "other") {
      accept_backoff = std::chrono::milliseconds(10);
    } else {
      accept_backoff = std::clamp<std::chrono::milliseconds>(
          accept_backoff * 2, std::chrono::milliseconds(50), std::chrono::milliseconds(1000));
    }
    ++accept_failures;
    const auto now = std::chrono::steady_clock::now();
    if (accept_logged == std::chrono::steady_clock::time_point{} ||
        now - accept_logged >= kAcceptLogInterval) {
      logger->Warn("http: accept failed; backing off",
                   {{"error", ec.message()},
                    {"reason", reason},
                    {"failures", accept_failures},
                    {"backoff_ms", static_cast<std::int64_t>(accept_backoff.count())},
                    {"open_connections", open.load()}});
      accept_logged = now;
      accept_failures = 0;
    }
    accept_timer->expires_after(accept_backoff);
    accept_timer->async_wait([this](beast::error_code e) {
      if (e || stopped.load()) return;
      Accept();
    });
  }

  void Refuse(tcp::socket s) {
    if (options.on_refused) options.on_refused();
    if (tls || lingering.load() >= kMaxLingering) {
      beast::error_code ec;
      s.close(ec);
      return;
    }
    const Response r = ErrorResponse(
        grpc::Status(grpc::StatusCode::UNAVAILABLE,
                     "the server has " + std::to_string(options.max_connections) +
                         " HTTP connections open, its limit (http-max-connections); retry later"),
        "", 503);
    std::string answer =
        "HTTP/1.1 503 Service Unavailable\r\nServer: axqc-server\r\nContent-Type: " +
        r.content_type + "\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: " +
        std::to_string(r.body.size()) + "\r\n\r\n" + r.body;
    std::make_shared<Refusal>(std::move(s), std::move(answer), &lingering)->Start();
  }
};

Listener::Listener(const ListenerOptions& options, std::shared_ptr<const Router> router,
                   Logger* logger)
    : impl_(std::make_unique<Impl>()) {
  impl_->options = options;
  impl_->router = std::move(router);
  impl_->logger = logger;
  const std::string& listen = options.listen;
  const auto colon = listen.rfind(':');
  if (colon == std::string::npos) {
    throw std::runtime_error("http: listen address must be host:port, got '" + listen + "'");
  }
  std::string host = listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  if (host.empty()) host = "0.0.0.0";
  const std::string port = listen.substr(colon + 1);
  if (!options.tls_cert_file.empty() || !options.tls_key_file.empty()) {
    if (options.tls_cert_file.empty() || options.tls_key_file.empty()) {
      throw std::runtime_error("http: tls-cert-file and tls-key-file must be set together");
    }
    auto& ctx = impl_->tls.emplace(net::ssl::context::tls_server);
    ctx.set_options(net::ssl::context::default_workarounds | net::ssl::context::no_sslv2 |
                    net::ssl::context::no_sslv3 | net::ssl::context::no_tlsv1 |
                    net::ssl::context::no_tlsv1_1);
    beast::error_code ec;
    ctx.use_certificate_chain_file(options.tls_cert_file, ec);
    if (!ec) ctx.use_private_key_file(options.tls_key_file, net::ssl::context::pem, ec);
    if (!ec && !options.tls_client_ca_file.empty()) {
      ctx.load_verify_file(options.tls_client_ca_file, ec);
      ctx.set_verify_mode(net::ssl::verify_peer | net::ssl::verify_fail_if_no_peer_cert);
    }
    if (ec) throw std::runtime_error("http: tls: " + ec.message());
  }
  try {
    tcp::resolver resolver(impl_->ioc);
    const auto results = resolver.resolve(host, port, tcp::resolver::passive);
    if (results.empty()) throw std::runtime_error("no address");
    const tcp::endpoint ep = *results.begin();
    auto& acc = impl_->acceptor.emplace(impl_->ioc);
    acc.open(ep.protocol());
    acc.set_option(net::socket_base::reuse_address(true));
    acc.bind(ep);
    acc.listen(net::socket_base::max_listen_connections);
    impl_->port = acc.local_endpoint().port();
    impl_->accept_timer.emplace(impl_->ioc);
  } catch (const std::exception& e) {
    throw std::runtime_error("http: cannot listen on " + listen + ": " + e.what());
  }
  impl_->Accept();
  for (unsigned i = 0; i < std::max(1u, options.threads); ++i) {
    impl_->threads.emplace_back([this] { impl_->ioc.run(); });
  }
}

Listener::~Listener() { Stop(); }

int Listener::port() const { return impl_->port; }

void Listener::Stop() {
  if (impl_->stopped.exchange(true)) return;
  net::post(impl_->ioc, [this] {
    beast::error_code ec;
    impl_->acceptor->close(ec);
    impl_->accept_timer->cancel();
  });
  impl_->ioc.stop();
  for (auto& t : impl_->threads) t.join();
  impl_->threads.clear();
}

}  // namespace axqc::server::http
