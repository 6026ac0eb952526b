// Hostile inputs: each one gives a clear input error or finding, terminates, and
// neither crashes nor overflows the stack. Graph-shape attacks (cycles, duplicate and empty names,
// dangling inputs, huge fan-in/fan-out, a million nodes, deep subgraph nesting), tensor-storage
// attacks (overflowing and negative dims, raw_data sizes that disagree with dims and type),
// protobuf recursion bombs, and file-system attacks (external data outside the model directory,
// 0-byte files, directories, FIFOs). Some external-data and input-error cases live in
// tests/onnx_base_test.cc; these extend them.
#include <fcntl.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <vector>

#include "axqc/render.h"
#include "axqc/threads.h"
#include "check_helpers.h"

namespace axqc::test {
namespace {

namespace fs = std::filesystem;

// ------------------------------------------------------------------ helpers

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() /
            ("axqc-hostile-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  static inline int counter_ = 0;
  fs::path path_;
};

void WriteFile(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary);
  out << bytes;
}

// The InputError message of checking `bytes` in memory ("" if the check did not throw one).
std::string BytesError(const std::string& bytes, bool check_value = false) {
  try {
    CheckBytes(bytes, "hostile.onnx", {.check_value = check_value});
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::string FileError(const fs::path& p) {
  try {
    CheckFile(p.string(), {});
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// FileError(p) on another thread. If it has not returned after a minute (it blocked opening
// `fifo` for reading), the FIFO's writer end is opened to release it, and the result says so.
std::string FileErrorUnblocked(const fs::path& p, const fs::path& fifo) {
  auto fut = std::async(std::launch::async, [&] { return FileError(p); });
  if (fut.wait_for(std::chrono::seconds(60)) == std::future_status::ready) return fut.get();
  int w = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
  if (w >= 0) ::close(w);
  fut.wait();
  return "BLOCKED on a FIFO";
}

#define EXPECT_CONTAINS(haystack, needle)                                                       \
  do {                                                                                          \
    const std::string h_ = (haystack);                                                          \
    EXPECT_NE(h_.find(needle), std::string::npos) << "'" << h_ << "' lacks '" << needle << "'"; \
  } while (0)

// Some finding of `rule` whose message contains `needle`.
bool HasMessage(const Report& r, const std::string& rule, const std::string& needle) {
  for (const auto* f : Find(r, rule)) {
    if (f->message.find(needle) != std::string::npos) return true;
  }
  return false;
}

Report CheckModel(const onnx::ModelProto& m, bool check_value = false) {
  std::string bytes;
  EXPECT_TRUE(m.SerializeToString(&bytes));
  return CheckBytes(bytes, "hostile.onnx", {.check_value = check_value, .max_locations = 100});
}

// A conformant quantized block (x2 -> Q/DQ -> Sigmoid -> Q/DQ -> output) that keeps a model in
// scope (2.1), so that findings about the rest of the graph are reported.
void SideBlock(ModelBuilder& b) {
  b.Input("x2", TP::FLOAT, {1, 4});
  auto x = b.QDQ("x2", "x2", QParams::U8());
  b.Node("Sigmoid", {x}, {"side_s"}, {}, "side_sig");
  b.Output(b.QDQ("side_s", "side_y", QParams::U8(0.004f, 0)), TP::FLOAT, {1, 4});
}

// Adds the side block to a hand-built graph (copied from a builder model).
void AddSideBlock(onnx::GraphProto& g) {
  ModelBuilder b;
  SideBlock(b);
  auto side = b.Build().graph();
  for (const auto& i : side.input()) *g.add_input() = i;
  for (const auto& i : side.initializer()) *g.add_initializer() = i;
  for (const auto& n : side.node()) *g.add_node() = n;
  for (const auto& o : side.output()) *g.add_output() = o;
  for (const auto& v : side.value_info()) *g.add_value_info() = v;
}

onnx::ModelProto EmptyModel() {
  onnx::ModelProto m;
  m.set_ir_version(10);
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(21);
  m.mutable_graph()->set_name("g");
  return m;
}

void SetType(onnx::ValueInfoProto* vi, const std::string& name, int elem_type,
             const std::vector<int64_t>& dims) {
  vi->set_name(name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem_type);
  auto* shape = tt->mutable_shape();
  for (auto d : dims) shape->add_dim()->set_dim_value(d);
}

onnx::NodeProto* AddNode(onnx::GraphProto& g, const std::string& op,
                         const std::vector<std::string>& in, const std::vector<std::string>& out,
                         const std::string& name = "") {
  auto* n = g.add_node();
  n->set_op_type(op);
  if (!name.empty()) n->set_name(name);
  for (const auto& i : in) n->add_input(i);
  for (const auto& o : out) n->add_output(o);
  return n;
}

// ------------------------------------------------------------------ graph cycles

TEST(HostileGraph, TwoNodeCycleIsInvalidAndTerminates) {
  ModelBuilder b;
  SideBlock(b);
  b.Input("x", TP::FLOAT, {1, 4});
  b.Node("Add", {"x", "b_out"}, {"a_out"}, {}, "a");
  b.Node("Relu", {"a_out"}, {"b_out"}, {}, "b");
  b.Output("a_out", TP::FLOAT, {1, 4});
  for (bool cv : {false, true}) {
    auto r = RunCheck(b.AutoValueInfo(false), cv);
    ASSERT_TRUE(HasMessage(r, "onnx/invalid-model", "topologically sorted")) << Dump(r);
    EXPECT_EQ(r.verdict, Verdict::kNonConformant);
  }
}

TEST(HostileGraph, SelfLoopNodeIsInvalidAndTerminates) {
  ModelBuilder b;
  SideBlock(b);
  b.Input("x", TP::FLOAT, {1, 4});
  b.Node("Add", {"x", "s"}, {"s"}, {}, "self");
  b.Output("s", TP::FLOAT, {1, 4});
  auto r = RunCheck(b.AutoValueInfo(false), true);
  EXPECT_TRUE(Has(r, "onnx/invalid-model")) << Dump(r);
  EXPECT_EQ(r.verdict, Verdict::kNonConformant);
}

// Cycles through the stages that walk the graph: Q/DQ pairing, passive grouping (Transpose,
// Reshape), Relu tails and the SiLU pattern matcher.
TEST(HostileGraph, CyclesThroughQdqPassiveOpsAndPatternsTerminate) {
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {1, 4, 2, 2});
  auto x = b.QDQ("x", "x", QParams::U8());
  b.Node("Add", {x, "back_dq_out"}, {"add"}, {}, "add");
  auto a = b.QDQ("add", "a", QParams::U8());
  b.Node("Transpose", {a}, {"t"}, {ModelBuilder::AttrInts("perm", {0, 1, 3, 2})}, "transpose");
  b.Node("Relu", {"t"}, {"r"}, {}, "relu");
  b.Node("Sigmoid", {"mul"}, {"sig"}, {}, "sig");  // SiLU whose Mul feeds its own Sigmoid
  b.Node("Mul", {"r", "sig"}, {"mul"}, {}, "mul");
  b.Quantize("mul", "back", QParams::U8());
  b.Dequantize("back_q_out", "back", QParams::U8());
  b.Output(b.QDQ("mul", "y", QParams::U8()), TP::FLOAT, {1, 4, 2, 2});
  for (bool cv : {false, true}) {
    auto r = RunCheck(b.AutoValueInfo(false), cv);
    EXPECT_TRUE(HasMessage(r, "onnx/invalid-model", "topologically sorted")) << Dump(r);
    EXPECT_EQ(r.verdict, Verdict::kNonConformant);
  }
}

// ------------------------------------------------------------------ names

TEST(HostileGraph, DuplicateTensorNamesAreInvalid) {
  ModelBuilder b;
  SideBlock(b);
  b.Input("x", TP::FLOAT, {1, 4});
  b.Node("Relu", {"x"}, {"dup"}, {}, "first");
  b.Node("Sigmoid", {"x"}, {"dup"}, {}, "second");
  b.Output("dup", TP::FLOAT, {1, 4});
  auto r = RunCheck(b.AutoValueInfo(false), true);
  EXPECT_TRUE(HasMessage(r, "onnx/invalid-model", "single static assignment")) << Dump(r);
  EXPECT_TRUE(HasMessage(r, "onnx/invalid-model", "'dup'")) << Dump(r);
}

TEST(HostileGraph, DuplicateInitializerNamesAreInvalid) {
  auto m = ConvModel().Build();
  auto copy = m.graph().initializer(0);
  *m.mutable_graph()->add_initializer() = copy;
  auto r = CheckModel(m, true);
  EXPECT_TRUE(HasMessage(r, "onnx/invalid-model", copy.name())) << Dump(r);
  EXPECT_EQ(r.verdict, Verdict::kNonConformant);
}

TEST(HostileGraph, DuplicateNodeNamesStayDistinctInFindings) {
  ModelBuilder b;
  SideBlock(b);
  b.Input("x", TP::FLOAT, {1, 4});
  auto x = b.QDQ("x", "x", QParams::U8());
  b.Node("Sigmoid", {x}, {"s1"}, {}, "same");  // outputs not quantized: one finding each
  b.Node("Tanh", {x}, {"s2"}, {}, "same");
  b.Output("s1");
  b.Output("s2");
  auto r = RunCheck(b);
  auto f = Find(r, "op/output-not-quantized");
  ASSERT_EQ(f.size(), 2u) << Dump(r);
  EXPECT_NE(f[0]->nodes[0], f[1]->nodes[0]) << Dump(r);
  EXPECT_NE(At(r, "op/output-not-quantized", "same"), nullptr) << Dump(r);
}

TEST(HostileGraph, EmptyNamesGetDisplayNamesOrAreInvalid) {
  {  // Unnamed nodes: findings name them "<op_type>#<index>".
    ModelBuilder b;
    b.Input("x", TP::FLOAT, {1, 4});
    auto x = b.QDQ("x", "x", QParams::U8());
    auto m = b.Build();
    AddNode(*m.mutable_graph(), "Sigmoid", {x}, {"s"});
    SetType(m.mutable_graph()->add_output(), "s", TP::FLOAT, {1, 4});
    for (auto& node : *m.mutable_graph()->mutable_node()) node.clear_name();
    auto r = CheckModel(m);
    EXPECT_NE(At(r, "op/output-not-quantized", "Sigmoid#2"), nullptr) << Dump(r);
  }
  {  // An empty tensor name in a required input slot, an empty graph input name.
    ModelBuilder b;
    SideBlock(b);
    b.Input("x", TP::FLOAT, {1, 4});
    b.Node("Add", {"x", ""}, {"y"}, {}, "add");
    b.Output("y", TP::FLOAT, {1, 4});
    auto m = b.AutoValueInfo(false).Build();
    SetType(m.mutable_graph()->add_input(), "", TP::FLOAT, {1});
    auto r = CheckModel(m, true);
    EXPECT_TRUE(Has(r, "onnx/invalid-model")) << Dump(r);
    EXPECT_EQ(r.verdict, Verdict::kNonConformant);
  }
}

// Names are attacker-controlled bytes (proto2 strings are not UTF-8 checked): invalid UTF-8 made
// the JSON dump throw (the CLI terminated; found by fuzzing the renderers), and terminal escape
// sequences would reach the text output.
TEST(HostileGraph, NamesWithInvalidUtf8AndControlCharacters) {
  const std::string evil = std::string("n\xff\xfe\xc0\xaf") + "\x1b[2J\x1b]0;pwned\x07" +
                           "\xc2\x9b"
                           "31m" +
                           "\xed\xa0\x80" + "tab\tnl\n\xe2\x82\xac";
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {1, 4});
  auto x = b.QDQ("x", "x", QParams::U8());
  b.Node("Sigmoid", {x}, {evil + "_out"}, {}, evil);  // output not quantized: a finding
  b.Output(evil + "_out", TP::FLOAT, {1, 4});
  auto m = b.AutoValueInfo(false).Build();
  m.set_producer_name(evil);
  m.mutable_opset_import(0)->set_domain("");
  auto r = CheckModel(m);
  ASSERT_TRUE(Has(r, "op/output-not-quantized")) << Dump(r);
  std::string json;
  ASSERT_NO_THROW(json = RenderJson(r));
  const auto text = RenderText(r, {.explain = true});
  for (const auto& out : {json, text}) {
    EXPECT_EQ(out.find('\x1b'), std::string::npos);
    EXPECT_EQ(out.find('\x07'), std::string::npos);
    EXPECT_EQ(out.find("\xc2\x9b"), std::string::npos);
    EXPECT_EQ(out.find('\xff'), std::string::npos);
  }
  EXPECT_NE(text.find("\xe2\x82\xac"), std::string::npos);                   // valid UTF-8 is kept
  EXPECT_NE(r.model.producer_name.find("\xef\xbf\xbd"), std::string::npos);  // U+FFFD
  EXPECT_EQ(r.model.producer_name.find('\n'), std::string::npos);
}

TEST(HostileGraph, DanglingInputsAreNamed) {
  ModelBuilder b;
  SideBlock(b);
  b.Input("x", TP::FLOAT, {1, 4, 8, 8});
  auto x = b.QDQ("x", "x", QParams::U8());
  // A DQ whose data input and a Conv whose weight exist nowhere.
  b.Node("DequantizeLinear", {"nowhere_q", "x_scale", "x_zp"}, {"w"}, {}, "w_dq");
  b.Node("Conv", {x, "w", "nowhere_bias"}, {"c"}, {}, "conv");
  b.Output(b.QDQ("c", "y", QParams::U8()), TP::FLOAT, {1, 4, 8, 8});
  for (bool cv : {false, true}) {
    auto r = RunCheck(b.AutoValueInfo(false), cv);
    EXPECT_TRUE(HasMessage(r, "onnx/invalid-model", "nowhere_q")) << Dump(r);
    EXPECT_EQ(r.verdict, Verdict::kNonConformant);
  }
}

// ------------------------------------------------------------------ size of the graph

TEST(HostileGraph, NodesWithFiveHundredInputs) {
  constexpr int kInputs = 500;
  ModelBuilder b;
  std::vector<std::string> ins;
  for (int i = 0; i < kInputs; ++i) {
    const std::string x = "x" + std::to_string(i);
    b.Input(x, TP::FLOAT, {1, 2});
    ins.push_back(b.QDQ(x, "in" + std::to_string(i), QParams::U8()));
  }
  b.Node("Concat", ins, {"cat"}, {ModelBuilder::AttrI("axis", 1)}, "concat");
  b.Output(b.QDQ("cat", "cat", QParams::U8()));
  // Max of one DQ output 500 times (the same tensor in every slot).
  b.Node("Max", std::vector<std::string>(kInputs, ins[0]), {"mx"}, {}, "max");
  b.Output(b.QDQ("mx", "mx", QParams::U8()));
  // Sum is not in the spec: 500 quantized inputs next to an uncovered node.
  b.Node("Sum", ins, {"sum"}, {}, "sum");
  b.Output(b.QDQ("sum", "sum", QParams::U8()));
  for (bool cv : {false, true}) {
    auto r = RunCheck(b, cv);
    EXPECT_NO_RULE(r, "onnx/invalid-model");
    EXPECT_EQ(At(r, "op/input-not-quantized", "concat"), nullptr) << Dump(r);
    EXPECT_EQ(At(r, "op/input-not-quantized", "max"), nullptr) << Dump(r);
    EXPECT_FINDING(r, "closure/uncovered-node", "sum", "Sum");
    EXPECT_EQ(Find(r, "closure/uncovered-node").size(), 1u) << Dump(r);
  }
}

// One tensor read by 50,000 nodes: the stages that look at a tensor's consumers per consumer
// must not go quadratic.
TEST(HostileGraph, OneTensorWithFiftyThousandConsumers) {
  constexpr int kConsumers = 50'000;
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {1, 4});
  auto x = b.QDQ("x", "x", QParams::U8());
  auto m = b.AutoValueInfo(false).Build();
  auto& g = *m.mutable_graph();
  for (int i = 0; i < kConsumers; ++i) {
    const std::string s = std::to_string(i);
    AddNode(g, "Sigmoid", {x}, {"s" + s});
    SetType(g.add_output(), "s" + s, TP::FLOAT, {1, 4});
  }
  auto r = CheckModel(m);
  EXPECT_EQ(r.summary.by_rule["op/output-not-quantized"], static_cast<std::size_t>(kConsumers))
      << Dump(r);
  EXPECT_EQ(r.verdict, Verdict::kNonConformant);
}

// One Q read by 20,000 DQs that all feed one Concat: claiming a unit's boundary DQs was a linear
// search per claim (quadratic in the inputs of one node; 64k inputs took 4 s).
TEST(HostileGraph, TwentyThousandDqInputsOfOneNode) {
  constexpr int kInputs = 20'000;
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {1, 2});
  b.QDQ("x", "x", QParams::U8());
  auto m = b.AutoValueInfo(false).Build();
  auto& g = *m.mutable_graph();
  std::vector<std::string> ins;
  for (int i = 0; i < kInputs; ++i) {
    ins.push_back("d" + std::to_string(i));
    AddNode(g, "DequantizeLinear", {"x_q_out", "x_scale", "x_zp"}, {ins.back()});
  }
  auto* cat = AddNode(g, "Concat", ins, {"cat"}, "concat");
  auto* axis = cat->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(1);
  SetType(g.add_output(), "cat", TP::FLOAT, {1, 2 * kInputs});
  auto r = CheckModel(m, true);
  EXPECT_TRUE(Has(r, "qdq/q-fanout")) << Dump(r);
  ASSERT_EQ(r.units.size(), 1u);
  EXPECT_EQ(r.units[0].input_qdq.size(), static_cast<std::size_t>(kInputs));
}

long PeakRssMb() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024;
}

