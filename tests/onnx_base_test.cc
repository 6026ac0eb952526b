// ONNX base rules (2.1, 2.2), input errors, the CLI and the bundled examples.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "axqc/render.h"
#include "axqc/version.h"
#include "check_helpers.h"
#include "exit_codes.h"

namespace axqc::test {
namespace {

namespace fs = std::filesystem;

TEST(OnnxBase, ConformantConvHasNoFindings) {
  auto r = RunCheck(ConvModel());
  EXPECT_CLEAN(r);
  EXPECT_TRUE(r.findings.empty()) << Dump(r);
  EXPECT_EQ(r.model.q_count, 3u);   // x, w, y
  EXPECT_EQ(r.model.dq_count, 4u);  // x, w, b, y
  EXPECT_EQ(r.summary.owned_qdq_edges, 4u);
}

TEST(OnnxBase, ConstantNodeIsAnError) {
  auto b = ConvModel();
  onnx::TensorProto t = ModelBuilder::MakeF32("", {}, {1.0f});
  b.Node("Constant", {}, {"c"}, {ModelBuilder::AttrT("value", t)}, "const1");
  b.Node("Add", {"c", "c"}, {"c2"}, {}, "add_c");
  auto r = RunCheck(b);
  EXPECT_FINDING(r, "onnx/constant-node", "const1", "must be graph initializers");
  EXPECT_EQ(r.verdict, Verdict::kNonConformant);
}

TEST(OnnxBase, InvalidModelFromCheckerAndShapeInference) {
  auto b = ConvModel();
  b.Node("Add", {"x", "missing_tensor"}, {"bad"}, {}, "dangling");
  auto r = RunCheck(b);
  ASSERT_TRUE(Has(r, "onnx/invalid-model")) << Dump(r);
  EXPECT_EQ(r.verdict, Verdict::kNonConformant);
  // Strict shape inference: shapes that cannot broadcast.
  ModelBuilder c;
  c.Input("x", TP::FLOAT, {1, 3});
  c.InitF32Fill("w", {1, 4}, 0.1f);
  c.Node("Add", {"x", "w"}, {"y"}, {}, "add");
  c.Output("y", TP::FLOAT, {1, 4});
  auto r2 = RunCheck(c.AutoValueInfo(false));
  auto f = Find(r2, "onnx/invalid-model");
  ASSERT_EQ(f.size(), 1u) << Dump(r2);
  // Unquantized: not_applicable even when invalid, with the validity finding kept (reading 11).
  EXPECT_EQ(r2.verdict, Verdict::kNotApplicable);
  EXPECT_NE(f[0]->message.find("shape inference"), std::string::npos) << f[0]->message;
}

TEST(OnnxBase, OpsetNewerThanLibraryIsReportedNotCrashed) {
  ModelBuilder b(99);
  b.Input("x", TP::FLOAT, {1});
  b.Node("Relu", {"x"}, {"y"}, {}, "relu");
  b.Output("y", TP::FLOAT, {1});
  auto r = RunCheck(b.AutoValueInfo(false));
  auto f = Find(r, "onnx/invalid-model");
  ASSERT_FALSE(f.empty()) << Dump(r);
  EXPECT_NE(f[0]->message.find("opset 99"), std::string::npos) << f[0]->message;
  EXPECT_NE(f[0]->message.find("newer than ONNX " + LinkedOnnx().version), std::string::npos)
      << f[0]->message;
  EXPECT_EQ(r.verdict, Verdict::kNotApplicable);  // an unquantized model (reading 11)
  // The same opset on a quantized model: in scope, non_conformant.
  ModelBuilder q(99);
  q.Input("x", TP::FLOAT, {1});
  q.Node("Relu", {q.QDQ("x", "x", QParams::U8())}, {"y"}, {}, "relu");
  q.Output(q.QDQ("y", "y", QParams::U8(0.02f, 0)));
  auto rq = RunCheck(q.AutoValueInfo(false));
  ASSERT_FALSE(Find(rq, "onnx/invalid-model").empty()) << Dump(rq);
  EXPECT_EQ(rq.verdict, Verdict::kNonConformant);
}

TEST(OnnxBase, Int4RawDataSizeIsValidated) {
  auto b = ConvModel({.w = QParams::PerChannel(QType::kS4, {}, 0), .int_weight = true});
  EXPECT_EQ(RunCheck(b).verdict, Verdict::kConformant) << Dump(RunCheck(b));
  // 8x4x3x3 = 288 INT4 values need 144 bytes; give 145.
  auto t = ModelBuilder::MakeInt("w4", TP::INT4, {8, 4, 3, 3}, std::vector<int64_t>(288, 1));
  t.mutable_raw_data()->push_back('\0');
  auto b2 = ConvModel();
  b2.InitTensor(t);
  auto r = RunCheck(b2);
  auto f = Find(r, "onnx/invalid-model");
  ASSERT_FALSE(f.empty()) << Dump(r);
  EXPECT_NE(f[0]->message.find("145 bytes"), std::string::npos) << f[0]->message;
  EXPECT_NE(f[0]->message.find("144"), std::string::npos) << f[0]->message;
}

TEST(OnnxBase, ValueInfoMissingOnlyWithCheckValue) {
  auto b = ConvModel();
  b.DropValueInfo("conv_out");
  auto off = RunCheck(b, false);
  EXPECT_NO_RULE(off, "onnx/value-info-missing");
  EXPECT_EQ(off.verdict, Verdict::kConformant);
  auto on = RunCheck(b, true);
  EXPECT_FINDING(on, "onnx/value-info-missing", "conv", "'conv_out'");
  EXPECT_EQ(on.verdict, Verdict::kNonConformant);  // error severity even though [cv]
  EXPECT_EQ(Find(on, "onnx/value-info-missing").size(), 1u) << Dump(on);
}

TEST(Scope, FloatModelIsNotApplicable) {
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {1, 3, 8, 8});
  b.InitF32Fill("w", {4, 3, 3, 3}, 0.1f);
  b.Node("Conv", {"x", "w"}, {"c"}, {}, "conv");
  b.Node("Relu", {"c"}, {"y"}, {}, "relu");
  b.Output("y");
  auto r = RunCheck(b);
  EXPECT_EQ(r.verdict, Verdict::kNotApplicable) << Dump(r);
  ASSERT_EQ(r.findings.size(), 1u) << Dump(r);
  EXPECT_EQ(r.findings[0].rule, "scope/no-quantized-edge");
  EXPECT_EQ(ExitCodeFor(r.verdict), 3);
}

TEST(Scope, QdqBetweenGraphInputAndOutputOnlyIsNotApplicable) {
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {1, 4});
  b.Output(b.QDQ("x", "x", QParams::U8()));
  auto r = RunCheck(b);
  EXPECT_EQ(r.verdict, Verdict::kNotApplicable) << Dump(r);
  EXPECT_NE(r.findings.back().message.find("1 Q/DQ edge"), std::string::npos) << Dump(r);
}

