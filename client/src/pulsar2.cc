// `axqc pulsar2-config` and the configuration file of `axqc check --pulsar2-config`
// (docs/pulsar2.md).
#include "axqc/pulsar2.h"

#include <fstream>
#include <iostream>
#include <stdexcept>
#include <string>

#include "axqc/errors.h"
#include "axqc/utf8.h"
#include "cli.h"
#include "exit_codes.h"

namespace axqc::cli {

bool ReadPulsar2Config(CheckArgs& args) {
  std::ifstream in(args.pulsar2_config, std::ios::binary);
  if (!in) {
    std::cerr << "axqc: --pulsar2-config: cannot read " << args.pulsar2_config << "\n";
    return false;
  }
  // One byte more than the bound: the checker then reports the file as too large.
  std::string text(kMaxPulsar2ConfigBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) {
    std::cerr << "axqc: --pulsar2-config: cannot read " << args.pulsar2_config << "\n";
    return false;
  }
  text.resize(static_cast<std::size_t>(in.gcount()));
  // Locally an oversized or non-text file is a pulsar2/config-invalid finding; a server and the
  // sandboxed worker take at most kMaxPulsar2ConfigBytes of UTF-8 text (docs/pulsar2.md).
  const bool remote = !args.remote.server.empty();
  if ((remote || args.isolate) && text.size() > kMaxPulsar2ConfigBytes) {
    std::cerr << "axqc: --pulsar2-config: " << args.pulsar2_config << " is larger than "
              << kMaxPulsar2ConfigBytes << " bytes\n";
    return false;
  }
  if (remote && !ValidUtf8(text)) {
    std::cerr << "axqc: --pulsar2-config: " << args.pulsar2_config
              << " is not UTF-8 text (a Pulsar2 configuration is JSON)\n";
    return false;
  }
  args.pulsar2_config_text = std::move(text);
  return true;
}

int RunPulsar2Config(const Pulsar2ConfigArgs& args) {
  std::string text;
  try {
    text = GeneratePulsar2Config(args.model, args.target);
  } catch (const InputError& e) {
    std::cerr << "axqc: " << e.what() << "\n";
    return kExitError;
  } catch (const std::invalid_argument& e) {
    std::cerr << "axqc: --target: " << e.what() << "\n";
    return kExitError;
  }
  if (args.output.empty()) {
    std::cout << text;
    std::cout.flush();
    return std::cout ? 0 : kExitError;
  }
  std::ofstream out(args.output, std::ios::binary);
  out << text;
  out.flush();
  if (!out) {
    std::cerr << "axqc: cannot write " << args.output << "\n";
    return kExitError;
  }
  return 0;
}

}  // namespace axqc::cli