// x -> Q/DQ -> Identity x N -> Q/DQ -> y, built with the protobuf API (the builder's per-node
// bookkeeping and shape inference would dominate). One passive pass-through unit of N nodes.
std::string IdentityChain(int n) {
  auto m = EmptyModel();
  auto& g = *m.mutable_graph();
  SetType(g.add_input(), "x", TP::FLOAT, {1, 4});
  ModelBuilder params;
  params.QParamInits("q", QParams::U8());
  const auto built = params.Build();
  for (const auto& t : built.graph().initializer()) *g.add_initializer() = t;
  AddNode(g, "QuantizeLinear", {"x", "q_scale", "q_zp"}, {"xq"}, "x_q");
  AddNode(g, "DequantizeLinear", {"xq", "q_scale", "q_zp"}, {"t0"}, "x_dq");
  g.mutable_node()->Reserve(n + 4);
  for (int i = 0; i < n; ++i) {
    // Unnamed: the checker's display names ("Identity#12345") fit in the small-string buffer.
    AddNode(g, "Identity", {"t" + std::to_string(i)}, {"t" + std::to_string(i + 1)});
  }
  AddNode(g, "QuantizeLinear", {"t" + std::to_string(n), "q_scale", "q_zp"}, {"yq"}, "y_q");
  AddNode(g, "DequantizeLinear", {"yq", "q_scale", "q_zp"}, {"y"}, "y_dq");
  SetType(g.add_output(), "y", TP::FLOAT, {1, 4});
  std::string bytes;
  EXPECT_TRUE(m.SerializeToString(&bytes));
  return bytes;
}

