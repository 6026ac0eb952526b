// The Pulsar2 build configuration (docs/pulsar2.md): the schema of core/pulsar2 loads and accepts
// every documented field; every pulsar2/* rule has a configuration that triggers it and one that
// does not; pulsar2 findings never change the spec verdict; the readings of docs/readings.md;
// the generated configuration of every example and real export passes its own check; the CLI's
// `check --pulsar2-config` and `pulsar2-config`.
#include "axqc/pulsar2.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "axqc/errors.h"
#include "check_helpers.h"
#include "cli_run.h"

namespace axqc::test {
namespace {

namespace fs = std::filesystem;
using AB = ModelBuilder;
using json = nlohmann::json;

// x -> Q/DQ U8 -> Conv "conv" (S8 per-channel weight, INT32 bias) -> Q/DQ U16 -> Reshape "resh"
// -> Q/DQ U16 -> Sigmoid "sig" -> Q/DQ U16 -> y. Tensors: conv_out, r_out, s_out.
AB Mixed() {
  AB b;
  b.Input("x", TP::FLOAT, {1, 4, 8, 8});
  auto x = b.QDQ("x", "x", QParams::U8(0.02f, 128));
  const auto ws = Scales(8);
  auto w = b.WeightQDQ("w", {8, 4, 3, 3}, QParams::PerChannel(QType::kS8, ws, 0));
  auto bias = b.BiasInt32DQ("b", 8, modelgen::BiasScales(0.02f, ws));
  b.Node("Conv", {x, w, bias}, {"conv_out"}, {AB::AttrInts("pads", {1, 1, 1, 1})}, "conv");
  auto c = b.QDQ("conv_out", "c", QParams::U16());
  b.InitInt("shape", TP::INT64, {2}, {1, -1});
  b.Node("Reshape", {c, "shape"}, {"r_out"}, {}, "resh");
  auto r = b.QDQ("r_out", "r", QParams::U16());
  b.Node("Sigmoid", {r}, {"s_out"}, {}, "sig");
  auto s = b.QDQ("s_out", "s", QParams::U16());
  b.Output(s);
  return b;
}

// x -> Q/DQ U8 -> Tanh "tanh" -> Q/DQ U8 -> y.
AB TanhModel() {
  AB b;
  b.Input("x", TP::FLOAT, {1, 4});
  auto x = b.QDQ("x", "x", QParams::U8());
  b.Node("Tanh", {x}, {"t_out"}, {}, "tanh");
  b.Output(b.QDQ("t_out", "t", QParams::U8()));
  return b;
}

AB FloatModel() {
  AB b;
  b.Input("x", TP::FLOAT, {1, 4});
  b.Node("Relu", {"x"}, {"y"}, {}, "relu");
  b.Output("y");
  return b;
}

Report CheckWith(const AB& b, const std::string& config, std::vector<std::string> targets = {}) {
  CheckOptions o;
  o.max_locations = 100;
  o.targets = std::move(targets);
  o.pulsar2_config = config;
  return CheckBytes(b.Serialize(), "test.onnx", o);
}

std::string Value(const Finding& f, const std::string& key) {
  for (const auto& [k, v] : f.values) {
    if (k == key) return v;
  }
  return {};
}

std::vector<const Finding*> Pulsar2(const Report& r, const std::string& rule) {
  std::vector<const Finding*> out;
  for (const auto& f : r.findings) {
    if (f.rule == rule) out.push_back(&f);
  }
  return out;
}

std::vector<const Finding*> AllPulsar2(const Report& r) {
  std::vector<const Finding*> out;
  for (const auto& f : r.findings) {
    if (IsPulsar2Rule(f.rule)) out.push_back(&f);
  }
  return out;
}

std::string Dump(const std::vector<const Finding*>& fs) {
  std::string s;
  for (const auto* f : fs) s += f->rule + ": " + f->message + "\n";
  return s;
}

// The finding of `rule` whose configuration field is `field`, or null.
const Finding* At(const Report& r, const std::string& rule, const std::string& field) {
  for (const auto* f : Pulsar2(r, rule)) {
    if (Value(*f, "field") == field) return f;
  }
  return nullptr;
}

#define EXPECT_P2(report, rule, field)                                                      \
  do {                                                                                      \
    const Report& r_ = (report);                                                            \
    const Finding* f_ = At(r_, rule, field);                                                \
    ASSERT_NE(f_, nullptr) << "expected " << rule << " at " << field << "\n"                \
                           << Dump(AllPulsar2(r_));                                         \
    EXPECT_EQ(f_->severity, FindRule(rule)->severity);                                      \
    EXPECT_EQ(f_->section, "pulsar2");                                                      \
    EXPECT_NE(Value(*f_, "doc").find("AXERA-TECH/pulsar2-docs@b32f7c1"), std::string::npos) \
        << f_->message;                                                                     \
  } while (0)

#define EXPECT_NO_P2(report, rule)                                          \
  do {                                                                      \
    const Report& r_ = (report);                                            \
    EXPECT_TRUE(Pulsar2(r_, rule).empty()) << "unexpected " << rule << "\n" \
                                           << Dump(AllPulsar2(r_));         \
  } while (0)

const std::string kQuant = R"("model_type": "QuantONNX", "target_hardware": "AX650")";

// ----------------------------------------------------------------------------------- schema

TEST(Pulsar2Schema, LoadsWithItsSource) {
  EXPECT_EQ(Pulsar2SchemaSource().rfind("AXERA-TECH/pulsar2-docs@"
                                        "b32f7c1dd95f9fa8c5edcaa4b151f1023a940416:",
                                        0),
            0u);
  EXPECT_NE(Pulsar2SchemaSource().find("source/user_guides_config/config.md"), std::string::npos);
  std::ifstream in(fs::path(AXQC_SOURCE_DIR) / "core/pulsar2/build_config.json", std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), Pulsar2SchemaText()) << "rebuild (cmake) to embed the edit";
}

// A value of each field's kind, built from the schema itself: every documented field and every
// documented option is accepted.
json Sample(const json& schema, const std::string& message, int depth) {
  json out = json::object();
  const json& enums = schema.at("enums");
  for (const auto& [field, spec] : schema.at("messages").at(message).items()) {
    std::string type =
        spec.is_string() ? spec.get<std::string>() : spec.at("type").get<std::string>();
    const bool repeated = type.rfind("repeated ", 0) == 0;
    if (repeated) type = type.substr(9);
    json v;
    if (type == "string") {
      v = "DEFAULT";
    } else if (type == "bool") {
      v = true;
    } else if (type == "int") {
      v = 1;
    } else if (type == "float") {
      v = 0.5;
    } else if (type == "struct") {
      v = json::object({{"any", json::array({1, "x"})}});
    } else if (type.rfind("enum:", 0) == 0) {
      const json& options = spec.is_object() && spec.contains("options") ? spec.at("options")
                                                                         : enums.at(type.substr(5));
      v = options.back();
    } else if (type.rfind("message:", 0) == 0) {
      if (depth > 2) continue;
      v = Sample(schema, type.substr(8), depth + 1);
    }
    out[field] = repeated ? json::array({v}) : v;
  }
  return out;
}

TEST(Pulsar2Schema, EveryDocumentedFieldIsAccepted) {
  const json schema = json::parse(Pulsar2SchemaText());
  const json sample = Sample(schema, "BuildConfig", 0);
  EXPECT_TRUE(sample.contains("quant"));
  EXPECT_TRUE(sample.at("quant").contains("layer_configs"));
  const auto found = ValidatePulsar2Config(sample.dump());
  std::vector<const Finding*> p;
  for (const auto& f : found) p.push_back(&f);
  EXPECT_TRUE(found.empty()) << Dump(p);
  // Each enum option of data_type in turn.
  for (const char* dt : {"U8", "S8", "U16", "S16", "FP32"}) {
    const std::string cfg =
        std::string(R"({"quant": {"layer_configs": [{"op_type": "Add", "data_type": ")") + dt +
        R"("}]}})";
    EXPECT_TRUE(ValidatePulsar2Config(cfg).empty()) << cfg;
  }
}

