// Modelled exports of newer exporters (issue #40; tests/support/exporter_models.h,
// tests/data/modelled_exports/README.md): the committed files are the builder's output, each
// model's findings before `axqc fix` with their root causes and hints, and after the fix exactly
// its real defects. That the fixed models compute what the exports compute is shown by ctest
// fix_ort (onnxruntime).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "axqc/checker.h"
#include "axqc/fix.h"
#include "exporter_models.h"

namespace axqc::test {
namespace {

namespace fs = std::filesystem;
namespace ex = exporters;
using Counts = std::map<std::string, std::size_t>;

struct Fixed {
  FixResult r;
  onnx::ModelProto m;
};

Fixed Fix(const onnx::ModelProto& in) {
  std::string bytes, out;
  in.SerializeToString(&bytes);
  FixOptions o;
  o.max_locations = 100;
  Fixed f;
  f.r = FixBytes(bytes, "m.onnx", o, &out);
  EXPECT_TRUE(f.m.ParseFromString(out));
  return f;
}

Counts ByRule(const Report& r) { return {r.summary.by_rule.begin(), r.summary.by_rule.end()}; }

Counts Applied(const FixResult& r) {
  Counts c;
  for (const auto& o : r.rewrites) {
    if (o.applied > 0) c[o.id] = o.applied;
  }
  return c;
}

// Hint IDs of the root causes.
std::set<std::string> Hints(const Report& r) {
  std::set<std::string> h;
  for (const auto& f : r.findings) {
    if (f.cause.empty() && !f.hint.id.empty()) h.insert(f.hint.id);
  }
  return h;
}

std::string Dump(const Report& r) {
  std::ostringstream os;
  for (const auto& f : r.findings) {
    os << "  " << f.rule << " @" << (f.nodes.empty() ? "-" : f.nodes[0])
       << (f.cause.empty() ? " root" : "") << (f.hint.id.empty() ? "" : " [" + f.hint.id + "]")
       << ": " << f.message.substr(0, 160) << "\n";
  }
  return os.str();
}

// The primary nodes of the findings of `rule`, report order.
std::vector<std::string> NodesOf(const Report& r, const std::string& rule) {
  std::vector<std::string> v;
  for (const auto& f : r.findings) {
    if (f.rule == rule && !f.nodes.empty()) v.push_back(f.nodes[0]);
  }
  return v;
}

const Finding* RootAt(const Report& r, const std::string& rule, const std::string& node) {
  for (const auto& f : r.findings) {
    if (f.rule == rule && !f.nodes.empty() && f.nodes[0] == node && f.cause.empty()) return &f;
  }
  return nullptr;
}

TEST(ModelledExports, CommittedFilesAreTheBuildersOutput) {
  const fs::path dir = fs::path(AXQC_SOURCE_DIR) / "tests" / "data" / "modelled_exports";
  std::set<std::string> names;
  for (const auto& [name, model] : ex::ModelledExports()) {
    SCOPED_TRACE(name);
    names.insert(name + ".onnx");
    std::ifstream in(dir / (name + ".onnx"), std::ios::binary);
    std::stringstream file;
    file << in.rdbuf();
    std::string built;
    model.SerializeToString(&built);
    EXPECT_EQ(file.str(), built) << "regenerate: build/release/tests/axqc-fix-fixtures --modelled "
                                    "tests/data/modelled_exports";
  }
  std::set<std::string> on_disk;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".onnx") on_disk.insert(e.path().filename().string());
  }
  EXPECT_EQ(on_disk, names);
}

struct Expect {
  const char* name;
  onnx::ModelProto (*model)();
  Counts before;                // errors by rule, without -c
  std::set<std::string> hints;  // hint IDs of the root causes before, without -c
  Counts applied;               // rewrites of `axqc fix` and their counts
  Verdict after_verdict;
  Counts after;  // errors by rule after the fix: the real defects
  std::set<std::string> hints_after;
};

onnx::ModelProto Dynamo() { return ex::TorchDynamoExport(); }
onnx::ModelProto DynamoFunctions() { return ex::TorchDynamoExport(true); }
onnx::ModelProto DynamoOptimized() { return ex::TorchDynamoExport(false, true); }
onnx::ModelProto Ort() { return ex::OrtQuantizeStatic(); }
onnx::ModelProto OrtA16W8Op21() { return ex::OrtQuantizeStaticA16W8(21); }
onnx::ModelProto OrtA16W8Op17() { return ex::OrtQuantizeStaticA16W8(17); }

