// The HTTP/JSON API's request and response as its endpoints see them, independent of Beast.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace axqc::server::http {

struct Request {
  std::string method;                                      // "GET", "POST", ...
  std::string target;                                      // as sent
  std::string path;                                        // target without the query string
  std::vector<std::pair<std::string, std::string>> query;  // percent-decoded, in order
  std::map<std::string, std::string> headers;              // names in lowercase
  std::map<std::string, std::string> path_params;          // "{sha256}" -> value
  std::string body;                                        // when the body is read whole
  std::optional<std::uint64_t> content_length;
  std::string peer;  // "ipv4:127.0.0.1:40312"

  std::string Header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? std::string() : it->second;
  }
  std::optional<std::string> Query(std::string_view name) const {
    for (const auto& [k, v] : query) {
      if (k == name) return v;
    }
    return std::nullopt;
  }
};

struct Response {
  unsigned status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string request_id;  // sent as X-Request-Id when set
};

// Sends the response; callable from any thread, once.
using Reply = std::function<void(Response)>;

// The receiver of a streamed request body (the model bytes of POST /v1/check).
class BodySink {
 public:
  virtual ~BodySink() = default;
  // More bytes. False: stop reading (the sink has replied, e.g. over the size limit).
  virtual bool Chunk(std::string_view data) = 0;
  // The body is complete.
  virtual void End() = 0;
  // The connection failed before the end of the body.
  virtual void Abort() = 0;
  // No byte of the body arrived for `seconds` (the body idle timeout): the connection is closed
  // after this call, no reply reaches the client.
  virtual void IdleTimeout(double seconds) {
    (void)seconds;
    Abort();
  }
};

}  // namespace axqc::server::http
