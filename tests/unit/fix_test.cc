// `axqc fix` rewrites, one model per rewrite (tests/support/fix_models.h): what each rewrite
// changes in the graph, what it leaves alone and why, and the findings before and after. That
// the fixed models compute exactly what the originals compute is shown by tests/ort (ctest
// fix_ort), which runs the same models in onnxruntime.
#include "axqc/fix.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "axqc/checker.h"
#include "fix_models.h"

namespace axqc::test {
namespace {

namespace fs = std::filesystem;
namespace fm = fixmodels;
using fm::ModelBuilder;
using fm::QParams;
using fm::QType;
using TP = onnx::TensorProto;

std::string FirstInvalidMessage(const Report& r) {
  for (const auto& f : r.findings) {
    if (f.rule == "onnx/invalid-model") return f.message;
  }
  return "";
}

// The refusal message of fixing `m` with --ir-version `target` ("" when not refused).
std::string IrRefusal(const onnx::ModelProto& m, std::int64_t target) {
  std::string bytes;
  m.SerializeToString(&bytes);
  FixOptions o;
  o.ir_version = target;
  try {
    FixBytes(bytes, "m.onnx", o, nullptr);
  } catch (const FixRefused& e) {
    return e.what();
  }
  return "";
}

struct Fixed {
  FixResult r;
  onnx::ModelProto m;
};

Fixed Fix(const onnx::ModelProto& in, FixOptions o = {}) {
  std::string bytes, out;
  in.SerializeToString(&bytes);
  o.max_locations = 100;
  Fixed f;
  f.r = FixBytes(bytes, "test.onnx", o, &out);
  EXPECT_TRUE(f.m.ParseFromString(out));
  return f;
}

FixOptions Only(std::initializer_list<const char*> ids, bool cv = false) {
  FixOptions o;
  for (const char* id : ids) o.only.emplace_back(id);
  o.check_value = cv;
  return o;
}

const RewriteOutcome& Outcome(const FixResult& r, const std::string& id) {
  for (const auto& o : r.rewrites) {
    if (o.id == id) return o;
  }
  static const RewriteOutcome none;
  ADD_FAILURE() << "rewrite " << id << " did not run";
  return none;
}

std::size_t Rule(const Report& r, const std::string& rule) {
  auto it = r.summary.by_rule.find(rule);
  return it == r.summary.by_rule.end() ? 0 : it->second;
}

int CountOp(const onnx::GraphProto& g, const std::string& op) {
  int n = 0;
  for (const auto& node : g.node()) n += node.op_type() == op ? 1 : 0;
  return n;
}

const onnx::NodeProto* NodeNamed(const onnx::GraphProto& g, const std::string& name) {
  for (const auto& n : g.node()) {
    if (n.name() == name) return &n;
  }
  return nullptr;
}

const TP* Init(const onnx::GraphProto& g, const std::string& name) {
  for (const auto& t : g.initializer()) {
    if (t.name() == name) return &t;
  }
  return nullptr;
}

std::vector<std::int64_t> Dims(const TP& t) { return {t.dims().begin(), t.dims().end()}; }

std::vector<std::int64_t> Ints(const TP& t) {
  if (t.data_type() == TP::INT64 && t.int64_data_size() > 0) {
    return {t.int64_data().begin(), t.int64_data().end()};
  }
  std::vector<std::int64_t> v;
  if (t.data_type() == TP::INT64) {
    for (std::size_t i = 0; i < t.raw_data().size() / 8; ++i) {
      std::int64_t x;
      std::memcpy(&x, t.raw_data().data() + i * 8, 8);
      v.push_back(x);
    }
  }
  return v;
}

std::vector<float> Floats(const TP& t) {
  if (t.float_data_size() > 0) return {t.float_data().begin(), t.float_data().end()};
  std::vector<float> v(t.raw_data().size() / 4);
  std::memcpy(v.data(), t.raw_data().data(), v.size() * 4);
  return v;
}

std::vector<std::string> Places(const RewriteOutcome& o) { return o.first; }

std::string SkipReason(const RewriteOutcome& o, const std::string& place) {
  for (const auto& [at, why] : o.first_skips) {
    if (at == place) return why;
  }
  return "(not skipped)";
}

// ------------------------------------------------------------------- the table

TEST(FixTable, IdsAreUniqueDocumentedAndInRunOrder) {
  std::set<std::string> ids;
  const fs::path docs = fs::path(AXQC_SOURCE_DIR) / "docs" / "fixes";
  std::ifstream index_file(docs / "README.md");
  std::stringstream index;
  index << index_file.rdbuf();
  ASSERT_FALSE(index.str().empty()) << "docs/fixes/README.md";
  for (const auto& r : Rewrites()) {
    SCOPED_TRACE(std::string(r.id));
    EXPECT_TRUE(ids.insert(std::string(r.id)).second);
    EXPECT_EQ(FindRewrite(r.id), &r);
    std::ifstream page(docs / (std::string(r.id) + ".md"));
    std::stringstream text;
    text << page.rdbuf();
    EXPECT_NE(text.str().find("# `" + std::string(r.id) + "`"), std::string::npos)
        << "docs/fixes/" << r.id << ".md must start with its ID as title";
    EXPECT_NE(index.str().find("[`" + std::string(r.id) + "`](" + std::string(r.id) + ".md)"),
              std::string::npos)
        << "docs/fixes/README.md must link the page";
  }
  EXPECT_EQ(ids.size(), 13u);
  EXPECT_EQ(FindRewrite("no-such-rewrite"), nullptr);
  EXPECT_EQ(Rewrites().front().id, "ir-version");  // a too-new IR is lowered before the rest
  EXPECT_EQ(Rewrites().back().id, "value-info");   // value_info of the final graph
  EXPECT_FALSE(FindRewrite("ir-version")->by_default);
  // The one rewrite that changes a type runs only when requested by --apply.
  for (const auto& r : Rewrites()) EXPECT_EQ(r.opt_in, r.id == "int4-weight-storage") << r.id;
  EXPECT_FALSE(FindRewrite("int4-weight-storage")->by_default);
}

TEST(FixTable, UnknownIdsAndIrVersionWithoutTargetAreRefused) {
  const auto m = fm::NoValueInfo();
  std::string bytes;
  m.SerializeToString(&bytes);
  FixOptions o;
  o.only = {"constant-to-initializer", "frobnicate"};
  try {
    FixBytes(bytes, "m.onnx", o, nullptr);
    FAIL() << "expected FixRefused";
  } catch (const FixRefused& e) {
    EXPECT_NE(std::string(e.what()).find("unknown rewrite 'frobnicate'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("value-info"), std::string::npos) << "lists the IDs";
  }
  o.only = {"ir-version"};
  EXPECT_THROW(FixBytes(bytes, "m.onnx", o, nullptr), FixRefused);
}

TEST(FixTable, OnlyRunsTheNamedRewrites) {
  const auto f = Fix(fm::ConstantForms(), Only({"value-info"}));
  ASSERT_EQ(f.r.rewrites.size(), 1u);
  EXPECT_EQ(f.r.rewrites[0].id, "value-info");
  EXPECT_EQ(CountOp(f.m.graph(), "Constant"), 9);
}

TEST(FixTable, InvalidModelIsRefusedWithTheCheckerMessage) {
  auto m = fm::NoValueInfo();
  m.mutable_graph()->mutable_node(0)->set_input(0, "nowhere");
  std::string bytes;
  m.SerializeToString(&bytes);
  try {
    FixBytes(bytes, "bad.onnx", {}, nullptr);
    FAIL() << "expected FixRefused";
  } catch (const FixRefused& e) {
    EXPECT_NE(std::string(e.what()).find("not valid ONNX (onnx/invalid-model"), std::string::npos)
        << e.what();
    ASSERT_TRUE(e.before().has_value());
    EXPECT_EQ(e.before()->verdict, Verdict::kNonConformant);
  }
}

// ------------------------------------------------------------------- constant-to-initializer

TEST(ConstantToInitializer, EveryConstantFormBecomesTheSameTensor) {
  const auto f = Fix(fm::ConstantForms(), Only({"constant-to-initializer"}));
  const auto& o = Outcome(f.r, "constant-to-initializer");
  EXPECT_EQ(o.applied, 8u);
  EXPECT_EQ(Places(o), (std::vector<std::string>{"c_scale", "c_zp", "c_vec", "c_sparse", "c_shape",
                                                 "c_idx", "c_labels", "c_label"}));
  EXPECT_EQ(o.skipped, 1u);
  EXPECT_NE(SkipReason(o, "c_out").find("graph output"), std::string::npos);
  const auto& g = f.m.graph();
  ASSERT_EQ(CountOp(g, "Constant"), 1);
  EXPECT_NE(NodeNamed(g, "c_out"), nullptr);

  const TP* scale = Init(g, "c_scale");  // value_float: FLOAT scalar
  ASSERT_NE(scale, nullptr);
  EXPECT_EQ(scale->data_type(), TP::FLOAT);
  EXPECT_TRUE(Dims(*scale).empty());
  EXPECT_EQ(Floats(*scale), std::vector<float>{0.02f});
  const TP* zp = Init(g, "c_zp");  // value: the tensor itself
  ASSERT_NE(zp, nullptr);
  EXPECT_EQ(zp->data_type(), TP::UINT8);
  EXPECT_TRUE(Dims(*zp).empty());
  const TP* vec = Init(g, "c_vec");  // value_floats: FLOAT [n]
  ASSERT_NE(vec, nullptr);
  EXPECT_EQ(Dims(*vec), std::vector<std::int64_t>{4});
  EXPECT_EQ(Floats(*vec), (std::vector<float>{1, 2, 3, 4}));
  const TP* sparse = Init(g, "c_sparse");  // sparse_value: dense, zeros elsewhere
  ASSERT_NE(sparse, nullptr);
  EXPECT_EQ(sparse->data_type(), TP::FLOAT);
  EXPECT_EQ(Dims(*sparse), std::vector<std::int64_t>{4});
  EXPECT_EQ(Floats(*sparse), (std::vector<float>{0, 0.5f, 0, 2.0f}));
  const TP* shape = Init(g, "c_shape");  // value_ints: INT64 [n]
  ASSERT_NE(shape, nullptr);
  EXPECT_EQ(shape->data_type(), TP::INT64);
  EXPECT_EQ(Ints(*shape), (std::vector<std::int64_t>{2, 2}));
  const TP* idx = Init(g, "c_idx");  // value_int: INT64 scalar
  ASSERT_NE(idx, nullptr);
  EXPECT_TRUE(Dims(*idx).empty());
  EXPECT_EQ(Ints(*idx), std::vector<std::int64_t>{1});
  const TP* labels = Init(g, "c_labels");  // value_strings: STRING [n]
  ASSERT_NE(labels, nullptr);
  EXPECT_EQ(labels->data_type(), TP::STRING);
  EXPECT_EQ(Dims(*labels), std::vector<std::int64_t>{2});
  ASSERT_EQ(labels->string_data_size(), 2);
  EXPECT_EQ(labels->string_data(1), "cd");
  const TP* label = Init(g, "c_label");  // value_string: STRING scalar
  ASSERT_NE(label, nullptr);
  EXPECT_TRUE(Dims(*label).empty());
  EXPECT_EQ(label->string_data(0), "x");

  // Findings: the Constants and the scale taken from one.
  EXPECT_EQ(Rule(f.r.before, "onnx/constant-node"), 9u);
  EXPECT_EQ(Rule(f.r.before, "qdq/scale-not-initializer"), 2u);
  EXPECT_EQ(Rule(f.r.after, "onnx/constant-node"), 1u);  // c_out, a graph output
  EXPECT_EQ(Rule(f.r.after, "qdq/scale-not-initializer"), 0u);
}

TEST(ConstantToInitializer, BelowIr4TheInitializerIsAlsoAnInput) {
  ModelBuilder b(8, 3);
  b.Input("x", TP::FLOAT, {2});
  b.Node("Constant", {}, {"k"},
         {ModelBuilder::AttrT("value", ModelBuilder::MakeF32("k", {2}, {1.5f, -2.0f}))}, "const");
  b.Node("Add", {"x", "k"}, {"y"}, {}, "add");
  b.Output("y", TP::FLOAT, {2});
  const auto f = Fix(b.Build(), Only({"constant-to-initializer"}));
  EXPECT_EQ(Outcome(f.r, "constant-to-initializer").applied, 1u);
  ASSERT_NE(Init(f.m.graph(), "k"), nullptr);
  bool input = false;
  for (const auto& vi : f.m.graph().input()) input = input || vi.name() == "k";
  EXPECT_TRUE(input) << "IR 3: every initializer must be a graph input";
  EXPECT_EQ(FirstInvalidMessage(f.r.after), "");
}

TEST(ConstantToInitializer, ConstantInASubgraphBecomesItsInitializer) {
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {2});
  b.Input("flag", TP::BOOL, {});
  onnx::GraphProto then_g, else_g;
  then_g.set_name("then");
  auto* c = then_g.add_node();
  c->set_op_type("Constant");
  c->set_name("then_const");
  c->add_output("k");
  *c->add_attribute() = ModelBuilder::AttrFloats("value_floats", {1, 2});
  auto* add = then_g.add_node();
  add->set_op_type("Add");
  add->set_name("then_add");
  add->add_input("x");
  add->add_input("k");
  add->add_output("t");
  *then_g.add_output() = fm::Vi("t", TP::FLOAT, {2});
  else_g.set_name("else");
  auto* neg = else_g.add_node();
  neg->set_op_type("Neg");
  neg->add_input("x");
  neg->add_output("e");
  *else_g.add_output() = fm::Vi("e", TP::FLOAT, {2});
  b.Node("If", {"flag"}, {"y"},
         {ModelBuilder::AttrG("then_branch", then_g), ModelBuilder::AttrG("else_branch", else_g)},
         "if");
  b.Output("y", TP::FLOAT, {2});
  const auto f = Fix(b.Build(), Only({"constant-to-initializer"}));
  EXPECT_EQ(Places(Outcome(f.r, "constant-to-initializer")),
            std::vector<std::string>{"then_const"});
  const auto& then_out = f.m.graph().node(0).attribute(0).g();
  EXPECT_EQ(CountOp(then_out, "Constant"), 0);
  ASSERT_NE(Init(then_out, "k"), nullptr);
  EXPECT_EQ(Floats(*Init(then_out, "k")), (std::vector<float>{1, 2}));
}

TEST(ConstantToInitializer, HugeSparseValueIsLeftAlone) {
  // The Constant's output is a dense tensor; a sparse initializer would have another type.
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {20000000});
  b.Node("Constant", {}, {"k"}, {fm::AttrSparse("sparse_value", {20000000}, {1.0f}, {5})}, "const");
  b.Node("Add", {"x", "k"}, {"y"}, {}, "add");
  b.Output("y", TP::FLOAT, {20000000});
  const auto f = Fix(b.AutoValueInfo(false).Build(), Only({"constant-to-initializer"}));
  const auto& o = Outcome(f.r, "constant-to-initializer");
  EXPECT_EQ(o.applied, 0u);
  EXPECT_EQ(SkipReason(o, "const"), "its dense form would be larger than 64 MiB");
  EXPECT_EQ(CountOp(f.m.graph(), "Constant"), 1);
}

// ------------------------------------------------------------------- identity-of-initializer

TEST(IdentityOfInitializer, ConsumersReadTheInitializerAndOutputsStay) {
  const auto f = Fix(fm::IdentityChains(), Only({"identity-of-initializer"}));
  const auto& o = Outcome(f.r, "identity-of-initializer");
  EXPECT_EQ(Places(o), (std::vector<std::string>{"id_s_a", "id_s_b", "id_zp", "id_bias"}));
  EXPECT_EQ(o.skipped, 1u);
  EXPECT_NE(SkipReason(o, "id_bias_out").find("graph output"), std::string::npos);
  const auto& g = f.m.graph();
  EXPECT_EQ(CountOp(g, "Identity"), 1);
  const auto* q = NodeNamed(g, "x_q");
  const auto* dq = NodeNamed(g, "x_dq");
  ASSERT_TRUE(q && dq);
  EXPECT_EQ(q->input(1), "s");
  EXPECT_EQ(dq->input(1), "s");  // through the chain of two
  EXPECT_EQ(q->input(2), "zp");
  EXPECT_EQ(NodeNamed(g, "add")->input(1), "bias");
  const auto* iff = NodeNamed(g, "if");
  ASSERT_NE(iff, nullptr);
  EXPECT_EQ(iff->attribute(0).g().node(0).input(0), "bias");  // outer-scope reads
  EXPECT_EQ(iff->attribute(1).g().node(0).input(0), "bias");
  EXPECT_EQ(Rule(f.r.before, "qdq/scale-not-initializer"), 2u);
  EXPECT_EQ(Rule(f.r.after, "qdq/scale-not-initializer"), 0u);
}

TEST(IdentityOfInitializer, SiblingSubgraphsKeepTheirOwnNames) {
  // Both branches of an If define a value "t": in one it is Identity(bias), in the other Neg(x).
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {2});
  b.Input("flag", TP::BOOL, {});
  b.InitF32("bias", {2}, {1.0f, 2.0f});
  auto branch = [](const char* name, const char* op, const char* in) {
    onnx::GraphProto g;
    g.set_name(name);
    auto* def = g.add_node();
    def->set_op_type(op);
    def->set_name(std::string(name) + "_def");
    def->add_input(in);
    def->add_output("t");
    auto* use = g.add_node();
    use->set_op_type("Relu");
    use->set_name(std::string(name) + "_use");
    use->add_input("t");
    use->add_output(std::string(name) + "_out");
    *g.add_output() = fm::Vi(std::string(name) + "_out", TP::FLOAT, {2});
    return g;
  };
  b.Node("If", {"flag"}, {"y"},
         {ModelBuilder::AttrG("then_branch", branch("then", "Identity", "bias")),
          ModelBuilder::AttrG("else_branch", branch("else", "Neg", "x"))},
         "if");
  b.Output("y", TP::FLOAT, {2});
  const auto f = Fix(b.Build(), Only({"identity-of-initializer"}));
  EXPECT_EQ(Places(Outcome(f.r, "identity-of-initializer")), std::vector<std::string>{"then_def"});
  const auto& iff = f.m.graph().node(0);
  ASSERT_EQ(iff.attribute(0).g().node_size(), 1);
  EXPECT_EQ(iff.attribute(0).g().node(0).input(0), "bias");
  ASSERT_EQ(iff.attribute(1).g().node_size(), 2);
  EXPECT_EQ(iff.attribute(1).g().node(1).input(0), "t");  // the else branch's own t
}

// ------------------------------------------------------------------- cast-of-initializer

TEST(CastOfInitializer, ExactCastsBecomeInitializersWrappingOnesStay) {
  const auto f = Fix(fm::DynamoCasts(), Only({"cast-of-initializer"}));
  const auto& o = Outcome(f.r, "cast-of-initializer");
  EXPECT_EQ(Places(o), (std::vector<std::string>{"node_Cast_0", "node_Cast_1", "node_Cast_2"}));
  EXPECT_NE(SkipReason(o, "node_Cast_3").find("not exact: a value does not fit UINT8"),
            std::string::npos)
      << SkipReason(o, "node_Cast_3");
  const auto& g = f.m.graph();
  EXPECT_EQ(CountOp(g, "Cast"), 1);
  const TP* zp = Init(g, "zp");
  ASSERT_NE(zp, nullptr);
  EXPECT_EQ(zp->data_type(), TP::UINT8);
  EXPECT_EQ(zp->dims_size(), 0);
  EXPECT_EQ(zp->raw_data(), std::string(1, static_cast<char>(128)));
  const TP* scale = Init(g, "scale");
  ASSERT_NE(scale, nullptr);
  EXPECT_EQ(scale->data_type(), TP::FLOAT);
  EXPECT_EQ(Floats(*scale), std::vector<float>{0.015625f});
  const TP* wzp = Init(g, "wzp");
  ASSERT_NE(wzp, nullptr);
  EXPECT_EQ(wzp->data_type(), TP::INT8);
  EXPECT_EQ(Dims(*wzp), std::vector<std::int64_t>{4});
  // The buffers nothing reads any more are gone; the one the kept Cast reads stays.
  EXPECT_EQ(Init(g, "zp_buf"), nullptr);
  EXPECT_EQ(Init(g, "scale64"), nullptr);
  EXPECT_NE(Init(g, "big"), nullptr);
  EXPECT_EQ(f.r.after.verdict, Verdict::kConformant);
}

// ------------------------------------------------------------------- contrib-qdq-to-onnx

TEST(ContribQdqToOnnx, EveryNodeAtOpset21) {
  const auto f = Fix(fm::ContribQdq(21), Only({"contrib-qdq-to-onnx"}));
  const auto& o = Outcome(f.r, "contrib-qdq-to-onnx");
  EXPECT_EQ(o.applied, 7u);
  EXPECT_EQ(o.skipped, 0u);
  for (const auto& n : f.m.graph().node()) EXPECT_EQ(n.domain(), "") << n.name();
  EXPECT_GT(Rule(f.r.before, "closure/uncovered-node"), 0u);
  EXPECT_EQ(Rule(f.r.after, "closure/uncovered-node"), 0u);
  const auto* w = NodeNamed(f.m.graph(), "w_DequantizeLinear");
  ASSERT_NE(w, nullptr);
  ASSERT_EQ(w->attribute_size(), 1);
  EXPECT_EQ(w->attribute(0).name(), "axis");
}

TEST(ContribQdqToOnnx, BelowOpset21OnlyTheEightBitAndBiasNodes) {
  const auto f = Fix(fm::ContribQdq(17), Only({"contrib-qdq-to-onnx"}));
  const auto& o = Outcome(f.r, "contrib-qdq-to-onnx");
  EXPECT_EQ(Places(o), (std::vector<std::string>{"w_DequantizeLinear", "b_DequantizeLinear"}));
  EXPECT_EQ(o.skipped, 5u);
  EXPECT_NE(SkipReason(o, "x_QuantizeLinear")
                .find("has UINT16 from opset 21; the model imports opset 17"),
            std::string::npos)
      << SkipReason(o, "x_QuantizeLinear");
  EXPECT_NE(SkipReason(o, "c4_DequantizeLinear").find("has INT4 from opset 21"), std::string::npos);
  EXPECT_EQ(NodeNamed(f.m.graph(), "x_QuantizeLinear")->domain(), "com.microsoft");
}

// ------------------------------------------------------------------- int4-weight-storage

TEST(Int4WeightStorage, RunsOnlyWhenAppliedAndOnlyWhereEveryValueFits) {
  const auto by_default = Fix(fm::Int4InInt8());
  for (const auto& o : by_default.r.rewrites) EXPECT_NE(o.id, "int4-weight-storage");
  FixOptions only;
  only.only = {"int4-weight-storage"};
  std::string bytes;
  fm::Int4InInt8().SerializeToString(&bytes);
  try {
    FixBytes(bytes, "m.onnx", only, nullptr);
    FAIL() << "expected FixRefused";
  } catch (const FixRefused& e) {
    EXPECT_NE(std::string(e.what()).find("--apply int4-weight-storage"), std::string::npos);
  }
  FixOptions bad;
  bad.apply = {"value-info"};
  EXPECT_THROW(FixBytes(bytes, "m.onnx", bad, nullptr), FixRefused);

  FixOptions o;
  o.apply = {"int4-weight-storage"};
  const auto f = Fix(fm::Int4InInt8(), o);
  const auto& out = Outcome(f.r, "int4-weight-storage");
  EXPECT_EQ(Places(out), std::vector<std::string>{"w_dq"});
  EXPECT_NE(SkipReason(out, "fc_dq").find("outside [-8, 7]"), std::string::npos);
  const auto& g = f.m.graph();
  const TP* w = Init(g, "w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->data_type(), TP::INT4);
  EXPECT_EQ(Dims(*w), (std::vector<std::int64_t>{8, 4, 3, 3}));
  ASSERT_EQ(w->raw_data().size(), 144u);
  // Values 0..15 - 8 packed low nibble first: -8 = 0x8, -7 = 0x9 -> 0x98.
  EXPECT_EQ(static_cast<unsigned char>(w->raw_data()[0]), 0x98);
  const auto* dq = NodeNamed(g, "w_dq");
  ASSERT_NE(dq, nullptr);
  const TP* zp = Init(g, dq->input(2));
  ASSERT_NE(zp, nullptr);
  EXPECT_EQ(zp->data_type(), TP::INT4);
  EXPECT_EQ(Init(g, "w_zp"), nullptr);  // the INT8 zero point nothing reads any more
  EXPECT_EQ(Init(g, "fc_w")->data_type(), TP::INT8);
  EXPECT_EQ(f.r.before.verdict, Verdict::kConformant);
  EXPECT_EQ(f.r.after.verdict, Verdict::kConformant);
  // The info finding that names the rewrite: on the INT8 weight that fits S4 before, gone after
  // (fc_w has a value outside [-8, 7]: never reported).
  auto fits = [](const Report& r) {
    std::vector<std::string> at;
    for (const auto& x : r.findings) {
      if (x.rule == "role/weight-fits-int4") at.push_back(x.nodes.at(0));
    }
    return at;
  };
  EXPECT_EQ(fits(f.r.before), std::vector<std::string>{"w_dq"});
  EXPECT_EQ(fits(f.r.after), std::vector<std::string>{});
}

TEST(Int4WeightStorage, BelowOpset21NothingChanges) {
  auto m = fm::Int4InInt8();
  m.mutable_opset_import(0)->set_version(19);
  FixOptions o;
  o.apply = {"int4-weight-storage"};
  o.only = {"value-info"};
  const auto f = Fix(m, o);
  const auto& out = Outcome(f.r, "int4-weight-storage");
  EXPECT_EQ(out.applied, 0u);
  EXPECT_NE(out.note.find("needs ai.onnx opset 21"), std::string::npos) << out.note;
}

// ------------------------------------------------------------------- fold-shape

TEST(FoldShape, StaticShapeArithmeticBecomesInitializers) {
  const auto f = Fix(fm::StaticShapes(), Only({"fold-shape"}));
  const auto& o = Outcome(f.r, "fold-shape");
  EXPECT_EQ(o.applied, 22u);
  const auto& g = f.m.graph();
  std::vector<std::string> left;
  for (const auto& n : g.node()) left.push_back(n.name());
  EXPECT_EQ(left, (std::vector<std::string>{"reshape", "reshape2", "reshape3", "div_neg"}));
  ASSERT_NE(Init(g, "shp"), nullptr);
  EXPECT_EQ(Ints(*Init(g, "shp")), (std::vector<std::int64_t>{2, 3, 16}));
  EXPECT_EQ(Ints(*Init(g, "shp2")), (std::vector<std::int64_t>{2, -1}));
  EXPECT_EQ(Ints(*Init(g, "shp3")), (std::vector<std::int64_t>{-1, 4, 4}));
  ASSERT_NE(Init(g, "neg_c"), nullptr);
  EXPECT_EQ(Ints(*Init(g, "neg_c")), std::vector<std::int64_t>{-3});
  // -3 / 2: C++ and onnxruntime truncate to -1, floor division gives -2: not folded.
  EXPECT_NE(SkipReason(o, "div_neg").find("rounds differently by convention"), std::string::npos);
  // The index and axes constants nothing reads any more are gone; `two` is still read.
  std::set<std::string> inits;
  for (const auto& t : g.initializer()) inits.insert(t.name());
  EXPECT_EQ(inits, (std::set<std::string>{"two", "shp", "shp2", "shp3", "neg_c"}));
  EXPECT_EQ(f.r.after.summary.by_rule.count("closure/uncovered-node"), 0u);
}

TEST(FoldShape, DynamicDimsAreNotFolded) {
  const auto f = Fix(fm::DynamicReshapes(), Only({"fold-shape"}));
  const auto& o = Outcome(f.r, "fold-shape");
  EXPECT_EQ(o.applied, 0u);
  EXPECT_NE(SkipReason(o, "shape").find("[batch, 16, 8], not every dim known"), std::string::npos)
      << SkipReason(o, "shape");
  EXPECT_NE(SkipReason(o, "shape_z").find("[other, 4]"), std::string::npos);
  EXPECT_EQ(CountOp(f.m.graph(), "Shape"), 3);
}

// Issue #40: torch's arithmetic for `cls.expand(B, -1, -1)` (ConstantOfShape, Mul, Equal, Where
// over INT64) and for a computed reshape target (Size, Range, ReduceProd, Mod, Tile, Not, ...)
// is left uncovered before the fix and folded by it when the input shape is static.
std::vector<std::string> UncoveredNodes(const Report& r) {
  std::vector<std::string> v;
  for (const auto& f : r.findings) {
    if (f.rule == "closure/uncovered-node" && !f.nodes.empty()) v.push_back(f.nodes[0]);
  }
  std::sort(v.begin(), v.end());
  return v;
}

TEST(FoldShape, TorchExpandAndReshapeArithmeticIsFolded) {
  const auto f = Fix(fm::TorchShapeArithmetic());  // every rewrite, as `axqc fix`
  // Before: the shape arithmetic is the model's only finding (Gather, Concat, Mul, Equal, ...
  // are in operator lists; these are not).
  EXPECT_EQ(UncoveredNodes(f.r.before),
            (std::vector<std::string>{"constant_of_shape", "mod", "range", "reduce_prod", "shape",
                                      "shape_size", "shape_tokens", "size_tokens", "where",
                                      "where_target"}));
  EXPECT_EQ(f.r.before.summary.by_rule.size(), 1u);
  EXPECT_EQ(f.r.before.verdict, Verdict::kNonConformant);
  // After: nothing is left.
  EXPECT_TRUE(f.r.after.findings.empty()) << f.r.after.findings.front().rule;
  EXPECT_EQ(f.r.after.verdict, Verdict::kConformant);
  const auto& o = Outcome(f.r, "fold-shape");
  EXPECT_EQ(o.applied, 25u);
  EXPECT_EQ(o.skipped, 0u);
  const auto& g = f.m.graph();
  std::vector<std::string> ops;
  for (const auto& n : g.node()) {
    if (n.op_type() != "QuantizeLinear" && n.op_type() != "DequantizeLinear") {
      ops.push_back(n.op_type());
    }
  }
  EXPECT_EQ(ops, (std::vector<std::string>{"MatMul", "Expand", "Concat", "Reshape"}));
  const auto* expand = NodeNamed(g, "expand");
  ASSERT_NE(expand, nullptr);
  ASSERT_NE(Init(g, expand->input(1)), nullptr);
  EXPECT_EQ(Ints(*Init(g, expand->input(1))), (std::vector<std::int64_t>{2, 1, 1}));
  const auto* reshape = NodeNamed(g, "reshape");
  ASSERT_NE(reshape, nullptr);
  ASSERT_NE(Init(g, reshape->input(1)), nullptr);
  EXPECT_EQ(Ints(*Init(g, reshape->input(1))), (std::vector<std::int64_t>{2, 40}));
}

TEST(FoldShape, TorchArithmeticOnADynamicBatchFoldsOnlyWhatIsStatic) {
  const auto f = Fix(fm::TorchShapeArithmetic("batch"), Only({"fold-shape"}));
  const auto& o = Outcome(f.r, "fold-shape");
  EXPECT_NE(SkipReason(o, "shape").find("[batch, 4, 8], not every dim known"), std::string::npos)
      << SkipReason(o, "shape");
  EXPECT_NE(SkipReason(o, "size_tokens").find("not every dim known"), std::string::npos)
      << SkipReason(o, "size_tokens");
  const auto& g = f.m.graph();
  // The length of the expand target is static (3): its ones and minus ones fold ...
  for (const char* n : {"shape_size", "constant_of_shape", "mul_neg_ones", "range"}) {
    EXPECT_EQ(NodeNamed(g, n), nullptr) << n;
  }
  EXPECT_EQ(Ints(*Init(g, "ones")), (std::vector<std::int64_t>{1, 1, 1}));
  EXPECT_EQ(Ints(*Init(g, "neg_ones")), (std::vector<std::int64_t>{-1, -1, -1}));
  // ... the values that read the batch do not.
  for (const char* n : {"shape", "gather_b", "concat_size", "equal", "where", "size_tokens",
                        "reduce_prod", "where_target"}) {
    EXPECT_NE(NodeNamed(g, n), nullptr) << n;
  }
}

// ------------------------------------------------------------------- reshape-copy-dims

TEST(ReshapeCopyDims, OwnDimsBecomeZeroOthersAreLeftAlone) {
  const auto f = Fix(fm::DynamicReshapes(), Only({"reshape-copy-dims"}));
  const auto& o = Outcome(f.r, "reshape-copy-dims");
  EXPECT_EQ(Places(o), (std::vector<std::string>{"reshape1", "reshape2", "reshape3"}));
  EXPECT_EQ(o.skipped, 1u);
  EXPECT_NE(
      SkipReason(o, "reshape4").find("entry 0 is dim 0 of 'z' [other, 4], not provably dim 0"),
      std::string::npos)
      << SkipReason(o, "reshape4");
  const auto& g = f.m.graph();
  auto target = [&](const char* reshape) {
    const auto* n = NodeNamed(g, reshape);
    const TP* t = n != nullptr ? Init(g, n->input(1)) : nullptr;
    return t != nullptr ? Ints(*t) : std::vector<std::int64_t>{999};
  };
  EXPECT_EQ(target("reshape1"), (std::vector<std::int64_t>{0, 4, 32}));
  EXPECT_EQ(target("reshape2"), (std::vector<std::int64_t>{0, -1}));  // dim 0 through Transpose
  EXPECT_EQ(target("reshape3"), (std::vector<std::int64_t>{0, 0, -1}));
  EXPECT_EQ(NodeNamed(g, "reshape1")->input(1), "t1");  // the old target's name
  // x's Shape subgraph is gone; z's stays for reshape4.
  EXPECT_EQ(NodeNamed(g, "shape"), nullptr);
  EXPECT_EQ(NodeNamed(g, "gather"), nullptr);
  EXPECT_EQ(NodeNamed(g, "shape_head"), nullptr);
  EXPECT_NE(NodeNamed(g, "shape_z"), nullptr);
  EXPECT_EQ(CountOp(g, "Shape"), 1);
}

TEST(ReshapeCopyDims, AllowzeroOneIsLeftAlone) {
  auto m = fm::DynamicReshapes();
  for (auto& n : *m.mutable_graph()->mutable_node()) {
    if (n.name() == "reshape1") *n.add_attribute() = ModelBuilder::AttrI("allowzero", 1);
  }
  const auto f = Fix(m, Only({"reshape-copy-dims"}));
  const auto& o = Outcome(f.r, "reshape-copy-dims");
  EXPECT_NE(SkipReason(o, "reshape1").find("allowzero = 1"), std::string::npos);
  EXPECT_EQ(Places(o), (std::vector<std::string>{"reshape2", "reshape3"}));
}

// ------------------------------------------------------------------- value-info

TEST(ValueInfo, EveryIntermediateTensorGetsItsInferredType) {
  const auto f = Fix(fm::NoValueInfo(), Only({"value-info"}, /*cv=*/true));
  const auto& o = Outcome(f.r, "value-info");
  const std::size_t missing = Rule(f.r.before, "onnx/value-info-missing");
  EXPECT_GT(missing, 5u);
  EXPECT_EQ(o.applied, missing);
  EXPECT_EQ(o.skipped, 0u);
  EXPECT_EQ(Rule(f.r.after, "onnx/value-info-missing"), 0u);
  EXPECT_EQ(f.r.after.verdict, Verdict::kConformant);
  for (const auto& vi : f.m.graph().value_info()) {
    ASSERT_TRUE(vi.type().tensor_type().has_shape()) << vi.name();
    for (const auto& d : vi.type().tensor_type().shape().dim()) EXPECT_TRUE(d.has_dim_value());
  }
}

// ------------------------------------------------------------------- explicit-zero-point

TEST(ExplicitZeroPoint, TheDefaultIsWrittenWithTheNodesType) {
  const auto f = Fix(fm::OmittedZeroPoints(), Only({"explicit-zero-point"}));
  const auto& o = Outcome(f.r, "explicit-zero-point");
  EXPECT_EQ(Places(o),
            (std::vector<std::string>{"x_q", "x_dq", "x8_q", "x8_dq", "w_dq", "wc_dq", "b_dq"}));
  const auto& g = f.m.graph();
  auto zp = [&](const char* node) -> const TP* {
    const auto* n = NodeNamed(g, node);
    return n != nullptr && n->input_size() == 3 ? Init(g, n->input(2)) : nullptr;
  };
  struct Want {
    const char* node;
    int type;
    std::vector<std::int64_t> dims;
  };
  for (const Want& w :
       {Want{"x_q", TP::UINT8, {}}, Want{"x_dq", TP::UINT8, {}}, Want{"x8_q", TP::INT8, {}},
        Want{"x8_dq", TP::INT8, {}}, Want{"w_dq", TP::INT8, {}}, Want{"wc_dq", TP::INT8, {4}},
        Want{"b_dq", TP::INT32, {}}}) {
    SCOPED_TRACE(w.node);
    const TP* t = zp(w.node);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->data_type(), w.type);
    EXPECT_EQ(Dims(*t), w.dims);
    EXPECT_EQ(t->raw_data(), std::string(t->raw_data().size(), '\0'));  // zeros
  }
  EXPECT_EQ(NodeNamed(g, "x_q")->input(2), NodeNamed(g, "x_dq")->input(2)) << "one per scale";
  EXPECT_EQ(Rule(f.r.before, "qdq/zero-point-missing"), 7u);
  EXPECT_EQ(Rule(f.r.after, "qdq/zero-point-missing"), 0u);
}

// ------------------------------------------------------------------- positive-axis

TEST(PositiveAxis, NegativeWeightAxisIsWrittenFromTheFront) {
  const auto f = Fix(fm::NegativeAxis(), Only({"positive-axis"}));
  EXPECT_EQ(Places(Outcome(f.r, "positive-axis")), std::vector<std::string>{"w_dq"});
  const auto* dq = NodeNamed(f.m.graph(), "w_dq");
  ASSERT_NE(dq, nullptr);
  ASSERT_EQ(dq->attribute_size(), 1);
  EXPECT_EQ(dq->attribute(0).i(), 0);
  EXPECT_EQ(Rule(f.r.before, "qdq/weight-axis"), 1u);
  EXPECT_EQ(f.r.after.verdict, Verdict::kConformant);
}

// ------------------------------------------------------------------- requantize-identity

TEST(RequantizeIdentity, IdentityOnTheDirectEdgeOnly) {
  const auto f = Fix(fm::DirectRequantize(), Only({"requantize-identity"}));
  EXPECT_EQ(Places(Outcome(f.r, "requantize-identity")), std::vector<std::string>{"b_q"});
  const auto& g = f.m.graph();
  ASSERT_EQ(CountOp(g, "Identity"), 1);
  const auto* a_dq = NodeNamed(g, "a_dq");
  const auto* b_q = NodeNamed(g, "b_q");
  const auto* relu = NodeNamed(g, "relu");
  ASSERT_TRUE(a_dq && b_q && relu);
  const onnx::NodeProto* id = nullptr;
  int id_index = -1, a_index = -1, b_index = -1;
  for (int i = 0; i < g.node_size(); ++i) {
    if (g.node(i).op_type() == "Identity") id = &g.node(id_index = i);
    if (g.node(i).name() == "a_dq") a_index = i;
    if (g.node(i).name() == "b_q") b_index = i;
  }
  ASSERT_NE(id, nullptr);
  EXPECT_EQ(id->input(0), a_dq->output(0));
  EXPECT_EQ(b_q->input(0), id->output(0));
  EXPECT_EQ(relu->input(0), a_dq->output(0));  // the other consumer still reads DQ1
  EXPECT_LT(a_index, id_index);
  EXPECT_LT(id_index, b_index);
  EXPECT_EQ(Rule(f.r.before, "qdq/requantize-identity"), 1u);
  EXPECT_EQ(Rule(f.r.after, "qdq/requantize-identity"), 0u);
}

// ------------------------------------------------------------------- inline-functions

TEST(InlineFunctions, CallsBecomeTheirBodies) {
  const auto f = Fix(fm::LocalFunctions(), Only({"inline-functions"}));
  EXPECT_EQ(Places(Outcome(f.r, "inline-functions")), (std::vector<std::string>{"call1", "call2"}));
  EXPECT_EQ(f.m.functions_size(), 0);
  const auto& g = f.m.graph();
  EXPECT_EQ(CountOp(g, "QRelu"), 0);
  EXPECT_EQ(CountOp(g, "QuantizeLinear"), 2);
  EXPECT_EQ(CountOp(g, "DequantizeLinear"), 2);
  EXPECT_EQ(CountOp(g, "Relu"), 2);
  // The Q/DQ nodes inside the function are seen by the check only once inlined.
  EXPECT_EQ(f.r.before.model.q_count, 0u);
  EXPECT_EQ(f.r.after.model.q_count, 2u);
  EXPECT_EQ(f.r.after.model.dq_count, 2u);
  for (const auto& finding : f.r.after.findings) {
    for (const auto& n : finding.nodes) EXPECT_TRUE(n != "call1" && n != "call2") << n;
  }
}

TEST(InlineFunctions, OtherOpsetVersionIsNotInlined) {
  const auto f = Fix(fm::LocalFunctions(/*mismatch=*/true), Only({"inline-functions"}));
  const auto& o = Outcome(f.r, "inline-functions");
  EXPECT_EQ(o.applied, 2u);
  ASSERT_EQ(f.m.functions_size(), 1);
  EXPECT_EQ(f.m.functions(0).name(), "Old");
  EXPECT_EQ(SkipReason(o, "function local.fn.Old"),
            "not inlined: its opset imports differ from the model's (ai.onnx 17 vs 21)");
  EXPECT_NE(NodeNamed(f.m.graph(), "call_old"), nullptr);
}

// ONNX's shape inference and its inliner follow function calls recursively: a recursive call
// chain would never end and calls of calls multiply. The check reports such a model as invalid
// (no crash, no hang) and fix refuses it.
std::string InvalidMessage(const onnx::ModelProto& m) {
  std::string bytes;
  m.SerializeToString(&bytes);
  CheckOptions o;
  return FirstInvalidMessage(CheckBytes(bytes, "hostile.onnx", o));
}

TEST(HostileFunctions, RecursiveCallChainIsInvalidNotACrash) {
  auto m = fm::LocalFunctions();
  auto* relu = m.mutable_functions(0)->mutable_node(2);  // QRelu's Relu calls QRelu instead
  relu->set_op_type("QRelu");
  relu->set_domain("local.fn");
  relu->add_input("S");
  relu->add_input("Z");
  auto* imp = m.mutable_functions(0)->add_opset_import();
  imp->set_domain("local.fn");
  imp->set_version(1);
  // ONNX 1.21+ checkers detect the cycle themselves ("Cycle detected in model-local function
  // references: local.fn::QRelu -> local.fn::QRelu"); with older libraries axqc's own call-graph
  // guard names it before shape inference could recurse. Either way the model is invalid and the
  // message names the function.
  const std::string msg = InvalidMessage(m);
  EXPECT_TRUE(msg.find("model-local function 'QRelu' is part of a recursive call chain") !=
                  std::string::npos ||
              msg.find("Cycle detected in model-local function references: local.fn::QRelu") !=
                  std::string::npos)
      << msg;
  std::string bytes;
  m.SerializeToString(&bytes);
  EXPECT_THROW(FixBytes(bytes, "hostile.onnx", {}, nullptr), FixRefused);
}

TEST(HostileFunctions, CallsThatExpandTooFarAreInvalid) {
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {1, 4});
  b.Node("F0", {"x"}, {"y"}, {}, "call", "local.fn");
  b.Output("y", TP::FLOAT, {1, 4});
  auto m = b.Build();
  for (int k = 0; k < 24; ++k) {  // F_k calls F_k+1 twice: 2^24 nodes once expanded
    auto* f = m.add_functions();
    f->set_name("F" + std::to_string(k));
    f->set_domain("local.fn");
    f->add_input("X");
    f->add_output("Y");
    auto* imp = f->add_opset_import();
    imp->set_domain("");
    imp->set_version(21);
    auto* l = f->add_opset_import();
    l->set_domain("local.fn");
    l->set_version(1);
    auto call = [&](const char* in, const char* out) {
      auto* n = f->add_node();
      n->set_op_type(k == 23 ? "Relu" : "F" + std::to_string(k + 1));
      if (k != 23) n->set_domain("local.fn");
      n->add_input(in);
      n->add_output(out);
    };
    call("X", "t");
    call("t", "Y");
  }
  EXPECT_NE(InvalidMessage(m).find("expand to more than 5000000 nodes"), std::string::npos)
      << InvalidMessage(m);
}

