// The `axqc` command line: shared option structs and the subcommand entry points.
#pragma once

#include <string>
#include <vector>

namespace axqc::cli {

// Exit codes of every subcommand (local and remote): 0 conformant, 1 non_conformant,
// 2 usage/input/infrastructure error, 3 not_applicable.
inline constexpr int kExitError = 2;

struct CheckArgs {
  std::vector<std::string> models;
  bool check_value = false;
  std::string format = "text";  // text | json
  std::string output;           // -o FILE ("" = stdout)
  bool explain = false;
  std::string color = "auto";   // auto | always | never
  std::size_t max_locations = 5;
};

int RunLocalCheck(const CheckArgs& args);
int RunRules(const std::string& format, bool operators);

}  // namespace axqc::cli