// clang-format off
const Expect kExpect[] = {
    {"torch_dynamo_op18", Dynamo,
     {{"onnx/constant-node", 2}, {"op/clip-dynamic", 2}}, {"constant-node"},
     {{"constant-to-initializer", 2}, {"cast-of-initializer", 5}, {"value-info", 12}},
     Verdict::kConformant, {}, {}},
    {"torch_dynamo_functions_op18", DynamoFunctions,
     {{"closure/uncovered-node", 3}, {"onnx/constant-node", 2}, {"op/clip-dynamic", 2},
      {"op/input-not-quantized", 2}, {"op/output-not-quantized", 1}, {"op/relu-form", 1}},
     {"constant-node", "qdq-in-function"},
     {{"inline-functions", 3}, {"constant-to-initializer", 2}, {"cast-of-initializer", 5},
      {"value-info", 12}},
     Verdict::kConformant, {}, {}},
    {"torch_dynamo_optimized_op18", DynamoOptimized,
     {{"qdq/const-form", 1}}, {"weight-qdq-folded"},
     {{"value-info", 10}},
     Verdict::kNonConformant, {{"qdq/const-form", 1}}, {"weight-qdq-folded"}},
    {"ort_quantize_static_op17", Ort,
     {{"op/matmul-type", 2}, {"op/same-type-inputs", 2}},
     {"ort-activation-removed", "ort-asymmetric-activations"},
     {},
     Verdict::kNonConformant, {{"op/matmul-type", 2}, {"op/same-type-inputs", 2}},
     {"ort-activation-removed", "ort-asymmetric-activations"}},
    {"ort_quantize_static_a16w8_op21", OrtA16W8Op21,
     {{"closure/uncovered-node", 13}, {"op/input-not-quantized", 5},
      {"op/output-not-quantized", 3}, {"qdq/const-form", 1}},
     {"contrib-qdq"},
     {{"contrib-qdq-to-onnx", 13}, {"value-info", 16}},
     Verdict::kConformant, {}, {}},
    {"ort_quantize_static_a16w8_op17", OrtA16W8Op17,
     {{"closure/uncovered-node", 13}, {"op/input-not-quantized", 5},
      {"op/output-not-quantized", 3}, {"qdq/const-form", 1}},
     {"contrib-qdq"},
     {{"contrib-qdq-to-onnx", 3}, {"value-info", 3}},
     Verdict::kNonConformant,
     {{"closure/uncovered-node", 10}, {"op/input-not-quantized", 3},
      {"op/output-not-quantized", 3}},
     {"contrib-qdq"}},
};
// clang-format on

class Exporters : public ::testing::TestWithParam<Expect> {};

TEST_P(Exporters, FindingsBeforeAndAfterFix) {
  const Expect& e = GetParam();
  const auto f = Fix(e.model());
  EXPECT_EQ(ByRule(f.r.before), e.before) << Dump(f.r.before);
  EXPECT_EQ(Hints(f.r.before), e.hints) << Dump(f.r.before);
  EXPECT_EQ(f.r.before.verdict, Verdict::kNonConformant);
  EXPECT_EQ(Applied(f.r), e.applied);
  EXPECT_EQ(f.r.after.verdict, e.after_verdict) << Dump(f.r.after);
  EXPECT_EQ(ByRule(f.r.after), e.after) << Dump(f.r.after);
  EXPECT_EQ(Hints(f.r.after), e.hints_after) << Dump(f.r.after);
  // Fixing the fixed model changes nothing.
  const auto again = Fix(f.m);
  EXPECT_EQ(again.r.applied(), 0u);
  EXPECT_EQ(ByRule(again.r.after), e.after);
}

INSTANTIATE_TEST_SUITE_P(Models, Exporters, ::testing::ValuesIn(kExpect),
                         [](const auto& p) { return std::string(p.param.name); });

TEST(TorchDynamo, ExporterStyleAndCastsFoldedIntoInitializers) {
  const auto m = ex::TorchDynamoExport();
  EXPECT_EQ(m.ir_version(), 10);
  EXPECT_EQ(m.opset_import(0).version(), 18);
  for (const auto& n : m.graph().node()) {
    EXPECT_EQ(n.name().rfind("node_", 0), 0u) << n.name();
    ASSERT_GE(n.metadata_props_size(), 1);
    EXPECT_EQ(n.metadata_props(0).key().rfind("pkg.torch.onnx.", 0), 0u);
  }
  const auto f = Fix(m);
  for (const auto& n : f.m.graph().node()) {
    EXPECT_NE(n.op_type(), "Cast");
    EXPECT_NE(n.op_type(), "Constant");
  }
  // The zero points are initializers of the Q/DQ types, read directly.
  for (const auto& t : f.m.graph().initializer()) {
    if (t.name() == "val_zp_0") {
      EXPECT_EQ(t.data_type(), onnx::TensorProto::UINT8);
    }
    if (t.name() == "val_zp_1") {
      EXPECT_EQ(t.data_type(), onnx::TensorProto::INT8);
    }
  }
  // With -c the Casts' missing value_info is one cause with the dynamo hint.
  std::string bytes;
  m.SerializeToString(&bytes);
  CheckOptions c;
  c.check_value = true;
  const Report r = CheckBytes(bytes, "m.onnx", c);
  const Finding* cast = RootAt(r, "onnx/value-info-missing", "node_Cast_0");
  ASSERT_NE(cast, nullptr) << Dump(r);
  EXPECT_EQ(cast->hint.id, "dynamo-qparam-casts");
  EXPECT_EQ(cast->hint.rewrite, "cast-of-initializer");
}

