// Runs the axqc binary of this build (AXQC_BIN_PATH) with arguments, capturing its exit code and
// its output (stdout and stderr together).
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace axqc::test {

struct CliRun {
  int code = -1;
  std::string out;
};

inline CliRun Axqc(const std::string& args) {
  const std::string cmd = std::string(AXQC_BIN_PATH) + " " + args + " 2>&1";
  CliRun r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) r.out.append(buf, n);
  const int status = ::pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace axqc::test
