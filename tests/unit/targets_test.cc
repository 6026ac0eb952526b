// Chip targets (docs/targets.md): the profiles of core/targets load and validate; every kind of
// constraint has a model that breaks it and one that keeps it, per chip where the chips differ;
// target findings never change the spec verdict; the real exports get a matrix; the CLI's
// `--target`, `targets`, `targets --list`, `targets CHIP` and `targets --diff`.
#include "axqc/targets.h"

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

#include "axqc/render.h"
#include "axqc/render_graph.h"
#include "check_helpers.h"
#include "cli_run.h"

namespace axqc::test {
namespace {

namespace fs = std::filesystem;
using AB = ModelBuilder;

Report Check(const ModelBuilder& b, std::vector<std::string> targets) {
  CheckOptions o;
  o.max_locations = 100;
  o.targets = std::move(targets);
  std::string bytes;
  b.Build().SerializeToString(&bytes);
  return CheckBytes(bytes, "test.onnx", o);
}

// Target findings of `rule` for `chip`.
std::vector<const Finding*> Of(const Report& r, const std::string& rule, const std::string& chip) {
  std::vector<const Finding*> out;
  for (const auto& f : r.findings) {
    if (f.rule != rule) continue;
    for (const auto& [k, v] : f.values) {
      if (k == "chip" && v == chip) out.push_back(&f);
    }
  }
  return out;
}

const TargetResult* Target(const Report& r, const std::string& chip) {
  for (const auto& t : r.targets) {
    if (t.chip == chip) return &t;
  }
  return nullptr;
}

std::string Value(const Finding& f, const std::string& key) {
  for (const auto& [k, v] : f.values) {
    if (k == key) return v;
  }
  return {};
}

TargetVerdict VerdictOn(const Report& r, const std::string& chip) {
  const auto* t = Target(r, chip);
  EXPECT_NE(t, nullptr) << chip;
  return t == nullptr ? TargetVerdict::kDoesNotFit : t->verdict;
}

// x [1,8,4,4] -> op(attrs) -> y: a float model with one node under test named "n".
AB OneNode(const std::string& op, std::vector<onnx::AttributeProto> attrs = {},
           std::vector<int64_t> in = {1, 8, 4, 4}, std::vector<std::string> extra = {},
           std::int64_t opset = 21) {
  AB b(opset);
  b.Input("x", TP::FLOAT, in);
  std::vector<std::string> ins{"x"};
  for (auto& e : extra) ins.push_back(e);
  b.Node(op, ins, {"y"}, std::move(attrs), "n");
  b.Output("y");
  return b;
}

// ------------------------------------------------------------------ profiles

TEST(TargetProfiles, FiveChipsFromThePublishedTables) {
  const auto profiles = TargetProfiles();
  ASSERT_EQ(profiles.size(), 5u);
  const std::vector<std::string> chips{"ax650", "ax620e", "ax615", "ax637", "m57"};
  for (std::size_t i = 0; i < chips.size(); ++i) {
    const auto& p = profiles[i];
    EXPECT_EQ(p.chip, chips[i]);
    EXPECT_EQ(p.source_repository, "AXERA-TECH/pulsar2-docs");
    EXPECT_EQ(p.source_commit, "b32f7c1dd95f9fa8c5edcaa4b151f1023a940416");
    EXPECT_EQ(p.source_file, "source/appendix/op_support_list_" + chips[i] + ".md");
    EXPECT_FALSE(p.doc_version.empty());
    EXPECT_EQ(p.min_opset, 11);
    EXPECT_EQ(p.file, "core/targets/" + chips[i] + ".json");
    EXPECT_FALSE(p.ops.contains("QuantizeLinear")) << "Q/DQ are judged by the spec";
  }
  EXPECT_EQ(FindTargetProfile("M76H")->chip, "ax650");
  EXPECT_EQ(FindTargetProfile("ax630c")->chip, "ax620e");
  EXPECT_EQ(FindTargetProfile("AX620Q")->chip, "ax620e");
  EXPECT_EQ(FindTargetProfile("ax999"), nullptr);
  EXPECT_TRUE(FindTargetProfile("ax650")->ops.contains("GridSample"));
  EXPECT_FALSE(FindTargetProfile("ax620e")->ops.contains("GridSample"));
  EXPECT_EQ(FindTargetProfile("ax650")->ops.at("TopK").table_name, "Topk");
}

TEST(TargetProfiles, ResolveTargets) {
  EXPECT_EQ(ResolveTargets(std::vector<std::string>{"all"}).size(), 5u);
  EXPECT_EQ(ResolveTargets(std::vector<std::string>{"m76h", "ax650", "AX620E"}),
            (std::vector<std::string>{"ax650", "ax620e"}));
  EXPECT_THROW(ResolveTargets(std::vector<std::string>{"ax999"}), std::invalid_argument);
}

TEST(TargetProfiles, TheCheckedInFilesAreTheBuiltInOnes) {
  for (const auto& p : TargetProfiles()) {
    std::ifstream in(fs::path(AXQC_SOURCE_DIR) / p.file, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_EQ(text.str(), p.json_text) << p.file << ": rebuild (cmake) to embed the edit";
  }
}

// A broken profile is an error naming the file and the field.
TEST(TargetProfiles, BrokenProfilesNameFileAndField) {
  const std::string good = FindTargetProfile("ax650")->json_text;
  auto expect_error = [](const std::string& text, const std::string& field) {
    try {
      ParseTargetProfile(text, "broken.json");
      ADD_FAILURE() << "accepted a profile without " << field;
    } catch (const TargetProfileError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind("broken.json: ", 0), 0u) << what;
      EXPECT_NE(what.find(field), std::string::npos) << what;
    }
  };
  auto replace = [&](std::string from, std::string to) {
    std::string s = good;
    const auto at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) s.replace(at, from.size(), to);
    return s;
  };
  expect_error("{", "(document)");
  expect_error(replace("\"axqc.target-profile/1\"", "\"axqc.target-profile/9\""), "schema");
  expect_error(replace("\"commit\": \"b32f7c1dd95f9fa8c5edcaa4b151f1023a940416\"",
                       "\"commit\": \"not a hash\""),
               "source.commit");
  expect_error(replace("\"min_opset\": 11", "\"min_opset\": \"11\""), "min_opset");
  expect_error(replace("{\"name\": \"select_last_index\", \"allowed\"",
                       "{\"name\": \"select_last_index\", \"alowed\""),
               "ops.ArgMax.attributes[0].alowed");
  expect_error(replace("\"ranks\": [1]", "\"ranks\": [1], \"absent\": true"),
               "ops.Gather.inputs[0]");
  expect_error(replace("\"allowed_types\": [\"uint8\"", "\"allowed_types\": [\"uint9\""),
               "ops.Cast.attributes[0].allowed_types[0]");
  expect_error(replace("{\"attribute\": \"mode\", \"in\"", "{\"attribute\": \"mode\", \"is\""),
               "ops.Resize.attributes[1].when[0]");
}

// ------------------------------------------------------------------ operator allowed

// GridSample and GatherElements: AX650 yes, AX620E and AX615 no.
TEST(TargetOps, GridSampleOnAx650NotOnAx620e) {
  AB b;
  b.Input("x", TP::FLOAT, {1, 4, 8, 8});
  b.Input("grid", TP::FLOAT, {1, 8, 8, 2});
  b.Node("GridSample", {"x", "grid"}, {"y"}, {}, "gs1");
  b.Output("y");
  const Report r = Check(b, {"ax650", "ax620e", "ax615"});
  EXPECT_EQ(VerdictOn(r, "ax650"), TargetVerdict::kFits) << Dump(r);
  EXPECT_EQ(VerdictOn(r, "ax620e"), TargetVerdict::kDoesNotFit);
  EXPECT_EQ(VerdictOn(r, "ax615"), TargetVerdict::kDoesNotFit);
  const auto f = Of(r, "target/op-unsupported", "ax620e");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0]->nodes.front(), "gs1");
  EXPECT_EQ(f[0]->op_type, "GridSample");
  EXPECT_NE(f[0]->message.find("AX620E: GridSample 'gs1' is not in the AX620E NPU operator table"),
            std::string::npos)
      << f[0]->message;
  EXPECT_EQ(Value(*f[0], "profile"),
            "AXERA-TECH/pulsar2-docs@b32f7c1:source/appendix/op_support_list_ax620e.md");
  ASSERT_EQ(Target(r, "ax620e")->blocking.size(), 1u);
  EXPECT_EQ(Target(r, "ax620e")->blocking[0].node, "gs1");
  EXPECT_TRUE(Of(r, "target/op-unsupported", "ax650").empty());
}