TEST(InputErrors, EmptyRandomTruncated) {
  EXPECT_THROW(CheckBytes("", "empty.onnx", {}), InputError);
  std::string junk(1000, '\0');
  for (std::size_t i = 0; i < junk.size(); ++i) junk[i] = static_cast<char>((i * 7919) % 251);
  EXPECT_THROW(CheckBytes(junk, "junk.onnx", {}), InputError);
  auto bytes = ConvModel().Serialize();
  try {
    CheckBytes(bytes.substr(0, bytes.size() / 2), "half.onnx", {});
    FAIL() << "truncated model accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("half.onnx"), std::string::npos) << e.what();
  }
}

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() /
            ("axqc-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++));
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  static inline int counter_ = 0;
  fs::path path_;
};

TEST(InputErrors, DirectoryAndMissingFile) {
  TempDir d;
  EXPECT_THROW(CheckFile(d.path().string(), {}), InputError);
  EXPECT_THROW(CheckFile((d.path() / "nope.onnx").string(), {}), InputError);
}

onnx::ModelProto WithExternalWeight(const std::string& location) {
  auto m = ConvModel().Build();
  for (auto& t : *m.mutable_graph()->mutable_initializer()) {
    if (t.name() != "w") continue;
    t.clear_raw_data();
    t.clear_float_data();
    t.set_data_location(TP::EXTERNAL);
    auto* kv = t.add_external_data();
    kv->set_key("location");
    kv->set_value(location);
  }
  return m;
}

