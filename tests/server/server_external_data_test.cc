// Models with external data through the service's doors, with the real axqc-server binary and its
// worker processes (--isolation process, the default): a path reference with the data files beside
// the model, and an Upload of the model with its data files in one stream. Each door keeps the
// rules of the command line (relative locations inside the model's folder, no links out, offsets
// and lengths inside the file) and adds its own (declared sizes and sha256, no unreferenced file,
// max-external-data-bytes).
#include <google/protobuf/util/message_differencer.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>

#include "axqc/wire/report_proto.h"
#include "http_stub.h"
#include "server_test_util.h"

extern char** environ;

namespace axqc::test {
namespace {

using google::protobuf::util::MessageDifferencer;

class ServerProcess {
 public:
  ServerProcess(const std::vector<std::string>& args, const fs::path& stderr_path) {
    std::vector<std::string> argv_s = {AXQC_SERVER_BIN};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_s;
    for (char** e = environ; *e != nullptr; ++e) {
      if (std::string(*e).rfind("AXQC_", 0) != 0) env_s.emplace_back(*e);
    }
    std::vector<char*> envp;
    for (auto& e : env_s) envp.push_back(e.data());
    envp.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 2, stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    const int rc = posix_spawn(&pid_, AXQC_SERVER_BIN, &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) throw std::runtime_error("posix_spawn failed");
  }
  ~ServerProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }

 private:
  pid_t pid_ = -1;
};

// One real server per test suite: root dir/models, data files under dir/data, 64 KiB of data
// files per model at most.
class ExternalDataServer : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    fs::create_directories(*dir_ / "models");
    fs::create_directories(*dir_ / "data");
    const fs::path ready = *dir_ / "ready.json";
    proc_ = new ServerProcess({"--listen",
                               "127.0.0.1:0",
                               "--metrics-listen",
                               "",
                               "--ready-file",
                               ready.string(),
                               "--allowed-root",
                               (*dir_ / "models").string(),
                               "--store-path",
                               ":memory:",
                               "--workers",
                               "1",
                               "--http-listen",
                               "127.0.0.1:0",
                               "--url-allow-host",
                               "127.0.0.1",
                               "--max-external-data-bytes",
                               "64KiB",
                               "--data-file-dir",
                               (*dir_ / "data").string()},
                              *dir_ / "stderr.log");
    ASSERT_TRUE(WaitFor([&] { return fs::exists(ready); }, std::chrono::seconds(30)))
        << ReadFile(*dir_ / "stderr.log");
    const auto ports = nlohmann::json::parse(ReadFile(ready));
    const int port = ports.at("grpc_port");
    http_port_ = ports.at("http_port");
    channel_ = new std::shared_ptr<grpc::Channel>(grpc::CreateChannel(
        "127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials()));
  }
  static void TearDownTestSuite() {
    delete channel_;
    delete proc_;
    delete dir_;
  }
  std::unique_ptr<v1::Checker::Stub> Stub() { return v1::Checker::NewStub(*channel_); }
  static const TempDir& Dir() { return *dir_; }

  static inline TempDir* dir_ = nullptr;
  static inline ServerProcess* proc_ = nullptr;
  static inline std::shared_ptr<grpc::Channel>* channel_ = nullptr;
  static inline int http_port_ = 0;
};

// A ustar member header for `name` (regular file unless `type` says otherwise) and its contents,
// padded to 512-byte blocks.
std::string TarMember(const std::string& name, const std::string& bytes, char type = '0') {
  std::string h(512, '\0');
  h.replace(0, std::min<std::size_t>(name.size(), 100), name.substr(0, 100));
  auto octal = [&](std::size_t at, std::size_t width, std::uint64_t v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%0*llo", static_cast<int>(width - 1),
                  static_cast<unsigned long long>(v));
    h.replace(at, width - 1, buf);
  };
  octal(100, 8, 0644);
  octal(108, 8, 0);
  octal(116, 8, 0);
  octal(124, 12, bytes.size());
  octal(136, 12, 0);
  h[156] = type;
  h.replace(257, 6, std::string("ustar\0", 6));
  h.replace(263, 2, "00");
  h.replace(148, 8, "        ");
  unsigned sum = 0;
  for (char c : h) sum += static_cast<unsigned char>(c);
  char buf[8];
  std::snprintf(buf, sizeof buf, "%06o", sum);
  h.replace(148, 7, std::string(buf, 6) + '\0');
  std::string out = h + bytes;
  out.append((512 - bytes.size() % 512) % 512, '\0');
  return out;
}
std::string TarEnd() { return std::string(1024, '\0'); }

// One POST of `body` as `type` (HttpCall of server_test_util.h, arguments in this file's order).
HttpAnswer HttpPost(int port, const std::string& target, const std::string& type,
                    const std::string& body) {
  return HttpCall(port, "POST", target, body, type);
}

bool HasRule(const v1::CheckResponse& r, const std::string& rule) {
  for (const auto& f : r.report().findings()) {
    if (f.rule() == rule) return true;
  }
  return false;
}

#define EXPECT_STATUS(status, code, text)                                              \
  do {                                                                                 \
    const grpc::Status s_ = (status);                                                  \
    EXPECT_EQ(s_.error_code(), code) << s_.error_message();                            \
    EXPECT_NE(s_.error_message().find(text), std::string::npos) << s_.error_message(); \
  } while (0)

// ------------------------------------------------------------------------------------------------
// Path references.