// ------------------------------------------------------------------- ir-version

TEST(IrVersion, LoweredWhenNothingNeedsMore) {
  FixOptions o = Only({"ir-version"});
  o.ir_version = 8;
  const auto f = Fix(fm::HighIr(), o);
  EXPECT_EQ(f.m.ir_version(), 8);
  EXPECT_EQ(Outcome(f.r, "ir-version").note.rfind("IR 10 -> 8 (the model needs IR 8", 0), 0u)
      << Outcome(f.r, "ir-version").note;
  EXPECT_EQ(f.r.after.verdict, Verdict::kConformant);
  EXPECT_EQ(f.r.after.model.ir_version, 8);
}

TEST(IrVersion, RefusedBelowWhatTheModelUses) {
  EXPECT_EQ(IrRefusal(fm::HighIr(), 7),
            "--ir-version 7: the model uses more than IR 7 allows (opset ai.onnx 17 needs IR 8); "
            "the lowest IR it allows is 8");
  EXPECT_EQ(IrRefusal(fm::HighIr(), 11),
            "--ir-version 11: the model already declares IR 10; the rewrite only lowers the IR "
            "version");
  // S4 weights: INT4 needs IR 10 whatever the opset says.
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {1, 4, 8, 8});
  const auto x = b.QDQ("x", "x", QParams::U8());
  const auto w = b.WeightIntDQ(
      "w", {8, 4, 3, 3},
      QParams::PerChannel(QType::kS4, {.01f, .02f, .03f, .04f, .05f, .06f, .07f, .08f}, 0));
  b.Node("Conv", {x, w}, {"c"}, {}, "conv");
  b.Output(b.QDQ("c", "y", QParams::U8(0.05f, 0)));
  const std::string why = IrRefusal(b.Build(), 9);
  EXPECT_NE(why.find("element type INT4 needs IR 10"), std::string::npos) << why;
  EXPECT_NE(why.find("opset ai.onnx 21 needs IR 10"), std::string::npos) << why;
}

