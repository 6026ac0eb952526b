// JSON from the network, bounded and typed: every JSON document the server reads from a client or
// a registry (HTTP request bodies, webhook deliveries, registry API answers) goes through here.
//   - CheckJsonBounds: size and nesting depth, found by one iterative scan before any parser sees
//     the text (nlohmann's and protobuf's parsers and the DOM they build never see more than
//     kMaxJsonDepth levels, so nothing recursive can run out of stack).
//   - ParseJson: the bounds, then nlohmann's parser; errors are statuses, never exceptions.
//   - JsonReader: typed access to the parsed fields; a field of the wrong type is an
//     INVALID_ARGUMENT naming the field ("repo.name must be a string, not a number").
#pragma once

#include <grpcpp/support/status.h>

#include <cstddef>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace axqc::server {

// Deepest nesting of arrays and objects accepted (real payloads nest 3-5 levels).
inline constexpr std::size_t kMaxJsonDepth = 64;

struct JsonLimits {
  std::size_t max_bytes = 1 << 20;
  std::size_t max_depth = kMaxJsonDepth;
};

// INVALID_ARGUMENT when `text` is longer than limits.max_bytes or nests arrays/objects deeper than
// limits.max_depth; `what` names the document in the message ("webhook body"). Strings (double- and
// single-quoted, with escapes) are skipped, so brackets inside them do not count. Linear time, no
// recursion, no allocation.
grpc::Status CheckJsonBounds(std::string_view text, const JsonLimits& limits,
                             std::string_view what);

// CheckJsonBounds, then nlohmann's parser. INVALID_ARGUMENT "<what> is not JSON: ..." on a syntax
// error.
grpc::Status ParseJson(std::string_view text, const JsonLimits& limits, std::string_view what,
                       nlohmann::json* out);

// Typed reads of the fields of a parsed JSON object. The first mismatch is remembered and
// reported by status(); reads after it return empty values, so a parser reads all the fields it
// needs and checks status() once:
//
//   JsonReader body(json, "webhook body");
//   const std::string name = body.Object("repo").String("name");
//   if (!body.ok()) return body.status();
//
// Absent and null fields read as empty (an empty object, "", nullopt); presence rules are the
// caller's. Copies of a reader share its error.
class JsonReader {
 public:
  // The root of the document `what`; an error unless it is an object.
  JsonReader(const nlohmann::json& root, std::string what);

  // Member `key` as an object (absent or null: an empty object).
  JsonReader Object(std::string_view key) const;
  // Member `key` as a string (absent or null: "").
  std::string String(std::string_view key) const;
  // Member `key` as a string or a non-negative integer, as decimal text (absent or null: "").
  std::string StringOrInteger(std::string_view key) const;
  // Member `key` exists and is not null.
  bool Has(std::string_view key) const;

  bool ok() const { return state_->error.empty(); }
  // OK, or INVALID_ARGUMENT naming the first field of the wrong type.
  grpc::Status status() const;

 private:
  struct State {
    std::string what;
    std::string error;
  };
  JsonReader(const nlohmann::json* node, std::string path, std::shared_ptr<State> state)
      : node_(node), path_(std::move(path)), state_(std::move(state)) {}
  const nlohmann::json* Member(std::string_view key) const;
  std::string Field(std::string_view key) const;
  void Fail(std::string_view key, const char* expected, const nlohmann::json& got) const;

  const nlohmann::json* node_;  // null: absent (reads as an empty object)
  std::string path_;            // "" at the root, else "repo", "event"...
  std::shared_ptr<State> state_;
};

}  // namespace axqc::server
