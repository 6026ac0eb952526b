// Real exporter output: every model of tests/data/real_exports (made by scripts/gen_real_exports.py
// with torch.onnx.export from Debian's PyTorch 1.13; raw, not cleaned up) gets exactly the findings
// listed below, in both check_value modes. tests/data/real_exports/README.md explains each model
// and which findings are exporter artifacts and which are real defects.
//
// kModels is the expectation table: model -> verdict, the number of onnx/value-info-missing under
// -c, and per rule ID (without -c) the count and the primary node of its first findings in report
// order. When the checker's behaviour changes on purpose, a failing case prints its actual row in
// the same syntax, ready to paste.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "axqc/catalog.h"
#include "axqc/checker.h"

namespace axqc::test {
namespace {

namespace fs = std::filesystem;

struct RuleExpect {
  const char* rule;
  std::size_t count;
  std::vector<std::string> first_nodes;  // primary node (nodes[0]) of the first findings
  const char* needle = "";               // substring of the first finding's message ("" = any)
};

struct ModelExpect {
  const char* name;                // file name without ".onnx"
  Verdict verdict;                 // without -c
  std::size_t value_info_missing;  // onnx/value-info-missing findings with -c
  std::vector<RuleExpect> rules;   // every rule ID that fires without -c
};

// Readings of RULES.md these expectations do not follow yet (see the README): each Constant node
// is also closure/uncovered-node (reading 13 says onnx/constant-node only, so every
// "closure/uncovered-node" count below drops by the "onnx/constant-node" count).
// clang-format off
const ModelExpect kModels[] = {
    {"spec_cnn_op17", Verdict::kConformant, 41,
     {}},
    {"defect_weight_per_tensor_op17", Verdict::kNonConformant, 40,
     {
         {"role/weight-type", 1, {"/conv_wq/DequantizeLinear"}, "quantized per-tensor"},
     }},
    {"defect_weight_u8_op17", Verdict::kNonConformant, 40,
     {
         {"role/weight-type", 1, {"/conv_wq/DequantizeLinear"}, "is U8"},
     }},
    {"defect_missing_qdq_op17", Verdict::kNonConformant, 38,
     {
         {"op/relu-form", 1, {"/Relu_1"}, "feeds Add '/Add' without Q/DQ"},
     }},
    {"defect_convtranspose_axis0_op17", Verdict::kNonConformant, 42,
     {
         {"qdq/weight-axis", 1, {"/up_wq/DequantizeLinear"}, "quantized along axis 0"},
     }},
    {"manual_cnn_buffers_op13", Verdict::kNonConformant, 45,
     {
         {"onnx/constant-node", 2, {"/Constant", "/Constant_1"}},
         {"op/relu-form", 2, {"/Relu_1", "/Clip"}},
         {"op/clip-dynamic", 2, {"/Clip", "/Clip"}},
         {"op/output-not-quantized", 1, {"/HardSigmoid"}},
     }},
    {"manual_cnn_buffers_op17", Verdict::kNonConformant, 44,
     {
         {"onnx/constant-node", 2, {"/Constant", "/Constant_1"}},
         {"op/relu-form", 2, {"/Relu_1", "/Clip"}},
         {"op/clip-dynamic", 2, {"/Clip", "/Clip"}},
     }},
    {"manual_cnn_numbers_op13", Verdict::kNonConformant, 66,
     {
         {"onnx/constant-node", 28, {"/fq_in/Constant", "/fq_in/Constant_1"}},
         {"qdq/scale-not-initializer", 26, {"/fq_in/QuantizeLinear", "/conv_wq/QuantizeLinear"}, "from Constant"},
         {"op/relu-form", 2, {"/Relu_1", "/Clip"}},
         {"op/clip-dynamic", 2, {"/Clip", "/Clip"}},
         {"op/output-not-quantized", 1, {"/HardSigmoid"}},
     }},
    {"manual_cnn_numbers_op17", Verdict::kNonConformant, 65,
     {
         {"onnx/constant-node", 28, {"/fq_in/Constant", "/fq_in/Constant_1"}},
         {"qdq/scale-not-initializer", 26, {"/fq_in/QuantizeLinear", "/conv_wq/QuantizeLinear"}},
         {"op/relu-form", 2, {"/Relu_1", "/Clip"}},
         {"op/clip-dynamic", 2, {"/Clip", "/Clip"}},
     }},
    {"vit_manual_buffers_op17", Verdict::kNonConformant, 223,
     {
         {"onnx/constant-node", 26, {"/Constant", "/Constant_1"}},
         {"qdq/scale-not-initializer", 28, {"/fc2/fq_b/QuantizeLinear", "/fc1/fq_b/QuantizeLinear"}, "from Identity"},
         {"closure/uncovered-node", 5, {"/Shape", "/Shape_1"}},
         {"op/static-param", 2, {"/ln2/LayerNormalization", "/ln2/LayerNormalization"}, "comes from Identity"},
         {"op/output-not-quantized", 4, {"/Div", "/Erf"}},
         {"qdq/const-form", 3, {"/Div", "/Add_2"}},
     }},
    {"vit_manual_numbers_op17", Verdict::kNonConformant, 260,
     {
         {"onnx/constant-node", 112, {"/fq_in/Constant", "/fq_in/Constant_1"}},
         {"qdq/scale-not-initializer", 86, {"/fq_in/QuantizeLinear", "/patch_wq/QuantizeLinear"}},
         {"closure/uncovered-node", 5, {"/Shape", "/Shape_1"}},
         {"op/static-param", 2, {"/ln2/LayerNormalization", "/ln2/LayerNormalization"}},
         {"op/output-not-quantized", 4, {"/Div", "/Erf"}},
         {"qdq/const-form", 3, {"/Div", "/Add_2"}},
     }},
    {"vit_manual_numbers_op13", Verdict::kNonConformant, 280,
     {
         {"onnx/constant-node", 116, {"/fq_in/Constant", "/fq_in/Constant_1"}},
         {"qdq/scale-not-initializer", 86, {"/fq_in/QuantizeLinear", "/patch_wq/QuantizeLinear"}},
         {"closure/uncovered-node", 5, {"/Shape", "/Shape_1"}},
         {"op/output-not-quantized", 20, {"/ln1/ReduceMean", "/ln1/Sub"}},
         {"op/static-param", 2, {"/ln1/Pow", "/ln2/Pow"}},
         {"qdq/const-form", 7, {"/ln1/Add", "/ln1/Mul"}},
         {"op/input-not-quantized", 2, {"/ln2/Mul", "/ln2/Add_1"}},
     }},
    {"eager_qat_cnn_op13", Verdict::kNonConformant, 37,
     {
         {"onnx/constant-node", 1, {"/conv/Constant"}},
         {"op/output-not-quantized", 5, {"/conv/Conv", "/conv/Div"}},
         {"qdq/const-form", 4, {"/conv/Conv", "/conv/Div"}, "comes from Constant"},
         {"op/input-not-quantized", 1, {"/fc/Gemm"}},
     }},
    {"fx_qat_cnn_op17", Verdict::kNonConformant, 66,
     {
         {"onnx/constant-node", 6, {"Constant_16", "/conv.0.2/Constant"}},
         {"op/output-not-quantized", 6, {"/conv.0.0/Conv", "/conv.0.0/Div"}},
         {"qdq/const-form", 7, {"/conv.0.0/Conv", "/conv.0.0/Div"}},
         {"op/clip-dynamic", 4, {"/conv.0.2/Clip", "/conv.0.2/Clip"}},
         {"op/passive-params", 1, {"/activation_post_process_11/QuantizeLinear"}, "does not share the entry's parameters"},
     }},
    {"fx_qat_transformer_op13", Verdict::kNonConformant, 124,
     {
         {"onnx/constant-node", 13, {"/activation_post_process_0/Constant", "/ln1/Constant"}},
         {"op/output-not-quantized", 24, {"/ln1/ReduceMean", "/ln1/Sub"}},
         {"op/passive-params", 7, {"/qkv/Transpose", "/proj/Transpose"}},
         {"op/static-param", 2, {"/ln1/Pow", "/ln2/Pow"}},
         {"qdq/const-form", 12, {"/ln1/Add", "/ln1/Mul"}},
         {"op/matmul-type", 8, {"/activation_post_process_1/DequantizeLinear", "/activation_post_process_7/DequantizeLinear"}, "quantized as U8"},
         {"op/input-not-quantized", 2, {"/ln2/Mul", "/ln2/Add_1"}},
     }},
};
// clang-format on

fs::path DataDir() { return fs::path(AXQC_SOURCE_DIR) / "tests" / "data" / "real_exports"; }

Report Check(const std::string& name, bool check_value) {
  CheckOptions o;
  o.check_value = check_value;
  return CheckFile((DataDir() / (name + ".onnx")).string(), o);
}

// Primary nodes per rule, in report order.
std::map<std::string, std::vector<std::string>> ByRule(const Report& r) {
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& f : r.findings) out[f.rule].push_back(f.nodes.empty() ? "" : f.nodes.front());
  return out;
}

std::string Quote(const std::string& s) { return "\"" + s + "\""; }

// The table row of report `r` (without -c) and `rc` (with -c), in kModels syntax.
std::string ActualRow(const std::string& name, const Report& r, const Report& rc) {
  std::ostringstream s;
  std::size_t vim = 0;
  for (const auto& f : rc.findings) vim += f.rule == "onnx/value-info-missing" ? 1 : 0;
  static const char* kV[] = {"kConformant", "kNonConformant", "kNotApplicable"};
  s << "    {" << Quote(name) << ", Verdict::" << kV[static_cast<int>(r.verdict)] << ", " << vim
    << ",\n     {";
  if (r.findings.empty()) return s.str() + "}},\n";
  s << "\n";
  std::vector<std::string> order;
  for (const auto& f : r.findings) {
    if (std::find(order.begin(), order.end(), f.rule) == order.end()) order.push_back(f.rule);
  }
  auto by = ByRule(r);
  for (const auto& rule : order) {
    const auto& nodes = by[rule];
    s << "         {" << Quote(rule) << ", " << nodes.size() << ", {";
    for (std::size_t i = 0; i < std::min<std::size_t>(2, nodes.size()); ++i) {
      s << (i ? ", " : "") << Quote(nodes[i]);
    }
    s << "}},\n";
  }
  s << "     }},\n";
  return s.str();
}

class RealExports : public ::testing::TestWithParam<ModelExpect> {};

TEST_P(RealExports, ExactFindings) {
  const ModelExpect& m = GetParam();
  const Report r = Check(m.name, false);
  const Report rc = Check(m.name, true);
  const std::string row = "actual row:\n" + ActualRow(m.name, r, rc);

  EXPECT_EQ(r.verdict, m.verdict) << row;
  EXPECT_EQ(r.summary.warnings, 0u) << row;
  EXPECT_EQ(r.model.producer_name, "pytorch");
  const auto by = ByRule(r);
  std::set<std::string> expected_ids;
  std::size_t expected_total = 0;
  for (const auto& e : m.rules) {
    SCOPED_TRACE(e.rule);
    expected_ids.insert(e.rule);
    expected_total += e.count;
    const RuleInfo* info = FindRule(e.rule);
    ASSERT_NE(info, nullptr) << "not in the catalog";
    auto it = by.find(e.rule);
    ASSERT_NE(it, by.end()) << "expected " << e.count << " finding(s)\n" << row;
    EXPECT_EQ(it->second.size(), e.count) << row;
    ASSERT_LE(e.first_nodes.size(), it->second.size()) << row;
    for (std::size_t i = 0; i < e.first_nodes.size(); ++i) {
      EXPECT_EQ(it->second[i], e.first_nodes[i]) << "finding #" << i << "\n" << row;
    }
    for (const auto& f : r.findings) {
      if (f.rule != e.rule) continue;
      EXPECT_EQ(f.severity, info->severity) << f.message;
      EXPECT_FALSE(f.message.empty());
      if (*e.needle != '\0') {
        EXPECT_NE(f.message.find(e.needle), std::string::npos)
            << "message: " << f.message << "\nexpected to contain: " << e.needle;
      }
      break;
    }
  }
  for (const auto& [rule, nodes] : by) {
    EXPECT_TRUE(expected_ids.count(rule)) << "unexpected " << rule << " x" << nodes.size() << "\n"
                                          << row;
  }
  EXPECT_EQ(r.findings.size(), expected_total) << row;

  // check_value adds onnx/value-info-missing (the exporter writes no value_info) and nothing else:
  // no zero_point, bias-scale or pair-value warning on any of these models.
  const auto byc = ByRule(rc);
  for (const auto& [rule, nodes] : byc) {
    if (rule == "onnx/value-info-missing") continue;
    auto it = by.find(rule);
    EXPECT_TRUE(it != by.end() && it->second == nodes) << rule << " differs with -c\n" << row;
  }
  auto vim = byc.find("onnx/value-info-missing");
  EXPECT_EQ(vim == byc.end() ? 0 : vim->second.size(), m.value_info_missing) << row;
  EXPECT_EQ(rc.summary.warnings, 0u) << row;
  EXPECT_EQ(rc.verdict, m.value_info_missing > 0 ? Verdict::kNonConformant : m.verdict) << row;
}

std::string CaseName(const ::testing::TestParamInfo<ModelExpect>& info) {
  std::string n = info.param.name;
  std::replace_if(
      n.begin(), n.end(), [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); }, '_');
  return n;
}

