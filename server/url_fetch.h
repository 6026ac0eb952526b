// URL references: http(s) GET with Boost.Beast, only to allowlisted hosts (every redirect target
// too), with an overall timeout, a body limit and cancellation.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "model_source.h"

namespace axqc::server {

struct ParsedUrl {
  std::string scheme;  // "http" or "https"
  std::string host;    // without IPv6 brackets, lowercase
  std::string port;    // explicit or the scheme's default
  bool explicit_port = false;
  std::string target;  // path and query, starts with '/'
  std::string HostHeader() const;
  // scheme://host[:port]/path without the query string: safe to log.
  std::string Redacted() const;
  // Last path segment, or the host when the path is "/".
  std::string FileName() const;
  // scheme://host:port with the port always written: equal for URLs of the same origin.
  std::string Origin() const;
};

// Throws SourceError(INVALID_ARGUMENT): not http(s), userinfo present, bad port, no host.
ParsedUrl ParseUrl(const std::string& url);

// Allowlist entries: "host" (any port) or "host:port"; IPv6 as "[::1]" or "[::1]:port".
// Host names compare case-insensitively.
bool HostAllowed(const ParsedUrl& url, const std::vector<std::string>& allow_hosts);

struct UrlPolicy {
  std::vector<std::string> allow_hosts;
  std::chrono::milliseconds timeout{60000};
  unsigned max_redirects = 3;
  std::uint64_t max_bytes = 0;
  // Registry API calls (webhooks): the method, a body and its content type, and extra headers.
  // The headers (e.g. Authorization) are sent to the first URL's origin (scheme, host and port)
  // only, never to a redirect target elsewhere; only GET follows redirects.
  std::string method = "GET";
  std::string body;
  std::string content_type;
  std::vector<std::pair<std::string, std::string>> headers;
};

// Fetches the URL. Throws SourceError: PERMISSION_DENIED (host or a redirect target not allowed,
// URLs disabled), NOT_FOUND (HTTP 404/410), RESOURCE_EXHAUSTED (body over max_bytes),
// CANCELLED (`cancelled` became true), UNAVAILABLE (network errors, timeout, other HTTP statuses),
// INVALID_ARGUMENT (malformed URL).
SourcedModel FetchUrl(const std::string& url, const UrlPolicy& policy, ByteBudget& budget,
                      const std::atomic<bool>& cancelled);

// The URL of data file `name` (a normalized relative name) of the model at `model_url`: the
// model URL's folder (its query string dropped) with the name, percent-encoded, appended.
std::string DataFileUrl(const std::string& model_url, const std::string& name);

// Fetches the external data files the model names (ExternalDataLocations) into unlinked files in
// `dir` (not held in memory), with `policy` (allowlist, redirects, timeout) and at most
// `max_data_bytes` all together; each from `urls[name]` when given, else DataFileUrl(model_url,
// name). Sets model.data, model.graph_sha256 and model.sha256 (the bundle hash). A name in `urls`
// the model does not name is INVALID_ARGUMENT; a location the checker refuses is not fetched (the
// check reports it). Throws SourceError as FetchUrl (RESOURCE_EXHAUSTED over max_data_bytes).
void FetchDataFiles(SourcedModel& model, const std::string& model_url,
                    const std::map<std::string, std::string>& urls, const UrlPolicy& policy,
                    std::uint64_t max_data_bytes, const std::string& dir,
                    const std::atomic<bool>& cancelled);

}  // namespace axqc::server