// A million tiny nodes: the whole pipeline (ONNX checker, shape inference, index, units, rules)
// completes, in linear time and memory. Measured (2 shared cores): release 1e6 nodes 17-47 s,
// 1.3 GB peak; ASan+UBSan 1e6 nodes 51 s (quiet) to 167 s (loaded), 2.8 GB. The sanitizer run
// uses half a million (23 s, 1.7 GB) so that it stays well inside the CI budget under
// load; AXQC_HOSTILE_CHAIN overrides the count.
#if defined(__SANITIZE_ADDRESS__)
constexpr int kChainNodes = 500'000;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr int kChainNodes = 500'000;
#else
constexpr int kChainNodes = 1'000'000;
#endif
#else
constexpr int kChainNodes = 1'000'000;
#endif

TEST(HostileGraph, MillionNodeIdentityChainCompletes) {
  int n = kChainNodes;
  if (const char* e = std::getenv("AXQC_HOSTILE_CHAIN")) n = std::atoi(e);
  const auto t0 = std::chrono::steady_clock::now();
  auto bytes = IdentityChain(n);
  const auto t1 = std::chrono::steady_clock::now();
  auto r = CheckBytes(bytes, "chain.onnx", {});
  const auto t2 = std::chrono::steady_clock::now();
  using ms = std::chrono::milliseconds;
  std::printf("[ chain    ] %d nodes, %zu bytes: build %lld ms, check %lld ms, peak RSS %ld MB\n",
              n, bytes.size(),
              static_cast<long long>(std::chrono::duration_cast<ms>(t1 - t0).count()),
              static_cast<long long>(std::chrono::duration_cast<ms>(t2 - t1).count()), PeakRssMb());
  EXPECT_EQ(r.model.node_count, static_cast<std::size_t>(n) + 4);
  EXPECT_EQ(r.verdict, Verdict::kConformant) << Dump(r);
  EXPECT_EQ(r.summary.units_by_kind["passive"], 1u);
}