TEST(IrVersion, TooNewForTheLibraryIsLoweredOnlyWhenAsked) {
  auto m = fm::ConvBlock(17, 8).Build();
  m.set_ir_version(static_cast<std::int64_t>(onnx::IR_VERSION) + 1);
  std::string bytes;
  m.SerializeToString(&bytes);
  try {
    FixBytes(bytes, "new.onnx", {}, nullptr);
    FAIL() << "expected FixRefused";
  } catch (const FixRefused& e) {
    EXPECT_NE(std::string(e.what()).find("nothing in it needs more than IR 8: add --ir-version " +
                                         std::to_string(onnx::IR_VERSION)),
              std::string::npos)
        << e.what();
  }
  FixOptions o;
  o.ir_version = onnx::IR_VERSION;
  const auto f = Fix(m, o);
  EXPECT_EQ(f.m.ir_version(), onnx::IR_VERSION);
  EXPECT_NE(Rule(f.r.before, "onnx/invalid-model"), 0u);
  EXPECT_EQ(f.r.after.verdict, Verdict::kConformant);
}

// ------------------------------------------------------------------- files and the command line

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("axqc_fix_test_" + std::to_string(::getpid()) + "_" +
                                        std::to_string(reinterpret_cast<std::uintptr_t>(this)));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::string ReadFile(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

TEST(FixFile, ExternalDataIsWrittenNextToTheOutput) {
  TempDir tmp;
  fs::create_directories(tmp.path / "in");
  fs::create_directories(tmp.path / "out");
  fm::ExternalWeights().SaveWithExternalData((tmp.path / "in" / "m.onnx").string(), "weights.bin");
  FixOptions o;
  o.check_value = true;
  const FixResult r =
      FixFile((tmp.path / "in" / "m.onnx").string(), (tmp.path / "out" / "fixed.onnx").string(), o);
  EXPECT_TRUE(r.written);
  EXPECT_EQ(r.data_file, (tmp.path / "out" / "fixed.onnx.data").string());
  EXPECT_EQ(ReadFile(tmp.path / "out" / "fixed.onnx.data"),
            ReadFile(tmp.path / "in" / "weights.bin"));
  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(ReadFile(tmp.path / "out" / "fixed.onnx")));
  int external = 0;
  for (const auto& t : m.graph().initializer()) {
    if (t.data_location() != TP::EXTERNAL) continue;
    ++external;
    EXPECT_EQ(t.external_data(0).key(), "location");
    EXPECT_EQ(t.external_data(0).value(), "fixed.onnx.data");
  }
  EXPECT_EQ(external, 1);
  EXPECT_GT(Rule(r.before, "onnx/value-info-missing"), 0u);
  EXPECT_EQ(r.after.verdict, Verdict::kConformant);
  EXPECT_EQ(r.after.model.file, (tmp.path / "out" / "fixed.onnx").string());
  // Nothing but the two files is left in the output directory.
  std::set<std::string> files;
  for (const auto& e : fs::directory_iterator(tmp.path / "out")) {
    files.insert(e.path().filename().string());
  }
  EXPECT_EQ(files, (std::set<std::string>{"fixed.onnx", "fixed.onnx.data"}));

  // A dry run reads the external data where the input keeps it and writes nothing.
  const FixResult dry = FixFile((tmp.path / "in" / "m.onnx").string(), "", o);
  EXPECT_EQ(dry.after.verdict, Verdict::kConformant);
  EXPECT_FALSE(dry.written);
  EXPECT_EQ(std::distance(fs::directory_iterator(tmp.path / "in"), fs::directory_iterator()), 2);
  // An output directory that does not exist is an error, not a partial write.
  EXPECT_THROW(FixFile((tmp.path / "in" / "m.onnx").string(),
                       (tmp.path / "nowhere" / "fixed.onnx").string(), o),
               std::runtime_error);
  EXPECT_FALSE(fs::exists(tmp.path / "nowhere"));

  // In place: the model and its data are replaced only after everything was read.
  const FixResult again = FixFile((tmp.path / "out" / "fixed.onnx").string(),
                                  (tmp.path / "out" / "fixed.onnx").string(), o);
  EXPECT_EQ(again.after.verdict, Verdict::kConformant);
  EXPECT_EQ(again.applied(), 0u);
  EXPECT_EQ(ReadFile(tmp.path / "out" / "fixed.onnx.data"),
            ReadFile(tmp.path / "in" / "weights.bin"));
}

