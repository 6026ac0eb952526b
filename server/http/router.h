// Routes of the HTTP/JSON API: method + path pattern ("/v1/reports/{sha256}") -> endpoint.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "http/types.h"

namespace axqc::server::http {

struct Route {
  std::string method;   // "GET", "POST"
  std::string pattern;  // literal segments and "{name}" parameters
  // The endpoint, with the body read whole (up to the JSON body limit).
  std::function<void(Request&, Reply)> handle;
  // Optional: when `streams(request)` is true the body is not read whole but handed to the sink
  // that `stream` returns (null: the endpoint has replied already, the body is not read).
  std::function<bool(const Request&)> streams;
  std::function<std::unique_ptr<BodySink>(Request&, Reply)> stream;
  // A page of the dashboard (HTML or its script), not an endpoint of the JSON API: not in the
  // OpenAPI document.
  bool page = false;
};

class Router {
 public:
  void Add(Route route) { routes_.push_back(std::move(route)); }

  struct Match {
    const Route* route = nullptr;  // null: no route for this method and path
    bool path_known = false;       // the path has a route for another method (405)
    std::vector<std::string> allowed;
  };
  // Fills request.path_params on a match.
  Match Find(Request& request) const;

  // (method, pattern) of every API route (pages excluded), in the order added (the OpenAPI test
  // compares them with the document).
  std::vector<std::pair<std::string, std::string>> Routes() const;
  // (method, pattern) of the dashboard's pages.
  std::vector<std::pair<std::string, std::string>> PageRoutes() const;

 private:
  std::vector<Route> routes_;
};

// Percent-decodes `s` ('+' is a space in query strings); false when malformed.
bool PercentDecode(const std::string& s, bool plus_is_space, std::string* out);

// Splits a request target into path and decoded query pairs; false when malformed.
bool SplitTarget(const std::string& target, std::string* path,
                 std::vector<std::pair<std::string, std::string>>* query);

}  // namespace axqc::server::http
