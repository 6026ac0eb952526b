// The OpenAPI document of the HTTP API (docs/openapi.json, served at /v1/openapi.json) documents
// exactly the routed endpoints: every route is a documented path and method, and every documented
// path and method is routed.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <utility>

#include "http/api.h"

namespace {

using axqc::server::http::Api;
using axqc::server::http::BuildRouter;
using axqc::server::http::OpenApiDocument;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string Lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

TEST(HttpOpenApi, EveryRouteIsDocumentedAndEveryDocumentedPathIsRouted) {
  const auto doc = nlohmann::json::parse(OpenApiDocument());
  ASSERT_EQ(doc.at("openapi").get<std::string>().substr(0, 2), "3.");
  std::set<std::pair<std::string, std::string>> documented;
  for (const auto& [path, item] : doc.at("paths").items()) {
    for (const auto& [method, op] : item.items()) {
      if (method == "parameters" || method == "summary" || method == "description") continue;
      documented.emplace(Lower(method), path);
      EXPECT_TRUE(op.contains("responses")) << method << " " << path;
      EXPECT_TRUE(op.contains("operationId")) << method << " " << path;
    }
  }
  std::set<std::pair<std::string, std::string>> routed;
  for (const auto& [method, pattern] : BuildRouter(Api{})->Routes()) {
    routed.emplace(Lower(method), pattern);
  }
  EXPECT_EQ(routed, documented);
  EXPECT_TRUE(routed.count({"post", "/v1/check"}));
  EXPECT_TRUE(routed.count({"get", "/v1/reports/{sha256}"}));
  EXPECT_TRUE(routed.count({"get", "/v1/stats"}));
  EXPECT_TRUE(routed.count({"get", "/v1/models"}));
  EXPECT_TRUE(routed.count({"get", "/v1/checks"}));
  EXPECT_TRUE(routed.count({"get", "/v1/models/{sha256}/reports"}));
  EXPECT_TRUE(routed.count({"post", "/v1/hooks/mlflow"}));
  EXPECT_TRUE(routed.count({"get", "/v1/reports/{sha256}/html"}));
  // The dashboard's pages are routes too, but not endpoints of the API.
  std::set<std::pair<std::string, std::string>> pages;
  for (const auto& [method, pattern] : BuildRouter(Api{})->PageRoutes()) {
    pages.emplace(Lower(method), pattern);
    EXPECT_FALSE(documented.count({Lower(method), pattern})) << pattern;
  }
  EXPECT_EQ(pages, (std::set<std::pair<std::string, std::string>>{
                       {"get", "/"}, {"get", "/models/{sha256}"}, {"get", "/ui/dashboard.js"}}));
}

TEST(HttpOpenApi, TheServedDocumentIsTheRepositorysFile) {
  EXPECT_EQ(OpenApiDocument(), ReadFile(std::string(AXQC_SOURCE_DIR) + "/docs/openapi.json"));
}

// Every $ref points to a defined component.
TEST(HttpOpenApi, ReferencesResolve) {
  const auto doc = nlohmann::json::parse(OpenApiDocument());
  std::function<void(const nlohmann::json&)> walk = [&](const nlohmann::json& j) {
    if (j.is_object()) {
      if (j.contains("$ref")) {
        const std::string ref = j["$ref"];
        ASSERT_EQ(ref.rfind("#/", 0), 0u) << ref;
        nlohmann::json::json_pointer ptr(ref.substr(1));
        EXPECT_TRUE(doc.contains(ptr)) << ref;
      }
      for (const auto& [k, v] : j.items()) walk(v);
    } else if (j.is_array()) {
      for (const auto& v : j) walk(v);
    }
  };
  walk(doc);
}

}  // namespace
