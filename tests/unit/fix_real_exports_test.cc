// `axqc fix` on the raw PyTorch exports of tests/data/real_exports: after the fix, the findings
// are exactly the model's real defects (tests/data/real_exports/README.md, "after axqc fix"), the
// exporter artifacts are gone, and with -c no onnx/value-info-missing is left. That the fixed
// models compute exactly what the exports compute is shown by ctest fix_ort (onnxruntime).
//
// kFixed lists, per model, the artifact rules that must fire before the fix (and none of the
// artifact rules after it) and every rule left after the fix with its count and first nodes.
// A failing case prints its actual row in the same syntax.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "axqc/checker.h"
#include "axqc/fix.h"

namespace axqc::test {
namespace {

namespace fs = std::filesystem;

struct Left {
  const char* rule;
  std::size_t count;
  std::vector<std::string> first_nodes;  // primary node of the first findings, report order
};

struct FixedExpect {
  const char* name;
  std::vector<const char*> artifacts;  // rules that fire before (without -c) and are gone after
  Verdict verdict;                     // after the fix, without -c
  std::vector<Left> left;              // every rule after the fix
};

// Rules that only exporter artifacts cause on these models; none may be left after the fix.
const char* const kArtifactRules[] = {"onnx/constant-node",        "onnx/value-info-missing",
                                      "qdq/scale-not-initializer", "op/clip-dynamic",
                                      "op/static-param",           "closure/uncovered-node"};

// clang-format off
const FixedExpect kFixed[] = {
    {"spec_cnn_op17", {}, Verdict::kConformant, {}},
    {"defect_weight_per_tensor_op17", {}, Verdict::kNonConformant,
     {{"role/weight-type", 1, {"/conv_wq/DequantizeLinear"}}}},
    {"defect_weight_u8_op17", {}, Verdict::kNonConformant,
     {{"role/weight-type", 1, {"/conv_wq/DequantizeLinear"}}}},
    {"defect_missing_qdq_op17", {}, Verdict::kNonConformant,
     {{"op/relu-form", 1, {"/Relu_1"}}}},
    {"defect_convtranspose_axis0_op17", {}, Verdict::kNonConformant,
     {{"qdq/weight-axis", 1, {"/up_wq/DequantizeLinear"}}}},
    {"manual_cnn_buffers_op13", {"onnx/constant-node", "op/clip-dynamic"}, Verdict::kNonConformant,
     {{"op/relu-form", 2, {"/Relu_1", "/Clip"}},
      {"op/output-not-quantized", 1, {"/HardSigmoid"}}}},
    {"manual_cnn_buffers_op17", {"onnx/constant-node", "op/clip-dynamic"}, Verdict::kNonConformant,
     {{"op/relu-form", 2, {"/Relu_1", "/Clip"}}}},
    {"manual_cnn_numbers_op13", {"onnx/constant-node", "qdq/scale-not-initializer", "op/clip-dynamic"},
     Verdict::kNonConformant,
     {{"op/relu-form", 2, {"/Relu_1", "/Clip"}},
      {"op/output-not-quantized", 1, {"/HardSigmoid"}}}},
    {"manual_cnn_numbers_op17", {"onnx/constant-node", "qdq/scale-not-initializer", "op/clip-dynamic"},
     Verdict::kNonConformant,
     {{"op/relu-form", 2, {"/Relu_1", "/Clip"}}}},
    {"vit_manual_buffers_op17",
     {"onnx/constant-node", "qdq/scale-not-initializer", "op/static-param", "closure/uncovered-node"},
     Verdict::kNonConformant,
     {{"op/output-not-quantized", 4, {"/Div", "/Erf"}},
      {"qdq/const-form", 3, {"/Div", "/Add_2"}}}},
    {"vit_manual_numbers_op17",
     {"onnx/constant-node", "qdq/scale-not-initializer", "op/static-param", "closure/uncovered-node"},
     Verdict::kNonConformant,
     {{"op/output-not-quantized", 4, {"/Div", "/Erf"}},
      {"qdq/const-form", 3, {"/Div", "/Add_2"}}}},
    {"vit_manual_numbers_op13",
     {"onnx/constant-node", "qdq/scale-not-initializer", "op/static-param", "closure/uncovered-node"},
     Verdict::kNonConformant,
     {{"op/output-not-quantized", 20, {"/ln1/ReduceMean", "/ln1/Sub"}},
      {"qdq/const-form", 9, {"/ln1/Add", "/ln1/Mul"}}}},
    {"eager_qat_cnn_op13", {"onnx/constant-node"}, Verdict::kNonConformant,
     {{"op/output-not-quantized", 5, {"/conv/Conv", "/conv/Div"}},
      {"qdq/const-form", 3, {"/conv/Div", "/conv/Add"}},
      {"op/input-not-quantized", 1, {"/fc/Gemm"}}}},
    {"fx_qat_cnn_op17", {"onnx/constant-node", "op/clip-dynamic"}, Verdict::kNonConformant,
     {{"op/output-not-quantized", 6, {"/conv.0.0/Conv", "/conv.0.0/Div"}},
      {"qdq/const-form", 4, {"/conv.0.0/Div", "/conv.1.0/Div"}},
      {"op/passive-params", 1, {"/activation_post_process_11/QuantizeLinear"}}}},
    {"fx_qat_transformer_op13", {"onnx/constant-node", "op/static-param"}, Verdict::kNonConformant,
     {{"op/output-not-quantized", 24, {"/ln1/ReduceMean", "/ln1/Sub"}},
      {"op/passive-params", 7, {"/qkv/Transpose", "/proj/Transpose"}},
      {"qdq/const-form", 14, {"/ln1/Add", "/ln1/Mul"}},
      {"op/matmul-type", 8, {"/activation_post_process_1/DequantizeLinear", "/activation_post_process_7/DequantizeLinear"}}}},
};
// clang-format on

fs::path DataDir() { return fs::path(AXQC_SOURCE_DIR) / "tests" / "data" / "real_exports"; }

std::string Bytes(const std::string& name) {
  std::ifstream f(DataDir() / (name + ".onnx"), std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::map<std::string, std::vector<std::string>> ByRule(const Report& r) {
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& f : r.findings) out[f.rule].push_back(f.nodes.empty() ? "" : f.nodes.front());
  return out;
}

std::string Row(const std::string& name, const Report& r) {
  std::ostringstream s;
  static const char* kV[] = {"kConformant", "kNonConformant", "kNotApplicable"};
  s << "    {\"" << name << "\", {...}, Verdict::" << kV[static_cast<int>(r.verdict)]
    << ",\n     {";
  std::vector<std::string> order;
  for (const auto& f : r.findings) {
    if (std::find(order.begin(), order.end(), f.rule) == order.end()) order.push_back(f.rule);
  }
  const auto by = ByRule(r);
  for (const auto& rule : order) {
    const auto& nodes = by.at(rule);
    s << "{\"" << rule << "\", " << nodes.size() << ", {";
    for (std::size_t i = 0; i < std::min<std::size_t>(2, nodes.size()); ++i) {
      s << (i ? ", " : "") << "\"" << nodes[i] << "\"";
    }
    s << "}},\n      ";
  }
  return s.str() + "}},\n";
}

class FixRealExports : public ::testing::TestWithParam<FixedExpect> {};

TEST_P(FixRealExports, OnlyTheRealDefectsAreLeft) {
  const FixedExpect& e = GetParam();
  const std::string bytes = Bytes(e.name);
  ASSERT_FALSE(bytes.empty());
  std::string fixed;
  const FixResult r = FixBytes(bytes, e.name, {}, &fixed);
  const std::string row = "actual row:\n" + Row(e.name, r.after);
  EXPECT_GT(r.applied(), 0u);
  for (const char* rule : e.artifacts) {
    EXPECT_GT(r.before.summary.by_rule.count(rule), 0u) << rule << " does not fire before the fix";
  }
  for (const char* rule : kArtifactRules) {
    EXPECT_EQ(r.after.summary.by_rule.count(rule), 0u) << rule << " is left\n" << row;
  }
  for (const auto& o : r.rewrites) {
    EXPECT_EQ(o.skipped, 0u) << o.id << " skipped "
                             << (o.first_skips.empty()
                                     ? ""
                                     : o.first_skips[0].first + ": " + o.first_skips[0].second);
  }
  EXPECT_EQ(r.after.verdict, e.verdict) << row;
  const auto by = ByRule(r.after);
  std::size_t total = 0;
  std::set<std::string> expected;
  for (const auto& l : e.left) {
    SCOPED_TRACE(l.rule);
    expected.insert(l.rule);
    total += l.count;
    auto it = by.find(l.rule);
    ASSERT_NE(it, by.end()) << row;
    EXPECT_EQ(it->second.size(), l.count) << row;
    ASSERT_LE(l.first_nodes.size(), it->second.size());
    for (std::size_t i = 0; i < l.first_nodes.size(); ++i)
      EXPECT_EQ(it->second[i], l.first_nodes[i]) << row;
    // A real defect is a real defect before the fix as well.
    EXPECT_GT(r.before.summary.by_rule.count(l.rule), 0u) << l.rule << " only after the fix";
  }
  for (const auto& [rule, nodes] : by) EXPECT_TRUE(expected.contains(rule)) << rule << "\n" << row;
  EXPECT_EQ(r.after.findings.size(), total) << row;
  EXPECT_EQ(r.after.summary.warnings, 0u);

  // With -c: every value_info is there, nothing else changes.
  FixOptions cv;
  cv.check_value = true;
  const FixResult rc = FixBytes(bytes, e.name, cv, nullptr);
  EXPECT_GT(rc.before.summary.by_rule.count("onnx/value-info-missing"), 0u);
  EXPECT_EQ(rc.after.summary.by_rule, r.after.summary.by_rule);

  // Fixing the fixed model changes nothing.
  const FixResult again = FixBytes(fixed, e.name, {}, nullptr);
  EXPECT_EQ(again.applied(), 0u);
  EXPECT_EQ(again.after.summary.by_rule, r.after.summary.by_rule);
}

std::string CaseName(const ::testing::TestParamInfo<FixedExpect>& info) {
  std::string n = info.param.name;
  std::replace_if(
      n.begin(), n.end(), [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); }, '_');
  return n;
}

INSTANTIATE_TEST_SUITE_P(Models, FixRealExports, ::testing::ValuesIn(kFixed), CaseName);

TEST(FixRealExportsTable, CoversEveryModel) {
  std::set<std::string> files, rows;
  for (const auto& e : fs::directory_iterator(DataDir())) {
    if (e.path().extension() == ".onnx") files.insert(e.path().stem().string());
  }
  for (const auto& m : kFixed) rows.insert(m.name);
  EXPECT_EQ(files, rows);
}

}  // namespace
}  // namespace axqc::test
