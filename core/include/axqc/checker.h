// Public entry points of the checker pipeline:
//   load model -> index graph -> read quant params -> group nodes into units -> apply rules ->
//   report.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "axqc/errors.h"  // InputError
#include "axqc/external_data.h"
#include "axqc/report.h"
#include "axqc/timing.h"   // StageTimings
#include "axqc/version.h"  // ToolVersion

namespace axqc {

struct CheckOptions {
  bool check_value = false;         // spec 2.5: -c / --check-value
  std::size_t max_locations = 5;    // per finding group
  bool include_units = true;        // fill Report::units (ownership map)
  bool include_graph = false;       // fill Report::graph (the whole graph, for pictures)
  StageTimings* timings = nullptr;  // when set, filled with the time of each stage
  // CheckBytes only: the SHA-256 (64 lowercase hex) of `bytes` when the caller has already
  // computed it from the same bytes (the server hashes uploads while receiving them); the loader
  // then does not hash them again and the report carries this value. The caller vouches for it:
  // never pass a hash that came with the bytes from outside. Empty: the loader hashes.
  std::string known_sha256{};
  // CheckBytes only: the external data files of the model (axqc/external_data.h), or null. Without
  // them a model with tensors stored as external data is an input error.
  const ExternalData* external_data = nullptr;
  // Chip targets to judge the model against (axqc/targets.h): chip names or aliases, or "all"
  // (ResolveTargets). Empty: none; the report is then what it was without targets.
  std::vector<std::string> targets{};
  // The text of a Pulsar2 build configuration (axqc/pulsar2.h, docs/pulsar2.md) to judge against
  // the model (rules pulsar2/*, never part of the spec verdict). nullopt: none.
  std::optional<std::string> pulsar2_config{};
};

// Checks the model file at `path`. External data is resolved inside the model's directory only.
// Throws InputError.
Report CheckFile(const std::string& path, const CheckOptions& options);

// Checks a serialized model held in memory. `name` is used in the report; external data comes from
// options.external_data only (without it, tensors stored externally are an input error). Throws
// InputError.
Report CheckBytes(std::string_view bytes, const std::string& name, const CheckOptions& options);

}  // namespace axqc