TEST(InputErrors, ExternalDataEscapingTheDirectory) {
  TempDir d;
  fs::create_directories(d.path() / "m");
  { std::ofstream(d.path() / "secret.bin") << std::string(8 * 4 * 9 * 4, 'x'); }
  fs::create_symlink(d.path() / "secret.bin", d.path() / "m" / "link.bin");
  for (const std::string loc : {"../secret.bin", "/etc/passwd", "link.bin", "absent.bin"}) {
    auto path = (d.path() / "m" / "model.onnx").string();
    ModelBuilder::SaveModel(WithExternalWeight(loc), path);
    try {
      CheckFile(path, {});
      FAIL() << "accepted external data location " << loc;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("external data"), std::string::npos) << e.what();
    }
  }
  // In-memory models cannot use external data at all.
  std::string bytes;
  WithExternalWeight("w.bin").SerializeToString(&bytes);
  EXPECT_THROW(CheckBytes(bytes, "mem.onnx", {}), InputError);
}

TEST(InputErrors, ExternalDataPastEndOfFile) {
  TempDir d;
  auto m = WithExternalWeight("w.bin");
  for (auto& t : *m.mutable_graph()->mutable_initializer()) {
    if (t.name() != "w") continue;
    auto* kv = t.add_external_data();
    kv->set_key("offset");
    kv->set_value("4096");
  }
  std::ofstream(d.path() / "w.bin") << std::string(100, 'x');
  auto path = (d.path() / "model.onnx").string();
  ModelBuilder::SaveModel(m, path);
  try {
    CheckFile(path, {});
    FAIL() << "accepted an offset past the end";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("past the end"), std::string::npos) << e.what();
  }
}

TEST(InputErrors, ExternalDataInsideDirectoryIsRead) {
  TempDir d;
  auto b = ConvModel();
  auto path = (d.path() / "model.onnx").string();
  b.SaveWithExternalData(path, "weights.bin", 64);
  auto r = CheckFile(path, {.check_value = true});
  EXPECT_EQ(r.verdict, Verdict::kConformant) << Dump(r);
}

TEST(Report, GroupsIdenticalFindings) {
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {1, 4, 8, 8});
  std::string cur = b.QDQ("x", "x", QParams::U8());
  for (int i = 0; i < 12; ++i) {
    std::string n = std::to_string(i);
    b.Node("Sigmoid", {cur}, {"s" + n}, {}, "sig" + n);
    b.Node("Tanh", {"s" + n}, {"t" + n}, {}, "tanh" + n);  // Sigmoid output not quantized
    cur = b.QDQ("t" + n, "t" + n, QParams::U8());
  }
  b.Output(cur);
  CheckOptions o;
  o.max_locations = 5;
  auto r = CheckBytes(b.Serialize(), "g.onnx", o);
  ASSERT_EQ(r.summary.by_rule["op/output-not-quantized"], 12u) << Dump(r);
  const FindingGroup* g = nullptr;
  for (const auto& gr : r.groups) {
    if (gr.rule == "op/output-not-quantized") g = &gr;
  }
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->count, 12u);
  EXPECT_EQ(g->first.size(), 5u);
  EXPECT_EQ(g->first[0].nodes[0], "sig0");
  EXPECT_EQ(r.summary.errors_by_op["Sigmoid"], 12u);
}

