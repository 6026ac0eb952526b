#include "config.h"

#include <toml++/toml.h>

#include <cctype>
#include <fstream>
#include <sstream>

#include "axqc/catalog.h"
#include "axqc/gate.h"

namespace axqc::cli {

namespace fs = std::filesystem;

namespace {

class Parser {
 public:
  explicit Parser(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void Fail(const toml::source_region& where, const std::string& what) const {
    std::string at = path_;
    if (where.begin.line > 0) at += ":" + std::to_string(where.begin.line);
    throw ConfigError(at + ": " + what);
  }

  std::string String(const toml::node& n, const std::string& key) const {
    if (!n.is_string()) Fail(n.source(), "`" + key + "` must be a string");
    return n.as_string()->get();
  }

  // A string or an array of strings.
  std::vector<std::string> Strings(const toml::node& n, const std::string& key) const {
    std::vector<std::string> out;
    if (n.is_string()) {
      out.push_back(n.as_string()->get());
    } else if (const auto* arr = n.as_array()) {
      for (const auto& el : *arr) {
        if (!el.is_string()) Fail(el.source(), "`" + key + "` must list strings");
        out.push_back(el.as_string()->get());
      }
      if (out.empty()) Fail(n.source(), "`" + key + "` is an empty list");
    } else {
      Fail(n.source(), "`" + key + "` must be a string or a list of strings");
    }
    return out;
  }

  // A TOML date (2026-06-30) or the same as a string.
  std::string Date(const toml::node& n, const std::string& key) const {
    std::string text;
    if (const auto* d = n.as_date()) {
      const toml::date v = d->get();
      std::ostringstream o;
      o << v;  // YYYY-MM-DD
      text = o.str();
    } else if (n.is_string()) {
      text = n.as_string()->get();
    } else {
      Fail(n.source(), "`" + key + "` must be a date, e.g. 2026-06-30");
    }
    if (!IsIsoDate(text)) Fail(n.source(), "`" + key + "` '" + text + "' is not a date YYYY-MM-DD");
    return text;
  }

  void CheckTable(const toml::table& t, Config& c) const {
    for (const auto& [key, n] : t) {
      const std::string k(key.str());
      if (k == "check_value") {
        if (!n.is_boolean()) Fail(n.source(), "`check_value` must be true or false");
        c.check_value = n.as_boolean()->get();
      } else if (k == "max_locations") {
        const auto v = n.value<std::int64_t>();
        if (!n.is_integer() || !v || *v < 1 || *v > 1000) {
          Fail(n.source(), "`max_locations` must be an integer from 1 to 1000");
        }
        c.max_locations = static_cast<std::size_t>(*v);
      } else if (k == "fail_on") {
        const std::string v = String(n, k);
        if (v == "error") {
          c.fail_on = Severity::kError;
        } else if (v == "warn") {
          c.fail_on = Severity::kWarn;
        } else {
          Fail(n.source(), "`fail_on` must be \"error\" or \"warn\", not \"" + v + "\"");
        }
      } else if (k == "fail_on_not_applicable") {
        if (!n.is_boolean()) Fail(n.source(), "`fail_on_not_applicable` must be true or false");
        c.fail_on_not_applicable = n.as_boolean()->get();
      } else if (k == "select" || k == "ignore") {
        std::vector<std::string> v = Strings(n, k);
        for (const auto& selector : v) {
          const std::string problem = CheckRuleSelector(selector);
          if (!problem.empty()) Fail(n.source(), "`" + k + "`: " + problem);
        }
        if (k == "select") {
          c.select = std::move(v);
        } else {
          c.ignore = std::move(v);
        }
      } else if (k == "baseline") {
        const std::string v = String(n, k);
        if (v.empty()) Fail(n.source(), "`baseline` is empty");
        const fs::path p(v);
        c.baseline = p.is_absolute() || c.dir == "." ? v : (fs::path(c.dir) / p).string();
      } else {
        Fail(key.source(), "unknown key `" + k +
                               "` in [check] (known: check_value, max_locations, fail_on, "
                               "fail_on_not_applicable, baseline, select, ignore)");
      }
    }
  }

  Waiver ParseWaiver(const toml::table& t) const {
    Waiver w;
    w.file = path_;
    w.line = static_cast<int>(t.source().begin.line);
    for (const auto& [key, n] : t) {
      const std::string k(key.str());
      if (k == "rule") {
        w.rules = Strings(n, k);
        // A rule ID without glob characters must be one of the catalog: a misspelt waiver would
        // silently waive nothing.
        for (const auto& r : w.rules) {
          if (r.find_first_of("*?[") != std::string::npos || FindRule(r) != nullptr) continue;
          const RuleInfo* near = ClosestRule(r);
          Fail(n.source(), "unknown rule `" + r + "` in `rule`" +
                               (near != nullptr ? " (did you mean `" + std::string(near->id) + "`?)"
                                                : std::string(" (`axqc rules` lists them)")));
        }
      } else if (k == "node") {
        w.nodes = Strings(n, k);
      } else if (k == "tensor") {
        w.tensors = Strings(n, k);
      } else if (k == "op_type") {
        w.op_types = Strings(n, k);
      } else if (k == "model") {
        w.models = Strings(n, k);
      } else if (k == "fingerprint") {
        w.fingerprints = Strings(n, k);
      } else if (k == "reason") {
        w.reason = String(n, k);
      } else if (k == "expires") {
        w.expires = Date(n, k);
      } else {
        Fail(key.source(), "unknown key `" + k +
                               "` in [[waiver]] (known: rule, node, tensor, op_type, model, "
                               "fingerprint, reason, expires)");
      }
    }
    try {
      ValidateWaiver(w);
    } catch (const std::invalid_argument& e) {
      throw ConfigError(e.what());
    }
    return w;
  }

  Config Parse(const std::string& text) const {
    Config c;
    c.path = path_;
    const fs::path parent = fs::path(path_).parent_path();
    c.dir = parent.empty() ? "." : parent.string();
    toml::table root;
    try {
      root = toml::parse(text, path_);
    } catch (const toml::parse_error& e) {
      Fail(e.source(), std::string(e.description()));
    }
    for (const auto& [key, n] : root) {
      const std::string k(key.str());
      if (k == "check") {
        const auto* t = n.as_table();
        if (t == nullptr) Fail(n.source(), "`check` must be a table: [check]");
        CheckTable(*t, c);
      } else if (k == "waiver") {
        const auto* arr = n.as_array();
        if (arr == nullptr || !arr->is_array_of_tables()) {
          Fail(n.source(), "`waiver` must be an array of tables: [[waiver]]");
        }
        for (const auto& el : *arr) c.waivers.push_back(ParseWaiver(*el.as_table()));
      } else {
        Fail(key.source(), "unknown key `" + k + "` (known: [check], [[waiver]])");
      }
    }
    return c;
  }

 private:
  std::string path_;
};

std::string YamlRefused(const std::string& shown) {
  return shown +
         ": axqc reads its configuration from TOML only (axqc.toml or .axqc.toml), not YAML; "
         "write the same [check] table and [[waiver]] entries as axqc.toml (docs/ci.md), or "
         "pass --no-config";
}

bool IsYamlName(const fs::path& p) {
  std::string ext = p.extension().string();
  for (char& ch : ext) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return ext == ".yaml" || ext == ".yml";
}

}  // namespace

std::optional<fs::path> FindConfig(const fs::path& start) {
  std::error_code ec;
  fs::path dir = fs::absolute(start, ec);
  if (ec) return std::nullopt;
  for (;;) {
    for (const char* name : kConfigNames) {
      const fs::path candidate = dir / name;
      if (fs::is_regular_file(candidate, ec)) return candidate;
    }
    for (const char* name : kYamlConfigNames) {
      const fs::path candidate = dir / name;
      if (fs::is_regular_file(candidate, ec)) {
        throw ConfigError(YamlRefused(DisplayPath(candidate.string())));
      }
    }
    if (!dir.has_parent_path() || dir.parent_path() == dir) return std::nullopt;
    dir = dir.parent_path();
  }
}

Config ParseConfig(const std::string& text, const std::string& path) {
  return Parser(path).Parse(text);
}

std::string DisplayPath(const std::string& path) {
  std::error_code ec;
  const fs::path abs = fs::absolute(path, ec).lexically_normal();
  if (ec) return path;
  const fs::path cwd = fs::current_path(ec);
  if (ec) return abs.string();
  const fs::path rel = abs.lexically_relative(cwd);
  return rel.empty() ? abs.string() : rel.string();
}

Config LoadConfig(const std::string& path) {
  const std::string shown = DisplayPath(path);
  if (IsYamlName(path)) throw ConfigError(YamlRefused(shown));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(shown + ": cannot read the configuration file");
  std::stringstream buf;
  buf << in.rdbuf();
  return ParseConfig(buf.str(), shown);
}

}  // namespace axqc::cli
