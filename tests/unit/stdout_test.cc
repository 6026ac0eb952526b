// Machine-readable output is never corrupted: what the ONNX library prints on stdout (the
// checker's "Warning: Model contains experimental ops: ...") becomes an onnx/library-message
// finding and never reaches stdout, in every report format of the axqc binary, and the capture
// is per thread (concurrent checks and other threads' output stay apart).
#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "axqc/version.h"
#include "check_helpers.h"

namespace axqc::test {
namespace {

namespace fs = std::filesystem;

std::string Bin() {
  const char* b = std::getenv("AXQC_BIN");
  return b ? b : AXQC_BIN_PATH;
}

// Runs `cmd` with stderr discarded; returns the exit code and stdout.
int Exec(const std::string& cmd, std::string* out) {
  const std::string full = cmd + " 2>/dev/null";
  FILE* p = ::popen(full.c_str(), "r");
  if (p == nullptr) return -1;
  std::string s;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) s.append(buf, n);
  const int st = ::pclose(p);
  *out = s;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

std::string ReadAll(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// ImageScaler is the experimental op these tests make ONNX warn about. The checker's warning comes
// from its own list of experimental op names, which ONNX 1.17 and 1.22 have and 1.20 had not; the
// linked checker is asked.
bool LibraryHasImageScaler() {
  onnx::NodeProto n;
  n.set_op_type("ImageScaler");
  return onnx::checker::check_is_experimental_op(n);
}
#define REQUIRE_IMAGE_SCALER()                                                          \
  if (!LibraryHasImageScaler()) {                                                       \
    GTEST_SKIP() << "the linked ONNX has no experimental op ImageScaler to warn about"; \
  }

// x -> Q/DQ -> Sigmoid -> Q/DQ -> y, and the experimental op ImageScaler on a second input.
ModelBuilder QuantizedWithImageScaler() {
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {1, 4});
  b.Node("Sigmoid", {b.QDQ("x", "x", QParams::U8())}, {"s"}, {}, "sig");
  b.Output(b.QDQ("s", "y", QParams::U8(0.004f, 0)));
  b.Input("img", TP::FLOAT, {1, 3, 4, 4});
  b.Node("ImageScaler", {"img"}, {"scaled"}, {ModelBuilder::AttrF("scale", 0.5f)}, "scaler");
  b.Output("scaled", TP::FLOAT, {1, 3, 4, 4});
  return b.AutoValueInfo(false);
}

// A float model at opset 9 with only ImageScaler (not_applicable).
ModelBuilder FloatImageScalerOpset9() {
  ModelBuilder b(9, 4);
  b.Input("img", TP::FLOAT, {1, 3, 4, 4});
  b.Node("ImageScaler", {"img"}, {"scaled"}, {ModelBuilder::AttrF("scale", 0.5f)}, "scaler");
  b.Output("scaled", TP::FLOAT, {1, 3, 4, 4});
  return b.AutoValueInfo(false);
}

void ExpectLibraryMessage(const Report& r) {
  const auto f = Find(r, "onnx/library-message");
  ASSERT_EQ(f.size(), 1u) << Dump(r);
  EXPECT_NE(f[0]->message.find("Warning: Model contains experimental ops: ImageScaler"),
            std::string::npos)
      << f[0]->message;
  EXPECT_EQ(f[0]->severity, Severity::kInfo);
}

TEST(LibraryOutput, ExperimentalOpWarningIsAnInfoFinding) {
  REQUIRE_IMAGE_SCALER();
  auto r = RunCheck(QuantizedWithImageScaler());
  ExpectLibraryMessage(r);
  EXPECT_FINDING(r, "closure/uncovered-node", "scaler", "ImageScaler");
  EXPECT_EQ(r.verdict, Verdict::kNonConformant) << Dump(r);
  auto f = RunCheck(FloatImageScalerOpset9());
  ExpectLibraryMessage(f);
  EXPECT_EQ(f.verdict, Verdict::kNotApplicable) << Dump(f);
}

// Every format, to stdout and with -o FILE: stdout is exactly the report (and empty with -o).
TEST(LibraryOutput, StdoutIsExactlyTheReportInEveryFormat) {
  REQUIRE_IMAGE_SCALER();
  const fs::path dir = fs::temp_directory_path() / ("axqc-stdout-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const auto quantized = (dir / "quantized_image_scaler.onnx").string();
  const auto float9 = (dir / "float_image_scaler_opset9.onnx").string();
  QuantizedWithImageScaler().Save(quantized);
  FloatImageScalerOpset9().Save(float9);
  for (const auto& [model, code] : {std::pair{quantized, 1}, std::pair{float9, 3}}) {
    for (const std::string format : {"text", "json", "junit", "sarif", "github"}) {
      SCOPED_TRACE(model + " " + format);
      std::string out;
      ASSERT_EQ(Exec(Bin() + " check --format " + format + " " + model, &out), code);
      // ONNX's own line would start with "Warning:"; in a report the text is quoted inside.
      EXPECT_EQ(out.find("\nWarning:"), std::string::npos) << out;
      EXPECT_NE(out.rfind("Warning:", 0), 0u) << out;
      const auto file = dir / ("report." + format);
      std::string quiet;
      ASSERT_EQ(
          Exec(Bin() + " check --format " + format + " -o " + file.string() + " " + model, &quiet),
          code);
      EXPECT_EQ(quiet, "") << "stdout with -o FILE";
      EXPECT_EQ(ReadAll(file), out) << "stdout differs from the -o FILE report";
      if (format == "json") {
        const auto j = nlohmann::json::parse(out).at("reports").at(0);
        EXPECT_EQ(j["summary"]["by_rule"]["onnx/library-message"], 1) << out;
      } else if (format == "sarif") {
        const auto j = nlohmann::json::parse(out);
        bool found = false;
        for (const auto& res : j["runs"][0]["results"]) {
          found |= res["ruleId"] == "onnx/library-message";
        }
        EXPECT_TRUE(found) << out;
      } else if (format == "junit") {
        EXPECT_EQ(out.rfind("<?xml", 0), 0u) << out;
        EXPECT_NE(out.find("experimental ops: ImageScaler"), std::string::npos) << out;
      } else if (format == "github") {
        std::istringstream lines(out);
        for (std::string line; std::getline(lines, line);) {
          EXPECT_TRUE(line.rfind("::", 0) == 0 || line.rfind("axqc: ", 0) == 0) << line;
        }
        EXPECT_NE(out.find("::notice"), std::string::npos) << out;
      } else {
        EXPECT_EQ(out.rfind(model + ": ", 0), 0u) << out;
        EXPECT_NE(out.find("onnx/library-message"), std::string::npos) << out;
      }
    }
  }
  fs::remove_all(dir);
}

// Concurrent checks (as in the service) each get exactly their own message, and another thread's
// writes to std::cout during the checks reach std::cout, not a report.
TEST(LibraryOutput, CaptureIsPerThread) {
  REQUIRE_IMAGE_SCALER();
  static std::ostringstream sink;  // outlives the stream buffers that forward to it
  std::streambuf* const original = std::cout.rdbuf(sink.rdbuf());
  const std::string bytes = QuantizedWithImageScaler().Serialize();
  std::vector<Report> reports(4);
  {
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < reports.size(); ++i) {
      threads.emplace_back([&, i] {
        for (int k = 0; k < 5; ++k) reports[i] = CheckBytes(bytes, "t.onnx", {});
      });
    }
    std::thread writer([] {
      for (int k = 0; k < 200; ++k) std::cout << "marker " << k << "\n";
      std::cout.flush();
    });
    for (auto& t : threads) t.join();
    writer.join();
  }
  std::cout.rdbuf(original);
  for (const auto& r : reports) {
    ExpectLibraryMessage(r);
    for (const auto& f : r.findings) {
      EXPECT_EQ(f.message.find("marker"), std::string::npos) << f.message;
    }
  }
  const std::string written = sink.str();
  EXPECT_NE(written.find("marker 0\n"), std::string::npos);
  EXPECT_NE(written.find("marker 199\n"), std::string::npos);
  EXPECT_EQ(written.find("Warning"), std::string::npos) << written;
}

}  // namespace
}  // namespace axqc::test
