// Structured logs: one JSON object per line ({"ts","level","msg",...fields}). Thread-safe.
// Never pass model bytes, tokens or URL query strings as fields.
#pragma once

#include <cstdio>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace axqc::server {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

// "debug", "info", "warn", "error"; anything else is kInfo.
LogLevel ParseLogLevel(std::string_view name);

class Logger {
 public:
  // Writes to `path` (appending) or to stderr when `path` is empty. Throws std::runtime_error when
  // the file cannot be opened.
  Logger(LogLevel min_level, const std::string& path);
  ~Logger();
  Logger(const Logger&) = delete;
  Logger& operator=(const Logger&) = delete;

  bool Enabled(LogLevel level) const { return level >= min_level_; }
  void Log(LogLevel level, std::string_view msg, nlohmann::json fields = nlohmann::json::object());
  void Debug(std::string_view msg, nlohmann::json fields = nlohmann::json::object()) {
    Log(LogLevel::kDebug, msg, std::move(fields));
  }
  void Info(std::string_view msg, nlohmann::json fields = nlohmann::json::object()) {
    Log(LogLevel::kInfo, msg, std::move(fields));
  }
  void Warn(std::string_view msg, nlohmann::json fields = nlohmann::json::object()) {
    Log(LogLevel::kWarn, msg, std::move(fields));
  }
  void Error(std::string_view msg, nlohmann::json fields = nlohmann::json::object()) {
    Log(LogLevel::kError, msg, std::move(fields));
  }

 private:
  LogLevel min_level_;
  std::FILE* out_;
  bool owns_;
  std::mutex mu_;
};

// RFC 3339 UTC timestamp with milliseconds, e.g. "2026-11-29T14:00:00.123Z".
std::string NowRfc3339();

}  // namespace axqc::server