TEST(TargetOps, GatherElementsOnAx650NotOnAx620e) {
  AB b;
  b.Input("x", TP::FLOAT, {2, 3});
  b.Input("i", TP::INT64, {2, 3});
  b.Node("GatherElements", {"x", "i"}, {"y"}, {AB::AttrI("axis", 1)}, "ge3");
  b.Output("y");
  const Report r = Check(b, {"all"});
  EXPECT_EQ(VerdictOn(r, "ax650"), TargetVerdict::kFits) << Dump(r);
  EXPECT_EQ(VerdictOn(r, "ax637"), TargetVerdict::kFits);
  EXPECT_EQ(VerdictOn(r, "m57"), TargetVerdict::kFits);
  EXPECT_EQ(VerdictOn(r, "ax620e"), TargetVerdict::kDoesNotFit);
  EXPECT_EQ(Of(r, "target/op-unsupported", "ax620e").size(), 1u);
}

// A QOperator op is in no chip's table.
TEST(TargetOps, QLinearConvIsInNoTable) {
  AB b;
  b.Input("x", TP::UINT8, {1, 2, 4, 4});
  b.InitF32("xs", {}, {0.02f});
  b.InitInt("xz", TP::UINT8, {}, {128});
  b.InitInt("w", TP::INT8, {2, 2, 1, 1}, {1, 2, 3, 4});
  b.InitF32("ws", {}, {0.01f});
  b.InitInt("wz", TP::INT8, {}, {0});
  b.InitF32("ys", {}, {0.05f});
  b.InitInt("yz", TP::UINT8, {}, {128});
  b.Node("QLinearConv", {"x", "xs", "xz", "w", "ws", "wz", "ys", "yz"}, {"y"}, {}, "qconv");
  b.Output("y");
  const Report r = Check(b, {"all"});
  for (const auto& t : r.targets) {
    EXPECT_EQ(t.verdict, TargetVerdict::kDoesNotFit) << t.chip;
    EXPECT_EQ(Of(r, "target/op-unsupported", t.chip).size(), 1u) << t.chip << Dump(r);
  }
}