TEST_F(ExternalDataServer, PathWithDataFilesBesideTheModel) {
  auto stub = Stub();
  const auto good = MakeExternalDataModel("path-good");
  WriteFile(Dir() / "models/good/model.onnx", good.model);
  WriteFile(Dir() / "models/good/weights.bin", good.data);
  v1::CheckResponse resp;
  grpc::Status s = CheckPath(*stub, (Dir() / "models/good/model.onnx").string(), &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp.verdict(), v1::VERDICT_CONFORMANT);
  EXPECT_EQ(resp.sha256(), ReadKey(good.model, {{"weights.bin", good.data}}));
  EXPECT_EQ(resp.report().model().sha256(), resp.sha256());

  // A zero weight scale lives only in the data file: the worker read it.
  const auto bad = MakeExternalDataModel("path-bad", 0.0f, "sub/./w.bin");
  WriteFile(Dir() / "models/bad/model.onnx", bad.model);
  WriteFile(Dir() / "models/bad/sub/w.bin", bad.data);
  s = CheckPath(*stub, (Dir() / "models/bad/model.onnx").string(), &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp.verdict(), v1::VERDICT_NON_CONFORMANT);
  EXPECT_TRUE(HasRule(resp, "qdq/scale-value")) << resp.report().DebugString();
  EXPECT_EQ(resp.sha256(), ReadKey(bad.model, {{"sub/w.bin", bad.data}}));

  // The same bytes again: the cached report of the same bundle.
  s = CheckPath(*stub, (Dir() / "models/bad/model.onnx").string(), &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_NE(resp.cache(), v1::CACHE_RESULT_MISS);
  // A changed data file is another bundle: checked again, with its own verdict.
  WriteFile(Dir() / "models/bad/sub/w.bin", good.data);
  s = CheckPath(*stub, (Dir() / "models/bad/model.onnx").string(), &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp.cache(), v1::CACHE_RESULT_MISS);
  EXPECT_EQ(resp.verdict(), v1::VERDICT_CONFORMANT);
}

TEST_F(ExternalDataServer, PathRefusesHostileLocationsAndRanges) {
  auto stub = Stub();
  WriteFile(Dir() / "models/secret.bin", std::string(4096, 's'));
  struct Case {
    std::string location;
    grpc::StatusCode code;
    std::string text;
  };
  const std::vector<Case> cases = {
      {"../secret.bin", grpc::StatusCode::INVALID_ARGUMENT, "contains '..'"},
      {"/etc/passwd", grpc::StatusCode::INVALID_ARGUMENT, "is an absolute path"},
      {"missing.bin", grpc::StatusCode::NOT_FOUND, "does not exist beside the model"},
      {"link.bin", grpc::StatusCode::PERMISSION_DENIED, "symbolic link"},
      {"linkdir/w.bin", grpc::StatusCode::PERMISSION_DENIED, "symbolic link"},
  };
  int n = 0;
  for (const auto& c : cases) {
    const auto m = MakeExternalDataModel("hostile-" + std::to_string(n), 1.0f, c.location);
    const fs::path d = Dir() / "models" / ("hostile" + std::to_string(n++));
    WriteFile(d / "model.onnx", m.model);
    fs::create_symlink(Dir() / "models/secret.bin", d / "link.bin");
    fs::create_directory_symlink(Dir() / "models", d / "linkdir");
    v1::CheckResponse resp;
    EXPECT_STATUS(CheckPath(*stub, (d / "model.onnx").string(), &resp), c.code, c.text);
  }
  // Offsets past the end of the file.
  const auto m = MakeExternalDataModel("short");
  WriteFile(Dir() / "models/short/model.onnx", m.model);
  WriteFile(Dir() / "models/short/weights.bin", m.data.substr(0, m.data.size() - 1));
  v1::CheckResponse resp;
  EXPECT_STATUS(CheckPath(*stub, (Dir() / "models/short/model.onnx").string(), &resp),
                grpc::StatusCode::INVALID_ARGUMENT, "past the end of 'weights.bin'");
  // Data files over max-external-data-bytes (64 KiB).
  WriteFile(Dir() / "models/big/model.onnx", MakeExternalDataModel("big").model);
  WriteFile(Dir() / "models/big/weights.bin", std::string(65 * 1024, '\0'));
  EXPECT_STATUS(CheckPath(*stub, (Dir() / "models/big/model.onnx").string(), &resp),
                grpc::StatusCode::RESOURCE_EXHAUSTED, "max-external-data-bytes");
}

// ------------------------------------------------------------------------------------------------
// Upload of a model and its data files in one stream.

TEST_F(ExternalDataServer, UploadWithDataFiles) {
  auto stub = Stub();
  const auto bad = MakeExternalDataModel("upload-bad", -1.0f);
  v1::CheckResponse resp;
  grpc::Status s = UploadWithData(*stub, bad.model, {{"weights.bin", bad.data}}, &resp, 100);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp.verdict(), v1::VERDICT_NON_CONFORMANT);
  EXPECT_TRUE(HasRule(resp, "qdq/scale-value")) << resp.report().DebugString();
  EXPECT_EQ(resp.sha256(), ReadKey(bad.model, {{"weights.bin", bad.data}}));

  // The same bundle by path: the same key, the upload's report.
  WriteFile(Dir() / "models/upl/model.onnx", bad.model);
  WriteFile(Dir() / "models/upl/weights.bin", bad.data);
  v1::CheckResponse by_path;
  s = CheckPath(*stub, (Dir() / "models/upl/model.onnx").string(), &by_path);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(by_path.sha256(), resp.sha256());
  EXPECT_NE(by_path.cache(), v1::CACHE_RESULT_MISS);

  // Two data files, interleaved (the all-zero one is stored sparse).
  auto two = MakeExternalDataModel("upload-two");
  onnx::ModelProto mp;
  ASSERT_TRUE(mp.ParseFromString(two.model));
  for (auto& t : *mp.mutable_graph()->mutable_initializer()) {
    if (t.name() != "w") continue;
    for (auto& kv : *t.mutable_external_data()) {
      if (kv.key() == "location") kv.set_value("zeros.bin");
      if (kv.key() == "offset") kv.set_value("0");
    }
  }
  std::size_t wlen = 8 * 4 * 3 * 3 * 4;
  const std::string zeros(wlen, '\0');
  // w_scale stays in weights.bin (after w's bytes).
  s = UploadWithData(*stub, mp.SerializeAsString(),
                     {{"weights.bin", two.data}, {"zeros.bin", zeros}}, &resp, 64);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp.verdict(), v1::VERDICT_CONFORMANT);

  // An old client's Upload (no data files) of a model without external data is unchanged.
  const std::string plain = ConformantModel("upload-plain");
  s = Upload(*stub, plain, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp.sha256(), Sha256Hex(plain));
}