// ------------------------------------------------------------------------- config-invalid

TEST(Pulsar2Rules, ConfigInvalid) {
  const auto m = Mixed();
  EXPECT_P2(CheckWith(m, "{ \"model_type\": "), "pulsar2/config-invalid", "");
  EXPECT_P2(CheckWith(m, "[1, 2]"), "pulsar2/config-invalid", "");
  EXPECT_P2(CheckWith(m, "/* never closed"), "pulsar2/config-invalid", "");
  std::string deep = "{\"quant\": " + std::string(40, '[') + std::string(40, ']') + "}";
  EXPECT_P2(CheckWith(m, deep), "pulsar2/config-invalid", "");
  std::string big = "{\"input\": \"" + std::string(kMaxPulsar2ConfigBytes, 'a') + "\"}";
  const Report r = CheckWith(m, big);
  EXPECT_P2(r, "pulsar2/config-invalid", "");
  EXPECT_NE(Pulsar2(r, "pulsar2/config-invalid")[0]->message.find("larger than"),
            std::string::npos);
  // Lax JSON as Pulsar2 reads it: comments of both styles and trailing commas.
  const std::string lax =
      "{\n  // js comment\n  \"model_type\": \"QuantONNX\", # python comment\n"
      "  /* block */ \"target_hardware\": \"AX650\",\n"
      "  \"input_processors\": [{\"tensor_name\": \"x\",},],\n}\n";
  const Report ok = CheckWith(m, lax);
  EXPECT_NO_P2(ok, "pulsar2/config-invalid");
  EXPECT_TRUE(AllPulsar2(ok).empty()) << Dump(AllPulsar2(ok));
  // '#' and '//' inside strings are text, not comments.
  const auto parsed = ParsePulsar2Config(R"({"input": "a#b//c", "output_dir": "/*x*/"})");
  ASSERT_TRUE(parsed.error.empty()) << parsed.error;
  EXPECT_EQ(parsed.value.at("input"), "a#b//c");
  EXPECT_EQ(parsed.value.at("output_dir"), "/*x*/");
}

// -------------------------------------------------------------------------- unknown-field

TEST(Pulsar2Rules, UnknownField) {
  const auto m = Mixed();
  const Report r = CheckWith(m, "{" + kQuant + R"(, "quant": {"calibrate_method": "MinMax"},
      "Input_Shapes": "x:1x4x8x8", "compiler": {"npu_perf": true, "fast": true}})");
  EXPECT_P2(r, "pulsar2/unknown-field", "quant.calibrate_method");
  EXPECT_P2(r, "pulsar2/unknown-field", "compiler.fast");
  EXPECT_P2(r, "pulsar2/unknown-field", "Input_Shapes");
  EXPECT_EQ(Value(*At(r, "pulsar2/unknown-field", "Input_Shapes"), "documented"), "input_shapes");
  EXPECT_EQ(Value(*At(r, "pulsar2/unknown-field", "quant.calibrate_method"), "documented"),
            "calibration_method");
  EXPECT_EQ(Value(*At(r, "pulsar2/unknown-field", "compiler.fast"), "documented"), "");
  EXPECT_EQ(Pulsar2(r, "pulsar2/unknown-field").size(), 3u);
  EXPECT_NO_P2(CheckWith(m, "{" + kQuant + R"(, "quant": {"calibration_method": "MinMax"},
      "compiler": {"npu_perf": true}})"),
               "pulsar2/unknown-field");
}