// ------------------------------------------------------------------ subgraph nesting

// If nodes nested `depth` deep through their then_branch; the innermost branch reads the main
// graph's x. Each level's names carry the level (no shadowing).
onnx::ModelProto NestedIf(int depth) {
  auto branch = [](const std::string& in, const std::string& out) {
    onnx::GraphProto g;
    g.set_name("b_" + out);
    AddNode(g, "Identity", {in}, {out});
    SetType(g.add_output(), out, TP::FLOAT, {1});
    return g;
  };
  onnx::GraphProto inner = branch("x", "o" + std::to_string(depth));
  for (int level = depth - 1; level >= 1; --level) {
    const std::string s = std::to_string(level);
    onnx::GraphProto g;
    g.set_name("then" + s);
    auto* n = AddNode(g, "If", {"cond"}, {"o" + s}, "if" + s);
    auto* then_branch = n->add_attribute();
    then_branch->set_name("then_branch");
    then_branch->set_type(onnx::AttributeProto::GRAPH);
    *then_branch->mutable_g() = std::move(inner);
    auto* else_branch = n->add_attribute();
    else_branch->set_name("else_branch");
    else_branch->set_type(onnx::AttributeProto::GRAPH);
    *else_branch->mutable_g() = branch("x", "e" + s);
    SetType(g.add_output(), "o" + s, TP::FLOAT, {1});
    inner = std::move(g);
  }
  auto m = EmptyModel();
  auto& g = *m.mutable_graph();
  SetType(g.add_input(), "cond", TP::BOOL, {});
  SetType(g.add_input(), "x", TP::FLOAT, {1});
  auto* n = AddNode(g, "If", {"cond"}, {"y"}, "if0");
  auto* then_branch = n->add_attribute();
  then_branch->set_name("then_branch");
  then_branch->set_type(onnx::AttributeProto::GRAPH);
  *then_branch->mutable_g() = std::move(inner);
  auto* else_branch = n->add_attribute();
  else_branch->set_name("else_branch");
  else_branch->set_type(onnx::AttributeProto::GRAPH);
  *else_branch->mutable_g() = branch("x", "e0");
  SetType(g.add_output(), "y", TP::FLOAT, {1});
  AddSideBlock(g);
  return m;
}

TEST(HostileGraph, IfNestedOneHundredTwentyEightDeepIsAnUncoveredNode) {
  for (bool cv : {false, true}) {
    auto r = CheckModel(NestedIf(128), cv);
    EXPECT_NO_RULE(r, "onnx/invalid-model");
    EXPECT_FINDING(r, "closure/uncovered-node", "if0", "control flow with subgraphs");
    EXPECT_EQ(r.verdict, Verdict::kNonConformant);
  }
}

// Loop bodies nested `depth` deep: body k runs Loop k+1 over the outer trip count M.
onnx::ModelProto NestedLoop(int depth) {
  auto body = [](int level, onnx::GraphProto* inner) {
    const std::string s = std::to_string(level);
    onnx::GraphProto g;
    g.set_name("body" + s);
    SetType(g.add_input(), "i" + s, TP::INT64, {});
    SetType(g.add_input(), "c" + s, TP::BOOL, {});
    SetType(g.add_input(), "v" + s, TP::FLOAT, {1});
    AddNode(g, "Identity", {"c" + s}, {"co" + s});
    if (inner == nullptr) {
      AddNode(g, "Identity", {"v" + s}, {"vo" + s});
    } else {
      auto* n = AddNode(g, "Loop", {"M", "c" + s, "v" + s}, {"vo" + s}, "loop" + s);
      auto* a = n->add_attribute();
      a->set_name("body");
      a->set_type(onnx::AttributeProto::GRAPH);
      *a->mutable_g() = std::move(*inner);
    }
    SetType(g.add_output(), "co" + s, TP::BOOL, {});
    SetType(g.add_output(), "vo" + s, TP::FLOAT, {1});
    return g;
  };
  onnx::GraphProto inner = body(depth, nullptr);
  for (int level = depth - 1; level >= 1; --level) inner = body(level, &inner);
  auto m = EmptyModel();
  auto& g = *m.mutable_graph();
  SetType(g.add_input(), "M", TP::INT64, {});
  SetType(g.add_input(), "c", TP::BOOL, {});
  SetType(g.add_input(), "v", TP::FLOAT, {1});
  auto* n = AddNode(g, "Loop", {"M", "c", "v"}, {"y"}, "loop0");
  auto* a = n->add_attribute();
  a->set_name("body");
  a->set_type(onnx::AttributeProto::GRAPH);
  *a->mutable_g() = std::move(inner);
  SetType(g.add_output(), "y", TP::FLOAT, {1});
  AddSideBlock(g);
  return m;
}