TEST_F(ExternalDataServer, UploadRefusesHostileNamesSizesAndHashes) {
  auto stub = Stub();
  const auto m = MakeExternalDataModel("upload-hostile");
  v1::CheckResponse resp;
  const std::string other(16, 'x');
  // Names refused in the metadata, before any byte is stored.
  for (const auto& [name, why] : std::vector<std::pair<std::string, std::string>>{
           {"../x", "contains '..'"},
           {"/etc/passwd", "is an absolute path"},
           {"a\\b", "backslash"},
           {"", "is empty"},
           {std::string("w\0.bin", 6), "control character"}}) {
    EXPECT_STATUS(UploadWithData(*stub, m.model, {{name, m.data}}, &resp),
                  grpc::StatusCode::INVALID_ARGUMENT, why);
  }
  EXPECT_STATUS(
      UploadWithData(*stub, m.model, {{"weights.bin", m.data}, {"./weights.bin", other}}, &resp),
      grpc::StatusCode::INVALID_ARGUMENT, "listed twice");
  // The model's own hostile location: the checker's rule, as on the command line.
  const auto up = MakeExternalDataModel("upload-up", 1.0f, "../weights.bin");
  EXPECT_STATUS(UploadWithData(*stub, up.model, {{"weights.bin", up.data}}, &resp),
                grpc::StatusCode::INVALID_ARGUMENT, "contains '..'");
  const auto abs = MakeExternalDataModel("upload-abs", 1.0f, "/etc/passwd");
  EXPECT_STATUS(UploadWithData(*stub, abs.model, {{"weights.bin", abs.data}}, &resp),
                grpc::StatusCode::INVALID_ARGUMENT, "is an absolute path");
  // A missing file, a file nobody names, offsets past the end.
  EXPECT_STATUS(UploadWithData(*stub, m.model, {}, &resp), grpc::StatusCode::INVALID_ARGUMENT,
                "without their data files");
  EXPECT_STATUS(UploadWithData(*stub, m.model, {{"other.bin", other}}, &resp),
                grpc::StatusCode::INVALID_ARGUMENT, "not among the data files sent");
  EXPECT_STATUS(
      UploadWithData(*stub, m.model, {{"weights.bin", m.data}, {"extra.bin", other}}, &resp),
      grpc::StatusCode::INVALID_ARGUMENT, "'extra.bin' was sent with the model but");
  EXPECT_STATUS(UploadWithData(*stub, m.model, {{"weights.bin", m.data.substr(0, 100)}}, &resp),
                grpc::StatusCode::INVALID_ARGUMENT, "past the end of 'weights.bin'");
  // Declared sizes and hashes are verified.
  DataFileArg wrong_hash{"weights.bin", m.data, std::nullopt, std::string(64, 'a'), std::nullopt};
  EXPECT_STATUS(UploadWithData(*stub, m.model, {wrong_hash}, &resp),
                grpc::StatusCode::INVALID_ARGUMENT, "sha256 mismatch for data file 'weights.bin'");
  DataFileArg bad_hex{"weights.bin", m.data, std::nullopt, "ABC", std::nullopt};
  EXPECT_STATUS(UploadWithData(*stub, m.model, {bad_hex}, &resp),
                grpc::StatusCode::INVALID_ARGUMENT, "64 lowercase hex");
  DataFileArg longer{"weights.bin", m.data, m.data.size() + 10, "", std::nullopt};
  EXPECT_STATUS(UploadWithData(*stub, m.model, {longer}, &resp), grpc::StatusCode::INVALID_ARGUMENT,
                "declared size_bytes");
  DataFileArg shorter{"weights.bin", m.data, m.data.size() - 10, "", std::nullopt};
  EXPECT_STATUS(UploadWithData(*stub, m.model, {shorter}, &resp),
                grpc::StatusCode::INVALID_ARGUMENT, "than its declared size_bytes");
  DataFileArg bad_index{"weights.bin", m.data, std::nullopt, "", 7};
  EXPECT_STATUS(UploadWithData(*stub, m.model, {bad_index}, &resp),
                grpc::StatusCode::INVALID_ARGUMENT, "is not an index into metadata.data_files");
  // Over max-external-data-bytes (64 KiB): refused at the metadata.
  DataFileArg huge{"weights.bin", m.data, 1ull << 40, "", std::nullopt};
  EXPECT_STATUS(UploadWithData(*stub, m.model, {huge}, &resp), grpc::StatusCode::RESOURCE_EXHAUSTED,
                "max-external-data-bytes");
  // Too many files.
  std::vector<DataFileArg> many;
  for (int i = 0; i < 33; ++i) many.emplace_back("f" + std::to_string(i), "x");
  EXPECT_STATUS(UploadWithData(*stub, m.model, many, &resp), grpc::StatusCode::INVALID_ARGUMENT,
                "at most 32");
  // Nothing is left behind in the data file directory (unlinked files).
  EXPECT_TRUE(fs::is_empty(Dir() / "data"));
}

// ------------------------------------------------------------------------------------------------
// Ranged uploads (UploadMetadata.ranged_data): the graph file and only the bytes the check reads.

struct RangedFile {
  RangedFile(std::string n, std::string b, std::vector<std::pair<std::uint64_t, std::uint64_t>> r)
      : name(std::move(n)), bytes(std::move(b)), ranges(std::move(r)) {}
  std::string name;
  std::string bytes;  // the whole file (the test sends the ranges' bytes of it)
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;  // offset, length
  std::optional<std::uint64_t> size;                            // declared; default bytes.size()
  std::int64_t extra_bytes = 0;  // bytes sent after (> 0) or withheld from (< 0) the ranges'
  std::string sha256;            // declared (refused in a ranged upload)
};