// ---------------------------------------------------------------------------- field-value

TEST(Pulsar2Rules, FieldValue) {
  const auto m = Mixed();
  const Report r = CheckWith(m, R"({"model_type": "QuantONNX", "target_hardware": "AX999",
      "npu_mode": 3, "onnx_opt": {"enable_onnxsim": "yes"},
      "quant": {"layer_configs": [{"layer_name": "sig", "data_type": "U4"}],
                "calibration_size": 1, "conv_bias_data_type": "S16", "finetune_epochs": 1.5},
      "input_processors": "x", "input_shapes": "x=1x4x8x8"})");
  for (const char* field : {"target_hardware", "npu_mode", "onnx_opt.enable_onnxsim",
                            "quant.layer_configs[0].data_type", "quant.conv_bias_data_type",
                            "quant.finetune_epochs", "input_processors", "input_shapes"}) {
    EXPECT_P2(r, "pulsar2/field-value", field);
  }
  EXPECT_EQ(Value(*At(r, "pulsar2/field-value", "quant.layer_configs[0].data_type"), "options"),
            "U8|S8|U16|S16|FP32");
  // calibration_size belongs to input_configs, not to quant.
  EXPECT_P2(r, "pulsar2/unknown-field", "quant.calibration_size");
  EXPECT_NO_P2(CheckWith(m, R"({"model_type": "QuantONNX", "target_hardware": "AX650",
      "npu_mode": "NPU3", "onnx_opt": {"enable_onnxsim": false},
      "quant": {"layer_configs": [{"layer_name": "sig", "data_type": "U16"}],
                "conv_bias_data_type": "S32", "finetune_epochs": 2.0},
      "input_shapes": "x:1x4x8x8"})"),
               "pulsar2/field-value");
}

// ----------------------------------------------------------------------------- model-type

TEST(Pulsar2Rules, ModelType) {
  const auto m = Mixed();
  const Report absent = CheckWith(m, R"({"target_hardware": "AX650"})");
  EXPECT_P2(absent, "pulsar2/model-type", "model_type");
  EXPECT_NE(Pulsar2(absent, "pulsar2/model-type")[0]->message.find("(the default)"),
            std::string::npos);
  EXPECT_P2(CheckWith(m, R"({"model_type": "ONNX"})"), "pulsar2/model-type", "model_type");
  EXPECT_P2(CheckWith(m, R"({"model_type": "QuantAxModel"})"), "pulsar2/model-type", "model_type");
  EXPECT_NO_P2(CheckWith(m, R"({"model_type": "QuantONNX"})"), "pulsar2/model-type");
  // A float model is built as ONNX.
  EXPECT_P2(CheckWith(FloatModel(), R"({"model_type": "QuantONNX"})"), "pulsar2/model-type",
            "model_type");
  EXPECT_NO_P2(CheckWith(FloatModel(), R"({"model_type": "ONNX"})"), "pulsar2/model-type");
}

// ------------------------------------------------------------------------ target-hardware

