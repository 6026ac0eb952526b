// The project configuration of `axqc check`: axqc.toml (or .axqc.toml), found from the working
// directory upwards or given with --config. Only TOML is read: a YAML file of the same name
// (.axqc.yaml and the like) is refused with a message instead of being ignored. Holds defaults of
// the check options and the waivers of the CI gate (docs/ci.md, "Waivers and baselines").
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "axqc/catalog.h"
#include "axqc/gate.h"

namespace axqc::cli {

// A configuration that cannot be used; what() names the file, the line and the problem.
// axqc::server::ConfigError (server/config.h) is another type of the same name on purpose: no
// translation unit sees both (each config.h is only on its own folder's include path, checked
// with build/*/compile_commands.json), and the namespaces keep them apart.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Config {
  std::string path;  // as found or given
  std::string dir;   // its directory: relative paths in the file are relative to it
  // [check]
  std::optional<bool> check_value;
  std::optional<std::size_t> max_locations;
  std::optional<Severity> fail_on;             // kError or kWarn
  std::optional<bool> fail_on_not_applicable;  // a not_applicable model fails (exit 1)
  std::string baseline;                        // resolved against `dir`; "" = none
  // Rule selectors (axqc/gate.h RuleSelection); `axqc check --select` replaces both, `--ignore`
  // adds to `ignore`.
  std::optional<std::vector<std::string>> select;
  std::vector<std::string> ignore;
  // [[waiver]]
  std::vector<Waiver> waivers;
};

// File names looked for, in this order, in each directory.
inline constexpr const char* kConfigNames[] = {"axqc.toml", ".axqc.toml"};
// YAML names a user might expect to work: a directory with one of these and no TOML file is an
// error (ConfigError), so waivers written in YAML never silently go unused.
inline constexpr const char* kYamlConfigNames[] = {"axqc.yaml", ".axqc.yaml", "axqc.yml",
                                                   ".axqc.yml"};

// The first configuration file in `start` or one of its parents; nullopt when there is none.
// Throws ConfigError when the nearest directory with a configuration has only a YAML one.
std::optional<std::filesystem::path> FindConfig(const std::filesystem::path& start);

// `path` relative to the working directory when that is shorter to read ("axqc.toml",
// "../axqc.toml"), else absolute.
std::string DisplayPath(const std::string& path);

// Parses the configuration at `path` (shown as DisplayPath(path) in messages and reports). Unknown
// tables and keys are errors (a typo must not silently disable a waiver); a .yaml/.yml file is
// refused (TOML only). Throws ConfigError.
Config LoadConfig(const std::string& path);

// Parses configuration text; `path` is used in messages and to resolve relative paths.
Config ParseConfig(const std::string& text, const std::string& path);

}  // namespace axqc::cli