TEST(FixFile, DryRunWritesNothing) {
  TempDir tmp;
  fm::ModelBuilder::SaveModel(fm::ConstantForms(), (tmp.path / "m.onnx").string());
  const FixResult r = FixFile((tmp.path / "m.onnx").string(), "", {});
  EXPECT_TRUE(r.dry_run);
  EXPECT_FALSE(r.written);
  EXPECT_EQ(Outcome(r, "constant-to-initializer").applied, 8u);
  EXPECT_EQ(Rule(r.after, "onnx/constant-node"), 1u);
  EXPECT_EQ(std::distance(fs::directory_iterator(tmp.path), fs::directory_iterator()), 1);
}

// Runs `cmd` with stdout (and stderr, unless `cmd` redirects it) into `out`; returns the status.
int Exec(const std::string& cmd, std::string* out = nullptr) {
  const bool own_stderr = cmd.find("2>") != std::string::npos;
  std::unique_ptr<FILE, int (*)(FILE*)> p(::popen((own_stderr ? cmd : cmd + " 2>&1").c_str(), "r"),
                                          ::pclose);
  std::string s;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p.get())) > 0) s.append(buf, n);
  const int st = ::pclose(p.release());
  if (out != nullptr) *out = s;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

std::string Example(const char* name) { return std::string(AXQC_EXAMPLES_PATH) + "/" + name; }