TEST(Pulsar2Rules, TargetHardware) {
  const auto m = Mixed();
  const Report other =
      CheckWith(m, R"({"model_type": "QuantONNX", "target_hardware": "AX620E"})", {"ax650"});
  ASSERT_EQ(Pulsar2(other, "pulsar2/target-hardware").size(), 2u) << Dump(AllPulsar2(other));
  EXPECT_EQ(Value(*Pulsar2(other, "pulsar2/target-hardware")[0], "checked"), "ax650");
  EXPECT_EQ(Value(*Pulsar2(other, "pulsar2/target-hardware")[1], "documented"), "AX650|M76H");
  // The default AX650 against --target ax620e.
  EXPECT_P2(CheckWith(m, R"({"model_type": "QuantONNX"})", {"ax620e"}), "pulsar2/target-hardware",
            "target_hardware");
  EXPECT_NO_P2(CheckWith(m, "{" + kQuant + "}", {"ax650"}), "pulsar2/target-hardware");
  // M76H is covered by the AX650 profile and documented for Quantized ONNX import.
  EXPECT_NO_P2(CheckWith(m, R"({"model_type": "QuantONNX", "target_hardware": "M76H"})", {"ax650"}),
               "pulsar2/target-hardware");
}

// ---------------------------------------------------------------------- selector-no-match

TEST(Pulsar2Rules, SelectorNoMatch) {
  const auto m = Mixed();
  const Report r = CheckWith(m, "{" + kQuant + R"(,
      "quant": {"layer_configs": [
        {"layer_name": "Conv_0", "data_type": "U16"},
        {"op_type": "Gemm", "data_type": "U16"},
        {"layer_name": "x_q", "data_type": "U16"},
        {"layer_names": ["sig", "s_out"], "data_type": "U16"},
        {"start_tensor_names": ["nope"], "end_tensor_names": ["s_out"], "data_type": "U16"},
        {"start_tensor_names": ["s_out"], "end_tensor_names": ["conv_out"], "data_type": "U16"}],
        "input_configs": [{"tensor_name": "input"}]},
      "input_processors": [{"tensor_name": "y"}],
      "output_processors": [{"tensor_name": "DEFAULT"}, {"tensor_name": "x"}],
      "const_processors": [{"name": "w_scale_missing"}],
      "quant_op_processors": [{"op_name": "MaxPool_3", "attrs": {}}],
      "input_shapes": "input:1x4x8x8"})");
  for (const char* field :
       {"quant.layer_configs[0].layer_name", "quant.layer_configs[1].op_type",
        "quant.layer_configs[2].layer_name", "quant.layer_configs[3].layer_names[1]",
        "quant.layer_configs[4].start_tensor_names", "quant.layer_configs[5]",
        "quant.input_configs[0].tensor_name", "input_processors[0].tensor_name",
        "output_processors[1].tensor_name", "const_processors[0].name",
        "quant_op_processors[0].op_name", "input_shapes"}) {
    EXPECT_P2(r, "pulsar2/selector-no-match", field);
  }
  EXPECT_EQ(Pulsar2(r, "pulsar2/selector-no-match").size(), 12u) << Dump(AllPulsar2(r));
  EXPECT_NE(At(r, "pulsar2/selector-no-match", "quant.layer_configs[3].layer_names[1]")
                ->message.find("is a tensor name"),
            std::string::npos);
  const Report ok = CheckWith(m, "{" + kQuant + R"(,
      "quant": {"layer_configs": [
        {"layer_name": "sig", "data_type": "U16"},
        {"op_type": "Sigmoid", "data_type": "U16"},
        {"start_tensor_names": ["r_out"], "end_tensor_names": ["s_out"], "data_type": "U16"},
        {"start_tensor_names": ["DEFAULT"], "end_tensor_names": ["DEFAULT"], "data_type": "U16"}],
        "input_configs": [{"tensor_name": "DEFAULT"}]},
      "input_processors": [{"tensor_name": "x"}],
      "output_processors": [{"tensor_name": "s_dq_out"}],
      "const_processors": [{"name": "shape"}],
      "quant_op_processors": [{"op_name": "resh", "attrs": {}}],
      "input_shapes": "x:1x4x8x8"})");
  EXPECT_NO_P2(ok, "pulsar2/selector-no-match");
}

// ---------------------------------------------------------------------- selector-conflict

TEST(Pulsar2Rules, SelectorConflict) {
  const auto m = Mixed();
  const Report r = CheckWith(m, "{" + kQuant + R"(,
      "quant": {"layer_configs": [
        {"layer_name": "sig", "op_type": "Sigmoid", "data_type": "U16"},
        {"data_type": "U16"},
        {"start_tensor_names": ["r_out"], "data_type": "U16"},
        {"layer_names": ["sig"], "op_types": ["Sigmoid"], "data_type": "U16"}]}})");
  for (const char* field : {"quant.layer_configs[0]", "quant.layer_configs[1]",
                            "quant.layer_configs[2]", "quant.layer_configs[3]"}) {
    EXPECT_P2(r, "pulsar2/selector-conflict", field);
  }
  EXPECT_EQ(Value(*At(r, "pulsar2/selector-conflict", "quant.layer_configs[0]"), "selectors"),
            "layer_name|op_type");
  EXPECT_NO_P2(CheckWith(m, "{" + kQuant + R"(, "quant": {"layer_configs": [
        {"layer_name": "sig", "data_type": "U16"}, {"op_type": "Sigmoid", "data_type": "U16"}]}})"),
               "pulsar2/selector-conflict");
}

