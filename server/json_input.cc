#include "json_input.h"

#include <utility>

namespace axqc::server {

namespace {

grpc::Status Invalid(std::string msg) {
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, std::move(msg));
}

}  // namespace

grpc::Status CheckJsonBounds(std::string_view text, const JsonLimits& limits,
                             std::string_view what) {
  if (text.size() > limits.max_bytes) {
    return Invalid(std::string(what) + " is " + std::to_string(text.size()) +
                   " bytes, over the limit of " + std::to_string(limits.max_bytes) + " bytes");
  }
  std::size_t depth = 0;
  char quote = 0;  // inside a string: its quote character
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote != 0) {
      if (c == '\\') {
        ++i;  // the escaped character, whatever it is
      } else if (c == quote) {
        quote = 0;
      }
      continue;
    }
    switch (c) {
      case '"':
      case '\'':  // not JSON, but protobuf's JSON parser accepts single-quoted strings
        quote = c;
        break;
      case '[':
      case '{':
        if (++depth > limits.max_depth) {
          return Invalid(std::string(what) + " nests arrays and objects more than " +
                         std::to_string(limits.max_depth) + " levels deep");
        }
        break;
      case ']':
      case '}':
        if (depth > 0) --depth;
        break;
      default:
        break;
    }
  }
  return grpc::Status::OK;
}

grpc::Status ParseJson(std::string_view text, const JsonLimits& limits, std::string_view what,
                       nlohmann::json* out) {
  if (grpc::Status st = CheckJsonBounds(text, limits, what); !st.ok()) return st;
  try {
    *out = nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception& e) {  // parse_error: the only one parse() throws
    return Invalid(std::string(what) + " is not JSON: " + e.what());
  }
  return grpc::Status::OK;
}

JsonReader::JsonReader(const nlohmann::json& root, std::string what)
    : node_(&root), state_(std::make_shared<State>()) {
  state_->what = std::move(what);
  if (!root.is_object()) {
    state_->error = state_->what + " must be a JSON object, not " + std::string(root.type_name());
  }
}

const nlohmann::json* JsonReader::Member(std::string_view key) const {
  if (!ok() || node_ == nullptr || !node_->is_object()) return nullptr;
  const auto it = node_->find(key);
  if (it == node_->end() || it->is_null()) return nullptr;
  return &*it;
}

std::string JsonReader::Field(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

void JsonReader::Fail(std::string_view key, const char* expected, const nlohmann::json& got) const {
  if (!ok()) return;
  state_->error = state_->what + ": field " + Field(key) + " must be " + expected + ", not " +
                  std::string(got.type_name());
}

JsonReader JsonReader::Object(std::string_view key) const {
  const nlohmann::json* m = Member(key);
  if (m != nullptr && !m->is_object()) {
    Fail(key, "an object", *m);
    m = nullptr;
  }
  return JsonReader(m, Field(key), state_);
}

std::string JsonReader::String(std::string_view key) const {
  const nlohmann::json* m = Member(key);
  if (m == nullptr) return {};
  if (!m->is_string()) {
    Fail(key, "a string", *m);
    return {};
  }
  return m->get_ref<const std::string&>();
}

std::string JsonReader::StringOrInteger(std::string_view key) const {
  const nlohmann::json* m = Member(key);
  if (m == nullptr) return {};
  if (m->is_string()) return m->get_ref<const std::string&>();
  if (m->is_number_unsigned()) return std::to_string(m->get<std::uint64_t>());
  if (m->is_number_integer() && m->get<std::int64_t>() >= 0) {
    return std::to_string(m->get<std::int64_t>());
  }
  Fail(key, "a string or a non-negative integer", *m);
  return {};
}

bool JsonReader::Has(std::string_view key) const { return Member(key) != nullptr; }

grpc::Status JsonReader::status() const { return ok() ? grpc::Status::OK : Invalid(state_->error); }

}  // namespace axqc::server