TEST(FixCli, ExitCodeIsTheFixedModelsVerdict) {
  TempDir tmp;
  const std::string bin = AXQC_BIN_PATH;
  const std::string out = (tmp.path / "o.onnx").string();
  EXPECT_EQ(Exec(bin + " fix " + Example("conformant_cnn.onnx") + " -o " + out), 0);
  EXPECT_EQ(Exec(bin + " fix " + Example("broken_weight_per_tensor.onnx") + " -o " + out), 1);
  EXPECT_EQ(Exec(bin + " fix " + Example("float_only.onnx") + " -o " + out), 3);
  std::string text;
  EXPECT_EQ(Exec(bin + " fix " + Example("conformant_cnn.onnx"), &text), 2);
  EXPECT_NE(text.find("fix needs -o OUT (or --dry-run)"), std::string::npos) << text;
  EXPECT_EQ(Exec(bin + " fix --only bogus " + Example("conformant_cnn.onnx") + " -o " + out, &text),
            2);
  EXPECT_NE(text.find("axqc: fix refused: unknown rewrite 'bogus'"), std::string::npos) << text;
  EXPECT_EQ(Exec(bin + " fix /nonexistent.onnx -o " + out), 2);
  EXPECT_EQ(Exec(bin + " fix --list", &text), 0);
  for (const auto& r : Rewrites()) EXPECT_NE(text.find(std::string(r.id)), std::string::npos);
}