INSTANTIATE_TEST_SUITE_P(Models, RealExports, ::testing::ValuesIn(kModels), CaseName);

// Every committed model has a row, and every row has its model.
TEST(RealExportsTable, CoversEveryModel) {
  std::set<std::string> files, rows;
  for (const auto& e : fs::directory_iterator(DataDir())) {
    if (e.path().extension() == ".onnx") files.insert(e.path().stem().string());
  }
  for (const auto& m : kModels) rows.insert(m.name);
  EXPECT_EQ(files, rows);
  EXPECT_GE(files.size(), 15u);
}

// Every model is small (each < 1 MB, as the test data budget asks) and was exported by torch at
// the opset its name says.
TEST(RealExportsTable, SmallAndFromTorch) {
  for (const auto& m : kModels) {
    SCOPED_TRACE(m.name);
    const fs::path p = DataDir() / (std::string(m.name) + ".onnx");
    EXPECT_LT(fs::file_size(p), 1u << 20);
    const Report r = Check(m.name, false);
    ASSERT_EQ(r.model.opsets.size(), 1u);
    const std::string want = std::string(m.name).substr(std::string(m.name).rfind("_op") + 3);
    EXPECT_EQ(std::to_string(r.model.opsets[0].second), want);
    EXPECT_EQ(r.model.producer_version, "1.13.0");
  }
}

}  // namespace
}  // namespace axqc::test