TEST(TargetOps, OpsetBelowTheTable) {
  const Report old = Check(OneNode("Relu", {}, {1, 8, 4, 4}, {}, 10), {"ax650"});
  EXPECT_EQ(Of(old, "target/opset-unsupported", "ax650").size(), 1u) << Dump(old);
  const Report ok = Check(OneNode("Relu", {}, {1, 8, 4, 4}, {}, 11), {"ax650"});
  EXPECT_EQ(VerdictOn(ok, "ax650"), TargetVerdict::kFits) << Dump(ok);
}

// Q/DQ nodes are not judged by the profiles; shape arithmetic on constants is folded.
TEST(TargetOps, QdqAndFoldedNodesAreNotJudged) {
  AB b;
  b.Input("x", TP::FLOAT, {1, 8, 4, 4});
  auto x = b.QDQ("x", "x", QParams::U8());
  b.Node("Relu", {x}, {"r"}, {}, "relu");
  b.Node("Shape", {"r"}, {"s"}, {}, "shape");  // static: folded by the compiler
  b.InitInt("newshape_idx", TP::INT64, {1}, {0});
  b.Node("Gather", {"s", "newshape_idx"}, {"s0"}, {}, "g_shape");
  b.Output(b.QDQ("r", "y", QParams::U8(0.02f, 0)));
  b.Output("s0");
  const Report r = Check(b, {"all"});
  for (const auto& t : r.targets) EXPECT_EQ(t.verdict, TargetVerdict::kFits) << t.chip << Dump(r);
}

// ------------------------------------------------------------------ attribute values

TEST(TargetAttributes, DepthToSpaceCrdOnAx650NotOnAx620e) {
  const Report crd =
      Check(OneNode("DepthToSpace", {AB::AttrI("blocksize", 2), AB::AttrS("mode", "CRD")}),
            {"ax650", "ax620e", "ax615"});
  EXPECT_EQ(VerdictOn(crd, "ax650"), TargetVerdict::kFits) << Dump(crd);
  EXPECT_EQ(VerdictOn(crd, "ax620e"), TargetVerdict::kDoesNotFit);
  EXPECT_EQ(VerdictOn(crd, "ax615"), TargetVerdict::kDoesNotFit);
  const auto f = Of(crd, "target/attribute-value", "ax620e");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(Value(*f[0], "attribute"), "mode");
  EXPECT_EQ(Value(*f[0], "value"), "CRD");
  EXPECT_EQ(Value(*f[0], "limit"), "only DCR (for now)");
  // DCR (written or the default) fits every chip.
  const Report dcr = Check(OneNode("DepthToSpace", {AB::AttrI("blocksize", 2)}), {"all"});
  for (const auto& t : dcr.targets) EXPECT_EQ(t.verdict, TargetVerdict::kFits) << t.chip;
}