TEST(HostileGraph, LoopNestedOneHundredTwentyEightDeepIsAnUncoveredNode) {
  auto r = CheckModel(NestedLoop(128), true);
  EXPECT_NO_RULE(r, "onnx/invalid-model");
  EXPECT_FINDING(r, "closure/uncovered-node", "loop0", "control flow with subgraphs");
}

// Runs `f` on a thread whose 64 MiB stack is pre-filled with a pattern; returns the bytes of
// stack it touched.
template <typename F>
std::size_t StackBytesUsed(F f) {
  constexpr std::size_t kSize = std::size_t{64} << 20;
  std::vector<unsigned char> stack(kSize, 0xA5);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstack(&attr, stack.data(), kSize);
  struct Call {
    F* f;
    static void* Run(void* self) {
      (*static_cast<Call*>(self)->f)();
      return nullptr;
    }
  } call{&f};
  pthread_t t;
  EXPECT_EQ(pthread_create(&t, &attr, &Call::Run, &call), 0);
  pthread_join(t, nullptr);
  pthread_attr_destroy(&attr);
  std::size_t untouched = 0;
  while (untouched < kSize && stack[untouched] == 0xA5) ++untouched;
  return kSize - untouched;
}

// The deepest nesting the parser accepts (3 levels per body + 7 for the model, graph and the
// innermost output type: 164 bodies) is checked with a bounded stack, far below the 8 MiB of a
// default thread (the service's workers): recursion depth is the parser limit's job.
TEST(HostileGraph, DeepestAcceptedNestingUsesABoundedStack) {
  std::string if_bytes, loop_bytes;
  ASSERT_TRUE(NestedIf(164).SerializeToString(&if_bytes));
  ASSERT_TRUE(NestedLoop(164).SerializeToString(&loop_bytes));
  EXPECT_CONTAINS(BytesError(NestedIf(165).SerializeAsString()), "nested more than 500 levels");
  for (const auto* bytes : {&if_bytes, &loop_bytes}) {
    Report r;
    const auto used =
        StackBytesUsed([&] { r = CheckBytes(*bytes, "deep.onnx", {.check_value = true}); });
    std::printf("[ stack    ] 164 nested bodies: %zu KiB of stack\n", used / 1024);
    EXPECT_TRUE(Has(r, "closure/uncovered-node")) << Dump(r);
    EXPECT_NO_RULE(r, "onnx/invalid-model");
    EXPECT_LT(used, std::size_t{4} << 20);
  }
}

TEST(HostileGraph, NestingBeyondTheParserLimitIsAnInputError) {
  std::string bytes;
  ASSERT_TRUE(NestedIf(200).SerializeToString(&bytes));
  EXPECT_CONTAINS(BytesError(bytes), "nested more than");
}

// ------------------------------------------------------------------ protobuf recursion bombs

