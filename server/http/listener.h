// The HTTP/JSON API's listener and connections (Boost.Beast over Asio): HTTP/1.1 with keep-alive,
// optionally TLS with the gRPC port's certificate and, with a client CA, mutual TLS (every
// connection must present a client certificate signed by it, as on the gRPC port).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "config.h"
#include "http/router.h"
#include "logger.h"

namespace axqc::server::http {

struct ListenerOptions {
  std::string listen;                     // host:port; port 0 picks a free port
  std::uint64_t max_json_body = 1 << 20;  // bodies read whole (413 above)
  // A request body (streamed or read whole) with no byte for this long is abandoned and the
  // connection closed (--upload-idle-timeout-seconds); 0: the connection idle timeout (120 s).
  std::chrono::milliseconds body_idle_timeout{0};
  unsigned threads = 2;
  // Connections open at once; one accepted beyond it is answered 503 and closed (TLS: closed
  // without a handshake).
  unsigned max_connections = 1024;
  // Metrics, each optional: a failed accept, by reason ("emfile", "enfile", "enobufs", "enomem",
  // "other"); a connection refused over max_connections; open connections (+1 / -1).
  std::function<void(const std::string& reason)> on_accept_error;
  std::function<void()> on_refused;
  std::function<void(int delta)> on_connections;
  std::string tls_cert_file;  // all empty: plaintext
  std::string tls_key_file;
  std::string tls_client_ca_file;
};

class Listener {
 public:
  // Binds and starts accepting. Throws std::runtime_error when the address cannot be bound or
  // the TLS files cannot be read.
  Listener(const ListenerOptions& options, std::shared_ptr<const Router> router, Logger* logger);
  ~Listener();
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  int port() const;
  // Stops accepting and closes every connection. Idempotent.
  void Stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace axqc::server::http