TEST(TargetAttributes, ResizeNearestMode) {
  auto resize = [](std::vector<onnx::AttributeProto> attrs) {
    AB b;
    b.Input("x", TP::FLOAT, {1, 2, 4, 4});
    b.InitF32("scales", {4}, {1, 1, 2, 2});
    b.Node("Resize", {"x", "", "scales"}, {"y"}, std::move(attrs), "rs");
    b.Output("y");
    return b;
  };
  const Report floor =
      Check(resize({AB::AttrS("mode", "nearest"), AB::AttrS("nearest_mode", "floor")}), {"ax650"});
  const auto f = Of(floor, "target/attribute-value", "ax650");
  ASSERT_EQ(f.size(), 1u) << Dump(floor);
  EXPECT_EQ(Value(*f[0], "attribute"), "nearest_mode");
  // Not written: the ONNX default round_prefer_floor applies.
  const Report def = Check(resize({}), {"ax650"});
  EXPECT_EQ(Of(def, "target/attribute-value", "ax650").size(), 1u) << Dump(def);
  const Report ceil = Check(resize({AB::AttrS("nearest_mode", "round_prefer_ceil")}), {"ax650"});
  EXPECT_EQ(VerdictOn(ceil, "ax650"), TargetVerdict::kFits) << Dump(ceil);
  // linear: nearest_mode does not apply.
  const Report linear =
      Check(resize({AB::AttrS("mode", "linear"), AB::AttrS("nearest_mode", "floor")}), {"ax650"});
  EXPECT_EQ(VerdictOn(linear, "ax650"), TargetVerdict::kFits) << Dump(linear);
  const Report cubic = Check(resize({AB::AttrS("mode", "cubic")}), {"ax650"});
  EXPECT_EQ(Of(cubic, "target/attribute-value", "ax650").size(), 1u) << Dump(cubic);
}

TEST(TargetAttributes, LayerNormalizationLastAxisOnly) {
  auto ln = [](std::int64_t axis) {
    AB b;
    b.Input("x", TP::FLOAT, {1, 16, 32});
    b.InitF32Fill("g", {32}, 1.0f);
    b.InitF32Fill("b", {32}, 0.0f);
    b.Node("LayerNormalization", {"x", "g", "b"}, {"y"}, {AB::AttrI("axis", axis)}, "ln");
    b.Output("y");
    return b;
  };
  EXPECT_EQ(VerdictOn(Check(ln(-1), {"ax650"}), "ax650"), TargetVerdict::kFits);
  EXPECT_EQ(VerdictOn(Check(ln(2), {"ax650"}), "ax650"), TargetVerdict::kFits)
      << "axis 2 of a rank-3 input is the last axis";
  AB b;
  b.Input("x", TP::FLOAT, {1, 16, 32});
  b.InitF32Fill("g", {16, 32}, 1.0f);
  b.InitF32Fill("b", {16, 32}, 0.0f);
  b.Node("LayerNormalization", {"x", "g", "b"}, {"y"}, {AB::AttrI("axis", 1)}, "ln");
  b.Output("y");
  const Report bad = Check(b, {"ax650"});
  const auto f = Of(bad, "target/attribute-value", "ax650");
  ASSERT_EQ(f.size(), 1u) << Dump(bad);
  EXPECT_EQ(Value(*f[0], "attribute"), "axis");
  EXPECT_EQ(Value(*f[0], "value"), "1");
}

TEST(TargetAttributes, PadModeConstantOnly) {
  auto pad = [](std::vector<onnx::AttributeProto> attrs) {
    AB b;
    b.Input("x", TP::FLOAT, {1, 2, 4, 4});
    b.InitInt("pads", TP::INT64, {8}, {0, 0, 1, 1, 0, 0, 1, 1});
    b.Node("Pad", {"x", "pads"}, {"y"}, std::move(attrs), "pad");
    b.Output("y");
    return b;
  };
  EXPECT_EQ(VerdictOn(Check(pad({}), {"ax620e"}), "ax620e"), TargetVerdict::kFits);
  const Report r = Check(pad({AB::AttrS("mode", "reflect")}), {"ax620e"});
  EXPECT_EQ(Of(r, "target/attribute-value", "ax620e").size(), 1u) << Dump(r);
}

TEST(TargetAttributes, MaxPoolDilationsAndStorageOrder) {
  auto pool = [](std::vector<onnx::AttributeProto> attrs) {
    attrs.push_back(AB::AttrInts("kernel_shape", {2, 2}));
    return OneNode("MaxPool", std::move(attrs));
  };
  EXPECT_EQ(VerdictOn(Check(pool({AB::AttrInts("dilations", {1, 1})}), {"ax650"}), "ax650"),
            TargetVerdict::kFits);
  const Report r = Check(pool({AB::AttrInts("dilations", {2, 2})}), {"ax650"});
  EXPECT_EQ(Of(r, "target/attribute-value", "ax650").size(), 1u) << Dump(r);
  const Report s = Check(pool({AB::AttrI("storage_order", 1)}), {"ax650"});
  EXPECT_EQ(Of(s, "target/attribute-value", "ax650").size(), 1u) << Dump(s);
}

