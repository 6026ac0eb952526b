// The JSON-input fuzz targets of axqc-server, as functions that return "" when every invariant
// holds and a description of the first violation otherwise. Shared by the libFuzzer targets
// (fuzz_hook_hf.cc, fuzz_hook_mlflow.cc, fuzz_json_body.cc) and the regression test of the normal
// suite (tests/server/hook_input_test.cc), which replays tests/fuzz/{hook_hf,hook_mlflow,
// json_body}_regressions/.
//
//   hook_hf      the bytes as a Hugging Face webhook body -> ParseHuggingFacePayload, and as the
//                node name, message and error of a write-back -> HfWriteBackPost (Markdown whose
//                lines and table cells the model's text cannot add to)
//   hook_mlflow  the bytes as an MLflow webhook body -> ParseMlflowPayload, as MLflow's
//                get-download-uri answer -> ParseMlflowDownloadUri -> MlflowModelUrl, and as an
//                artifact URI -> MlflowModelUrl
//   json_body    the bytes as the JSON body of POST /v1/check -> FromJson(CheckRequest), and a
//                parsed request printed and parsed again must be the same request
//
// Crashes, sanitizer reports and exceptions escaping the parsers are findings too (libFuzzer
// reports them).
#pragma once

#include <google/protobuf/util/message_differencer.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "axqc/v1/axqc.pb.h"
#include "http/errors.h"
#include "http/hook_payloads.h"
#include "json_input.h"

namespace axqc::fuzz {

namespace hook_detail {

inline int Hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Percent-decodes `s` until nothing changes (a server that decodes twice sees the same).
inline std::string DecodeFully(std::string s) {
  for (int round = 0; round < 8; ++round) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '%' && i + 2 < s.size() && Hex(s[i + 1]) >= 0 && Hex(s[i + 2]) >= 0) {
        out.push_back(static_cast<char>(Hex(s[i + 1]) * 16 + Hex(s[i + 2])));
        i += 2;
      } else {
        out.push_back(s[i]);
      }
    }
    if (out == s) break;
    s = std::move(out);
  }
  return s;
}

// "" when no segment of the URL path `path` (fully decoded, '\' taken as '/') is "." or "..".
inline std::string DotSegment(std::string_view path) {
  std::string decoded = DecodeFully(std::string(path));
  for (char& c : decoded) {
    if (c == '\\') c = '/';
  }
  std::size_t start = 0;
  while (true) {
    const std::size_t slash = decoded.find('/', start);
    const std::string seg =
        decoded.substr(start, slash == std::string::npos ? slash : slash - start);
    if (seg == "." || seg == "..") return "dot segment in URL path " + std::string(path);
    if (slash == std::string::npos) return "";
    start = slash + 1;
  }
}

inline std::string CheckStatus(const grpc::Status& st, const char* where) {
  if (st.ok()) return "";
  if (st.error_code() != grpc::StatusCode::INVALID_ARGUMENT &&
      st.error_code() != grpc::StatusCode::FAILED_PRECONDITION) {
    return std::string(where) + ": unexpected status code " +
           std::to_string(static_cast<int>(st.error_code()));
  }
  if (st.error_message().empty()) return std::string(where) + ": error without a message";
  return "";
}

// The JSON answer the server builds from parsed strings must be printable (valid UTF-8).
inline std::string Printable(const std::string& s, const char* what) {
  try {
    (void)nlohmann::json(s).dump();
  } catch (const nlohmann::json::exception&) {
    return std::string(what) + " is not valid UTF-8";
  }
  return "";
}

constexpr std::string_view kRegistry = "http://registry.test:5000";

// The artifact-URI half of hook_mlflow.
inline std::string RunModelUrl(std::string_view uri) {
  std::string url;
  const grpc::Status st = server::http::MlflowModelUrl(uri, kRegistry, "model.onnx", &url);
  if (auto e = CheckStatus(st, "MlflowModelUrl"); !e.empty()) return e;
  if (!st.ok()) return "";
  std::string_view path;
  const std::string proxy = std::string(kRegistry) + "/api/2.0/mlflow-artifacts/artifacts/";
  if (url.rfind(proxy, 0) == 0) {
    path = std::string_view(url).substr(proxy.size());
  } else if (url.rfind("http://", 0) == 0 || url.rfind("https://", 0) == 0) {
    const std::size_t slash = url.find('/', url.find("://") + 3);
    if (slash == std::string::npos) return "model URL without a path: " + url;
    path = std::string_view(url).substr(slash + 1);
  } else {
    return "model URL is neither the artifact proxy nor http(s): " + url;
  }
  if (auto e = DotSegment(path); !e.empty()) return e;
  if (!server::http::UnsafePathReason(path).empty()) return "unsafe model URL accepted: " + url;
  return Printable(url, "model URL");
}

}  // namespace hook_detail

