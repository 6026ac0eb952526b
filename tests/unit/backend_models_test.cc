// Robustness over the ONNX backend test models (onnx/backend/test/data of the ONNX source tree):
// every model.onnx is checked in both check_value modes. An InputError (not an ONNX protobuf,
// unreadable external data) is an accepted outcome and is counted; any other exception is a
// failure, and a crash fails the test binary. Directory: env AXQC_ONNX_TEST_DATA (set by ctest
// from the CMake cache, which scripts/env.sh fills with the source tree of the linked ONNX), else
// the ONNX 1.17.0 source tree under /opt/axqc-deps.
// Set AXQC_BACKEND_VERBOSE=1 to print one line per model and mode.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "axqc/checker.h"

namespace axqc::test {
namespace {

namespace fs = std::filesystem;

constexpr const char* kDefaultDir = "/opt/axqc-deps/src/onnx-1.17.0/onnx/backend/test/data";

fs::path DataDir() {
  const char* e = std::getenv("AXQC_ONNX_TEST_DATA");
  return (e != nullptr && *e != '\0') ? fs::path(e) : fs::path(kDefaultDir);
}

// Outcome of one model in one mode.
struct Outcome {
  bool input_error = false;
  bool other_exception = false;
  std::string error;                 // exception text
  Verdict verdict = Verdict::kNotApplicable;
  std::map<std::string, std::size_t> by_rule;
};

struct ModelResult {
  std::string rel;     // e.g. "node/test_relu"
  Outcome mode[2];     // [check_value off, on]
  Outcome truncated;   // CheckBytes on the first half of the file
  Outcome corrupted;   // CheckBytes on the file with every 61st byte flipped
};

struct Corpus {
  bool present = false;
  std::vector<ModelResult> models;
  double seconds = 0;
  const ModelResult* Get(const std::string& rel) const {
    for (const auto& m : models) {
      if (m.rel == rel) return &m;
    }
    return nullptr;
  }
};

template <typename F>
Outcome Guard(F&& check) {
  Outcome o;
  try {
    auto r = check();
    o.verdict = r.verdict;
    o.by_rule = r.summary.by_rule;
  } catch (const InputError& e) {
    o.input_error = true;
    o.error = e.what();
  } catch (const std::exception& e) {
    o.other_exception = true;
    o.error = e.what();
  } catch (...) {
    o.other_exception = true;
    o.error = "non-std exception";
  }
  return o;
}

Outcome CheckOne(const fs::path& file, bool check_value) {
  CheckOptions opt;
  opt.check_value = check_value;
  return Guard([&] { return CheckFile(file.string(), opt); });
}

std::string ReadAll(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

Outcome CheckMemory(const std::string& bytes, const std::string& name) {
  CheckOptions opt;
  opt.check_value = true;
  return Guard([&] { return CheckBytes(bytes, name, opt); });
}

std::string Label(const Outcome& o) {
  if (o.input_error) return "input_error";
  if (o.other_exception) return "exception: " + o.error;
  return std::string(VerdictName(o.verdict));
}

// Runs the whole corpus once per process; the tests below share the results.
const Corpus& RunCorpus() {
  static const Corpus corpus = [] {
    Corpus c;
    const fs::path dir = DataDir();
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) return c;
    c.present = true;
    std::vector<fs::path> files;
    for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec)) {
      if (it->is_regular_file(ec) && it->path().filename() == "model.onnx") files.push_back(it->path());
    }
    std::sort(files.begin(), files.end());
    const bool verbose = std::getenv("AXQC_BACKEND_VERBOSE") != nullptr;
    const auto t0 = std::chrono::steady_clock::now();
    for (const auto& f : files) {
      ModelResult m;
      m.rel = fs::relative(f.parent_path(), dir).generic_string();
      for (int cv = 0; cv < 2; ++cv) {
        m.mode[cv] = CheckOne(f, cv == 1);
        if (verbose) {
          const auto& o = m.mode[cv];
          std::cout << (cv ? "cv " : "   ") << m.rel << " "
                    << (o.input_error ? "input_error" : o.other_exception ? "EXCEPTION" : VerdictName(o.verdict));
          for (const auto& [rule, n] : o.by_rule) std::cout << " " << rule << "=" << n;
          if (!o.error.empty()) std::cout << " :: " << o.error;
          std::cout << "\n";
        }
      }
      // Damaged copies through the in-memory entry point: an input error or a verdict, never a
      // crash or another exception.
      const std::string bytes = ReadAll(f);
      m.truncated = CheckMemory(bytes.substr(0, bytes.size() / 2), m.rel + " (truncated)");
      std::string bad = bytes;
      for (std::size_t i = 7; i < bad.size(); i += 61) bad[i] = static_cast<char>(bad[i] ^ 0x5a);
      m.corrupted = CheckMemory(bad, m.rel + " (corrupted)");
      if (verbose) {
        std::cout << "tr " << m.rel << " " << Label(m.truncated) << "\n"
                  << "co " << m.rel << " " << Label(m.corrupted) << "\n";
      }
      c.models.push_back(std::move(m));
    }
    c.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return c;
  }();
  return corpus;
}