TEST(Report, JsonRoundTripAndSchemaKeys) {
  auto r = RunCheck(ConvModel({.w = QParams::S8()}));
  auto j = ReportToJson(r);
  for (const char* k : {"schema", "tool", "rule_set_version", "verdict", "check_value", "model",
                        "summary", "groups", "findings", "units"}) {
    EXPECT_TRUE(j.contains(k)) << k;
  }
  EXPECT_EQ(j["schema"], "axqc.report/v1");
  EXPECT_EQ(j["verdict"], "non_conformant");
  EXPECT_EQ(j["summary"]["by_rule"]["role/weight-type"], 1);
  auto back = ReportFromJson(j);
  EXPECT_EQ(back.verdict, r.verdict);
  EXPECT_EQ(back.findings.size(), r.findings.size());
  EXPECT_EQ(ReportToJson(back)["groups"], j["groups"]);
}

// ---- CLI (the real binary)

std::string Bin() {
  const char* b = std::getenv("AXQC_BIN");
  return b ? b : AXQC_BIN_PATH;
}

int Exec(const std::string& cmd, std::string* out = nullptr) {
  std::string full = cmd + " 2>/dev/null";
  FILE* p = ::popen(full.c_str(), "r");
  if (!p) return -1;
  std::string s;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) s.append(buf, n);
  int st = ::pclose(p);
  if (out) *out = s;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

std::string Example(const std::string& name) {
  const char* d = std::getenv("AXQC_EXAMPLES_DIR");
  return std::string(d ? d : AXQC_EXAMPLES_PATH) + "/" + name;
}

TEST(Cli, ExitCodesPerVerdict) {
  EXPECT_EQ(Exec(Bin() + " check " + Example("conformant_cnn.onnx")), 0);
  EXPECT_EQ(Exec(Bin() + " check " + Example("broken_weight_per_tensor.onnx")), 1);
  EXPECT_EQ(Exec(Bin() + " check " + Example("float_only.onnx")), 3);
  EXPECT_EQ(Exec(Bin() + " check /nonexistent.onnx"), 2);
  EXPECT_EQ(Exec(Bin() + " check --format yaml " + Example("conformant_cnn.onnx")), 2);
  EXPECT_EQ(Exec(Bin() + " frobnicate"), 2);
  // `axqc check --help` documents them.
  std::string help;
  EXPECT_EQ(Exec(Bin() + " check --help", &help), 0);
  EXPECT_NE(help.find("Exit codes (with several models the worst wins: 4 > 2 > 1 > 3 > 0):"),
            std::string::npos)
      << help;
  EXPECT_NE(help.find("  4  no verdict from the server"), std::string::npos) << help;
  // Several models: the worst wins (input error > non_conformant > not_applicable > ok).
  EXPECT_EQ(
      Exec(Bin() + " check " + Example("conformant_cnn.onnx") + " " + Example("float_only.onnx")),
      3);
  EXPECT_EQ(Exec(Bin() + " check " + Example("float_only.onnx") + " " +
                 Example("broken_missing_qdq.onnx")),
            1);
  TempDir d;
  std::ofstream(d.path() / "empty.onnx").close();
  EXPECT_EQ(Exec(Bin() + " check " + Example("broken_missing_qdq.onnx") + " " +
                 (d.path() / "empty.onnx").string()),
            2);
}

