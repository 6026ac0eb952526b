// External data of in-memory models (CheckOptions::external_data): the same reports as the path
// check of the same files, the same rules on locations and byte ranges, and the location scan
// servers use to learn which files a model names.
#include "axqc/external_data.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "check_helpers.h"

namespace axqc::test {
namespace {

namespace fs = std::filesystem;

// Moves the float values of initializer `name` out of the model into `blob` (appended at the
// blob's end) and points the tensor at `location`.
void Externalize(onnx::ModelProto& m, const std::string& name, const std::string& location,
                 std::string* blob) {
  for (auto& t : *m.mutable_graph()->mutable_initializer()) {
    if (t.name() != name) continue;
    std::string bytes = t.raw_data();
    if (bytes.empty()) {
      for (float f : t.float_data()) {
        char b[4];
        std::memcpy(b, &f, 4);
        bytes.append(b, 4);
      }
    }
    ASSERT_FALSE(bytes.empty()) << name;
    const std::size_t offset = blob->size();
    blob->append(bytes);
    t.clear_raw_data();
    t.clear_float_data();
    t.set_data_location(TP::EXTERNAL);
    auto add = [&](const std::string& k, const std::string& v) {
      auto* e = t.add_external_data();
      e->set_key(k);
      e->set_value(v);
    };
    add("location", location);
    add("offset", std::to_string(offset));
    add("length", std::to_string(bytes.size()));
    return;
  }
  FAIL() << "no initializer " << name;
}

struct ExternalModel {
  std::string model;  // serialized
  std::string blob;   // weights.bin
};

// The Conv block with its weight and weight scales in "weights.bin"; `scale` scales the weight
// scales (a non-positive factor makes qdq/scale-value fire: a finding only the data file shows).
ExternalModel MakeExternal(float scale = 1.0f, const std::string& location = "weights.bin") {
  ConvOpts o;
  std::vector<float> s = Scales(o.cout);
  for (auto& v : s) v *= scale;
  o.w = QParams::PerChannel(QType::kS8, s, 0);
  auto m = ConvModel(o).Build();
  ExternalModel out;
  Externalize(m, "w", location, &out.blob);
  for (const auto& t : m.graph().initializer()) {
    if (t.data_type() == TP::FLOAT && t.name() != "w" && t.name().find("w_") == 0 &&
        t.name().find("scale") != std::string::npos) {
      Externalize(m, t.name(), location, &out.blob);
      break;
    }
  }
  out.model = m.SerializeAsString();
  return out;
}

std::string MemError(const std::string& model, const ExternalData* files) {
  try {
    CheckOptions o;
    o.external_data = files;
    CheckBytes(model, "m.onnx", o);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() / ("axqc-extdata-" + std::to_string(::getpid()));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

void WriteFile(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary);
  out << bytes;
}

std::vector<std::string> RulesOf(const Report& r) {
  std::vector<std::string> out;
  for (const auto& f : r.findings) out.push_back(f.rule + ": " + f.message);
  return out;
}

TEST(ExternalDataInMemory, SameReportAsThePathCheck) {
  for (float scale : {1.0f, 0.0f, -1.0f}) {
    const auto em = MakeExternal(scale);
    TempDir d;
    WriteFile(d.path() / "m.onnx", em.model);
    WriteFile(d.path() / "weights.bin", em.blob);
    const Report by_path = CheckFile((d.path() / "m.onnx").string(), {});
    ExternalDataMap files;
    files.Add("weights.bin", em.blob);
    CheckOptions o;
    o.external_data = &files;
    const Report in_memory = CheckBytes(em.model, "m.onnx", o);
    EXPECT_EQ(in_memory.verdict, by_path.verdict) << Dump(in_memory);
    EXPECT_EQ(RulesOf(in_memory), RulesOf(by_path));
    if (scale > 0) {
      EXPECT_EQ(in_memory.verdict, Verdict::kConformant) << Dump(in_memory);
    } else {
      EXPECT_TRUE(Has(in_memory, "qdq/scale-value")) << Dump(in_memory);
    }
  }
}

TEST(ExternalDataInMemory, DescriptorFilesReadLikeMemory) {
  const auto em = MakeExternal(-1.0f);
  TempDir d;
  WriteFile(d.path() / "weights.bin", em.blob);
  const int fd = ::open((d.path() / "weights.bin").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ExternalDataFds files;
  files.Add("./weights.bin", fd, em.blob.size());
  CheckOptions o;
  o.external_data = &files;
  const Report r = CheckBytes(em.model, "m.onnx", o);
  ::close(fd);
  EXPECT_TRUE(Has(r, "qdq/scale-value")) << Dump(r);
}

TEST(ExternalDataInMemory, WithoutTheFilesIsAnInputError) {
  const auto em = MakeExternal();
  EXPECT_NE(MemError(em.model, nullptr).find("without their data files"), std::string::npos);
}

TEST(ExternalDataInMemory, HostileLocationsOffsetsAndFiles) {
  const auto em = MakeExternal();
  ExternalDataMap good;
  good.Add("weights.bin", em.blob);
  // Hostile locations written into the model: each is refused before anything is read.
  const std::vector<std::pair<std::string, std::string>> locations = {
      {"../weights.bin", "contains '..'"},
      {"/etc/passwd", "absolute path"},
      {"sub/../weights.bin", "contains '..'"},
      {"missing.bin", "is not among the data files sent with the model"},
      {std::string("weights.bin\0x", 13), "control character"},
      {"a\\b", "backslash"},
  };
  for (const auto& [loc, why] : locations) {
    const auto bad = MakeExternal(1.0f, loc);
    const std::string err = MemError(bad.model, &good);
    EXPECT_NE(err.find("external data of tensor"), std::string::npos) << loc << ": " << err;
    EXPECT_NE(err.find(why), std::string::npos) << loc << ": " << err;
  }
  // A data file shorter than the offsets say.
  ExternalDataMap short_file;
  short_file.Add("weights.bin", std::string_view(em.blob).substr(0, em.blob.size() - 4));
  EXPECT_NE(MemError(em.model, &short_file).find("past the end of 'weights.bin'"),
            std::string::npos);
  // A file nobody refers to.
  ExternalDataMap extra;
  extra.Add("weights.bin", em.blob);
  extra.Add("unused.bin", "x");
  EXPECT_NE(MemError(em.model, &extra).find("'unused.bin' was sent with the model but no tensor"),
            std::string::npos);
  // "./weights.bin" and "weights.bin" are the same file.
  const auto dotted = MakeExternal(1.0f, "./weights.bin");
  EXPECT_EQ(MemError(dotted.model, &good), "");
}

// A clone without Git LFS: the model or its data file is the pointer text. The input error says
// so and how to get the file, through the path check and from memory.
TEST(GitLfsPointer, ModelAndDataFilePointersSayToRunGitLfsPull) {
  const std::string oid = "sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393";
  const std::string pointer =
      "version https://git-lfs.github.com/spec/v1\noid " + oid + "\nsize 12345678\n";
  TempDir d;
  WriteFile(d.path() / "model.onnx", pointer);
  std::string err;
  try {
    CheckFile((d.path() / "model.onnx").string(), CheckOptions{});
  } catch (const InputError& e) {
    err = e.what();
  }
  EXPECT_NE(err.find("model.onnx: a Git LFS pointer file, not the file itself (the real file is "
                     "12345678 bytes, sha256:4d7a214614ab...)"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("run `git lfs pull`"), std::string::npos) << err;
  EXPECT_NE(MemError(pointer, nullptr).find("a Git LFS pointer file"), std::string::npos);
  // The model is real, its data file a pointer.
  const auto em = MakeExternal();
  WriteFile(d.path() / "real.onnx", em.model);
  WriteFile(d.path() / "weights.bin", pointer);
  err.clear();
  try {
    CheckFile((d.path() / "real.onnx").string(), CheckOptions{});
  } catch (const InputError& e) {
    err = e.what();
  }
  EXPECT_NE(err.find("lies past the end of 'weights.bin' (" + std::to_string(pointer.size()) +
                     " bytes); the file is a Git LFS pointer file"),
            std::string::npos)
      << err;
  // Text that only looks like one is not a pointer: the usual parse error.
  for (const std::string& other : std::vector<std::string>{
           "version https://git-lfs.github.com/spec/v1\nsize 12\n",           // no oid
           "version https://example.com/spec/v1\noid " + oid + "\nsize 1\n",  // other spec
           "version https://git-lfs.github.com/spec/v1\noid " + oid + "\nsize 1x\n",
           "version https://git-lfs.github.com/spec/v1\noid sha256:abc\nsize 1\n"}) {
    const std::string e = MemError(other, nullptr);
    EXPECT_EQ(e.find("Git LFS"), std::string::npos) << e;
    EXPECT_NE(e.find("not an ONNX model"), std::string::npos) << e;
  }
}

TEST(ExternalDataInMemory, NamesAreValidated) {
  ExternalDataMap files;
  const std::vector<std::string> bads = {"",
                                         "/abs",
                                         "../x",
                                         "a/../b",
                                         ".",
                                         "./",
                                         std::string("a\0b", 3),
                                         std::string(kMaxExternalDataNameBytes + 1, 'a'),
                                         "a\nb"};
  for (const auto& bad : bads) {
    EXPECT_THROW(files.Add(bad, "x"), std::invalid_argument) << bad;
  }
  files.Add("a//b/./c", "x");
  EXPECT_EQ(files.name(0), "a/b/c");
  EXPECT_THROW(files.Add("a/b/c", "y"), std::invalid_argument);
  for (std::size_t i = 1; i < kMaxExternalDataFiles; ++i) files.Add("f" + std::to_string(i), "");
  EXPECT_THROW(files.Add("one-too-many", ""), std::invalid_argument);
}

TEST(ExternalRanges, MergeMissingAndProblems) {
  std::vector<ExternalRange> r = {{10, 5}, {0, 4}, {4, 2}, {12, 10}, {30, 0}};
  MergeRanges(r);
  EXPECT_EQ(r, (std::vector<ExternalRange>{{0, 6}, {10, 12}}));
  EXPECT_EQ(RangesMissing({{0, 30}}, r), (std::vector<ExternalRange>{{6, 4}, {22, 8}}));
  EXPECT_TRUE(RangesMissing(r, {{0, 100}}).empty());
  EXPECT_EQ(RangesMissing({{5, 10}}, {}), (std::vector<ExternalRange>{{5, 10}}));
  EXPECT_EQ(RangesProblem({{0, 4}, {5, 1}}, 6), "");
  EXPECT_NE(RangesProblem({{0, 4}, {4, 1}}, 6).find("touches"), std::string::npos);
  EXPECT_NE(RangesProblem({{2, 4}, {0, 1}}, 6).find("out of order"), std::string::npos);
  EXPECT_NE(RangesProblem({{0, 0}}, 6).find("is empty"), std::string::npos);
  EXPECT_NE(RangesProblem({{~0ull, 2}}, 6).find("past the end"), std::string::npos);
  EXPECT_NE(RangesProblem({{4, ~0ull}}, 6).find("past the end"), std::string::npos);
}

// The checker records what it reads of the data files; the key of those bytes is the same from a
// copy of the file holding only them, and changes with them.
TEST(ExternalRanges, RecordedReadsAndTheirKey) {
  const auto em = MakeExternal(-1.0f);
  ExternalDataMap files;
  files.Add("weights.bin", em.blob);
  CheckOptions o;
  o.external_data = &files;
  const Report r = CheckBytes(em.model, "m.onnx", o);
  ASSERT_EQ(r.external_reads.size(), 1u);
  EXPECT_EQ(r.external_reads[0].name, "weights.bin");
  EXPECT_EQ(r.external_reads[0].size, em.blob.size());
  ASSERT_FALSE(r.external_reads[0].ranges.empty());
  std::uint64_t read = 0;
  for (const auto& range : r.external_reads[0].ranges) read += range.length;
  EXPECT_LT(read, em.blob.size());  // the weights themselves are not read
  std::string error;
  const std::string key = ExternalReadKey(std::string(64, 'a'), r.external_reads, files, &error);
  ASSERT_EQ(key.size(), 64u) << error;
  // Only the bytes read, the rest zeros: the same key and the same report.
  std::string partial(em.blob.size(), '\0');
  for (const auto& range : r.external_reads[0].ranges) {
    partial.replace(range.offset, range.length, em.blob.substr(range.offset, range.length));
  }
  ExternalDataMap sparse;
  sparse.Add("weights.bin", partial);
  o.external_data = &sparse;
  const Report again = CheckBytes(em.model, "m.onnx", o);
  EXPECT_EQ(again.external_reads, r.external_reads);
  EXPECT_EQ(RulesOf(again), RulesOf(r));
  EXPECT_EQ(ExternalReadKey(std::string(64, 'a'), again.external_reads, sparse, &error), key);
  // Another byte inside a range read: another key.
  partial[r.external_reads[0].ranges[0].offset] ^= 1;
  ExternalDataMap changed;
  changed.Add("weights.bin", partial);
  EXPECT_NE(ExternalReadKey(std::string(64, 'a'), r.external_reads, changed, &error), key);
  // A range outside the file is an error, not a key.
  std::vector<ExternalFileRanges> outside = {
      {"weights.bin", em.blob.size(), {{em.blob.size(), 1}}}};
  EXPECT_EQ(ExternalReadKey(std::string(64, 'a'), outside, files, &error), "");
  EXPECT_NE(error.find("outside"), std::string::npos);
}

TEST(ExternalDataLocations, ScansTheWireFormat) {
  const auto em = MakeExternal();
  EXPECT_EQ(ExternalDataLocations(em.model), std::vector<std::string>{"weights.bin"});
  // Two files, one named twice; a tensor with external_data entries but no EXTERNAL location
  // is not external.
  auto m = ConvModel().Build();
  std::string b1, b2;
  Externalize(m, "w", "a.bin", &b1);
  auto* t = m.mutable_graph()->add_initializer();
  t->set_name("odd");
  t->set_data_type(TP::FLOAT);
  auto* e = t->add_external_data();
  e->set_key("location");
  e->set_value("not-external.bin");
  for (auto& init : *m.mutable_graph()->mutable_initializer()) {
    if (init.name().find("scale") != std::string::npos && init.data_type() == TP::FLOAT) {
      Externalize(m, init.name(), "b.bin", &b2);
    }
  }
  auto locs = ExternalDataLocations(m.SerializeAsString());  // in order of first appearance
  std::sort(locs.begin(), locs.end());
  EXPECT_EQ(locs, (std::vector<std::string>{"a.bin", "b.bin"}));
  bool more = false;
  EXPECT_EQ(ExternalDataLocations(m.SerializeAsString(), 1, &more).size(), 1u);
  EXPECT_TRUE(more);
  // Garbage and truncated input end the scan without a crash.
  EXPECT_TRUE(ExternalDataLocations("\xff\xff\xff\xff").empty());
  const std::string s = m.SerializeAsString();
  for (std::size_t n = 0; n < s.size(); n += 7) (void)ExternalDataLocations(s.substr(0, n));
}

}  // namespace
}  // namespace axqc::test