#define REQUIRE_CORPUS(c)                                                              \
  const auto& c = RunCorpus();                                                             \
  if (!c.present) GTEST_SKIP() << "no ONNX backend test data at " << DataDir().string()

TEST(BackendModels, EveryModelGetsAVerdictOrAnInputError) {
  REQUIRE_CORPUS(c);
  EXPECT_GE(c.models.size(), 1400u) << "expected a full ONNX backend corpus (1428 models in 1.17, more in 1.20)";
  for (int cv = 0; cv < 2; ++cv) {
    std::size_t conf = 0, nonconf = 0, na = 0, input_errors = 0, other = 0;
    for (const auto& m : c.models) {
      const auto& o = m.mode[cv];
      if (o.other_exception) {
        ++other;
        ADD_FAILURE() << m.rel << " (check_value=" << cv << "): unexpected exception: " << o.error;
      } else if (o.input_error) {
        ++input_errors;
      } else if (o.verdict == Verdict::kConformant) {
        ++conf;
      } else if (o.verdict == Verdict::kNonConformant) {
        ++nonconf;
      } else {
        ++na;
      }
    }
    EXPECT_EQ(conf + nonconf + na + input_errors + other, c.models.size());
    EXPECT_EQ(other, 0u);
    const std::string p = cv ? "check_value_" : "";
    std::cout << "[backend] check_value=" << (cv ? "on " : "off") << ": " << c.models.size()
              << " models, conformant " << conf << ", non_conformant " << nonconf
              << ", not_applicable " << na << ", input errors " << input_errors << "\n";
    RecordProperty(p + "models", static_cast<int>(c.models.size()));
    RecordProperty(p + "conformant", static_cast<int>(conf));
    RecordProperty(p + "non_conformant", static_cast<int>(nonconf));
    RecordProperty(p + "not_applicable", static_cast<int>(na));
    RecordProperty(p + "input_errors", static_cast<int>(input_errors));
  }
  std::cout << "[backend] " << c.models.size() << " models x 2 modes in " << c.seconds << " s\n";
  RecordProperty("seconds", std::to_string(c.seconds));
}

// A model is an input error in one mode iff it is in the other: check_value changes findings,
// never whether the file loads.
TEST(BackendModels, InputErrorsDoNotDependOnCheckValue) {
  REQUIRE_CORPUS(c);
  for (const auto& m : c.models) {
    EXPECT_EQ(m.mode[0].input_error, m.mode[1].input_error) << m.rel;
  }
}