TEST(Cli, JsonOutputAndRules) {
  std::string out;
  ASSERT_EQ(Exec(Bin() + " check --format json " + Example("broken_missing_qdq.onnx"), &out), 1);
  const auto doc = nlohmann::json::parse(out);
  EXPECT_EQ(doc["schema"], "axqc.report/v2");
  ASSERT_EQ(doc["reports"].size(), 1u);
  EXPECT_FALSE(doc.contains("statistics"));
  const auto& j = doc["reports"][0];
  EXPECT_EQ(j["schema"], "axqc.report/v1");
  EXPECT_EQ(j["verdict"], "non_conformant");
  EXPECT_EQ(j["summary"]["by_rule"]["op/output-not-quantized"], 1);
  EXPECT_EQ(j["findings"][0]["nodes"][0], "add");
  ASSERT_EQ(Exec(Bin() + " rules --format json", &out), 0);
  auto rules = nlohmann::json::parse(out);
  EXPECT_EQ(rules["rules"].size(), Rules().size());
  ASSERT_EQ(Exec(Bin() + " --version", &out), 0);
  EXPECT_NE(out.find("axqc 0.1.0"), std::string::npos) << out;
  TempDir d;
  auto file = (d.path() / "r.json").string();
  ASSERT_EQ(
      Exec(Bin() + " check -c --format json -o " + file + " " + Example("conformant_cnn.onnx")), 0);
  std::ifstream in(file);
  auto jr = nlohmann::json::parse(in)["reports"][0];
  EXPECT_EQ(jr["verdict"], "conformant");
  EXPECT_EQ(jr["check_value"], true);
}

// `axqc rules ID...`: one rule's entry and its page (which exists); an unknown ID exits 2 naming
// the closest known one.
TEST(Cli, RulesIdPrintsTheRuleAndItsPage) {
  std::string out;
  ASSERT_EQ(Exec(Bin() + " rules qdq/scale-value", &out), 0);
  EXPECT_EQ(out.rfind("qdq/scale-value  error  spec 3.1\n", 0), 0u) << out;
  EXPECT_NE(out.find("\n  fix: "), std::string::npos) << out;
  EXPECT_NE(out.find("\n  page: docs/rules/qdq--scale-value.md\n"), std::string::npos) << out;
  EXPECT_TRUE(
      std::filesystem::exists(std::string(AXQC_SOURCE_DIR) + "/docs/rules/qdq--scale-value.md"));
  ASSERT_EQ(Exec(Bin() + " rules --format json role/weight-type qdq/scale-value", &out), 0);
  const auto j = nlohmann::json::parse(out);
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["id"], "role/weight-type");
  EXPECT_EQ(j[1]["section"], "3.1");
  ASSERT_EQ(Exec("(" + Bin() + " rules qdq/scale-valu 2>&1)", &out), 2);
  EXPECT_NE(out.find("unknown rule 'qdq/scale-valu' (did you mean 'qdq/scale-value'?)"),
            std::string::npos)
      << out;
  EXPECT_EQ(Exec("(" + Bin() + " rules completely-different-words 2>&1)", &out), 2);
  EXPECT_EQ(out.find("did you mean"), std::string::npos) << out;
}

// The headlines of a text report, in order: "models/b.onnx: NON_CONFORMANT".
std::vector<std::string> Headlines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    for (const char* v : {": CONFORMANT", ": NON_CONFORMANT", ": NOT_APPLICABLE"}) {
      const auto at = line.find(v);
      if (at != std::string::npos && line.find(' ') > at) {
        out.push_back(line.substr(0, line.find(' ', at + 2)));
      }
    }
  }
  return out;
}