grpc::Status UploadRanged(v1::Checker::Stub& stub, const std::string& model,
                          const std::vector<RangedFile>& files, v1::CheckResponse* resp,
                          bool check_value = false, std::uint64_t* sent = nullptr) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  resp->Clear();
  auto writer = stub.Upload(&ctx, resp);
  v1::UploadRequest first;
  auto* m = first.mutable_metadata();
  m->set_file_name("model.onnx");
  m->set_size_bytes(model.size());
  m->set_ranged_data(true);
  m->mutable_options()->set_check_value(check_value);
  for (const auto& f : files) {
    auto* d = m->add_data_files();
    d->set_name(f.name);
    d->set_size_bytes(f.size.value_or(f.bytes.size()));
    d->set_sha256(f.sha256);
    for (const auto& [o, l] : f.ranges) {
      auto* r = d->add_ranges();
      r->set_offset(o);
      r->set_length(l);
    }
  }
  bool ok = writer->Write(first);
  v1::UploadRequest chunk;
  chunk.set_chunk(model);
  ok = ok && writer->Write(chunk);
  std::uint64_t total = model.size();
  for (std::size_t i = 0; ok && i < files.size(); ++i) {
    std::string bytes;
    for (const auto& [o, l] : files[i].ranges) {
      bytes += files[i].bytes.substr(std::min<std::size_t>(o, files[i].bytes.size()), l);
    }
    if (files[i].extra_bytes > 0) bytes.append(static_cast<std::size_t>(files[i].extra_bytes), 'x');
    if (files[i].extra_bytes < 0) {
      bytes.resize(bytes.size() - std::min<std::size_t>(bytes.size(), -files[i].extra_bytes));
    }
    // In pieces of 7 bytes: pieces cross the ranges' boundaries.
    for (std::size_t off = 0; ok && off < bytes.size(); off += 7) {
      v1::UploadRequest msg;
      msg.mutable_data_chunk()->set_file(static_cast<std::uint32_t>(i));
      msg.mutable_data_chunk()->set_data(bytes.substr(off, 7));
      ok = writer->Write(msg);
    }
    total += bytes.size();
  }
  if (sent != nullptr) *sent = total;
  writer->WritesDone();
  return writer->Finish();
}

// The ranges the server names for `name` in a response.
std::vector<std::pair<std::uint64_t, std::uint64_t>> Named(const v1::CheckResponse& r,
                                                           const std::string& name) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
  for (const auto& f : r.external_ranges()) {
    if (f.name() != name) continue;
    for (const auto& b : f.ranges()) out.emplace_back(b.offset(), b.length());
  }
  return out;
}

TEST_F(ExternalDataServer, RangedUploadSendsOnlyWhatTheCheckReads) {
  auto stub = Stub();
  // A zero weight scale lives only in the data file, after the weights.
  const auto bad = MakeExternalDataModel("ranged-bad", 0.0f);
  v1::CheckResponse need;
  std::uint64_t sent = 0;
  grpc::Status s = UploadRanged(*stub, bad.model, {{"weights.bin", bad.data, {}}}, &need);
  ASSERT_TRUE(s.ok()) << s.error_message();
  // No report: the ranges of the data file the check reads (w_scale, not the weights).
  EXPECT_FALSE(need.has_report());
  ASSERT_EQ(need.external_ranges_size(), 1);
  EXPECT_EQ(need.external_ranges(0).name(), "weights.bin");
  EXPECT_EQ(need.external_ranges(0).size_bytes(), bad.data.size());
  const auto ranges = Named(need, "weights.bin");
  ASSERT_FALSE(ranges.empty());
  std::uint64_t wanted = 0;
  for (const auto& [o, l] : ranges) wanted += l;
  EXPECT_LT(wanted, bad.data.size() / 4);
  EXPECT_EQ(ranges.back().first + ranges.back().second, bad.data.size());  // w_scale is last

  v1::CheckResponse ranged;
  s = UploadRanged(*stub, bad.model, {{"weights.bin", bad.data, ranges}}, &ranged, false, &sent);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(ranged.external_ranges_size(), 0);
  EXPECT_EQ(ranged.verdict(), v1::VERDICT_NON_CONFORMANT);
  EXPECT_TRUE(HasRule(ranged, "qdq/scale-value")) << ranged.report().DebugString();
  EXPECT_EQ(ranged.cache(), v1::CACHE_RESULT_MISS);
  EXPECT_EQ(sent, bad.model.size() + wanted);
  EXPECT_EQ(ranged.report().model().sha256(), ranged.sha256());
  EXPECT_NE(ranged.sha256(), Sha256Hex(bad.model));
  EXPECT_EQ(ranged.report().external_reads_size(), 0);

  // The full upload of the same model: the same key and the same report (checked again: its
  // request key is the bundle's, the report's is the bytes it read).
  v1::CheckResponse full;
  s = UploadWithData(*stub, bad.model, {{"weights.bin", bad.data}}, &full);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(full.cache(), v1::CACHE_RESULT_MISS);
  EXPECT_EQ(full.sha256(), ranged.sha256());
  EXPECT_TRUE(MessageDifferencer::Equals(full.report(), ranged.report()))
      << full.report().DebugString() << "\n---\n"
      << ranged.report().DebugString();
  // The report equals the command line's on the same files (but for the key).
  WriteFile(Dir() / "models/ranged/model.onnx", bad.model);
  WriteFile(Dir() / "models/ranged/weights.bin", bad.data);
  CheckOptions local_options;
  Report local = CheckFile((Dir() / "models/ranged/model.onnx").string(), local_options);
  local.model.file = "model.onnx";
  local.model.sha256 = ranged.sha256();
  v1::Report local_proto = wire::ToProto(local);
  v1::Report ranged_report = ranged.report();
  ranged_report.clear_graph();
  local_proto.clear_graph();
  EXPECT_TRUE(MessageDifferencer::Equals(local_proto, ranged_report))
      << local_proto.DebugString() << "\n---\n"
      << ranged_report.DebugString();
  // By path: the same key, from the cache.
  v1::CheckResponse by_path;
  s = CheckPath(*stub, (Dir() / "models/ranged/model.onnx").string(), &by_path);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(by_path.sha256(), ranged.sha256());

  // The other way round: a model uploaded whole first; its ranged upload is a cache hit.
  const auto good = MakeExternalDataModel("ranged-good");
  s = UploadWithData(*stub, good.model, {{"weights.bin", good.data}}, &full, 100);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(full.verdict(), v1::VERDICT_CONFORMANT);
  s = UploadRanged(*stub, good.model, {{"weights.bin", good.data, {}}}, &need);
  ASSERT_TRUE(s.ok()) << s.error_message();
  s = UploadRanged(*stub, good.model, {{"weights.bin", good.data, Named(need, "weights.bin")}},
                   &ranged);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(ranged.cache(), v1::CACHE_RESULT_MEMORY_HIT);
  EXPECT_EQ(ranged.sha256(), full.sha256());
  EXPECT_TRUE(MessageDifferencer::Equals(full.report(), ranged.report()));

  // check_value (-c) reads what its rules need; the keys still agree with a full upload.
  s = UploadRanged(*stub, good.model, {{"weights.bin", good.data, {}}}, &need, true);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(need.external_ranges_size(), 1);
  s = UploadRanged(*stub, good.model, {{"weights.bin", good.data, Named(need, "weights.bin")}},
                   &ranged, true);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_TRUE(ranged.has_report());
  EXPECT_TRUE(ranged.report().check_value());
  v1::CheckResponse full_cv;
  {
    grpc::ClientContext ctx;
    auto writer = stub->Upload(&ctx, &full_cv);
    v1::UploadRequest first;
    auto* m = first.mutable_metadata();
    m->set_file_name("model.onnx");
    m->mutable_options()->set_check_value(true);
    auto* d = m->add_data_files();
    d->set_name("weights.bin");
    d->set_size_bytes(good.data.size());
    d->set_sha256(Sha256Hex(good.data));
    v1::UploadRequest chunk;
    chunk.set_chunk(good.model);
    v1::UploadRequest data;
    data.mutable_data_chunk()->set_data(good.data);
    ASSERT_TRUE(writer->Write(first) && writer->Write(chunk) && writer->Write(data));
    writer->WritesDone();
    s = writer->Finish();
  }
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(full_cv.sha256(), ranged.sha256());
  EXPECT_TRUE(MessageDifferencer::Equals(full_cv.report(), ranged.report()));
  EXPECT_TRUE(fs::is_empty(Dir() / "data"));
}

