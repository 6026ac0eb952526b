// Test helpers: run the checker on a builder's model and query findings by rule and node.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "axqc/checker.h"
#include "modelgen/model_builder.h"

namespace axqc::test {

using modelgen::ModelBuilder;
using modelgen::QParams;
using modelgen::QType;
using TP = onnx::TensorProto;

// RULES.md reading 9, checked on every model a test runs: an in-scope report's owned / total Q/DQ
// edge counts agree with its findings. Every Q/DQ edge that no operator or pattern rule owns is
// named by a finding, so there are at least as many distinct Q/DQ nodes named in findings as
// unowned edges; a conformant report owns every edge.
inline void ExpectEdgeCountsAgreeWithFindings(const onnx::ModelProto& m, const Report& r) {
  if (r.verdict == Verdict::kNotApplicable) return;
  std::set<std::string> qdq;
  for (int i = 0; i < m.graph().node_size(); ++i) {
    const auto& n = m.graph().node(i);
    if ((n.op_type() == "QuantizeLinear" || n.op_type() == "DequantizeLinear") &&
        (n.domain().empty() || n.domain() == "ai.onnx")) {
      qdq.insert(n.name().empty() ? n.op_type() + "#" + std::to_string(i) : n.name());
    }
  }
  std::set<std::string> named;
  for (const auto& f : r.findings) {
    for (const auto& n : f.nodes) {
      if (qdq.contains(n)) named.insert(n);
    }
  }
  ASSERT_GE(r.summary.qdq_edges, r.summary.owned_qdq_edges);
  EXPECT_LE(r.summary.qdq_edges - r.summary.owned_qdq_edges, named.size())
      << "unowned Q/DQ edges that no finding names (reading 9)";
  if (r.verdict == Verdict::kConformant) {
    EXPECT_EQ(r.summary.owned_qdq_edges, r.summary.qdq_edges) << "conformant with unowned edges";
  }
}

inline Report RunCheck(const ModelBuilder& b, bool check_value = false) {
  CheckOptions o;
  o.check_value = check_value;
  o.max_locations = 100;
  const onnx::ModelProto m = b.Build();
  std::string bytes;
  m.SerializeToString(&bytes);
  Report r = CheckBytes(bytes, "test.onnx", o);
  ExpectEdgeCountsAgreeWithFindings(m, r);
  return r;
}

inline std::vector<const Finding*> Find(const Report& r, const std::string& rule) {
  std::vector<const Finding*> out;
  for (const auto& f : r.findings) {
    if (f.rule == rule) out.push_back(&f);
  }
  return out;
}

// The finding of `rule` whose node list contains `node`, or nullptr.
inline const Finding* At(const Report& r, const std::string& rule, const std::string& node) {
  for (const auto& f : r.findings) {
    if (f.rule == rule && std::find(f.nodes.begin(), f.nodes.end(), node) != f.nodes.end()) return &f;
  }
  return nullptr;
}

inline std::string Dump(const Report& r) {
  std::string s = std::string(VerdictName(r.verdict)) + "\n";
  for (const auto& f : r.findings) {
    s += "  " + f.rule + " [" + std::string(SeverityName(f.severity)) + "] " + f.message + " (";
    for (const auto& n : f.nodes) s += n + " ";
    s += ")\n";
  }
  return s;
}

inline bool Has(const Report& r, const std::string& rule) { return !Find(r, rule).empty(); }

// Asserts that `rule` fires at `node` with the catalog severity and that the message contains
// `needle`.
#define EXPECT_FINDING(report, rule, node, needle)                                      \
  do {                                                                                  \
    const auto& r_ = (report);                                                          \
    const auto* f_ = ::axqc::test::At(r_, rule, node);                                  \
    ASSERT_NE(f_, nullptr) << "expected " << rule << " at " << node << "\n"             \
                           << ::axqc::test::Dump(r_);                                   \
    EXPECT_NE(f_->message.find(needle), std::string::npos)                              \
        << "message: " << f_->message << "\nexpected to contain: " << needle;           \
    EXPECT_EQ(f_->severity, ::axqc::FindRule(rule)->severity);                          \
  } while (0)

#define EXPECT_NO_RULE(report, rule)                                                       \
  do {                                                                                     \
    const auto& r_ = (report);                                                             \
    EXPECT_FALSE(::axqc::test::Has(r_, rule)) << "unexpected " << rule << "\n"             \
                                              << ::axqc::test::Dump(r_);                   \
  } while (0)

#define EXPECT_CLEAN(report)                                                        \
  do {                                                                              \
    const auto& r_ = (report);                                                      \
    EXPECT_EQ(r_.verdict, ::axqc::Verdict::kConformant) << ::axqc::test::Dump(r_); \
    EXPECT_EQ(r_.summary.warnings, 0u) << ::axqc::test::Dump(r_);                  \
  } while (0)

// A conformant Conv block: x [1,C,H,W] -> Q/DQ U8 -> Conv (S8 per-channel, INT32 bias) -> Q/DQ
// U8 -> output. Names: conv "conv", input DQ "x_dq", weight DQ "w_dq", bias DQ "b_dq", output
// Q "y_q" / DQ "y_dq".
struct ConvOpts {
  int64_t cin = 4, cout = 8;
  QParams in = QParams::U8(0.02f, 128);
  QParams w = QParams::PerChannel(QType::kS8, {}, 0);
  QParams out = QParams::U8(0.05f, 0);
  bool bias = true;
  bool int_weight = false;
  std::string op = "Conv";
};

inline std::vector<float> Scales(int64_t n, float base = 0.01f) {
  std::vector<float> s;
  for (int64_t i = 0; i < n; ++i) s.push_back(base * static_cast<float>(i + 1));
  return s;
}

inline ModelBuilder ConvModel(ConvOpts o = {}) {
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {1, o.cin, 8, 8});
  auto x = b.QDQ("x", "x", o.in);
  if (o.w.scale.empty()) o.w = QParams::PerChannel(o.w.type, Scales(o.cout), *o.w.axis);
  std::vector<int64_t> wd = o.op == "ConvTranspose" ? std::vector<int64_t>{o.cin, o.cout, 3, 3}
                                                     : std::vector<int64_t>{o.cout, o.cin, 3, 3};
  auto w = o.int_weight ? b.WeightIntDQ("w", wd, o.w) : b.WeightQDQ("w", wd, o.w);
  std::vector<std::string> ins{x, w};
  if (o.bias) ins.push_back(b.BiasInt32DQ("b", o.cout, modelgen::BiasScales(o.in.scale[0], o.w.scale)));
  b.Node(o.op, ins, {"conv_out"}, {ModelBuilder::AttrInts("pads", {1, 1, 1, 1})}, "conv");
  auto y = b.QDQ("conv_out", "y", o.out);
  b.Output(y);
  return b;
}

}  // namespace axqc::test
