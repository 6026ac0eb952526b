#include "logger.h"

#include <chrono>
#include <ctime>
#include <stdexcept>

namespace axqc::server {

LogLevel ParseLogLevel(std::string_view name) {
  if (name == "debug") return LogLevel::kDebug;
  if (name == "warn") return LogLevel::kWarn;
  if (name == "error") return LogLevel::kError;
  return LogLevel::kInfo;
}

namespace {
const char* LevelName(LogLevel l) {
  switch (l) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarn:
      return "warn";
    case LogLevel::kError:
      return "error";
  }
  return "info";
}
}  // namespace

std::string NowRfc3339() {
  const auto now = std::chrono::system_clock::now();
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  const std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[40];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  char out[48];
  std::snprintf(out, sizeof(out), "%s.%03dZ", buf, static_cast<int>(ms % 1000));
  return out;
}

Logger::Logger(LogLevel min_level, const std::string& path)
    : min_level_(min_level), out_(stderr), owns_(false) {
  if (!path.empty()) {
    out_ = std::fopen(path.c_str(), "ae");
    if (out_ == nullptr) throw std::runtime_error("cannot open log file " + path);
    owns_ = true;
  }
}

Logger::~Logger() {
  if (owns_) std::fclose(out_);
}

void Logger::Log(LogLevel level, std::string_view msg, nlohmann::json fields) {
  if (!Enabled(level)) return;
  nlohmann::json line = nlohmann::json::object();
  line["ts"] = NowRfc3339();
  line["level"] = LevelName(level);
  line["msg"] = msg;
  if (fields.is_object()) {
    for (auto& [k, v] : fields.items()) line[k] = std::move(v);
  }
  // Invalid UTF-8 in a field (e.g. a node name) is replaced, never thrown.
  std::string text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  text.push_back('\n');
  std::lock_guard<std::mutex> lock(mu_);
  std::fwrite(text.data(), 1, text.size(), out_);
  std::fflush(out_);
}

}  // namespace axqc::server