TEST_F(ExternalDataServer, RangedUploadRefusesWrongShortAndOverlappingRanges) {
  auto stub = Stub();
  const auto m = MakeExternalDataModel("ranged-hostile");
  v1::CheckResponse need;
  ASSERT_TRUE(UploadRanged(*stub, m.model, {{"weights.bin", m.data, {}}}, &need).ok());
  const auto ranges = Named(need, "weights.bin");
  ASSERT_FALSE(ranges.empty());
  const std::uint64_t size = m.data.size();
  const auto [o, l] = ranges.front();
  v1::CheckResponse resp;
  using Ranges = std::vector<std::pair<std::uint64_t, std::uint64_t>>;
  struct Case {
    Ranges ranges;
    std::string text;
  };
  // Malformed lists: refused at the metadata, before any byte is stored.
  for (const auto& c : std::vector<Case>{
           {{{0, 8}, {4, 8}}, "range 1 (offset 4, length 8) is out of order, overlaps"},
           {{{8, 8}, {0, 4}}, "out of order"},
           {{{0, 8}, {8, 8}}, "touches the range before it"},
           {{{0, 0}}, "range 0 (offset 0, length 0) is empty"},
           {{{size - 4, 8}}, "lies past the end of the file"},
           {{{~0ull - 2, 8}}, "lies past the end of the file"},
       }) {
    EXPECT_STATUS(UploadRanged(*stub, m.model, {{"weights.bin", m.data, c.ranges}}, &resp),
                  grpc::StatusCode::INVALID_ARGUMENT, c.text);
  }
  // Fewer or more bytes than the ranges hold.
  RangedFile short_file{"weights.bin", m.data, ranges};
  short_file.extra_bytes = -1;
  EXPECT_STATUS(UploadRanged(*stub, m.model, {short_file}, &resp),
                grpc::StatusCode::INVALID_ARGUMENT, "its ranges hold");
  RangedFile long_file{"weights.bin", m.data, ranges};
  long_file.extra_bytes = 1;
  EXPECT_STATUS(UploadRanged(*stub, m.model, {long_file}, &resp),
                grpc::StatusCode::INVALID_ARGUMENT, "than its ranges hold");
  // Bytes the check does not read: refused, never a report keyed by them.
  Ranges more = ranges;
  if (o >= 2) more.insert(more.begin(), {0, 1});
  ASSERT_GT(more.size(), ranges.size());
  EXPECT_STATUS(UploadRanged(*stub, m.model, {{"weights.bin", m.data, more}}, &resp),
                grpc::StatusCode::INVALID_ARGUMENT, "that the check does not read");
  // Part of what it reads: OK without a report, the ranges to send (not the model's fault).
  Ranges part = ranges;
  part.front().second = l - 1;
  ASSERT_TRUE(UploadRanged(*stub, m.model, {{"weights.bin", m.data, part}}, &resp).ok());
  EXPECT_FALSE(resp.has_report());
  EXPECT_EQ(Named(resp, "weights.bin"), ranges);
  // A declared hash, ranges without ranged_data, a file size past the model's offsets.
  RangedFile hashed{"weights.bin", m.data, ranges};
  hashed.sha256 = Sha256Hex(m.data);
  EXPECT_STATUS(UploadRanged(*stub, m.model, {hashed}, &resp), grpc::StatusCode::INVALID_ARGUMENT,
                "must be empty in a ranged upload");
  v1::CheckResponse plain;
  {
    grpc::ClientContext ctx;
    auto writer = stub->Upload(&ctx, &plain);
    v1::UploadRequest first;
    auto* d = first.mutable_metadata()->add_data_files();
    d->set_name("weights.bin");
    d->set_size_bytes(size);
    d->set_sha256(Sha256Hex(m.data));
    d->add_ranges()->set_length(4);
    ASSERT_TRUE(writer->Write(first));
    writer->WritesDone();
    EXPECT_STATUS(writer->Finish(), grpc::StatusCode::INVALID_ARGUMENT,
                  "ranges is set, but metadata.ranged_data is not");
  }
  // A declared size shorter than the model's offsets: the model's own error, as on the command
  // line.
  RangedFile small{"weights.bin", m.data, {}};
  small.size = size - 1;
  EXPECT_STATUS(UploadRanged(*stub, m.model, {small}, &resp), grpc::StatusCode::INVALID_ARGUMENT,
                "past the end of 'weights.bin'");
  // Bytes sent over max-external-data-bytes (64 KiB); a huge sparse size is fine by itself.
  RangedFile huge{"weights.bin", m.data, {{0, 65 * 1024}}};
  huge.size = 1ull << 40;
  EXPECT_STATUS(UploadRanged(*stub, m.model, {huge}, &resp), grpc::StatusCode::RESOURCE_EXHAUSTED,
                "max-external-data-bytes");
  // Too many ranges.
  Ranges many;
  for (std::uint64_t i = 0; i < 65537; ++i) many.emplace_back(2 * i, 1);
  RangedFile lots{"weights.bin", m.data, many};
  lots.size = 1ull << 20;
  EXPECT_STATUS(UploadRanged(*stub, m.model, {lots}, &resp), grpc::StatusCode::INVALID_ARGUMENT,
                "more than 65536 ranges");
  // And the server still answers the right ranges.
  v1::CheckResponse ok;
  ASSERT_TRUE(UploadRanged(*stub, m.model, {{"weights.bin", m.data, ranges}}, &ok).ok());
  EXPECT_EQ(ok.verdict(), v1::VERDICT_CONFORMANT);
  EXPECT_TRUE(fs::is_empty(Dir() / "data"));
}