// A folder of models: every *.onnx below it, in path order, without following links out of it or
// into loops; --exclude like ruff's; a folder without a model is an input error (exit 2).
TEST(Cli, DirectoryArgumentsAndExclude) {
  TempDir d;
  const fs::path m = d.path() / "models";
  fs::create_directories(m / "sub");
  fs::create_directories(m / "old");
  fs::create_directories(d.path() / "empty");
  fs::copy_file(Example("broken_two_defects.onnx"), m / "b.onnx");
  fs::copy_file(Example("conformant_cnn.onnx"), m / "c.onnx");
  fs::copy_file(Example("float_only.onnx"), m / "old/f.onnx");
  fs::copy_file(Example("broken_missing_qdq.onnx"), m / "sub/a.onnx");
  std::ofstream(m / "notes.txt") << "not a model\n";
  fs::create_directory_symlink("..", m / "sub/loop");                  // a loop: not followed
  fs::create_symlink("../c.onnx", m / "sub/in.onnx");                  // inside: checked
  fs::create_symlink(Example("conformant_cnn.onnx"), m / "out.onnx");  // outside: left out
  const std::string cd = "cd " + d.path().string() + " && " + Bin() + " check --no-config ";
  std::string out;
  EXPECT_EQ(Exec("(" + cd + "models 2>&1)", &out), 1);
  EXPECT_EQ(Headlines(out),
            (std::vector<std::string>{"models/b.onnx: NON_CONFORMANT", "models/c.onnx: CONFORMANT",
                                      "models/old/f.onnx: NOT_APPLICABLE",
                                      "models/sub/a.onnx: NON_CONFORMANT",
                                      "models/sub/in.onnx: CONFORMANT"}))
      << out;
  EXPECT_NE(out.find("axqc: note: models/out.onnx is left out: a symbolic link out of models\n"),
            std::string::npos)
      << out;
  // Excluded: a name anywhere (old), a path relative to the argument (sub/*).
  EXPECT_EQ(Exec(cd + "--exclude old --exclude 'sub/*' models/", &out), 1);
  EXPECT_EQ(Headlines(out), (std::vector<std::string>{"models/b.onnx: NON_CONFORMANT",
                                                      "models/c.onnx: CONFORMANT"}));
  EXPECT_EQ(Exec(cd + "--exclude 'b.*' --exclude sub --exclude old models", &out), 0);
  EXPECT_EQ(Headlines(out), (std::vector<std::string>{"models/c.onnx: CONFORMANT"}));
  // A file given by name is checked even when excluded, and only once.
  EXPECT_EQ(Exec(cd + "--exclude old --exclude sub models models/old/f.onnx models/c.onnx", &out),
            1);
  EXPECT_EQ(Headlines(out),
            (std::vector<std::string>{"models/b.onnx: NON_CONFORMANT", "models/c.onnx: CONFORMANT",
                                      "models/old/f.onnx: NOT_APPLICABLE"}));
  // Nothing to check: exit 2, saying why.
  EXPECT_EQ(Exec("(" + cd + "empty 2>&1)", &out), 2);
  EXPECT_EQ(out, "axqc: empty: no *.onnx file below this directory\n");
  EXPECT_EQ(Exec("(" + cd + "--exclude '*.onnx' models 2>&1)", &out), 2);
  EXPECT_NE(
      out.find("axqc: models: no *.onnx file below this directory that --exclude leaves in\n"),
      std::string::npos)
      << out;
}