// check_value only adds [cv] findings: warn, info, and the one [cv] error onnx/value-info-missing.
// So a verdict can only change from conformant to non_conformant through that rule, and
// not_applicable (decided by ownership, not values) never changes.
TEST(BackendModels, CheckValueOnlyAddsCvFindings) {
  REQUIRE_CORPUS(c);
  for (const auto& m : c.models) {
    const auto& off = m.mode[0];
    const auto& on = m.mode[1];
    if (off.input_error || off.other_exception || on.input_error || on.other_exception) continue;
    EXPECT_EQ(off.verdict == Verdict::kNotApplicable, on.verdict == Verdict::kNotApplicable)
        << m.rel << ": " << Label(off) << " vs " << Label(on);
    if (off.verdict != on.verdict) {
      EXPECT_EQ(off.verdict, Verdict::kConformant) << m.rel;
      EXPECT_TRUE(on.by_rule.contains("onnx/value-info-missing")) << m.rel;
    }
    for (const auto& [rule, n] : off.by_rule) {
      auto it = on.by_rule.find(rule);
      EXPECT_TRUE(it != on.by_rule.end() && it->second == n)
          << m.rel << ": " << rule << " x" << n << " without check_value but "
          << (it == on.by_rule.end() ? 0 : it->second) << " with it";
    }
  }
}

// Plain float single-operator models are out of scope (2.1).
TEST(BackendModels, FloatModelsAreNotApplicable) {
  REQUIRE_CORPUS(c);
  for (const char* rel : {"node/test_relu", "node/test_conv_with_strides_padding", "node/test_sigmoid",
                          "node/test_lstm_defaults", "node/test_shape", "node/test_einsum_batch_matmul",
                          "simple/test_gradient_of_add"}) {
    const auto* m = c.Get(rel);
    ASSERT_NE(m, nullptr) << rel << " missing from the corpus";
    for (int cv = 0; cv < 2; ++cv) {
      EXPECT_EQ(Label(m->mode[cv]), "not_applicable") << rel << " check_value=" << cv;
      EXPECT_TRUE(m->mode[cv].by_rule.contains("scope/no-quantized-edge")) << rel;
    }
  }
}

// Models quantized by other means than ai.onnx Q/DQ (RULES.md reading 11): QOperator operators
// (QLinearConv, QLinearMatMul, ConvInteger, MatMulInteger) and DynamicQuantizeLinear. The
// *_expanded variants of DynamicQuantizeLinear compute the parameters with float operators and
// quantize a graph input straight into a graph output: their one Q lies on no operator's data
// path, so they are out of scope.
bool QuantizedOtherwise(const std::string& rel) {
  if (rel.ends_with("_expanded")) return false;
  for (const char* p : {"node/test_qlinear", "node/test_dynamicquantizelinear",
                        "node/test_convinteger", "node/test_matmulinteger"}) {
    if (rel.rfind(p, 0) == 0) return true;
  }
  return false;
}

// The QDQ-ish backend models get a verdict without crashing. The plain Q/DQ ones have their Q/DQ
// between graph inputs and outputs, on no operator's data path: not_applicable. The QLinear* and
// DynamicQuantizeLinear ones quantize by other means: in scope and non_conformant (reading 11),
// with the quantizing node named as closure/uncovered-node.
TEST(BackendModels, QdqStyleModelsGetAVerdict) {
  REQUIRE_CORPUS(c);
  std::size_t seen = 0;
  for (const auto& m : c.models) {
    const bool qdqish = m.rel.find("quantizelinear") != std::string::npos ||
                        m.rel.find("qlinear") != std::string::npos;
    if (!qdqish) continue;
    ++seen;
    for (int cv = 0; cv < 2; ++cv) {
      EXPECT_FALSE(m.mode[cv].other_exception) << m.rel << ": " << m.mode[cv].error;
      EXPECT_FALSE(m.mode[cv].input_error) << m.rel << ": " << m.mode[cv].error;
      if (QuantizedOtherwise(m.rel)) {
        EXPECT_EQ(Label(m.mode[cv]), "non_conformant") << m.rel << " check_value=" << cv;
        EXPECT_TRUE(m.mode[cv].by_rule.contains("closure/uncovered-node")) << m.rel;
      } else {
        EXPECT_EQ(Label(m.mode[cv]), "not_applicable") << m.rel << " check_value=" << cv;
      }
    }
  }
  EXPECT_GE(seen, 36u) << "node/test_{quantize,dequantize,dynamicquantize}linear*, test_qlinear*";
}