// ------------------------------------------------------------------------------------------------
// HTTP: POST /v1/check with a tar stream of the model and its data files.

TEST_F(ExternalDataServer, HttpTarUpload) {
  const auto bad = MakeExternalDataModel("http-bad", 0.0f, "w/weights.bin");
  // The model in a folder of the archive, its data file below that folder, a directory entry.
  HttpAnswer a = HttpPost(http_port_, "/v1/check", "application/x-tar",
                          TarMember("m/", "", '5') + TarMember("m/model.onnx", bad.model) +
                              TarMember("m/w/weights.bin", bad.data) + TarEnd());
  ASSERT_EQ(a.status, 200) << a.head << a.body;
  EXPECT_EQ(a.Header("X-Axqc-Verdict"), "non_conformant") << a.head;
  EXPECT_EQ(a.Header("X-Axqc-Sha256"), ReadKey(bad.model, {{"w/weights.bin", bad.data}}));
  const auto report = nlohmann::json::parse(a.body);
  EXPECT_EQ(report.at("model").at("file"), "model.onnx");
  bool scale_value = false;
  for (const auto& f : report.at("findings")) scale_value |= f.at("rule") == "qdq/scale-value";
  EXPECT_TRUE(scale_value) << a.body;

  // The same over gRPC: one bundle, one key.
  auto stub = Stub();
  v1::CheckResponse resp;
  ASSERT_TRUE(UploadWithData(*stub, bad.model, {{"w/weights.bin", bad.data}}, &resp).ok());
  EXPECT_EQ(resp.sha256(), a.Header("X-Axqc-Sha256"));
  EXPECT_NE(resp.cache(), v1::CACHE_RESULT_MISS);

  auto expect_400 = [&](const std::string& body, const std::string& text) {
    const HttpAnswer r = HttpPost(http_port_, "/v1/check", "application/x-tar", body);
    EXPECT_EQ(r.status, 400) << r.head << r.body;
    EXPECT_NE(r.body.find(text), std::string::npos) << r.body;
  };
  const auto m = MakeExternalDataModel("http-hostile");
  // Members outside the model's folder, hostile names, links, pax headers, truncation.
  expect_400(TarMember("m/model.onnx", m.model) + TarMember("weights.bin", m.data) + TarEnd(),
             "is not below the model's folder");
  expect_400(TarMember("model.onnx", m.model) + TarMember("../weights.bin", m.data) + TarEnd(),
             "contains '..'");
  expect_400(TarMember("model.onnx", m.model) + TarMember("/etc/passwd", m.data) + TarEnd(),
             "is an absolute path");
  expect_400(TarMember("model.onnx", m.model) + TarMember("weights.bin", "", '2') + TarEnd(),
             "only regular files");
  expect_400(TarMember("model.onnx", m.model) + TarMember("pax", "x", 'x') + TarEnd(),
             "ustar format");
  expect_400((TarMember("model.onnx", m.model) + TarMember("weights.bin", m.data))
                 .substr(0, 512 + m.model.size() + 700),
             "truncated archive");
  std::string corrupt = TarMember("model.onnx", m.model);
  corrupt[0] = 'X';
  expect_400(corrupt + TarEnd(), "checksum");
  // The checker's rules, as for the other doors.
  expect_400(TarMember("model.onnx", m.model) + TarEnd(), "without their data files");
  expect_400(TarMember("model.onnx", m.model) + TarMember("weights.bin", m.data) +
                 TarMember("extra.bin", "x") + TarEnd(),
             "'extra.bin' was sent with the model but");
  expect_400(
      TarMember("model.onnx", m.model) + TarMember("weights.bin", m.data.substr(0, 64)) + TarEnd(),
      "past the end of 'weights.bin'");
  // Over max-external-data-bytes: 413.
  const HttpAnswer big =
      HttpPost(http_port_, "/v1/check", "application/x-tar",
               TarMember("model.onnx", m.model) +
                   TarMember("weights.bin", std::string(65 * 1024, '\1')) + TarEnd());
  EXPECT_EQ(big.status, 413) << big.head << big.body;
  EXPECT_NE(big.body.find("max-external-data-bytes"), std::string::npos) << big.body;
}