// --statistics: findings per rule over the run, most first; --exit-zero: findings and
// not_applicable pass, an unreadable model still fails.
TEST(Cli, StatisticsAndExitZero) {
  const std::string models = Example("broken_two_defects.onnx") + " " +
                             Example("broken_missing_qdq.onnx") + " " + Example("float_only.onnx");
  std::string out;
  EXPECT_EQ(Exec(Bin() + " check --no-config --statistics " + models, &out), 1);
  EXPECT_EQ(
      out,
      "2  op/output-not-quantized  error  A used float data output of a quant-only operator "
      "does not go through Q/DQ.\n"
      "1  role/weight-type         error  Weight is not symmetric S4/S8 per-channel.\n"
      "1  scope/no-quantized-edge  info   No ai.onnx Q/DQ node lies on an operator or pattern "
      "data path and nothing else quantizes the model: not in scope.\n");
  EXPECT_EQ(Exec(Bin() + " check --no-config --statistics " + Example("conformant_cnn.onnx"), &out),
            0);
  EXPECT_EQ(out, "");
  EXPECT_EQ(
      Exec("(" + Bin() + " check --no-config --statistics --format sarif " + models + " 2>&1)",
           &out),
      2);
  EXPECT_EQ(out, "axqc: --statistics takes --format text or json, not sarif\n");
  // --exit-zero: the same report, exit 0.
  std::string plain;
  EXPECT_EQ(Exec(Bin() + " check --no-config " + models, &plain), 1);
  EXPECT_EQ(Exec(Bin() + " check --no-config --exit-zero " + models, &out), 0);
  EXPECT_EQ(out, plain);
  EXPECT_EQ(Exec(Bin() + " check --no-config --exit-zero " + Example("float_only.onnx")), 0);
  EXPECT_EQ(Exec(Bin() + " check --no-config --exit-zero --fail-on warn,not_applicable " +
                 Example("float_only.onnx")),
            0);
  TempDir d;
  std::ofstream(d.path() / "empty.onnx").close();
  EXPECT_EQ(Exec(Bin() + " check --no-config --exit-zero " + models + " " +
                 (d.path() / "empty.onnx").string()),
            2);
  EXPECT_EQ(Exec(Bin() + " check --no-config --exit-zero --frobnicate " + models), 2);
  std::string help;
  EXPECT_EQ(Exec(Bin() + " check --help", &help), 0);
  EXPECT_NE(help.find("With --exit-zero, 1 and 3 become 0; 2 and 4 stay."), std::string::npos);
}

// --select / --ignore: rule IDs, prefixes or globs; the most specific wins; the verdict and exit
// code follow the findings left; unknown rules are usage errors naming the closest one; composed
// with [check] select/ignore of axqc.toml as ruff does (--select replaces, --ignore adds).
TEST(Cli, SelectAndIgnoreRules) {
  const std::string two = Example("broken_two_defects.onnx");
  std::string out;
  EXPECT_EQ(Exec(Bin() + " check --no-config --statistics --select role/weight-type " + two, &out),
            1);
  EXPECT_EQ(out, "1  role/weight-type  error  Weight is not symmetric S4/S8 per-channel.\n");
  // Leaving out both errors: conformant.
  EXPECT_EQ(
      Exec(Bin() + " check --no-config --format json --ignore role/,op/output-not-quantized " + two,
           &out),
      0);
  {
    const auto r = nlohmann::json::parse(out)["reports"][0];
    EXPECT_EQ(r["verdict"], "conformant");
    EXPECT_TRUE(r["findings"].empty());
    EXPECT_EQ(r["summary"]["errors"], 0);
  }
  // The more specific selector wins: select one rule of an ignored prefix.
  EXPECT_EQ(Exec(Bin() +
                     " check --no-config --statistics --ignore op/ --select "
                     "op/output-not-quantized --select role/ " +
                     two,
                 &out),
            1);
  EXPECT_EQ(Headlines(out).size(), 0u);
  EXPECT_NE(out.find("1  op/output-not-quantized  error"), std::string::npos) << out;
  EXPECT_NE(out.find("1  role/weight-type         error"), std::string::npos) << out;
  EXPECT_EQ(
      Exec("(" + Bin() + " check --no-config --select qdq/scale-valu " + two + " 2>&1)", &out), 2);
  EXPECT_EQ(out,
            "axqc: --select: unknown rule 'qdq/scale-valu' (did you mean 'qdq/scale-value'?); "
            "`axqc rules` lists them\n");
  EXPECT_EQ(Exec("(" + Bin() + " check --no-config --ignore op " + two + " 2>&1)", &out), 2);
  EXPECT_EQ(out,
            "axqc: --ignore: unknown rule 'op' (did you mean 'op/'?); `axqc rules` lists them\n");
  // With axqc.toml: its ignore, plus the command line's; --select replaces both.
  TempDir d;
  std::ofstream(d.path() / "axqc.toml")
      << "[check]\nignore = [\"role/\"]\n\n[[waiver]]\nrule = \"role/weight-type\"\n"
         "reason = \"vendor weights\"\n";
  const std::string cfg = " check --config " + (d.path() / "axqc.toml").string() + " ";
  EXPECT_EQ(Exec(Bin() + cfg + "--statistics " + two, &out), 1);
  EXPECT_EQ(out,
            "1  op/output-not-quantized  error  A used float data output of a quant-only operator "
            "does not go through Q/DQ.\n");  // the waiver of an ignored rule is not "unused"
  EXPECT_EQ(Exec(Bin() + cfg + "--statistics --ignore op/ " + two, &out), 0);
  EXPECT_EQ(out, "");
  EXPECT_EQ(Exec(Bin() + cfg + "--statistics --select role/weight-type " + two, &out), 0);
  EXPECT_EQ(out,
            "1  role/weight-type  error  Weight is not symmetric S4/S8 per-channel. (1 waived)\n");
}