// ------------------------------------------------------------------ data-type-unsupported

TEST(Pulsar2Rules, DataTypeUnsupported) {
  const auto m = Mixed();
  const Report r = CheckWith(m, "{" + kQuant + R"(, "quant": {"layer_configs": [
        {"op_type": "Conv", "data_type": "FP32"},
        {"layer_name": "sig", "output_data_type": "U16"},
        {"op_type": "Sigmoid", "weight_data_type": "S8"}]}})");
  EXPECT_P2(r, "pulsar2/data-type-unsupported", "quant.layer_configs[0].data_type");
  EXPECT_EQ(
      r.findings.empty()
          ? ""
          : At(r, "pulsar2/data-type-unsupported", "quant.layer_configs[0].data_type")->nodes.at(0),
      "conv");
  EXPECT_P2(r, "pulsar2/data-type-unsupported", "quant.layer_configs[1].output_data_type");
  EXPECT_P2(r, "pulsar2/data-type-unsupported", "quant.layer_configs[2].weight_data_type");
  // The documented form: Conv stays quantized and only its output is FP32.
  EXPECT_NO_P2(CheckWith(m, "{" + kQuant + R"(, "quant": {"layer_configs": [
        {"op_type": "Conv", "data_type": "U8", "output_data_type": "FP32"}]}})"),
               "pulsar2/data-type-unsupported");
}

// ------------------------------------------------------------------------ fp32-unverified

TEST(Pulsar2Rules, Fp32Unverified) {
  const Report r = CheckWith(TanhModel(), "{" + kQuant + R"(, "quant": {"layer_configs": [
        {"layer_name": "tanh", "data_type": "FP32"}]}})");
  EXPECT_P2(r, "pulsar2/fp32-unverified", "quant.layer_configs[0].data_type");
  EXPECT_EQ(Pulsar2(r, "pulsar2/fp32-unverified")[0]->nodes.at(0), "tanh");
  // Sigmoid is on the verified list (the Q/DQ conflict is another rule).
  const Report ok = CheckWith(Mixed(), "{" + kQuant + R"(, "quant": {"layer_configs": [
        {"layer_name": "sig", "data_type": "FP32"}]}})");
  EXPECT_NO_P2(ok, "pulsar2/fp32-unverified");
  EXPECT_P2(ok, "pulsar2/qdq-type-conflict", "quant.layer_configs[0].data_type");
}

// -------------------------------------------------------------------- data-movement-type

TEST(Pulsar2Rules, DataMovementType) {
  const auto m = Mixed();
  const Report r = CheckWith(m, "{" + kQuant + R"(, "quant": {"layer_configs": [
        {"op_type": "Reshape", "data_type": "U16"},
        {"layer_names": ["resh", "sig"], "data_type": "U16"}]}})");
  EXPECT_P2(r, "pulsar2/data-movement-type", "quant.layer_configs[0].data_type");
  EXPECT_P2(r, "pulsar2/data-movement-type", "quant.layer_configs[1].data_type");
  ASSERT_EQ(Pulsar2(r, "pulsar2/data-movement-type").size(), 2u) << Dump(AllPulsar2(r));
  EXPECT_EQ(Pulsar2(r, "pulsar2/data-movement-type")[1]->nodes.at(0), "resh");
  // A subgraph that passes through the Reshape is not a setting on the Reshape.
  EXPECT_NO_P2(CheckWith(m, "{" + kQuant + R"(, "quant": {"layer_configs": [
        {"op_type": "Sigmoid", "data_type": "U16"},
        {"start_tensor_names": ["DEFAULT"], "end_tensor_names": ["DEFAULT"], "data_type": "U16"}]}})"),
               "pulsar2/data-movement-type");
}

// --------------------------------------------------------------------- qdq-type-conflict