TEST(TargetAttributes, AveragePoolCountIncludePadWhenPadded) {
  auto pool = [](std::vector<onnx::AttributeProto> attrs) {
    attrs.push_back(AB::AttrInts("kernel_shape", {3, 3}));
    return OneNode("AveragePool", std::move(attrs));
  };
  EXPECT_EQ(VerdictOn(Check(pool({}), {"ax650"}), "ax650"), TargetVerdict::kFits)
      << "not written and no padding: the default changes nothing";
  const Report written = Check(pool({AB::AttrI("count_include_pad", 0)}), {"ax650"});
  EXPECT_EQ(Of(written, "target/attribute-value", "ax650").size(), 1u)
      << "a written 0 is outside the table" << Dump(written);
  const Report padded = Check(pool({AB::AttrInts("pads", {1, 1, 1, 1})}), {"ax650"});
  EXPECT_EQ(Of(padded, "target/attribute-value", "ax650").size(), 1u) << Dump(padded);
  EXPECT_EQ(
      VerdictOn(Check(pool({AB::AttrInts("pads", {1, 1, 1, 1}), AB::AttrI("count_include_pad", 1)}),
                      {"ax650"}),
                "ax650"),
      TargetVerdict::kFits);
}

TEST(TargetAttributes, CastTargetTypes) {
  const Report ok = Check(OneNode("Cast", {AB::AttrI("to", TP::INT32)}), {"ax650"});
  EXPECT_EQ(VerdictOn(ok, "ax650"), TargetVerdict::kFits) << Dump(ok);
  const Report bad = Check(OneNode("Cast", {AB::AttrI("to", TP::FLOAT16)}), {"ax650"});
  const auto f = Of(bad, "target/attribute-value", "ax650");
  ASSERT_EQ(f.size(), 1u) << Dump(bad);
  EXPECT_EQ(Value(*f[0], "value"), "float16");
}

TEST(TargetAttributes, RoiAlignSamplingRatioNotZero) {
  auto roi = [](std::vector<onnx::AttributeProto> attrs) {
    AB b;
    b.Input("x", TP::FLOAT, {1, 4, 8, 8});
    b.Input("rois", TP::FLOAT, {2, 4});
    b.Input("idx", TP::INT64, {2});
    b.Node("RoiAlign", {"x", "rois", "idx"}, {"y"}, std::move(attrs), "roi");
    b.Output("y");
    return b;
  };
  const Report def = Check(roi({}), {"ax650"});
  EXPECT_EQ(Of(def, "target/attribute-value", "ax650").size(), 1u) << Dump(def);
  EXPECT_EQ(VerdictOn(Check(roi({AB::AttrI("sampling_ratio", 2)}), {"ax650"}), "ax650"),
            TargetVerdict::kFits);
}

TEST(TargetAttributes, ConvTransposeOutputPaddingBoundedByPads) {
  auto ct = [](std::vector<int64_t> pads, std::vector<int64_t> output_padding) {
    AB b;
    b.Input("x", TP::FLOAT, {1, 2, 4, 4});
    b.InitF32Fill("w", {2, 2, 3, 3}, 0.1f);
    b.Node("ConvTranspose", {"x", "w"}, {"y"},
           {AB::AttrInts("strides", {2, 2}), AB::AttrInts("pads", pads),
            AB::AttrInts("output_padding", output_padding)},
           "ct");
    b.Output("y");
    return b;
  };
  EXPECT_EQ(VerdictOn(Check(ct({1, 1, 1, 1}, {1, 1}), {"ax650"}), "ax650"), TargetVerdict::kFits);
  const Report bad = Check(ct({1, 1, 0, 0}, {1, 1}), {"ax650"});
  EXPECT_EQ(Of(bad, "target/attribute-value", "ax650").size(), 1u) << Dump(bad);
}

// ------------------------------------------------------------------ unsupported attributes

TEST(TargetAttributes, GemmAlphaUnsupported) {
  auto gemm = [](std::vector<onnx::AttributeProto> attrs) {
    AB b;
    b.Input("x", TP::FLOAT, {1, 8});
    b.InitF32Fill("w", {4, 8}, 0.1f);
    attrs.push_back(AB::AttrI("transB", 1));
    b.Node("Gemm", {"x", "w"}, {"y"}, std::move(attrs), "fc");
    b.Output("y");
    return b;
  };
  EXPECT_EQ(VerdictOn(Check(gemm({}), {"ax620e"}), "ax620e"), TargetVerdict::kFits);
  EXPECT_EQ(VerdictOn(Check(gemm({AB::AttrF("alpha", 1.0f), AB::AttrF("beta", 1.0f)}), {"ax620e"}),
                      "ax620e"),
            TargetVerdict::kFits)
      << "the default written out (as PyTorch does) is accepted";
  const Report r = Check(gemm({AB::AttrF("alpha", 0.5f)}), {"ax620e"});
  const auto f = Of(r, "target/attribute-unsupported", "ax620e");
  ASSERT_EQ(f.size(), 1u) << Dump(r);
  EXPECT_EQ(Value(*f[0], "attribute"), "alpha");
  EXPECT_EQ(Value(*f[0], "value"), "0.5");
  EXPECT_NE(f[0]->message.find("not yet"), std::string::npos) << f[0]->message;
}