// Wire format by hand (the protobuf API itself recurses when serializing), built inside out.
std::string Varint(std::uint64_t v) {
  std::string s;
  while (v >= 0x80) {
    s.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  s.push_back(static_cast<char>(v));
  return s;
}
// `levels` nestings of the same pair of messages: prefix_k + (inner) + suffix_k, where each
// level is `open(inner_size)` around the inner bytes. Linear in the output size.
template <typename Wrap>
std::string NestInsideOut(std::string inner, int levels, Wrap wrap) {
  std::vector<std::string> prefixes;
  std::vector<std::string> suffixes;
  std::size_t size = inner.size();
  for (int i = 0; i < levels; ++i) {
    auto [pre, suf] = wrap(size);
    size += pre.size() + suf.size();
    prefixes.push_back(std::move(pre));
    suffixes.push_back(std::move(suf));
  }
  std::string out;
  out.reserve(size);
  for (auto it = prefixes.rbegin(); it != prefixes.rend(); ++it) out += *it;
  out += inner;
  for (const auto& s : suffixes) out += s;
  return out;
}

std::string Tag(int number) { return Varint(static_cast<std::uint64_t>(number) << 3 | 2); }

// ModelProto { ir_version 10, opset 21, graph { input { name "x" type <T> } } } with <T> a
// TypeProto sequence_type { elem_type <T> } nested `levels` deep around a float tensor type.
std::string TypeBomb(int levels) {
  const std::string tensor = Tag(1) + Varint(2) + std::string("\x08\x01", 2);  // elem_type FLOAT
  // TypeProto.sequence_type (4) { Sequence.elem_type (1) { <inner TypeProto> } }
  std::string type = NestInsideOut(tensor, levels, [](std::size_t inner) {
    const std::string seq_head = Tag(1) + Varint(inner);
    return std::pair{Tag(4) + Varint(seq_head.size() + inner) + seq_head, std::string()};
  });
  const std::string vi = Tag(1) + Varint(1) + "x" + Tag(2) + Varint(type.size()) + type;
  const std::string graph = Tag(11) + Varint(vi.size()) + vi;
  const std::string opset = std::string("\x10\x15", 2);  // version 21
  return std::string("\x08\x0a", 2) + Tag(7) + Varint(graph.size()) + graph + Tag(8) +
         Varint(opset.size()) + opset;
}

// ModelProto { graph { node { op_type "If" attribute { name "then_branch" type GRAPH g { node
// { ... } } } } } } nested `levels` deep.
std::string GraphAttributeBomb(int levels) {
  const std::string leaf = Tag(4) + Varint(8) + "Identity";  // NodeProto.op_type
  std::string node = NestInsideOut(leaf, levels, [](std::size_t inner) {
    // NodeProto { op_type "If", attribute (5) { name (1), type (20) = GRAPH (5), g (6) {
    //   GraphProto.node (1) { <inner NodeProto> } } } }
    const std::string graph_head = Tag(1) + Varint(inner);
    const std::string attr_head = Tag(1) + Varint(11) + "then_branch" +
                                  std::string("\xa0\x01\x05", 3) + Tag(6) +
                                  Varint(graph_head.size() + inner) + graph_head;
    const std::string node_head =
        Tag(4) + Varint(2) + "If" + Tag(5) + Varint(attr_head.size() + inner) + attr_head;
    return std::pair{node_head, std::string()};
  });
  const std::string graph = Tag(1) + Varint(node.size()) + node;
  const std::string opset = std::string("\x10\x15", 2);
  return std::string("\x08\x0a", 2) + Tag(7) + Varint(graph.size()) + graph + Tag(8) +
         Varint(opset.size()) + opset;
}

TEST(HostileProtobuf, TypeProtoNestedTenThousandDeepIsAnInputError) {
  const auto bomb = TypeBomb(10'000);
  for (bool cv : {false, true})
    EXPECT_CONTAINS(BytesError(bomb, cv), "nested more than 500 levels");
  // Sanity of the encoding: a shallow one parses (and is a valid if pointless model).
  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(TypeBomb(3)));
  EXPECT_TRUE(m.graph().input(0).type().sequence_type().elem_type().has_sequence_type());
  EXPECT_EQ(BytesError(TypeBomb(3)), "");
}

TEST(HostileProtobuf, GraphAttributesNestedTenThousandDeepAreAnInputError) {
  const auto bomb = GraphAttributeBomb(10'000);
  EXPECT_CONTAINS(BytesError(bomb), "nested more than 500 levels");
  EXPECT_CONTAINS(BytesError(bomb), "recursion bomb");
  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(GraphAttributeBomb(2)));
  EXPECT_EQ(m.graph().node(0).attribute(0).g().node(0).attribute(0).g().node(0).op_type(),
            "Identity");
}

TEST(HostileProtobuf, BombInAFileIsAnInputError) {
  TempDir d;
  WriteFile(d.path() / "bomb.onnx", TypeBomb(100'000));
  EXPECT_CONTAINS(FileError(d.path() / "bomb.onnx"), "recursion bomb");
}

// ------------------------------------------------------------------ tensor storage

TEST(HostileTensor, DimsWhoseProductOverflowsInt64) {
  constexpr int64_t kHuge = int64_t{1} << 40;
  auto b = ConvModel();
  onnx::TensorProto t;
  t.set_name("huge");
  t.set_data_type(TP::FLOAT);
  t.add_dims(kHuge);
  t.add_dims(kHuge);
  t.add_float_data(1.0f);
  b.InitTensor(t);
  // The same dims on a Q/DQ scale and on a graph input that feeds Flatten (shape inference
  // multiplies the dims).
  b.Input("big", TP::FLOAT, {kHuge, kHuge, 4});
  b.Node("Flatten", {"big"}, {"flat"}, {}, "flatten");
  b.Output("flat");
  auto m = b.Build();
  for (auto& init : *m.mutable_graph()->mutable_initializer()) {
    if (init.name() == "y_scale") {
      init.clear_dims();
      init.add_dims(kHuge);
      init.add_dims(kHuge);
    }
  }
  for (bool cv : {false, true}) {
    auto r = CheckModel(m, cv);
    EXPECT_TRUE(HasMessage(r, "onnx/invalid-model",
                           "initializer 'huge': dims are negative or "
                           "their product overflows int64"))
        << Dump(r);
    EXPECT_TRUE(HasMessage(r, "onnx/invalid-model", "initializer 'y_scale'")) << Dump(r);
    EXPECT_EQ(r.verdict, Verdict::kNonConformant);
  }
}

// Declared dims near the int64 limit where the rules do arithmetic on them: a ConvTranspose's
// output channels are W.dims[1] * group.
TEST(HostileTensor, HugeDeclaredDimsInChannelArithmetic) {
  auto m = ConvModel({.w = QParams::PerChannel(QType::kS8, {}, 1), .op = "ConvTranspose"}).Build();
  for (auto& vi : *m.mutable_graph()->mutable_value_info()) {
    if (vi.name() != "w_dq_out") continue;
    auto* shape = vi.mutable_type()->mutable_tensor_type()->mutable_shape();
    shape->mutable_dim(1)->set_dim_value(int64_t{1} << 62);
  }
  for (auto& n : *m.mutable_graph()->mutable_node()) {
    if (n.name() != "conv") continue;
    auto* a = n.add_attribute();
    a->set_name("group");
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(int64_t{1} << 40);
  }
  for (bool cv : {false, true}) {
    auto r = CheckModel(m, cv);
    EXPECT_EQ(r.verdict, Verdict::kNonConformant) << Dump(r);
  }
}

TEST(HostileTensor, NegativeDims) {
  auto b = ConvModel();
  onnx::TensorProto t;
  t.set_name("neg");
  t.set_data_type(TP::INT8);
  t.add_dims(-3);
  b.InitTensor(t);
  b.Input("negin", TP::FLOAT, {1, -7});  // an unknown dim in the builder; made -7 below
  b.Node("Relu", {"negin"}, {"negout"}, {}, "neg_relu");
  b.Output("negout");
  auto m = b.Build();
  for (auto& in : *m.mutable_graph()->mutable_input()) {
    if (in.name() == "negin") {
      in.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(1)->set_dim_value(-7);
    }
  }
  // Negative dims on a weight that the value checks read.
  for (auto& init : *m.mutable_graph()->mutable_initializer()) {
    if (init.name() == "x_scale") init.add_dims(-1);
  }
  for (bool cv : {false, true}) {
    auto r = CheckModel(m, cv);
    EXPECT_TRUE(HasMessage(r, "onnx/invalid-model", "initializer 'neg': dims are negative"))
        << Dump(r);
    EXPECT_TRUE(HasMessage(r, "onnx/invalid-model", "initializer 'x_scale'")) << Dump(r);
    EXPECT_EQ(r.verdict, Verdict::kNonConformant);
  }
}

TEST(HostileTensor, RawDataSizesThatDisagreeWithDimsAndType) {
  struct Case {
    std::string name;
    int type;
    std::vector<int64_t> dims;
    std::size_t raw;
    std::string need;
  };
  const std::vector<Case> cases = {
      {"f32", TP::FLOAT, {2, 3}, 20, "need 24"},
      {"f16", TP::FLOAT16, {5}, 9, "need 10"},
      {"i4_odd", TP::INT4, {5}, 2, "need 3"},  // 5 nibbles: 3 bytes (last half unused)
      {"u4_long", TP::UINT4, {4}, 3, "need 2"},
      {"i64_empty", TP::INT64, {2}, 0, "need 16"},  // has_raw_data with 0 bytes
      {"i8_scalar", TP::INT8, {}, 2, "need 1"},
  };
  auto b = ConvModel();
  for (const auto& c : cases) {
    onnx::TensorProto t;
    t.set_name(c.name);
    t.set_data_type(c.type);
    for (auto d : c.dims) t.add_dims(d);
    t.set_raw_data(std::string(c.raw, '\x01'));
    b.InitTensor(t);
  }
  // Typed 4-bit storage with the wrong number of int32_data entries.
  onnx::TensorProto t;
  t.set_name("u4_typed");
  t.set_data_type(TP::UINT4);
  t.add_dims(6);
  for (int i = 0; i < 5; ++i) t.add_int32_data(1);  // 6 values: 3 packed or 6 unpacked
  b.InitTensor(t);
  for (bool cv : {false, true}) {
    auto r = RunCheck(b, cv);
    for (const auto& c : cases) {
      EXPECT_TRUE(HasMessage(
          r, "onnx/invalid-model",
          "initializer '" + c.name + "': raw_data holds " + std::to_string(c.raw) + " bytes"))
          << c.name << "\n"
          << Dump(r);
      EXPECT_TRUE(HasMessage(r, "onnx/invalid-model", c.need)) << c.name << "\n" << Dump(r);
    }
    EXPECT_TRUE(HasMessage(r, "onnx/invalid-model", "initializer 'u4_typed': int32_data holds 5"))
        << Dump(r);
  }
}

// Wrong sizes on the tensors the rules read (weights, scales, zero points): reported as invalid,
// and the value checks see the values as unreadable instead of reading past the end.
TEST(HostileTensor, WrongSizedQuantParamsAreUnreadableNotOverread) {
  auto m = ConvModel({.w = QParams::PerChannel(QType::kS4, {}, 0), .int_weight = true}).Build();
  for (auto& init : *m.mutable_graph()->mutable_initializer()) {
    if (init.name() == "w") init.mutable_raw_data()->resize(7);  // 288 nibbles need 144 bytes
    if (init.name() == "w_scale") init.mutable_raw_data()->resize(6);
    if (init.name() == "x_zp") init.mutable_raw_data()->clear();
  }
  auto r = CheckModel(m, true);
  EXPECT_TRUE(HasMessage(r, "onnx/invalid-model", "initializer 'w': raw_data holds 7 bytes"))
      << Dump(r);
  EXPECT_TRUE(HasMessage(r, "onnx/invalid-model", "initializer 'w_scale'")) << Dump(r);
  EXPECT_TRUE(HasMessage(r, "onnx/invalid-model", "initializer 'x_zp'")) << Dump(r);
  EXPECT_EQ(r.verdict, Verdict::kNonConformant);
}

// ------------------------------------------------------------------ external data

// The Conv model with its weight "w" stored externally with the given keys.
onnx::ModelProto ExternalWeight(const std::vector<std::pair<std::string, std::string>>& kv) {
  auto m = ConvModel().Build();
  for (auto& t : *m.mutable_graph()->mutable_initializer()) {
    if (t.name() != "w") continue;
    t.clear_raw_data();
    t.clear_float_data();
    t.set_data_location(TP::EXTERNAL);
    for (const auto& [k, v] : kv) {
      auto* e = t.add_external_data();
      e->set_key(k);
      e->set_value(v);
    }
  }
  return m;
}

constexpr std::size_t kWeightBytes = 8 * 4 * 3 * 3 * 4;  // FP32 [8,4,3,3]

TEST(HostileExternalData, OffsetAndLengthPastTheEndOrOverflowing) {
  TempDir d;
  WriteFile(d.path() / "w.bin", std::string(kWeightBytes, '\0'));
  const auto path = d.path() / "model.onnx";
  const std::vector<std::vector<std::pair<std::string, std::string>>> cases = {
      {{"location", "w.bin"}, {"length", std::to_string(kWeightBytes + 1)}},
      {{"location", "w.bin"}, {"offset", "8"}, {"length", std::to_string(kWeightBytes)}},
      {{"location", "w.bin"}, {"offset", std::to_string(kWeightBytes + 1)}},
      // offset + length wraps around 2^64
      {{"location", "w.bin"}, {"offset", "16"}, {"length", "18446744073709551600"}},
      {{"location", "w.bin"}, {"offset", "18446744073709551615"}, {"length", "1"}},
  };
  for (const auto& kv : cases) {
    ModelBuilder::SaveModel(ExternalWeight(kv), path.string());
    EXPECT_CONTAINS(FileError(path), "past the end of 'w.bin'");
  }
}

TEST(HostileExternalData, NonNumericOffsetOrLength) {
  TempDir d;
  WriteFile(d.path() / "w.bin", std::string(kWeightBytes, '\0'));
  const auto path = d.path() / "model.onnx";
  for (const std::string v : {"12abc", "-1", "", " 8", "0x10", "99999999999999999999999"}) {
    for (const std::string key : {"offset", "length"}) {
      ModelBuilder::SaveModel(ExternalWeight({{"location", "w.bin"}, {key, v}}), path.string());
      EXPECT_CONTAINS(FileError(path), key + " '" + v + "', which is not a non-negative decimal");
    }
  }
}

TEST(HostileExternalData, LocationsOutsideTheModelDirectory) {
  TempDir d;
  fs::create_directories(d.path() / "m" / "sub");
  fs::create_directories(d.path() / "outside");
  WriteFile(d.path() / "outside" / "w.bin", std::string(kWeightBytes, '\0'));
  WriteFile(d.path() / "m" / "w.bin", std::string(kWeightBytes, '\0'));
  // A symlinked directory component that leaves the model directory.
  fs::create_directory_symlink(d.path() / "outside", d.path() / "m" / "sub" / "escape");
  // A symlink chain: inside -> inside -> outside.
  fs::create_symlink(d.path() / "outside" / "w.bin", d.path() / "m" / "hop2.bin");
  fs::create_symlink("hop2.bin", d.path() / "m" / "hop1.bin");
  const auto path = d.path() / "m" / "model.onnx";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"/dev/zero", "absolute path"},
      {(d.path() / "outside" / "w.bin").string(), "absolute path"},
      {"sub/../../outside/w.bin", "contains '..'"},
      {"sub/../w.bin", "contains '..'"},  // stays inside, but '..' is refused outright
      {"./../outside/w.bin", "contains '..'"},
      {"sub/escape/w.bin", "outside the model directory"},
      {"hop1.bin", "outside the model directory"},
      {std::string("w.bin\0.txt", 10), "NUL"},
  };
  for (const auto& [loc, why] : cases) {
    ModelBuilder::SaveModel(ExternalWeight({{"location", loc}}), path.string());
    const auto err = FileError(path);
    EXPECT_CONTAINS(err, "external data");
    EXPECT_CONTAINS(err, why);
  }
}

TEST(HostileExternalData, LocationsThatAreNotRegularFiles) {
  TempDir d;
  fs::create_directories(d.path() / "dir");
  ASSERT_EQ(::mkfifo((d.path() / "pipe").c_str(), 0600), 0);
  const auto path = d.path() / "model.onnx";
  for (const std::string loc : {"dir", ".", "pipe"}) {
    ModelBuilder::SaveModel(ExternalWeight({{"location", loc}}), path.string());
    EXPECT_CONTAINS(FileErrorUnblocked(path, d.path() / "pipe"), "is not a regular file");
  }
}

// External data inside subgraphs (If branches) and in sparse initializers is confined the same
// way, and rejected for in-memory models.
TEST(HostileExternalData, TensorsInSubgraphsAndSparseTensors) {
  TempDir d;
  fs::create_directories(d.path() / "m");
  WriteFile(d.path() / "secret.bin", std::string(64, 's'));
  auto external = [](onnx::TensorProto* t, const std::string& loc) {
    t->set_data_location(TP::EXTERNAL);
    auto* e = t->add_external_data();
    e->set_key("location");
    e->set_value(loc);
  };
  auto in_branch = [&](const std::string& loc) {
    auto m = NestedIf(3);
    auto* g = m.mutable_graph()->mutable_node(0)->mutable_attribute(0)->mutable_g();
    auto* t = g->add_initializer();
    t->set_name("branch_w");
    t->set_data_type(TP::FLOAT);
    t->add_dims(16);
    external(t, loc);
    return m;
  };
  auto sparse = [&](const std::string& loc) {
    auto m = ConvModel().Build();
    auto* st = m.mutable_graph()->add_sparse_initializer();
    st->add_dims(16);
    st->mutable_values()->set_name("sp");
    st->mutable_values()->set_data_type(TP::FLOAT);
    st->mutable_values()->add_dims(2);
    external(st->mutable_values(), loc);
    st->mutable_indices()->set_data_type(TP::INT64);
    st->mutable_indices()->add_dims(2);
    st->mutable_indices()->add_int64_data(0);
    st->mutable_indices()->add_int64_data(1);
    return m;
  };
  const auto path = d.path() / "m" / "model.onnx";
  for (const auto& make : {std::function<onnx::ModelProto(const std::string&)>(in_branch),
                           std::function<onnx::ModelProto(const std::string&)>(sparse)}) {
    ModelBuilder::SaveModel(make("../secret.bin"), path.string());
    EXPECT_CONTAINS(FileError(path), "contains '..'");
    ModelBuilder::SaveModel(make("/etc/passwd"), path.string());
    EXPECT_CONTAINS(FileError(path), "absolute path");
    std::string bytes;
    ASSERT_TRUE(make("w.bin").SerializeToString(&bytes));
    EXPECT_CONTAINS(BytesError(bytes), "cannot be checked from memory");
  }
}

// ------------------------------------------------------------------ the model file itself

TEST(HostileFile, ZeroByteFile) {
  TempDir d;
  WriteFile(d.path() / "empty.onnx", "");
  EXPECT_CONTAINS(FileError(d.path() / "empty.onnx"), "the file is empty (0 bytes)");
}

TEST(HostileFile, DirectoryNamedLikeAModel) {
  TempDir d;
  fs::create_directories(d.path() / "model.onnx");
  EXPECT_CONTAINS(FileError(d.path() / "model.onnx"), "is a directory");
  fs::create_directory_symlink(d.path() / "model.onnx", d.path() / "link.onnx");
  EXPECT_CONTAINS(FileError(d.path() / "link.onnx"), "is a directory");
}

// A FIFO with no writer: opening it for reading would block forever. The check runs on another
// thread so that a regression fails the test instead of hanging the suite; the writer end is
// opened (non-blocking) afterwards to release a blocked reader.
TEST(HostileFile, FifoIsAnInputErrorWithoutBlocking) {
  TempDir d;
  const auto fifo = d.path() / "model.onnx";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  fs::create_symlink(fifo, d.path() / "link.onnx");
  for (const auto& p : {fifo, d.path() / "link.onnx"}) {
    EXPECT_CONTAINS(FileErrorUnblocked(p, fifo), "is a FIFO");
  }
}

TEST(HostileFile, DevicesAreNotRegularFiles) {
  EXPECT_CONTAINS(FileError("/dev/null"), "is not a regular file");
  EXPECT_CONTAINS(FileError("/dev/zero"), "is not a regular file");
}

}  // namespace
// ------------------------------------------------------------------ second thread