TEST(Pulsar2Rules, QdqTypeConflict) {
  const auto m = Mixed();
  const Report r = CheckWith(m, "{" + kQuant + R"(, "quant": {"conv_bias_data_type": "FP32",
      "layer_configs": [
        {"layer_name": "sig", "data_type": "U8"},
        {"layer_name": "conv", "weight_data_type": "FP32", "output_data_type": "U8"}]}})");
  EXPECT_P2(r, "pulsar2/qdq-type-conflict", "quant.layer_configs[0].data_type");
  EXPECT_EQ(Value(*At(r, "pulsar2/qdq-type-conflict", "quant.layer_configs[0].data_type"), "model"),
            "U16");
  EXPECT_P2(r, "pulsar2/qdq-type-conflict", "quant.layer_configs[1].weight_data_type");
  EXPECT_P2(r, "pulsar2/qdq-type-conflict", "quant.layer_configs[1].output_data_type");
  EXPECT_P2(r, "pulsar2/qdq-type-conflict", "quant.conv_bias_data_type");
  EXPECT_EQ(At(r, "pulsar2/qdq-type-conflict", "quant.conv_bias_data_type")->nodes.at(0), "conv");
  const Report ok = CheckWith(m, "{" + kQuant + R"(, "quant": {"conv_bias_data_type": "S32",
      "layer_configs": [
        {"layer_name": "sig", "data_type": "U16"},
        {"layer_name": "conv", "weight_data_type": "S8", "output_data_type": "U16"}]}})");
  EXPECT_NO_P2(ok, "pulsar2/qdq-type-conflict");
}

// Reading: a node's own entry outranks its op type's, which outranks a subgraph's (the
// documented priority), so only the setting that takes effect is judged.
TEST(Pulsar2Readings, PriorityDecidesWhichSettingIsJudged) {
  const auto m = Mixed();
  const Report r = CheckWith(m, "{" + kQuant + R"(, "quant": {"layer_configs": [
        {"start_tensor_names": ["DEFAULT"], "end_tensor_names": ["DEFAULT"], "data_type": "U8"},
        {"op_type": "Sigmoid", "data_type": "U8"},
        {"layer_name": "sig", "data_type": "U16"}]}})");
  // The subgraph's U8 is judged on the Conv (U8/U16: no conflict) only; the Sigmoid's type is
  // the layer entry's U16.
  EXPECT_NO_P2(r, "pulsar2/qdq-type-conflict");
  const Report without_name = CheckWith(m, "{" + kQuant + R"(, "quant": {"layer_configs": [
        {"op_type": "Sigmoid", "data_type": "U8"}]}})");
  EXPECT_P2(without_name, "pulsar2/qdq-type-conflict", "quant.layer_configs[0].data_type");
}

// Reading: the Pulsar2 op type Silu names the SiLU pattern (Sigmoid and Mul) of a QDQ model.
TEST(Pulsar2Readings, SiluNamesTheSiluPattern) {
  AB b;
  b.Input("x", TP::FLOAT, {1, 4, 8, 8});
  auto x = b.QDQ("x", "x", QParams::U16());
  b.Node("Sigmoid", {x}, {"sg"}, {}, "sigmoid");
  b.Node("Mul", {x, "sg"}, {"m"}, {}, "mul");
  b.Output(b.QDQ("m", "y", QParams::U16()));
  const Report r = CheckWith(b, "{" + kQuant + R"(, "quant": {"layer_configs": [
        {"op_type": "Silu", "data_type": "U16"}]}})");
  EXPECT_TRUE(AllPulsar2(r).empty()) << Dump(AllPulsar2(r));
  EXPECT_P2(CheckWith(b, "{" + kQuant + R"(, "quant": {"layer_configs": [
        {"op_type": "Silu", "data_type": "U8"}]}})"),
            "pulsar2/qdq-type-conflict", "quant.layer_configs[0].data_type");
}

// Reading: target_hardware accepts AX615 (the build command's help) besides the proto's values;
// QuantONNX on it is a warning; AX637 has no documented value.
TEST(Pulsar2Readings, TargetHardwareValues) {
  const auto m = Mixed();
  const Report r = CheckWith(m, R"({"model_type": "QuantONNX", "target_hardware": "AX615"})");
  EXPECT_NO_P2(r, "pulsar2/field-value");
  EXPECT_P2(r, "pulsar2/target-hardware", "target_hardware");
  EXPECT_P2(CheckWith(m, R"({"model_type": "QuantONNX", "target_hardware": "AX637"})"),
            "pulsar2/field-value", "target_hardware");
}

// Reading: the documentation's "LeayRelu" is LeakyRelu.
TEST(Pulsar2Readings, LeakyReluIsOnTheFp32List) {
  AB b;
  b.Input("x", TP::FLOAT, {1, 4});
  b.Node("LeakyRelu", {b.QDQ("x", "x", QParams::U8())}, {"l"}, {}, "leaky");
  b.Output(b.QDQ("l", "l", QParams::U8()));
  const Report r = CheckWith(b, "{" + kQuant + R"(, "quant": {"layer_configs": [
        {"layer_name": "leaky", "data_type": "FP32"}]}})");
  EXPECT_NO_P2(r, "pulsar2/fp32-unverified");
  EXPECT_P2(r, "pulsar2/qdq-type-conflict", "quant.layer_configs[0].data_type");
}

// --------------------------------------------------------------------------------- verdict

