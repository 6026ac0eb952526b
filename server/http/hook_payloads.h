// The registry webhooks' input handling as pure functions (no I/O, no server state): the
// payloads of Hugging Face Hub and MLflow deliveries, MLflow's get-download-uri answer, and the
// names, revisions and artifact paths taken from them, which end up in URLs sent to the registry
// with its token; and the text a Hugging Face write-back posts. Used by hooks_huggingface.cc and
// hooks_mlflow.cc, fuzzed by tests/fuzz (hook_hf, hook_mlflow).
//
// Every failure of a parser is INVALID_ARGUMENT naming the field (or FAILED_PRECONDITION for an
// artifact location this server cannot read); the parsers throw nothing.
#pragma once

#include <grpcpp/support/status.h>

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "axqc/v1/axqc.pb.h"

namespace axqc::server::http {

// Webhook bodies larger than this are refused (real deliveries are a few KiB).
inline constexpr std::size_t kMaxWebhookBodyBytes = 1 << 20;
// Registry API answers parsed as JSON (get-download-uri).
inline constexpr std::size_t kMaxRegistryAnswerBytes = 1 << 20;

// The fields of a Hugging Face Hub delivery the server uses.
struct HfPayload {
  std::string action;         // event.action
  std::string scope;          // event.scope
  std::string type;           // repo.type
  std::string name;           // repo.name, a valid repo id
  std::string head_sha;       // repo.headSha ("" when absent)
  std::string event;          // scope + "." + action
  std::string revision;       // head_sha, or "main" without it; a valid revision
  std::string pull_request;   // N of a pushed ref refs/pr/N in updatedRefs ("" for none)
  std::string ignore_reason;  // set: nothing to check (not a model, not a content update)
};
grpc::Status ParseHuggingFacePayload(std::string_view body, HfPayload* out);

// What a Hugging Face write-back posts for a delivery's check, as {"pull_request": N or absent,
// "title", "text"}: Markdown with the verdict, counts, the first errors and warnings, sha256,
// request id and `report_url` ("" = no link). Text from the model or the registry (node names,
// messages, errors) appears only inside code spans (no backtick or line break in them, bars
// escaped in table cells), so it adds no link, mention, HTML or table cell. `request` is the
// delivery's stored request (its "hf" object: repo, revision, pull_request); `outcome` the
// delivery's (a verdict, download_failed, ...). Throws nlohmann::json::exception for a request
// without them.
nlohmann::json HfWriteBackPost(const nlohmann::json& request, const grpc::Status& status,
                               const v1::CheckResponse& resp, const std::string& outcome,
                               const std::string& error, const std::string& report_url);

// The fields of an MLflow model-registry delivery the server uses.
struct MlflowPayload {
  std::string event;    // entity + "." + action
  std::string name;     // data.name
  std::string version;  // data.version (string or integer), decimal digits
  std::string run_id;   // data.run_id
  std::string tag_key;  // data.key (model_version_tag.set)
  std::string ignore_reason;
};
grpc::Status ParseMlflowPayload(std::string_view body, MlflowPayload* out);

// artifact_uri of MLflow's GET /api/2.0/mlflow/model-versions/get-download-uri answer.
grpc::Status ParseMlflowDownloadUri(std::string_view answer, std::string* artifact_uri);

// The URL of the model file of a version stored at `artifact_uri`: mlflow-artifacts:/PATH (and
// mlflow-artifacts://HOST/PATH) through the registry's artifact proxy
// {mlflow_url}/api/2.0/mlflow-artifacts/artifacts/PATH, an http(s) URL as it is; then
// /{model_file} unless the location names an .onnx file. The path must be safe (SafePath); other
// schemes are FAILED_PRECONDITION.
grpc::Status MlflowModelUrl(std::string_view artifact_uri, std::string_view mlflow_url,
                            std::string_view model_file, std::string* url);

// {hf_url}/{name}/resolve/{revision, percent-encoded}/{model_file}.
std::string HuggingFaceModelUrl(std::string_view hf_url, std::string_view name,
                                std::string_view revision, std::string_view model_file);

// A relative path that names what it seems to name wherever it is resolved or decoded: segments
// separated by '/', none empty, "." or ".."; once percent-decoded none is "." or ".." or holds
// '/', '\' or '%' (%2e%2e, %2f, %5c, double encoding); no backslash, '?', '#', space or control
// character; well-formed %XX escapes only. Empty result: safe; else the reason.
std::string UnsafePathReason(std::string_view path);

// A Hugging Face repo id: "name" or "namespace/name", each 1-96 characters of [A-Za-z0-9._-],
// not starting with '.' or '-', without "..".
bool ValidHfRepoName(std::string_view name);
// A revision: a 40-hex commit sha, or a branch or tag name (git's ref-name rules, restricted to
// [A-Za-z0-9._/-]: no empty, "." or ".."-containing component, none starting with '.' or ending
// with ".lock", not ending with '.' or '/', at most 255 characters).
bool ValidHfRevision(std::string_view revision);

}  // namespace axqc::server::http
