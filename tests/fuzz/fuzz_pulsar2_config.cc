// libFuzzer target: a Pulsar2 build configuration (bytes of a config.json) -> the lax-JSON reader,
// the schema walk and the checks against a small QDQ model (axqc/pulsar2.h, docs/pulsar2.md).
//
// Every input must end in findings (or none): the reader bounds the size and the nesting, the
// checks bound the entries and the findings. Any exception escapes (libFuzzer reports the abort
// from std::terminate as a crash), and ASan/UBSan report memory and undefined-behaviour errors.
// Configure with -DAXQC_FUZZ=ON (tests/fuzz/CMakeLists.txt); seeds: any config.json, e.g. the
// output of `axqc pulsar2-config`; dictionary: tests/fuzz/pulsar2.dict.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "axqc/checker.h"
#include "axqc/pulsar2.h"
#include "modelgen/model_builder.h"

namespace {

using axqc::modelgen::ModelBuilder;
using axqc::modelgen::QParams;
using TP = onnx::TensorProto;

// x -> Q/DQ U8 -> Conv "conv" -> Q/DQ U16 -> Reshape "resh" -> Q/DQ U16 -> Sigmoid "sig" -> y.
std::string Model() {
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {1, 4, 8, 8});
  auto x = b.QDQ("x", "x", QParams::U8());
  auto w =
      b.WeightQDQ("w", {8, 4, 3, 3},
                  QParams::PerChannel(axqc::modelgen::QType::kS8, std::vector<float>(8, 0.01f), 0));
  b.Node("Conv", {x, w}, {"conv_out"}, {}, "conv");
  auto c = b.QDQ("conv_out", "c", QParams::U16());
  b.InitInt("shape", TP::INT64, {2}, {1, -1});
  b.Node("Reshape", {c, "shape"}, {"r_out"}, {}, "resh");
  auto r = b.QDQ("r_out", "r", QParams::U16());
  b.Node("Sigmoid", {r}, {"s_out"}, {}, "sig");
  b.Output(b.QDQ("s_out", "s", QParams::U16()));
  return b.Serialize();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string model = Model();
  const std::string text(reinterpret_cast<const char*>(data), size);
  const auto schema = axqc::ValidatePulsar2Config(text);
  if (schema.size() > axqc::kMaxPulsar2ConfigFindings) __builtin_trap();
  axqc::CheckOptions o;
  o.include_units = false;
  o.targets = {"ax650"};
  o.pulsar2_config = text;
  const auto report = axqc::CheckBytes(model, "fuzz.onnx", o);
  std::size_t pulsar2 = 0;
  for (const auto& f : report.findings) pulsar2 += axqc::IsPulsar2Rule(f.rule) ? 1 : 0;
  if (pulsar2 > axqc::kMaxPulsar2ConfigFindings) __builtin_trap();
  return 0;
}