TEST(Pulsar2Verdict, NeverChangesTheSpecVerdict) {
  const auto m = ConvModel();
  CheckOptions o;
  const Report plain = CheckBytes(m.Serialize(), "test.onnx", o);
  ASSERT_EQ(plain.verdict, Verdict::kConformant);
  const Report judged = CheckWith(m, R"({"model_type": "ONNX", "bogus": 1})");
  EXPECT_EQ(judged.verdict, Verdict::kConformant);
  EXPECT_P2(judged, "pulsar2/model-type", "model_type");
  EXPECT_P2(judged, "pulsar2/unknown-field", "bogus");
  EXPECT_EQ(judged.summary.errors, 2u);
  for (const auto& f : judged.findings) EXPECT_EQ(f.fingerprint.size(), 16u) << f.rule;
}

// Hostile configurations never crash and always give a finding or nothing.
TEST(Pulsar2Hostile, GarbageAndBounds) {
  const auto m = Mixed();
  std::string s;
  for (int i = 0; i < 2000; ++i) s += static_cast<char>((i * 7919) % 256);
  for (const std::string& text :
       {s, std::string("{\"quant\": {\"layer_configs\": [") + std::string(5000, '{') + "]}}",
        std::string("\"\\"), std::string("{\"a\":1}/*"), std::string("#"), std::string(""),
        std::string("{\"quant\": {\"layer_configs\": [1, \"x\", null, [], {}]}}"),
        std::string("{\"quant\": null, \"input_processors\": [null, 3]}")}) {
    const Report r = CheckWith(m, text);
    (void)r;
    (void)ValidatePulsar2Config(text);
  }
  // Many entries: bounded.
  std::string many = "{\"model_type\": \"QuantONNX\", \"quant\": {\"layer_configs\": [";
  for (int i = 0; i < 5000; ++i) many += std::string(i ? "," : "") + R"({"op_type": "Conv"})";
  many += "]}}";
  const Report r = CheckWith(m, many);
  EXPECT_P2(r, "pulsar2/config-invalid", "quant.layer_configs");
  // The findings stop at the bound.
  std::string noisy = "{";
  for (int i = 0; i < 3000; ++i)
    noisy += std::string(i ? "," : "") + "\"f" + std::to_string(i) + "\": 1";
  noisy += "}";
  EXPECT_EQ(ValidatePulsar2Config(noisy).size(), kMaxPulsar2ConfigFindings);
}

// ------------------------------------------------------------------------------- generator

TEST(Pulsar2Generate, WritesWhatTheModelDecides) {
  const auto m = Mixed();
  const json cfg = json::parse(GeneratePulsar2ConfigBytes(m.Serialize(), "mixed.onnx", "ax650"));
  EXPECT_EQ(cfg.at("model_type"), "QuantONNX");
  EXPECT_EQ(cfg.at("target_hardware"), "AX650");
  EXPECT_EQ(cfg.at("input_shapes"), "x:1x4x8x8");
  EXPECT_EQ(cfg.at("input_processors"),
            json::parse(R"([{"tensor_name": "x", "src_dtype": "FP32"}])"));
  // The Sigmoid is U16 on every side; the Conv is U8 -> U16 and the Reshape follows its
  // neighbours: neither is a 16-bit region.
  EXPECT_EQ(cfg.at("quant").at("layer_configs"),
            json::parse(R"([{"layer_names": ["sig"], "data_type": "U16"}])"));
  EXPECT_EQ(cfg.at("quant").at("conv_bias_data_type"), "S32");
  // No calibration settings: a QuantONNX build takes its quantization from the Q/DQ.
  EXPECT_FALSE(cfg.at("quant").contains("input_configs"));
  EXPECT_FALSE(cfg.at("quant").contains("calibration_method"));
  // Fed back: no pulsar2 finding.
  const Report r = CheckWith(m, cfg.dump(), {"ax650"});
  EXPECT_TRUE(AllPulsar2(r).empty()) << Dump(AllPulsar2(r));
  // M76H is an alias of the AX650 profile; AX637 has no target_hardware value in the docs.
  EXPECT_EQ(
      json::parse(GeneratePulsar2ConfigBytes(m.Serialize(), "m", "m76h")).at("target_hardware"),
      "AX650");
  EXPECT_THROW(GeneratePulsar2ConfigBytes(m.Serialize(), "m", "ax637"), std::invalid_argument);
  EXPECT_THROW(GeneratePulsar2ConfigBytes(m.Serialize(), "m", "ax999"), std::invalid_argument);
  EXPECT_THROW(GeneratePulsar2ConfigBytes("not a model", "m", "ax650"), InputError);
}