TEST(TargetAttributes, ConvTransposeOutputShapeUnsupported) {
  AB b;
  b.Input("x", TP::FLOAT, {1, 2, 4, 4});
  b.InitF32Fill("w", {2, 2, 3, 3}, 0.1f);
  b.Node("ConvTranspose", {"x", "w"}, {"y"},
         {AB::AttrInts("strides", {2, 2}), AB::AttrInts("output_shape", {8, 8})}, "ct");
  b.Output("y");
  const Report r = Check(b, {"ax650"});
  EXPECT_EQ(Of(r, "target/attribute-unsupported", "ax650").size(), 1u) << Dump(r);
}

// ------------------------------------------------------------------ inputs

TEST(TargetInputs, Gather2dIndices) {
  auto gather = [](std::vector<int64_t> dims, std::vector<int64_t> values) {
    AB b;
    b.Input("x", TP::FLOAT, {10, 4});
    b.Input("i", TP::INT64, dims);
    b.Node("Gather", {"x", "i"}, {"y"}, {}, "g");
    b.Output("y");
    (void)values;
    return b;
  };
  EXPECT_EQ(VerdictOn(Check(gather({3}, {}), {"ax650"}), "ax650"), TargetVerdict::kFits);
  const Report r = Check(gather({2, 3}, {}), {"ax650"});
  const auto f = Of(r, "target/input-constraint", "ax650");
  ASSERT_EQ(f.size(), 1u) << Dump(r);
  EXPECT_EQ(Value(*f[0], "input"), "indices");
  EXPECT_EQ(Value(*f[0], "value"), "has rank 2");
}

TEST(TargetInputs, PowExponentScalarInitializer) {
  AB ok;
  ok.Input("x", TP::FLOAT, {1, 8});
  ok.InitF32("e", {}, {2.0f});
  ok.Node("Pow", {"x", "e"}, {"y"}, {}, "pow");
  ok.Output("y");
  EXPECT_EQ(VerdictOn(Check(ok, {"ax620e"}), "ax620e"), TargetVerdict::kFits);
  AB runtime;
  runtime.Input("x", TP::FLOAT, {1, 8});
  runtime.Input("e", TP::FLOAT, {1, 8});
  runtime.Node("Pow", {"x", "e"}, {"y"}, {}, "pow");
  runtime.Output("y");
  const Report r = Check(runtime, {"ax620e"});
  EXPECT_EQ(Of(r, "target/input-constraint", "ax620e").size(), 1u) << Dump(r);
  AB tensor;
  tensor.Input("x", TP::FLOAT, {1, 8});
  tensor.InitF32Fill("e", {8}, 2.0f);
  tensor.Node("Pow", {"x", "e"}, {"y"}, {}, "pow");
  tensor.Output("y");
  const Report t = Check(tensor, {"ax620e"});
  EXPECT_EQ(Of(t, "target/input-constraint", "ax620e").size(), 1u) << Dump(t);
}

TEST(TargetInputs, PReluSlopeShape) {
  auto prelu = [](std::vector<int64_t> slope) {
    AB b;
    b.Input("x", TP::FLOAT, {1, 8, 4, 4});
    b.InitF32Fill("s", slope, 0.1f);
    b.Node("PRelu", {"x", "s"}, {"y"}, {}, "prelu");
    b.Output("y");
    return b;
  };
  EXPECT_EQ(VerdictOn(Check(prelu({1, 8, 1, 1}), {"ax650"}), "ax650"), TargetVerdict::kFits);
  const Report r = Check(prelu({8, 1, 1}), {"ax650"});
  EXPECT_EQ(Of(r, "target/input-constraint", "ax650").size(), 1u) << Dump(r);
}

TEST(TargetInputs, PadAxesNotYetSupported) {
  AB b;
  b.Input("x", TP::FLOAT, {1, 2, 4, 4});
  b.InitInt("pads", TP::INT64, {4}, {1, 1, 1, 1});
  b.InitInt("axes", TP::INT64, {2}, {2, 3});
  b.Node("Pad", {"x", "pads", "", "axes"}, {"y"}, {}, "pad");
  b.Output("y");
  const Report r = Check(b, {"ax650"});
  EXPECT_EQ(Of(r, "target/input-constraint", "ax650").size(), 1u) << Dump(r);
}

// ------------------------------------------------------------------ notes

