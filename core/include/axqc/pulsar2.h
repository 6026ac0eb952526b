// The Pulsar2 build configuration (docs/pulsar2.md): the JSON file `pulsar2 build --config` reads.
//
// The schema is data (core/pulsar2/build_config.json: the messages, fields and enums of the proto
// definition in Axera's config.md, with the source file and commit), built into the library. A
// configuration is judged against the schema and against the model it is meant for (rules
// pulsar2/*, CheckOptions::pulsar2_config), and one can be generated from a model
// (GeneratePulsar2Config). A configuration is hostile input: its size and nesting are bounded and
// every failure is a finding, never a crash.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "axqc/report.h"

namespace axqc {

inline constexpr std::size_t kMaxPulsar2ConfigBytes = 1 << 20;  // 1 MiB
inline constexpr int kMaxPulsar2ConfigDepth = 32;               // nested objects and arrays
inline constexpr std::size_t kMaxPulsar2ConfigFindings = 1000;  // then one truncation note

// A configuration read as Pulsar2 reads it: "lax" JSON (js-style // and /* */ comments,
// python-style # comments, trailing commas). `error` is empty on success.
struct Pulsar2ConfigParse {
  nlohmann::json value;
  std::string error;
};
Pulsar2ConfigParse ParsePulsar2Config(std::string_view text);

// The built-in schema's source: "AXERA-TECH/pulsar2-docs@<commit>" and its files.
std::string Pulsar2SchemaSource();
// The schema file as built in (core/pulsar2/build_config.json).
std::string_view Pulsar2SchemaText();

// The schema findings of a configuration, without a model (pulsar2/config-invalid,
// pulsar2/unknown-field, pulsar2/field-value).
std::vector<Finding> ValidatePulsar2Config(std::string_view text);

// A build configuration for the model: model_type QuantONNX, the target chip, the model's inputs,
// the 16-bit regions it carries (layer_configs) and its bias type. `target`: a chip name or alias
// of the chip profiles (axqc/targets.h). Returns JSON text (2-space indent, newline at the end).
// Throws InputError (model) and std::invalid_argument (unknown target, or a chip Pulsar2's
// target_hardware cannot name).
std::string GeneratePulsar2Config(const std::string& model_path, std::string_view target);
std::string GeneratePulsar2ConfigBytes(std::string_view bytes, const std::string& name,
                                       std::string_view target);

// True for the rule IDs of the configuration ("pulsar2/..."): they never change the spec verdict.
bool IsPulsar2Rule(std::string_view rule);

}  // namespace axqc