// axqc::SetParallelChecks changes no report: hashing beside the parse (in memory and from a file),
// the storage guard and the index beside the ONNX checker and the Q/DQ values beside shape
// inference give the same JSON as the one-thread path, on a model with storage errors, nested
// Loop / If bodies (implicit uses, inference inside subgraphs) and a per-channel QDQ model.
TEST(ParallelChecks, OneAndTwoThreadsGiveTheSameReport) {
  auto bad = ConvModel();
  onnx::TensorProto t;
  t.set_name("bad_storage");
  t.set_data_type(TP::FLOAT);
  t.add_dims(2);
  t.add_dims(3);
  t.set_raw_data(std::string(20, '\x01'));
  bad.InitTensor(t);
  const std::vector<std::pair<std::string, onnx::ModelProto>> models = {
      {"conv", ConvModel().Build()},
      {"storage", bad.Build()},
      {"loop", NestedLoop(8)},
      {"if", NestedIf(8)},
  };
  TempDir dir;
  struct Reset {
    ~Reset() { SetParallelChecks(true); }
  } reset;
  for (const auto& [name, m] : models) {
    std::string bytes;
    ASSERT_TRUE(m.SerializeToString(&bytes));
    const fs::path path = dir.path() / (name + ".onnx");
    WriteFile(path, bytes);
    for (bool cv : {false, true}) {
      CheckOptions o;
      o.check_value = cv;
      std::string json[2][2];  // [parallel][bytes / file]
      for (bool parallel : {false, true}) {
        SetParallelChecks(parallel);
        json[parallel][0] = RenderJson(CheckBytes(bytes, path.string(), o));
        json[parallel][1] = RenderJson(CheckFile(path.string(), o));
      }
      EXPECT_EQ(json[0][0], json[1][0]) << name;
      EXPECT_EQ(json[0][1], json[1][1]) << name;
      EXPECT_EQ(json[1][0], json[1][1]) << name;
    }
  }
  SetParallelChecks(true);
  auto r = CheckModel(bad.Build());
  EXPECT_TRUE(HasMessage(r, "onnx/invalid-model", "initializer 'bad_storage': raw_data holds 20"))
      << Dump(r);
  r = CheckModel(NestedLoop(8), true);
  EXPECT_FINDING(r, "closure/uncovered-node", "loop0", "control flow with subgraphs");
  EXPECT_NO_RULE(r, "onnx/invalid-model");
  r = CheckModel(ConvModel().Build());
  EXPECT_EQ(r.verdict, Verdict::kConformant) << Dump(r);
}

}  // namespace axqc::test