TEST(TargetNotes, DepthwiseDilatedConvIsSlow) {
  auto conv = [](std::int64_t group, std::int64_t dilation) {
    AB b;
    b.Input("x", TP::FLOAT, {1, 8, 8, 8});
    b.InitF32Fill("w", {8, 8 / group, 3, 3}, 0.1f);
    b.Node("Conv", {"x", "w"}, {"y"},
           {AB::AttrI("group", group), AB::AttrInts("dilations", {dilation, dilation}),
            AB::AttrInts("pads", {dilation, dilation, dilation, dilation})},
           "dw");
    b.Output("y");
    return b;
  };
  const Report slow = Check(conv(8, 2), {"ax650"});
  EXPECT_EQ(VerdictOn(slow, "ax650"), TargetVerdict::kFitsWithNotes) << Dump(slow);
  EXPECT_EQ(Of(slow, "target/efficiency", "ax650").size(), 1u);
  EXPECT_EQ(VerdictOn(Check(conv(8, 1), {"ax650"}), "ax650"), TargetVerdict::kFits);
  EXPECT_EQ(VerdictOn(Check(conv(1, 2), {"ax650"}), "ax650"), TargetVerdict::kFits);
}

TEST(TargetNotes, SmallSizeLimitsAreNotChecked) {
  AB b;
  b.Input("x", TP::FLOAT, {1, 4, 8, 8});
  b.InitF32Fill("s", {4}, 1.0f);
  b.InitF32Fill("b", {4}, 0.0f);
  b.Node("InstanceNormalization", {"x", "s", "b"}, {"y"}, {}, "in");
  b.Output("y");
  const Report r = Check(b, {"ax650", "ax615"});
  EXPECT_EQ(VerdictOn(r, "ax650"), TargetVerdict::kFits) << Dump(r);
  EXPECT_EQ(VerdictOn(r, "ax615"), TargetVerdict::kFitsWithNotes);
  EXPECT_EQ(Of(r, "target/not-checked", "ax615").size(), 1u);
}

// ------------------------------------------------------------------ verdicts

// The spec verdict does not move with targets; the target verdict stands beside it.
TEST(TargetVerdicts, SpecVerdictUnchanged) {
  ConvOpts o;
  const Report plain = RunCheck(ConvModel(o));
  ASSERT_EQ(plain.verdict, Verdict::kConformant) << Dump(plain);
  EXPECT_TRUE(plain.targets.empty());
  // Gemm-free conv: fits every chip; the report carries one result per chip.
  const Report all = Check(ConvModel(o), {"all"});
  EXPECT_EQ(all.verdict, Verdict::kConformant);
  ASSERT_EQ(all.targets.size(), 5u);
  for (const auto& t : all.targets) EXPECT_EQ(t.verdict, TargetVerdict::kFits) << t.chip;
  // A quantized model the spec accepts but a chip does not: DepthToSpace CRD on AX620E.
  AB b;
  b.Input("x", TP::FLOAT, {1, 8, 4, 4});
  auto x = b.QDQ("x", "x", QParams::U8());
  b.Node("DepthToSpace", {x}, {"d"}, {AB::AttrI("blocksize", 2), AB::AttrS("mode", "CRD")}, "d2s");
  b.Output(b.QDQ("d", "y", QParams::U8()));
  const Report spec = RunCheck(b);
  const Report tgt = Check(b, {"ax620e"});
  EXPECT_EQ(tgt.verdict, spec.verdict) << Dump(tgt);
  EXPECT_EQ(VerdictOn(tgt, "ax620e"), TargetVerdict::kDoesNotFit);
  // The JSON report carries the targets and reads back.
  const Report back = ReportFromJson(ReportToJson(tgt));
  ASSERT_EQ(back.targets.size(), 1u);
  EXPECT_EQ(back.targets[0].verdict, TargetVerdict::kDoesNotFit);
  EXPECT_EQ(back.targets[0].blocking.at(0).node, "d2s");
  EXPECT_EQ(back.verdict, tgt.verdict);
}

// The HTML report has a Targets section with the matrix (only when targets were requested).
TEST(TargetVerdicts, HtmlTargetsSection) {
  AB b;
  b.Input("x", TP::FLOAT, {1, 4, 8, 8});
  b.Input("grid", TP::FLOAT, {1, 8, 8, 2});
  b.Node("GridSample", {"x", "grid"}, {"y"}, {}, "gs1");
  b.Output("y");
  const std::string html = RenderHtml(Check(b, {"ax650", "ax620e"}));
  const auto at = html.find("<section id=\"targets\"><h2>Targets</h2>");
  ASSERT_NE(at, std::string::npos);
  EXPECT_NE(html.find("<tr data-chip=\"ax620e\"><td>AX620E</td><td>does_not_fit</td>", at),
            std::string::npos);
  EXPECT_NE(html.find("GridSample <code>gs1</code>", at), std::string::npos);
  EXPECT_NE(html.find("<tr data-chip=\"ax650\"><td>AX650</td><td>fits</td>", at),
            std::string::npos);
  EXPECT_EQ(RenderHtml(Check(b, {})).find("id=\"targets\""), std::string::npos);
}