// The write-back's Markdown for a report whose finding carries `text` as node name and message,
// and for a failed check with `text` as its error: the lines are the ones the format has (no
// line break from the text), and each table row has its 5 cell bars (bars from the text
// escaped).
inline std::string CheckHfWriteBack(std::string_view text) {
  v1::CheckResponse resp;
  auto* f = resp.mutable_report()->add_findings();
  f->set_rule("op/output-not-quantized");
  f->set_severity(v1::SEVERITY_ERROR);
  f->set_message(std::string(text));
  f->add_nodes(std::string(text));
  const nlohmann::json request = {{"hf", {{"repo", "org/m"}, {"revision", "main"}}}};
  const std::string ok =
      server::http::HfWriteBackPost(request, grpc::Status::OK, resp, "non_conformant", "", "")
          .at("text");
  std::size_t lines = 0;
  std::size_t start = 0;
  while (start <= ok.size()) {
    std::size_t end = ok.find('\n', start);
    if (end == std::string::npos) end = ok.size();
    const std::string_view line = std::string_view(ok).substr(start, end - start);
    if (line.starts_with("| `` ")) {
      std::size_t bars = 0;
      for (std::size_t i = 0; i < line.size(); ++i) {
        if (line[i] == '|' && (i == 0 || line[i - 1] != '\\')) ++bars;
      }
      if (bars != 5) return "a write-back table row has " + std::to_string(bars) + " cell bars";
    }
    ++lines;
    start = end + 1;
  }
  // Headline, blank, table head, rule, row, blank, ids.
  if (lines != 7) return "the write-back has " + std::to_string(lines) + " lines, not 7";
  const nlohmann::json failed =
      server::http::HfWriteBackPost(request, grpc::Status(grpc::StatusCode::NOT_FOUND, "x"), resp,
                                    "download_failed", std::string(text), "");
  const std::string t = failed.at("text");
  if (std::count(t.begin(), t.end(), '\n') != 2) return "the failure's write-back has extra lines";
  const std::string title = failed.at("title");
  if (title.find('\n') != std::string::npos) return "a title with a line break";
  return "";
}

inline std::string RunHookHfInput(const std::uint8_t* data, std::size_t size) {
  using namespace hook_detail;
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  if (auto e = CheckHfWriteBack(body); !e.empty()) return e;
  server::http::HfPayload p;
  const grpc::Status st = server::http::ParseHuggingFacePayload(body, &p);
  if (auto e = CheckStatus(st, "ParseHuggingFacePayload"); !e.empty()) return e;
  if (!st.ok()) return "";
  if (!server::http::ValidHfRepoName(p.name)) return "invalid repo name accepted: " + p.name;
  if (!server::http::ValidHfRevision(p.revision)) return "invalid revision accepted: " + p.revision;
  if (!server::http::UnsafePathReason(p.name).empty() ||
      !server::http::UnsafePathReason(p.revision).empty()) {
    return "repo name or revision is not a safe path: " + p.name + " @ " + p.revision;
  }
  const std::string url =
      server::http::HuggingFaceModelUrl("https://hub.test", p.name, p.revision, "model.onnx");
  if (auto e = DotSegment(std::string_view(url).substr(std::string("https://hub.test/").size()));
      !e.empty()) {
    return e;
  }
  if (p.event != p.scope + "." + p.action) return "event is not scope.action";
  // The pull request number goes into a registry URL path (the write-back's comment).
  if (!p.pull_request.empty() &&
      (p.pull_request.size() > 9 || p.pull_request[0] == '0' ||
       p.pull_request.find_first_not_of("0123456789") != std::string::npos)) {
    return "pull request accepted that is not a number: " + p.pull_request;
  }
  for (const auto* s : {&p.event, &p.ignore_reason, &p.type}) {
    if (auto e = Printable(*s, "a parsed field"); !e.empty()) return e;
  }
  return "";
}

inline std::string RunHookMlflowInput(const std::uint8_t* data, std::size_t size) {
  using namespace hook_detail;
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  server::http::MlflowPayload p;
  grpc::Status st = server::http::ParseMlflowPayload(body, &p);
  if (auto e = CheckStatus(st, "ParseMlflowPayload"); !e.empty()) return e;
  if (st.ok() && p.ignore_reason.empty()) {
    if (p.name.empty() || p.version.empty()) return "checked event without name or version";
    if (p.version.find_first_not_of("0123456789") != std::string::npos) {
      return "non-numeric version accepted: " + p.version;
    }
    for (const auto* s : {&p.name, &p.event, &p.run_id}) {
      if (auto e = Printable(*s, "a parsed field"); !e.empty()) return e;
    }
  }
  std::string uri;
  st = server::http::ParseMlflowDownloadUri(body, &uri);
  if (auto e = CheckStatus(st, "ParseMlflowDownloadUri"); !e.empty()) return e;
  if (st.ok()) {
    if (auto e = RunModelUrl(uri); !e.empty()) return e;
  }
  return RunModelUrl(body);
}

inline std::string RunJsonBodyInput(const std::uint8_t* data, std::size_t size) {
  using namespace hook_detail;
  const std::string body(reinterpret_cast<const char*>(data), size);
  v1::CheckRequest req;
  const grpc::Status st = server::http::FromJson(body, &req);
  if (auto e = CheckStatus(st, "FromJson"); !e.empty()) return e;
  if (!st.ok()) return "";
  // What was accepted was bounded: no JSON this deep gets past the pre-scan.
  server::JsonLimits limits;
  limits.max_bytes = body.size();
  if (!server::CheckJsonBounds(body, limits, "body").ok()) return "a body over the bounds parsed";
  v1::CheckRequest again;
  const grpc::Status st2 = server::http::FromJson(server::http::ToJson(req), &again);
  if (!st2.ok()) return "a parsed request printed as JSON does not parse: " + st2.error_message();
  if (!google::protobuf::util::MessageDifferencer::Equals(req, again)) {
    return "a parsed request printed and parsed again differs";
  }
  return "";
}

}  // namespace axqc::fuzz