// --format json: one document whatever the number of models (schema axqc.report/v2): "reports"
// lists each model's report object, or its input error; --statistics adds "statistics".
TEST(Cli, JsonDocumentHasOneShape) {
  TempDir d;
  std::ofstream(d.path() / "empty.onnx").close();
  const std::string empty = (d.path() / "empty.onnx").string();
  std::string out;
  ASSERT_EQ(
      Exec(Bin() + " check --no-config --format json --statistics " +
               Example("broken_two_defects.onnx") + " " + empty + " " + Example("float_only.onnx"),
           &out),
      2);
  const auto doc = nlohmann::json::parse(out);
  EXPECT_EQ(doc["schema"], "axqc.report/v2");
  ASSERT_EQ(doc["reports"].size(), 3u);
  EXPECT_EQ(doc["reports"][0]["verdict"], "non_conformant");
  EXPECT_EQ(doc["reports"][0]["findings"][0]["rule"], "role/weight-type");
  EXPECT_EQ(doc["reports"][0]["findings"][0]["nodes"][0], "conv1_w_dq");
  EXPECT_TRUE(doc["reports"][1]["verdict"].is_null());
  EXPECT_EQ(doc["reports"][1]["model"]["file"], empty);
  EXPECT_NE(doc["reports"][1]["input_error"].get<std::string>().find("empty.onnx"),
            std::string::npos);
  EXPECT_EQ(doc["reports"][2]["verdict"], "not_applicable");
  const auto& stats = doc["statistics"];
  ASSERT_EQ(stats.size(), 3u) << out;
  EXPECT_EQ(stats[0], nlohmann::json::parse(R"({"rule": "op/output-not-quantized",
      "severity": "error", "count": 1, "waived": 0, "baselined": 0,
      "summary": "A used float data output of a quant-only operator does not go through Q/DQ."})"));
  EXPECT_EQ(stats[1]["rule"], "role/weight-type");
  EXPECT_EQ(stats[2]["rule"], "scope/no-quantized-edge");
  EXPECT_EQ(stats[2]["severity"], "info");
  // Schema first, then the reports.
  EXPECT_EQ(out.rfind("{\n  \"schema\": \"axqc.report/v2\",\n  \"reports\": [\n    {\n", 0), 0u)
      << out.substr(0, 200);
  // One model: the same document with one entry.
  ASSERT_EQ(
      Exec(Bin() + " check --no-config --format json " + Example("conformant_cnn.onnx"), &out), 0);
  const auto one = nlohmann::json::parse(out);
  ASSERT_EQ(one["reports"].size(), 1u);
  EXPECT_EQ(one["reports"][0]["verdict"], "conformant");
  EXPECT_EQ(one["reports"][0]["schema"], "axqc.report/v1");
}

}  // namespace
}  // namespace axqc::test