// The real exports of tests/data/real_exports: every model gets a verdict per chip.
TEST(TargetVerdicts, RealExportsMatrix) {
  const fs::path dir = fs::path(AXQC_SOURCE_DIR) / "tests" / "data" / "real_exports";
  std::size_t models = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".onnx") continue;
    ++models;
    CheckOptions o;
    o.targets = {"all"};
    const Report r = CheckFile(e.path().string(), o);
    ASSERT_EQ(r.targets.size(), 5u) << e.path();
    const Report plain = CheckFile(e.path().string(), {});
    EXPECT_EQ(r.verdict, plain.verdict) << e.path();
    const auto name = e.path().filename().string();
    if (name == "spec_cnn_op17.onnx") {
      for (const auto& t : r.targets) EXPECT_EQ(t.verdict, TargetVerdict::kFits) << t.chip;
    }
    if (name == "fx_qat_transformer_op13.onnx") {
      // Gather with scalar (0-D) indices on run-time data: the tables allow 1-D only.
      for (const auto& t : r.targets) {
        EXPECT_EQ(t.verdict, TargetVerdict::kDoesNotFit) << t.chip;
        EXPECT_FALSE(Of(r, "target/input-constraint", t.chip).empty()) << t.chip;
      }
    }
  }
  EXPECT_GE(models, 10u);
}

// ------------------------------------------------------------------ CLI

TEST(TargetsCli, ListProfileAndDiff) {
  if (!fs::exists(AXQC_BIN_PATH)) GTEST_SKIP() << "axqc not built";
  const CliRun list = Axqc("targets --list");
  EXPECT_EQ(list.code, 0) << list.out;
  for (const char* chip : {"ax650", "ax620e", "ax615", "ax637", "m57"})
    EXPECT_NE(list.out.find(chip), std::string::npos) << list.out;
  const CliRun profile = Axqc("targets ax620e");
  EXPECT_EQ(profile.code, 0) << profile.out;
  EXPECT_NE(profile.out.find("DepthToSpace\n      attribute mode: only DCR (for now)"),
            std::string::npos)
      << profile.out;
  EXPECT_NE(profile.out.find("b32f7c1dd95f9fa8c5edcaa4b151f1023a940416"), std::string::npos);
  const CliRun json = Axqc("targets ax650 --format json");
  EXPECT_EQ(json.out, FindTargetProfile("ax650")->json_text);
  const CliRun diff = Axqc("targets --diff ax650 ax620e");
  EXPECT_EQ(diff.code, 0) << diff.out;
  EXPECT_NE(diff.out.find("only on AX650 (19): And Cos Floor GatherElements GatherND GridSample"),
            std::string::npos)
      << diff.out;
  EXPECT_EQ(Axqc("targets --diff ax650 ax999").code, 2);
}

TEST(TargetsCli, CheckTargetExitCodesAndMatrix) {
  if (!fs::exists(AXQC_BIN_PATH)) GTEST_SKIP() << "axqc not built";
  const fs::path dir = fs::temp_directory_path() / ("axqc_targets_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  AB b;
  b.Input("x", TP::FLOAT, {1, 4, 8, 8});
  b.Input("grid", TP::FLOAT, {1, 8, 8, 2});
  b.Node("GridSample", {"x", "grid"}, {"y"}, {}, "gs1");
  b.Output("y");
  const std::string model = (dir / "gs.onnx").string();
  b.Save(model);
  // A float model: not_applicable (3) without targets, and with a chip it fits.
  EXPECT_EQ(Axqc("check --no-config " + model).code, 3);
  EXPECT_EQ(Axqc("check --no-config --target ax650 " + model).code, 3);
  const CliRun fails = Axqc("check --no-config --target ax650 --target ax620e " + model);
  EXPECT_EQ(fails.code, 1) << fails.out;
  EXPECT_NE(fails.out.find("target/op-unsupported"), std::string::npos) << fails.out;
  EXPECT_NE(fails.out.find("AX620E  does_not_fit"), std::string::npos) << fails.out;
  EXPECT_EQ(Axqc("check --no-config --target ax999 " + model).code, 2);
  const CliRun matrix = Axqc("targets " + model);
  EXPECT_EQ(matrix.code, 1) << matrix.out;
  EXPECT_NE(matrix.out.find("AX620E  does_not_fit     GridSample 'gs1' not supported"),
            std::string::npos)
      << matrix.out;
  EXPECT_NE(matrix.out.find("AX650   fits"), std::string::npos) << matrix.out;
  const CliRun json = Axqc("targets --format json " + model);
  const auto doc = nlohmann::json::parse(json.out);
  EXPECT_EQ(doc["models"][0]["targets"][1]["chip"], "ax620e");
  EXPECT_EQ(doc["models"][0]["targets"][1]["verdict"], "does_not_fit");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace axqc::test
