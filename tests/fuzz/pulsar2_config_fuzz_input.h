// The Pulsar2 configuration fuzz input: the bytes of a config.json, judged without a model
// (ValidatePulsar2Config) and against a small QDQ model (CheckBytes with pulsar2_config), with the
// invariants of docs/pulsar2.md checked. Shared by the libFuzzer target (fuzz_pulsar2_config.cc)
// and the replay of its regression inputs in the normal suite
// (tests/unit/pulsar2_config_fuzz_regressions_test.cc).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "axqc/checker.h"
#include "axqc/pulsar2.h"
#include "modelgen/model_builder.h"

namespace axqc::fuzz {

// x -> Q/DQ U8 -> Conv "conv" -> Q/DQ U16 -> Reshape "resh" -> Q/DQ U16 -> Sigmoid "sig" -> y.
inline std::string Pulsar2FuzzModel() {
  using modelgen::ModelBuilder;
  using modelgen::QParams;
  using TP = onnx::TensorProto;
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {1, 4, 8, 8});
  auto x = b.QDQ("x", "x", QParams::U8());
  auto w = b.WeightQDQ("w", {8, 4, 3, 3},
                       QParams::PerChannel(modelgen::QType::kS8, std::vector<float>(8, 0.01f), 0));
  b.Node("Conv", {x, w}, {"conv_out"}, {}, "conv");
  auto c = b.QDQ("conv_out", "c", QParams::U16());
  b.InitInt("shape", TP::INT64, {2}, {1, -1});
  b.Node("Reshape", {c, "shape"}, {"r_out"}, {}, "resh");
  auto r = b.QDQ("r_out", "r", QParams::U16());
  b.Node("Sigmoid", {r}, {"s_out"}, {}, "sig");
  b.Output(b.QDQ("s_out", "s", QParams::U16()));
  return b.Serialize();
}

inline CheckOptions Pulsar2FuzzOptions() {
  CheckOptions o;
  o.include_units = false;
  o.targets = {"ax650"};
  return o;
}

// Judges one configuration; returns what broke ("" when every invariant holds). Exceptions are
// not caught: none may escape.
//  - ValidatePulsar2Config gives at most kMaxPulsar2ConfigFindings findings, all pulsar2/*;
//  - the check of the model with the configuration gives at most kMaxPulsar2ConfigFindings
//    pulsar2/* findings and the same spec verdict as without a configuration.
inline std::string Pulsar2ConfigProblems(std::string_view text) {
  static const std::string model = Pulsar2FuzzModel();
  static const Verdict plain = CheckBytes(model, "fuzz.onnx", Pulsar2FuzzOptions()).verdict;
  std::string problems;
  const auto schema = ValidatePulsar2Config(text);
  if (schema.size() > kMaxPulsar2ConfigFindings) {
    problems += "schema: " + std::to_string(schema.size()) + " findings\n";
  }
  for (const auto& f : schema) {
    if (!IsPulsar2Rule(f.rule)) problems += "schema: finding of rule " + f.rule + "\n";
  }
  CheckOptions o = Pulsar2FuzzOptions();
  o.pulsar2_config = std::string(text);
  const auto report = CheckBytes(model, "fuzz.onnx", o);
  std::size_t pulsar2 = 0;
  for (const auto& f : report.findings) pulsar2 += IsPulsar2Rule(f.rule) ? 1 : 0;
  if (pulsar2 > kMaxPulsar2ConfigFindings) {
    problems += "check: " + std::to_string(pulsar2) + " pulsar2 findings\n";
  }
  if (report.verdict != plain) {
    problems += "check: spec verdict " + std::string(VerdictName(report.verdict)) + " instead of " +
                std::string(VerdictName(plain)) + "\n";
  }
  return problems;
}

}  // namespace axqc::fuzz