TEST(TorchDynamo, OptimizedWeightNamesTheExportFlag) {
  const auto f = Fix(ex::TorchDynamoExport(false, true));
  const Finding* w = RootAt(f.r.after, "qdq/const-form", "node_Conv_0");
  ASSERT_NE(w, nullptr) << Dump(f.r.after);
  EXPECT_EQ(w->hint.id, "weight-qdq-folded");
  EXPECT_NE(w->hint.text.find("optimize=False"), std::string::npos);
  EXPECT_NE(w->hint.text.find("do_constant_folding=False"), std::string::npos);
  EXPECT_TRUE(w->hint.rewrite.empty());
  // torch 1.x's TorchScript exporter never folds Q/DQ: there a float weight was never quantized
  // (the real exports' ConvTranspose of eager QAT), so the hint needs the dynamo exporter.
  auto old = ex::TorchDynamoExport(false, true);
  old.set_producer_version("1.13.0");
  const auto g = Fix(old);
  const Finding* o = RootAt(g.r.after, "qdq/const-form", "node_Conv_0");
  ASSERT_NE(o, nullptr);
  EXPECT_TRUE(o->hint.id.empty()) << o->hint.id;
}

TEST(OrtQuantizeStatic, RemovedActivationAndAsymmetricActivationsAreNamed) {
  const auto f = Fix(ex::OrtQuantizeStatic());
  const Report& r = f.r.after;
  EXPECT_EQ(NodesOf(r, "op/matmul-type"),
            (std::vector<std::string>{"/Flatten_output_0_dq", "/act/Clip_output_0_dq"}));
  EXPECT_EQ(NodesOf(r, "op/same-type-inputs"),
            (std::vector<std::string>{"/fc1/MatMul", "/fc2/MatMul"}));
  const Finding* removed = RootAt(r, "op/matmul-type", "/act/Clip_output_0_dq");
  ASSERT_NE(removed, nullptr);
  EXPECT_EQ(removed->hint.id, "ort-activation-removed");
  EXPECT_NE(removed->hint.text.find("fusion tail"), std::string::npos);
  const Finding* asym = RootAt(r, "op/matmul-type", "/Flatten_output_0_dq");
  ASSERT_NE(asym, nullptr);
  EXPECT_EQ(asym->hint.id, "ort-asymmetric-activations");
  EXPECT_NE(asym->hint.text.find("ActivationSymmetric"), std::string::npos);
  // The same graph from another producer gets no onnxruntime hint.
  auto m = ex::OrtQuantizeStatic();
  m.set_producer_name("pytorch");
  const auto g = Fix(m);
  for (const auto& x : g.r.after.findings) EXPECT_EQ(x.hint.id.rfind("ort-", 0), std::string::npos);
}

TEST(OrtQuantizeStatic, ContribQdqBelowOpset21KeepsTheSixteenBitNodes) {
  const auto f = Fix(ex::OrtQuantizeStaticA16W8(17));
  EXPECT_EQ(
      NodesOf(f.r.after, "closure/uncovered-node"),
      (std::vector<std::string>{
          "input_QuantizeLinear", "input_DequantizeLinear", "/relu/Relu_output_0_QuantizeLinear",
          "/relu/Relu_output_0_DequantizeLinear", "/pool/GlobalAveragePool_output_0_QuantizeLinear",
          "/pool/GlobalAveragePool_output_0_DequantizeLinear", "/Flatten_output_0_QuantizeLinear",
          "/Flatten_output_0_DequantizeLinear", "output_QuantizeLinear",
          "output_DequantizeLinear"}))
      << Dump(f.r.after);
  const Finding* q = RootAt(f.r.after, "closure/uncovered-node", "input_QuantizeLinear");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->hint.id, "contrib-qdq");
  EXPECT_EQ(q->hint.rewrite, "contrib-qdq-to-onnx");
  for (const auto& o : f.r.rewrites) {
    if (o.id != "contrib-qdq-to-onnx") continue;
    EXPECT_EQ(o.skipped, 10u);
    ASSERT_FALSE(o.first_skips.empty());
    EXPECT_NE(o.first_skips[0].second.find("UINT16 from opset 21"), std::string::npos);
  }
}

}  // namespace
}  // namespace axqc::test