// ------------------------------------------------------------------------------------------------
// URL references: data files from the model URL's folder, or from data_file_urls.

// Serves `files` (request target -> body) with 200, everything else 404; records the targets.
class FileStub {
 public:
  explicit FileStub(std::map<std::string, std::string> files)
      : files_(std::move(files)),
        stub_([this](boost::asio::ip::tcp::socket& sock, const std::string& target,
                     const std::atomic<bool>&) {
          {
            std::lock_guard<std::mutex> lock(mu_);
            targets_.push_back(target);
          }
          const auto it = files_.find(target);
          std::string answer;
          if (it == files_.end()) {
            answer = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
          } else if (it->second.rfind("REDIRECT ", 0) == 0) {
            answer = "HTTP/1.1 302 Found\r\nLocation: " + it->second.substr(9) +
                     "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
          } else {
            answer = "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(it->second.size()) +
                     "\r\nConnection: close\r\n\r\n" + it->second;
          }
          boost::system::error_code ec;
          boost::asio::write(sock, boost::asio::buffer(answer), ec);
        }) {}
  std::string Url(const std::string& path) const { return stub_.Url(path); }
  unsigned short port() const { return stub_.port(); }
  std::vector<std::string> targets() {
    std::lock_guard<std::mutex> lock(mu_);
    return targets_;
  }

 private:
  std::map<std::string, std::string> files_;
  std::mutex mu_;
  std::vector<std::string> targets_;
  HttpStub stub_;
};

grpc::Status CheckUrl(v1::Checker::Stub& stub, const std::string& url, v1::CheckResponse* resp,
                      std::map<std::string, std::string> data_urls = {}) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  v1::CheckRequest req;
  req.set_url(url);
  for (const auto& [k, v] : data_urls) (*req.mutable_data_file_urls())[k] = v;
  return stub.Check(&ctx, req, resp);
}

TEST_F(ExternalDataServer, UrlWithDataFiles) {
  auto stub = Stub();
  const auto bad = MakeExternalDataModel("url-bad", -1.0f);
  const auto spaced = MakeExternalDataModel("url-spaced", 1.0f, "sub dir/w#1.bin");
  const auto hostile = MakeExternalDataModel("url-hostile", 1.0f, "../weights.bin");
  const auto elsewhere = MakeExternalDataModel("url-elsewhere");
  const auto missing = MakeExternalDataModel("url-missing");
  const auto big = MakeExternalDataModel("url-big");
  FileStub files({{"/m/model.onnx?token=abc", bad.model},
                  {"/m/weights.bin", bad.data},
                  {"/s/model.onnx", spaced.model},
                  {"/s/sub%20dir/w%231.bin", spaced.data},
                  {"/h/model.onnx", hostile.model},
                  {"/weights.bin", hostile.data},
                  {"/e/model.onnx", elsewhere.model},
                  {"/store/blob?sig=1", elsewhere.data},
                  {"/x/model.onnx", missing.model},
                  {"/b/model.onnx", big.model},
                  {"/b/weights.bin", std::string(65 * 1024, '\1')}});
  v1::CheckResponse resp;
  // The model URL's query string is not carried over to its data files.
  grpc::Status s = CheckUrl(*stub, files.Url("/m/model.onnx?token=abc"), &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp.verdict(), v1::VERDICT_NON_CONFORMANT);
  EXPECT_TRUE(HasRule(resp, "qdq/scale-value"));
  EXPECT_EQ(resp.sha256(), ReadKey(bad.model, {{"weights.bin", bad.data}}));
  // Names are percent-encoded into the URL path.
  s = CheckUrl(*stub, files.Url("/s/model.onnx"), &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp.verdict(), v1::VERDICT_CONFORMANT);
  // Explicit data file URLs (e.g. presigned), under the same allowlist.
  s = CheckUrl(*stub, files.Url("/e/model.onnx"), &resp,
               {{"weights.bin", files.Url("/store/blob?sig=1")}});
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp.verdict(), v1::VERDICT_CONFORMANT);
  EXPECT_STATUS(CheckUrl(*stub, files.Url("/e/model.onnx"), &resp,
                         {{"weights.bin",
                           "http://localhost:" + std::to_string(files.port()) + "/store/blob"}}),
                grpc::StatusCode::PERMISSION_DENIED, "not in the server's allowlist");
  EXPECT_STATUS(CheckUrl(*stub, files.Url("/e/model.onnx"), &resp,
                         {{"other.bin", files.Url("/store/blob?sig=1")}}),
                grpc::StatusCode::INVALID_ARGUMENT, "which no tensor of the model names");
  EXPECT_STATUS(CheckUrl(*stub, files.Url("/e/model.onnx"), &resp, {{"../x", files.Url("/x")}}),
                grpc::StatusCode::INVALID_ARGUMENT, "contains '..'");
  // A hostile location is never fetched: the checker refuses it.
  const auto before = files.targets().size();
  EXPECT_STATUS(CheckUrl(*stub, files.Url("/h/model.onnx"), &resp),
                grpc::StatusCode::INVALID_ARGUMENT, "contains '..'");
  const auto after = files.targets();
  EXPECT_EQ(after.size(), before + 1);
  EXPECT_EQ(after.back(), "/h/model.onnx");
  // A missing data file; data files over max-external-data-bytes.
  EXPECT_STATUS(CheckUrl(*stub, files.Url("/x/model.onnx"), &resp), grpc::StatusCode::NOT_FOUND,
                "external data file 'weights.bin'");
  EXPECT_STATUS(CheckUrl(*stub, files.Url("/b/model.onnx"), &resp),
                grpc::StatusCode::RESOURCE_EXHAUSTED, "max-external-data-bytes");
  // data_file_urls with a path reference.
  grpc::ClientContext ctx;
  v1::CheckRequest req;
  req.set_path("m.onnx");
  (*req.mutable_data_file_urls())["weights.bin"] = files.Url("/m/weights.bin");
  EXPECT_STATUS(stub->Check(&ctx, req, &resp), grpc::StatusCode::INVALID_ARGUMENT,
                "url model reference only");
}