TEST(FixCli, TextAndJsonReportWhatChanged) {
  TempDir tmp;
  const std::string bin = AXQC_BIN_PATH;
  const std::string in = (tmp.path / "c.onnx").string();
  fm::ModelBuilder::SaveModel(fm::ConstantForms(), in);
  std::string text;
  EXPECT_EQ(Exec(bin + " fix --dry-run " + in, &text), 1);
  EXPECT_NE(text.find("axqc fix (dry run, nothing written): " + in), std::string::npos) << text;
  EXPECT_NE(text.find("  constant-to-initializer     8  c_scale, c_zp, c_vec, c_sparse, c_shape "
                      "(+3 more)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("      skipped c_out: its output 'k' is a graph output"), std::string::npos)
      << text;
  EXPECT_NE(text.find("  onnx/constant-node                  9 -> 1"), std::string::npos) << text;
  EXPECT_FALSE(fs::exists(tmp.path / "c.fixed.onnx"));

  const std::string out = (tmp.path / "c.fixed.onnx").string();
  std::string js;
  ASSERT_EQ(Exec(bin + " fix --format json -c --only constant-to-initializer,value-info " + in +
                     " -o " + out + " 2>/dev/null",
                 &js),
            1);
  const auto j = nlohmann::json::parse(js);
  EXPECT_EQ(j["schema"], "axqc.fix/v1");
  EXPECT_EQ(j["written"], true);
  EXPECT_EQ(j["output"], out);
  ASSERT_EQ(j["rewrites"].size(), 2u);
  EXPECT_EQ(j["rewrites"][0]["id"], "constant-to-initializer");
  EXPECT_EQ(j["rewrites"][0]["applied"], 8);
  EXPECT_EQ(j["rewrites"][0]["first_skips"][0]["at"], "c_out");
  EXPECT_EQ(j["before"]["by_rule"]["onnx/constant-node"], 9);
  EXPECT_EQ(j["after"]["by_rule"]["onnx/constant-node"], 1);
  EXPECT_FALSE(j["after"]["by_rule"].contains("onnx/value-info-missing"));
  EXPECT_EQ(j["after"]["verdict"], "non_conformant");
  EXPECT_TRUE(fs::exists(out));

  // A refusal in JSON still says what the input was.
  ASSERT_EQ(
      Exec(bin + " fix --format json --ir-version 3 " + in + " -o " + out + " 2>/dev/null", &js),
      2);
  const auto refused = nlohmann::json::parse(js);
  EXPECT_NE(refused["refused"].get<std::string>().find("opset ai.onnx 21 needs IR 10"),
            std::string::npos);
  EXPECT_EQ(refused["before"]["verdict"], "non_conformant");
}

}  // namespace
}  // namespace axqc::test
