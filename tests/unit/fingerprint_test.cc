// Finding fingerprints (core/src/fingerprint.cc, recipe in docs/report-schema.md): the same
// finding keeps its fingerprint when every node and tensor is renamed (another exporter, another
// export), when the model file is renamed and when the graph changes far from it; findings at
// different places or of different kinds get different ones; structurally identical places share
// one and are told apart by their occurrence number.
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
#include "axqc/gate.h"
#include "check_helpers.h"

namespace axqc::test {
namespace {

namespace fs = std::filesystem;

fs::path DataDir() { return fs::path(AXQC_SOURCE_DIR) / "tests" / "data" / "real_exports"; }

std::string ReadBytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

// Every node and tensor renamed ("n<k>", "t<k>", numbered backwards so that the names also sort
// differently), consistently across nodes, initializers, graph inputs/outputs and value_info.
std::string RenameEverything(const std::string& bytes) {
  onnx::ModelProto m;
  EXPECT_TRUE(m.ParseFromString(bytes));
  auto* g = m.mutable_graph();
  std::map<std::string, std::string> names;
  auto rename = [&](std::string* s) {
    if (s->empty()) return;
    auto it = names.find(*s);
    if (it == names.end()) it = names.emplace(*s, "").first;
    *s = it->second;
  };
  // First pass: collect every tensor name.
  auto collect = [&](const std::string& s) {
    if (!s.empty()) names.emplace(s, "");
  };
  for (const auto& n : g->node()) {
    for (const auto& i : n.input()) collect(i);
    for (const auto& o : n.output()) collect(o);
  }
  for (const auto& i : g->initializer()) collect(i.name());
  for (const auto& v : g->input()) collect(v.name());
  for (const auto& v : g->output()) collect(v.name());
  for (const auto& v : g->value_info()) collect(v.name());
  std::size_t k = names.size();
  for (auto& [old, fresh] : names) fresh = "t" + std::to_string(k--);
  for (auto& n : *g->mutable_node()) {
    for (auto& i : *n.mutable_input()) rename(&i);
    for (auto& o : *n.mutable_output()) rename(&o);
    for (const auto& a : n.attribute()) {
      EXPECT_FALSE(a.has_g() || a.graphs_size() > 0) << "subgraphs are not renamed here";
    }
  }
  for (auto& i : *g->mutable_initializer()) rename(i.mutable_name());
  for (auto& v : *g->mutable_input()) rename(v.mutable_name());
  for (auto& v : *g->mutable_output()) rename(v.mutable_name());
  for (auto& v : *g->mutable_value_info()) rename(v.mutable_name());
  for (int i = 0; i < g->node_size(); ++i) {
    g->mutable_node(i)->set_name("n" + std::to_string(g->node_size() - i));
  }
  return m.SerializeAsString();
}

std::multiset<std::string> Keys(const Report& r) {
  std::multiset<std::string> out;
  for (const auto& f : r.findings) out.insert(f.rule + " " + f.fingerprint);
  return out;
}

class RealExportRenames : public ::testing::TestWithParam<const char*> {};

TEST_P(RealExportRenames, EveryFindingKeepsItsFingerprint) {
  const std::string bytes = ReadBytes(DataDir() / (std::string(GetParam()) + ".onnx"));
  ASSERT_FALSE(bytes.empty());
  CheckOptions o;
  o.max_locations = 5;
  const Report before = CheckBytes(bytes, "exports/original.onnx", o);
  const Report after = CheckBytes(RenameEverything(bytes), "renamed/other-name.onnx", o);
  ASSERT_EQ(before.findings.size(), after.findings.size()) << GetParam();
  ASSERT_GT(before.findings.size(), 0u);
  // The names really changed...
  std::set<std::string> old_nodes;
  for (const auto& f : before.findings) old_nodes.insert(f.nodes.begin(), f.nodes.end());
  for (const auto& f : after.findings) {
    for (const auto& n : f.nodes) EXPECT_FALSE(old_nodes.contains(n)) << n;
  }
  // ... the fingerprints did not.
  EXPECT_EQ(Keys(before), Keys(after)) << GetParam();
  for (const auto& f : before.findings) {
    EXPECT_EQ(f.fingerprint.size(), 16u);
    EXPECT_EQ(f.fingerprint.find_first_not_of("0123456789abcdef"), std::string::npos);
  }
  // Same rule, same fingerprint: the kind and the structure agree as well.
  std::map<std::string, std::set<std::string>> kinds;
  for (const auto& f : before.findings) kinds[f.fingerprint].insert(f.rule + "|" + f.group_key);
  for (const auto& [fp, k] : kinds) EXPECT_EQ(k.size(), 1u) << fp;
}

INSTANTIATE_TEST_SUITE_P(Models, RealExportRenames,
                         ::testing::Values("fx_qat_cnn_op17", "eager_qat_cnn_op13",
                                           "manual_cnn_numbers_op17", "vit_manual_buffers_op17"));

// A chain of quantized Conv layers: input -> QDQ -> [Conv -> QDQ] x layers. `per_tensor` lists the
// layers whose weight is quantized per-tensor (role/weight-type); `channels` the output channels
// of each layer (the weight shapes tell layers apart).
ModelBuilder ConvChain(const std::vector<int64_t>& channels,
                       const std::set<std::size_t>& per_tensor, const std::string& prefix = "L") {
  ModelBuilder b;
  int64_t cin = 3;
  b.Input("x", TP::FLOAT, {1, cin, 8, 8});
  std::string x = b.QDQ("x", "x", QParams::U8(0.02f, 128));
  for (std::size_t i = 0; i < channels.size(); ++i) {
    const std::string name = prefix + std::to_string(i);
    const int64_t cout = channels[i];
    std::vector<float> ws(static_cast<std::size_t>(cout), 0.01f);
    const QParams wp = per_tensor.contains(i) ? QParams::S8(0.01f)
                                              : QParams::PerChannel(modelgen::QType::kS8, ws, 0);
    const std::string w = b.WeightQDQ(name + "_w", {cout, cin, 3, 3}, wp);
    b.Node("Conv", {x, w}, {name + "_out"}, {ModelBuilder::AttrInts("pads", {1, 1, 1, 1})}, name);
    x = b.QDQ(name + "_out", name + "_y", QParams::U8(0.05f, 128));
    cin = cout;
  }
  b.Output(x);
  return b;
}

std::vector<const Finding*> WeightType(const Report& r) { return Find(r, "role/weight-type"); }

TEST(Fingerprint, DifferentLayersDifferIdenticalOnesShareAndAreNumbered) {
  // Layers 0 and 2 differ in their weight shape ([4,3,3,3] vs [8,4,3,3]).
  const Report r = RunCheck(ConvChain({4, 4, 8}, {0, 2}));
  const auto found = WeightType(r);
  ASSERT_EQ(found.size(), 2u) << Dump(r);
  EXPECT_NE(found[0]->fingerprint, found[1]->fingerprint);

  // Two structurally identical parallel branches: one fingerprint, occurrences 1 and 2.
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {1, 3, 8, 8});
  const std::string x = b.QDQ("x", "x", QParams::U8(0.02f, 128));
  std::vector<std::string> outs;
  for (const char* name : {"left", "right"}) {
    const std::string w = b.WeightQDQ(std::string(name) + "_w", {4, 3, 3, 3}, QParams::S8(0.01f));
    b.Node("Conv", {x, w}, {std::string(name) + "_out"},
           {ModelBuilder::AttrInts("pads", {1, 1, 1, 1})}, name);
    outs.push_back(
        b.QDQ(std::string(name) + "_out", std::string(name) + "_y", QParams::U8(0.05f, 128)));
  }
  for (const auto& o : outs) b.Output(o);
  const Report twins = RunCheck(b);
  const auto pair = WeightType(twins);
  ASSERT_EQ(pair.size(), 2u) << Dump(twins);
  EXPECT_EQ(pair[0]->fingerprint, pair[1]->fingerprint);
  const auto occ = FingerprintOccurrences(twins);
  std::vector<std::size_t> numbers;
  for (std::size_t i = 0; i < twins.findings.size(); ++i) {
    if (twins.findings[i].rule == "role/weight-type") numbers.push_back(occ[i]);
  }
  EXPECT_EQ(numbers, (std::vector<std::size_t>{1, 2}));
}

TEST(Fingerprint, ChangesFarFromTheFindingDoNotMoveIt) {
  // The finding at layer 0; the network grows by two layers at the end.
  const Report small = RunCheck(ConvChain({4, 4}, {0}));
  const Report grown = RunCheck(ConvChain({4, 4, 6, 6}, {0}));
  ASSERT_EQ(WeightType(small).size(), 1u);
  ASSERT_EQ(WeightType(grown).size(), 1u);
  EXPECT_EQ(WeightType(small)[0]->fingerprint, WeightType(grown)[0]->fingerprint);
  // The next layer's width is beyond the two levels around the finding's node (the weight's DQ:
  // its Q, the Conv, the Conv's inputs and the Q of its output).
  const Report wider = RunCheck(ConvChain({4, 7}, {0}));
  ASSERT_EQ(WeightType(wider).size(), 1u);
  EXPECT_EQ(WeightType(wider)[0]->fingerprint, WeightType(small)[0]->fingerprint);
  // The layer's own weight shape is part of it.
  const Report reshaped = RunCheck(ConvChain({5, 4}, {0}));
  ASSERT_EQ(WeightType(reshaped).size(), 1u);
  EXPECT_NE(WeightType(reshaped)[0]->fingerprint, WeightType(small)[0]->fingerprint);
  // Node names and the file name never enter it.
  CheckOptions o;
  const Report renamed = CheckBytes(ConvChain({4, 4}, {0}, "renamed_").Serialize(), "x/y.onnx", o);
  ASSERT_EQ(WeightType(renamed).size(), 1u);
  EXPECT_NE(WeightType(renamed)[0]->nodes, WeightType(small)[0]->nodes);
  EXPECT_EQ(WeightType(renamed)[0]->fingerprint, WeightType(small)[0]->fingerprint);
}

TEST(Fingerprint, WithoutOneTheNameBasedFallbackIsUsed) {
  Finding f;
  f.rule = "role/weight-type";
  f.group_key = "Conv weight quantized per-tensor";
  f.op_type = "Conv";
  f.nodes = {"w_dq", "conv"};
  const std::string fallback = FingerprintOf(f);
  EXPECT_EQ(fallback.size(), 16u);
  f.nodes = {"other_dq", "conv"};
  EXPECT_NE(FingerprintOf(f), fallback);  // names matter for the fallback only
  f.fingerprint = "0123456789abcdef";
  EXPECT_EQ(FingerprintOf(f), "0123456789abcdef");
}

}  // namespace
}  // namespace axqc::test