TEST(Pulsar2Generate, S16RegionsAndFloatBias) {
  AB b;
  b.Input("x", TP::FLOAT, {1, 4});
  auto x = b.QDQ("x", "x", QParams::S16());
  b.Node("Tanh", {x}, {"t"}, {}, "tanh");
  b.Output(b.QDQ("t", "t", QParams::S16()));
  const json cfg = json::parse(GeneratePulsar2ConfigBytes(b.Serialize(), "s16.onnx", "ax650"));
  EXPECT_EQ(cfg.at("quant").at("layer_configs"),
            json::parse(R"([{"layer_names": ["tanh"], "data_type": "S16"}])"));
  const Report r = CheckWith(b, cfg.dump(), {"ax650"});
  EXPECT_TRUE(AllPulsar2(r).empty()) << Dump(AllPulsar2(r));
  // A float model: model_type ONNX, no quant section.
  const json f = json::parse(GeneratePulsar2ConfigBytes(FloatModel().Serialize(), "f", "ax620e"));
  EXPECT_EQ(f.at("model_type"), "ONNX");
  EXPECT_EQ(f.at("target_hardware"), "AX620E");
  EXPECT_FALSE(f.contains("quant"));
}

std::vector<fs::path> BundledModels() {
  std::vector<fs::path> out;
  for (const auto& dir : {fs::path(AXQC_EXAMPLES_PATH),
                          fs::path(AXQC_SOURCE_DIR) / "tests" / "data" / "real_exports"}) {
    if (!fs::exists(dir)) continue;
    for (const auto& e : fs::directory_iterator(dir)) {
      if (e.path().extension() == ".onnx") out.push_back(e.path());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The generated configuration of every example and real export parses against the schema and
// gives no pulsar2 finding when fed back (on AX650, where Quantized ONNX import is documented).
TEST(Pulsar2Generate, EveryExampleAndRealExportRoundTrips) {
  const auto models = BundledModels();
  ASSERT_GE(models.size(), 15u) << "examples built? (axqc_examples)";
  for (const auto& path : models) {
    SCOPED_TRACE(path.string());
    const std::string text = GeneratePulsar2Config(path.string(), "ax650");
    EXPECT_TRUE(ValidatePulsar2Config(text).empty());
    CheckOptions o;
    o.targets = {"ax650"};
    o.pulsar2_config = text;
    const Report r = CheckFile(path.string(), o);
    EXPECT_TRUE(AllPulsar2(r).empty()) << Dump(AllPulsar2(r)) << text;
    const json cfg = json::parse(text);
    for (const auto& [k, v] : cfg.items()) {
      EXPECT_TRUE(k == "model_type" || k == "target_hardware" || k == "input_shapes" ||
                  k == "quant" || k == "input_processors")
          << k;
    }
  }
}

// ------------------------------------------------------------------------------------- CLI

TEST(Pulsar2Cli, GenerateThenCheck) {
  if (!fs::exists(AXQC_BIN_PATH)) GTEST_SKIP() << "axqc not built";
  const fs::path dir = fs::temp_directory_path() / ("axqc_pulsar2_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string model = (dir / "mixed.onnx").string();
  Mixed().Save(model);
  const std::string config = (dir / "config.json").string();
  const CliRun gen = Axqc("pulsar2-config " + model + " --target ax650 -o " + config);
  EXPECT_EQ(gen.code, 0) << gen.out;
  const CliRun ok = Axqc("check --target ax650 --pulsar2-config " + config + " " + model);
  EXPECT_EQ(ok.out.find("pulsar2/"), std::string::npos) << ok.out;
  // Three mistakes: the default model_type, a layer name that is not in the model and a data
  // type on a Reshape.
  const std::string bad = (dir / "bad.json").string();
  std::ofstream(bad) << R"({"target_hardware": "AX650", "quant": {"layer_configs": [
      {"layer_name": "Sigmoid_7", "data_type": "U16"},
      {"op_type": "Reshape", "data_type": "U16"}]}})";
  const CliRun fail = Axqc("check --pulsar2-config " + bad + " " + model);
  EXPECT_EQ(fail.code, 1) << fail.out;
  for (const char* rule :
       {"pulsar2/model-type", "pulsar2/selector-no-match", "pulsar2/data-movement-type"})
    EXPECT_NE(fail.out.find(rule), std::string::npos) << rule << "\n" << fail.out;
  const CliRun json_out = Axqc("check --format json --pulsar2-config " + bad + " " + model);
  EXPECT_NE(json_out.out.find("\"doc\""), std::string::npos) << json_out.out;
  const CliRun missing =
      Axqc("check --pulsar2-config " + (dir / "none.json").string() + " " + model);
  EXPECT_EQ(missing.code, 2) << missing.out;
  const CliRun unknown = Axqc("pulsar2-config " + model + " --target ax999");
  EXPECT_EQ(unknown.code, 2) << unknown.out;
  const CliRun stdout_gen = Axqc("pulsar2-config " + model);
  EXPECT_EQ(stdout_gen.code, 0);
  EXPECT_NE(stdout_gen.out.find("\"model_type\": \"QuantONNX\""), std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace axqc::test
