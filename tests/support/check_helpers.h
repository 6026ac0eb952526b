// Test helpers: run the checker on a builder's model and query findings by rule and node.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "axqc/checker.h"
#include "modelgen/model_builder.h"

namespace axqc::test {

using modelgen::ModelBuilder;
using modelgen::QParams;
using modelgen::QType;
using TP = onnx::TensorProto;

inline Report RunCheck(const ModelBuilder& b, bool check_value = false) {
  CheckOptions o;
  o.check_value = check_value;
  o.max_locations = 100;
  return CheckBytes(b.Serialize(), "test.onnx", o);
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
