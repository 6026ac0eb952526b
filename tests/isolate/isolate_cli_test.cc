// `axqc check --isolate`: the same output and exit code as the in-process check, model by model
// (examples, real exports, a model with external data, a non-model), in every report format.
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "server_test_util.h"

namespace axqc::test {
namespace {

// Runs `cmd`; returns the exit code and stdout (stderr into `err` when given).
int Exec(const std::string& cmd, std::string* out) {
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return -1;
  std::string s;
  char buf[4096];
  std::size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) s.append(buf, n);
  const int st = ::pclose(p);
  *out = s;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

std::string Quote(const std::string& s) { return "'" + s + "'"; }

TEST(IsolateCli, ReportsAndExitCodesAreTheSameAsInProcess) {
  TempDir dir;
  // External data next to the model: the worker opens it read-only.
  ModelBuilder b(17, 10, "g_ext");
  b.Input("x", onnx::TensorProto::FLOAT, {1, 4, 8, 8});
  const std::string x = b.QDQ("x", "x", QParams::U8(0.02f, 128));
  const std::string w =
      b.WeightQDQ("w", {8, 4, 3, 3}, QParams::PerChannel(QType::kS8, ChannelScales(8), 0));
  b.Node("Conv", {x, w}, {"conv_out"}, {}, "conv");
  b.Output(b.QDQ("conv_out", "y", QParams::U8(0.05f, 0)));
  b.SaveWithExternalData((dir / "ext.onnx").string(), "ext.onnx.data", 16);
  ASSERT_TRUE(fs::exists(dir / "ext.onnx.data"));
  WriteFile(dir / "junk.onnx", NotOnnxBytes());

  std::vector<std::string> models = {(dir / "ext.onnx").string(), (dir / "junk.onnx").string()};
  for (const char* name : {"conformant_cnn.onnx", "broken_two_defects.onnx", "float_only.onnx",
                           "broken_missing_qdq.onnx"}) {
    models.push_back(std::string(AXQC_EXAMPLES_PATH) + "/" + name);
  }
  for (const char* name : {"fx_qat_transformer_op13.onnx", "defect_weight_u8_op17.onnx"}) {
    models.push_back(std::string(AXQC_SOURCE_DIR) + "/tests/data/real_exports/" + name);
  }
  int decided = 0;
  for (const auto& model : models) {
    for (const char* format : {"json", "text", "sarif"}) {
      SCOPED_TRACE(model + " " + format);
      const std::string base = std::string(AXQC_BIN_PATH) + " check --no-config --color never " +
                               "-c --format " + format + " " + Quote(model);
      std::string in_process;
      std::string isolated;
      const int rc_in = Exec(base + " 2>/dev/null", &in_process);
      const int rc_iso = Exec(base + " --isolate 2>/dev/null", &isolated);
      EXPECT_EQ(rc_iso, rc_in);
      EXPECT_EQ(isolated, in_process);
      if (std::string(format) == "json" && (rc_in == 0 || rc_in == 1)) ++decided;
    }
  }
  EXPECT_GE(decided, 5);  // the comparison covered real reports, not only errors
  // The error of a non-model names it the same way.
  std::string err_in;
  std::string err_iso;
  const std::string junk =
      std::string(AXQC_BIN_PATH) + " check --no-config " + Quote((dir / "junk.onnx").string());
  EXPECT_EQ(Exec(junk + " 2>&1 >/dev/null", &err_in), 2);
  EXPECT_EQ(Exec(junk + " --isolate 2>&1 >/dev/null", &err_iso), 2);
  EXPECT_EQ(err_iso, err_in);
}

TEST(IsolateCli, AMissingWorkerIsAnError) {
  std::string out;
  const int rc = Exec("AXQC_WORKER_PROGRAM=/nonexistent/axqc-worker " + std::string(AXQC_BIN_PATH) +
                          " check --no-config --isolate " +
                          Quote(std::string(AXQC_EXAMPLES_PATH) + "/conformant_cnn.onnx") + " 2>&1",
                      &out);
  EXPECT_EQ(rc, 2);
  EXPECT_NE(out.find("--isolate: cannot start /nonexistent/axqc-worker"), std::string::npos) << out;
}

}  // namespace
}  // namespace axqc::test