// ------------------------------------------------------------------------------------------------
// Registry hooks: the Hugging Face and MLflow webhooks fetch the data files the model names from
// the registry, beside the model file.

std::string HmacBase64(const std::string& key, const std::string& text) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(text.data()), text.size(), mac, &len);
  std::string out(4 * ((len + 2) / 3) + 1, '\0');
  const int n =
      EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), mac, static_cast<int>(len));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

HttpAnswer HttpPostHeaders(int port, const std::string& target, const std::string& headers,
                           const std::string& body) {
  return HttpPost(port, target, "application/json\r\n" + headers, body);
}

// The latest verdict of the models with label `label`=`value` (GET /v1/models), or null.
nlohmann::json LatestModel(int port, const std::string& label, const std::string& value) {
  const std::string raw = HttpGet(port, "/v1/models?label." + label + "=" + value);
  const auto at = raw.find("\r\n\r\n");
  if (at == std::string::npos) return nullptr;
  const auto j = nlohmann::json::parse(raw.substr(at + 4), nullptr, false);
  if (j.is_discarded() || !j.contains("models") || j["models"].empty()) return nullptr;
  return j["models"][0];
}

TEST(ExternalDataHooks, HuggingFaceAndMlflowFetchTheDataFiles) {
  TempDir dir;
  const auto hf_model = MakeExternalDataModel("hook-hf", 0.0f, "model.onnx_data");
  const auto ml_model = MakeExternalDataModel("hook-mlflow", -1.0f, "weights.bin");
  FileStub registry({
      {"/org/big/resolve/abc123/model.onnx", hf_model.model},
      {"/org/big/resolve/abc123/model.onnx_data", hf_model.data},
      {"/api/2.0/mlflow/model-versions/get-download-uri?name=big&version=1",
       R"({"artifact_uri": "mlflow-artifacts:/models/big/1"})"},
      {"/api/2.0/mlflow-artifacts/artifacts/models/big/1/model.onnx", ml_model.model},
      {"/api/2.0/mlflow-artifacts/artifacts/models/big/1/weights.bin", ml_model.data},
  });
  WriteFile(dir / "hf-secret", "hf-secret\n");
  WriteFile(dir / "mlflow-secret", "mlflow-secret\n");
  const fs::path ready = dir / "ready.json";
  const std::string origin = "http://127.0.0.1:" + std::to_string(registry.port());
  ServerProcess proc({"--listen",
                      "127.0.0.1:0",
                      "--metrics-listen",
                      "",
                      "--http-listen",
                      "127.0.0.1:0",
                      "--ready-file",
                      ready.string(),
                      "--store-path",
                      ":memory:",
                      "--workers",
                      "1",
                      "--url-allow-host",
                      "127.0.0.1",
                      "--data-file-dir",
                      dir.path().string(),
                      "--huggingface-webhook-secret-file",
                      (dir / "hf-secret").string(),
                      "--huggingface-url",
                      origin,
                      "--mlflow-webhook-secret-file",
                      (dir / "mlflow-secret").string(),
                      "--mlflow-url",
                      origin},
                     dir / "stderr.log");
  ASSERT_TRUE(WaitFor([&] { return fs::exists(ready); }, std::chrono::seconds(30)))
      << ReadFile(dir / "stderr.log");
  const int port = nlohmann::json::parse(ReadFile(ready)).at("http_port");

  const std::string hf =
      R"({"event": {"action": "update", "scope": "repo.content"},
          "repo": {"type": "model", "name": "org/big", "headSha": "abc123"},
          "webhook": {"id": "w1", "version": 3}})";
  HttpAnswer a = HttpPostHeaders(port, "/v1/hooks/huggingface", "X-Webhook-Secret: hf-secret", hf);
  ASSERT_EQ(a.status, 202) << a.head << a.body;
  nlohmann::json m;
  ASSERT_TRUE(WaitFor([&] { return !(m = LatestModel(port, "hf.repo", "org/big")).is_null(); },
                      std::chrono::seconds(30)))
      << ReadFile(dir / "stderr.log");
  EXPECT_EQ(m.at("verdict"), "non_conformant") << m.dump();
  EXPECT_EQ(m.at("sha256"), ReadKey(hf_model.model, {{"model.onnx_data", hf_model.data}}));

  const std::string body =
      R"({"entity": "model_version", "action": "created", "timestamp": "",
          "data": {"name": "big", "version": "1", "source": "models:/m-1", "run_id": "r1",
                   "tags": {}, "description": null}})";
  const std::string ts = std::to_string(std::time(nullptr));
  const std::string sig = "v1," + HmacBase64("mlflow-secret", "d1." + ts + "." + body);
  a = HttpPostHeaders(
      port, "/v1/hooks/mlflow",
      "X-MLflow-Delivery-Id: d1\r\nX-MLflow-Timestamp: " + ts + "\r\nX-MLflow-Signature: " + sig,
      body);
  ASSERT_EQ(a.status, 202) << a.head << a.body;
  ASSERT_TRUE(WaitFor([&] { return !(m = LatestModel(port, "mlflow.model", "big")).is_null(); },
                      std::chrono::seconds(30)))
      << ReadFile(dir / "stderr.log");
  EXPECT_EQ(m.at("verdict"), "non_conformant") << m.dump();
  EXPECT_EQ(m.at("sha256"), ReadKey(ml_model.model, {{"weights.bin", ml_model.data}}));
  const auto targets = registry.targets();
  EXPECT_NE(std::find(targets.begin(), targets.end(),
                      "/api/2.0/mlflow-artifacts/artifacts/models/big/1/weights.bin"),
            targets.end());
}

}  // namespace
}  // namespace axqc::test