// Realism facts of the ONNX 1.17 corpus: every file is an ONNX protobuf (no input errors), and
// none is an Axera QDQ model, so nothing is conformant. The only non_conformant models are the
// ones quantized by other means (reading 11), each reported through closure/uncovered-node and
// nothing else. Unquantized models are not_applicable even when they fail ONNX validation, which
// is still reported; at the time of writing that is node/test_mvn alone, whose
// MeanVarianceNormalization function body fails the ONNX library's strict shape inference.
TEST(BackendModels, CorpusFacts) {
  REQUIRE_CORPUS(c);
  const std::set<std::string> known_invalid = {"node/test_mvn"};
  std::size_t invalid = 0, otherwise = 0;
  for (const auto& m : c.models) {
    for (int cv = 0; cv < 2; ++cv) {
      const auto& o = m.mode[cv];
      EXPECT_FALSE(o.input_error) << m.rel << ": " << o.error;
      EXPECT_NE(o.verdict, Verdict::kConformant) << m.rel;
      EXPECT_EQ(o.verdict == Verdict::kNonConformant, QuantizedOtherwise(m.rel))
          << m.rel << ": " << Label(o);
      if (o.verdict == Verdict::kNonConformant) {
        for (const auto& [rule, n] : o.by_rule) {
          EXPECT_TRUE(rule == "closure/uncovered-node" || rule == "onnx/value-info-missing")
              << m.rel << " " << rule;
        }
        if (cv == 0) ++otherwise;
      }
      if (o.by_rule.contains("onnx/invalid-model")) {
        EXPECT_TRUE(known_invalid.contains(m.rel)) << m.rel << " newly fails ONNX validation";
        EXPECT_EQ(o.verdict, Verdict::kNotApplicable) << m.rel;
        if (cv == 0) ++invalid;
      }
    }
  }
  std::cout << "[backend] models failing ONNX validation: " << invalid
            << "; quantized by other means than ai.onnx Q/DQ: " << otherwise << "\n";
}

TEST(BackendModels, DamagedCopiesAreInputErrorsOrVerdicts) {
  REQUIRE_CORPUS(c);
  std::size_t truncated_errors = 0, corrupted_errors = 0;
  for (const auto& m : c.models) {
    EXPECT_FALSE(m.truncated.other_exception) << m.rel << " truncated: " << m.truncated.error;
    EXPECT_FALSE(m.corrupted.other_exception) << m.rel << " corrupted: " << m.corrupted.error;
    truncated_errors += m.truncated.input_error;
    corrupted_errors += m.corrupted.input_error;
  }
  std::cout << "[backend] damaged copies rejected as input errors: truncated " << truncated_errors
            << ", corrupted " << corrupted_errors << " of " << c.models.size() << "\n";
  // Half a protobuf almost never parses.
  EXPECT_GT(truncated_errors, c.models.size() / 2);
}

// Specific models.
TEST(BackendModels, SpecificModels) {
  REQUIRE_CORPUS(c);
  for (const char* rel :
       {"node/test_quantizelinear", "node/test_dequantizelinear",
        "node/test_quantizelinear_blocked_asymmetric", "node/test_dequantizelinear_e4m3fn",
        "node/test_mvn_expanded", "node/test_mvn"}) {
    const auto* m = c.Get(rel);
    ASSERT_NE(m, nullptr) << rel;
    for (int cv = 0; cv < 2; ++cv) EXPECT_EQ(Label(m->mode[cv]), "not_applicable") << rel << " check_value=" << cv;
  }
  for (const char* rel : {"node/test_qlinearconv", "node/test_qlinearmatmul_2D_uint8_float32",
                          "node/test_dynamicquantizelinear", "node/test_convinteger_with_padding",
                          "node/test_matmulinteger"}) {
    const auto* m = c.Get(rel);
    ASSERT_NE(m, nullptr) << rel;
    for (int cv = 0; cv < 2; ++cv) {
      EXPECT_EQ(Label(m->mode[cv]), "non_conformant") << rel << " check_value=" << cv;
      EXPECT_EQ(m->mode[cv].by_rule.at("closure/uncovered-node"), 1u) << rel;
    }
  }
}

}  // namespace
}  // namespace axqc::test
