// Process isolation: the control protocol's framing, and the worker pool with the real
// axqc-worker (reports identical to in-process checks) and with the test-only worker
// (tests/isolate/test_worker_main.cc) that violates the sandbox or the limits on request.
#include <fcntl.h>
#include <google/protobuf/util/message_differencer.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <regex>
#include <string>
#include <system_error>
#include <thread>
#include <tuple>

#include "axqc/pulsar2.h"
#include "axqc/render.h"
#include "axqc/render_graph.h"
#include "axqc/sha256.h"
#include "axqc/wire/report_proto.h"
#include "model_buffer.h"
#include "modelgen/model_builder.h"
#include "server_test_util.h"
#include "worker_pool.h"

namespace axqc::test {
namespace {

using isolate::CheckInput;
using isolate::CheckResult;
using isolate::Failure;
using isolate::ModelBuffer;
using isolate::PoolOptions;
using isolate::ResultKind;
using isolate::WorkerPool;

// ------------------------------------------------------------------------------------------------
// Framing.

TEST(IsolateProtocol, RequestRoundTripsEveryField) {
  isolate::CheckRequestMsg m;
  m.name = "models/m.onnx";
  m.path = "/data/m.onnx";
  m.model_bytes = 123456789012ull;
  m.check_value = true;
  m.include_units = false;
  m.include_graph = true;
  m.timings_cpu = true;
  m.max_locations = 17;
  m.cpu_seconds = 42;
  m.memory_bytes = 5ull << 30;
  m.sha256 = Sha256Hex("model");
  m.task = isolate::Task::kRenderHtml;
  m.html.rules_url = "https://docs.example/rules/";
  m.html.home_url = "/";
  m.html.home_label = "home";
  m.html.hops = 3;
  m.html.view_max_nodes = 61;
  m.html.whole_model_max_nodes = 301;
  m.html.view_max_edges = 241;
  m.html.whole_model_max_edges = 601;
  m.html.layout_seconds = 2.5;
  m.html.repair_by_file_name = true;
  const auto back = isolate::DecodeRequest(isolate::Encode(m));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->name, m.name);
  EXPECT_EQ(back->path, m.path);
  EXPECT_EQ(back->model_bytes, m.model_bytes);
  EXPECT_TRUE(back->check_value);
  EXPECT_FALSE(back->include_units);
  EXPECT_TRUE(back->include_graph);
  EXPECT_TRUE(back->timings_cpu);
  EXPECT_EQ(back->max_locations, 17u);
  EXPECT_EQ(back->cpu_seconds, 42u);
  EXPECT_EQ(back->memory_bytes, 5ull << 30);
  EXPECT_EQ(back->sha256, Sha256Hex("model"));
  EXPECT_EQ(back->task, isolate::Task::kRenderHtml);
  EXPECT_EQ(back->html.rules_url, "https://docs.example/rules/");
  EXPECT_EQ(back->html.home_url, "/");
  EXPECT_EQ(back->html.home_label, "home");
  EXPECT_EQ(back->html.hops, 3u);
  EXPECT_EQ(back->html.view_max_nodes, 61u);
  EXPECT_EQ(back->html.whole_model_max_nodes, 301u);
  EXPECT_EQ(back->html.view_max_edges, 241u);
  EXPECT_EQ(back->html.whole_model_max_edges, 601u);
  EXPECT_EQ(back->html.layout_seconds, 2.5);
  EXPECT_TRUE(back->html.repair_by_file_name);
  // A task the worker does not know is a malformed request (the task byte: before the HTML
  // settings (the last of them the repair flag), the external data flag and file count, the
  // target count and the Pulsar2
  // configuration's flag and size).
  std::string unknown = isolate::Encode(m);
  const std::size_t task_at =
      unknown.size() - (1 + 4) - 4 - (1 + 4) - 1 - 8 - 5 * 4 - (4 + 4) - (4 + 1) - (4 + 27) - 1;
  ASSERT_EQ(static_cast<std::uint8_t>(unknown[task_at]), 1);
  unknown[task_at] = 2;
  EXPECT_FALSE(isolate::DecodeRequest(unknown).has_value());
  EXPECT_FALSE(back->external_data);
  EXPECT_TRUE(back->data_files.empty());
  // With external data files (protocol 6): names and sizes, in order; each file's descriptor
  // follows in a DataFileMsg.
  m.external_data = true;
  m.data_files = {{"w.bin", 12}, {"sub/x.bin", 1ull << 40}};
  const auto with_files = isolate::DecodeRequest(isolate::Encode(m));
  ASSERT_TRUE(with_files.has_value());
  EXPECT_TRUE(with_files->external_data);
  ASSERT_EQ(with_files->data_files.size(), 2u);
  EXPECT_EQ(with_files->data_files[1].name, "sub/x.bin");
  EXPECT_EQ(with_files->data_files[1].size, 1ull << 40);
  // Chip targets (protocol 7): in order; more than kMaxTargets is a malformed request.
  EXPECT_TRUE(with_files->targets.empty());
  m.targets = {"ax650", "ax620e"};
  const auto with_targets = isolate::DecodeRequest(isolate::Encode(m));
  ASSERT_TRUE(with_targets.has_value());
  EXPECT_EQ(with_targets->targets, (std::vector<std::string>{"ax650", "ax620e"}));
  m.targets.assign(isolate::kMaxTargets + 1, "ax650");
  EXPECT_FALSE(isolate::DecodeRequest(isolate::Encode(m)).has_value());
  m.targets.clear();
  // A Pulsar2 configuration (protocol 8): its size travels in the request, its text after it.
  EXPECT_FALSE(with_targets->pulsar2_config_bytes.has_value());
  m.pulsar2_config_bytes = 0;  // an empty configuration is one (pulsar2/config-invalid)
  const auto empty_config = isolate::DecodeRequest(isolate::Encode(m));
  ASSERT_TRUE(empty_config.has_value());
  EXPECT_EQ(empty_config->pulsar2_config_bytes, 0u);
  m.pulsar2_config_bytes = static_cast<std::uint32_t>(kMaxPulsar2ConfigBytes);
  EXPECT_EQ(isolate::DecodeRequest(isolate::Encode(m))->pulsar2_config_bytes,
            kMaxPulsar2ConfigBytes);
  m.pulsar2_config_bytes = static_cast<std::uint32_t>(kMaxPulsar2ConfigBytes + 1);
  EXPECT_FALSE(isolate::DecodeRequest(isolate::Encode(m)).has_value());
  m.pulsar2_config_bytes.reset();
  EXPECT_TRUE(isolate::DecodePulsar2Config(isolate::Encode(isolate::Pulsar2ConfigMsg{})));
  EXPECT_FALSE(isolate::DecodePulsar2Config(isolate::Encode(isolate::DataFileMsg{})));
  isolate::DataFileMsg f;
  f.index = 7;
  const auto fb = isolate::DecodeDataFile(isolate::Encode(f));
  ASSERT_TRUE(fb.has_value());
  EXPECT_EQ(fb->index, 7u);
}

// ------------------------------------------------------------------------------------------------
// The model buffer: a memfd written in chunks, then sealed.

TEST(ModelBuffer, ChunksAreAppendedAndSealedAgainstWriteGrowAndShrink) {
  ModelBuffer b(ModelBuffer::Backing::kMemfd);
  ASSERT_EQ(b.backing(), ModelBuffer::Backing::kMemfd);
  b.Append("abc");
  b.Append("");
  b.Append(std::string(100000, 'x'));
  EXPECT_EQ(b.size(), 100003u);
  EXPECT_FALSE(b.sealed());
  EXPECT_THROW((void)b.view(), std::logic_error);
  b.Seal();
  b.Seal();  // idempotent
  EXPECT_THROW(b.Append("more"), std::logic_error);
  EXPECT_EQ(b.view(), "abc" + std::string(100000, 'x'));
  EXPECT_EQ(b.view().data(), b.view().data());  // mapped once
  const int seals = ::fcntl(b.fd(), F_GET_SEALS);
  EXPECT_EQ(seals, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL);
  // Nobody holding the descriptor (a worker) can change the bytes.
  EXPECT_EQ(::pwrite(b.fd(), "z", 1, 0), -1);
  EXPECT_EQ(errno, EPERM);
  EXPECT_NE(::ftruncate(b.fd(), 10), 0);
  EXPECT_NE(::ftruncate(b.fd(), 1 << 20), 0);
  EXPECT_EQ(::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, b.fd(), 0), MAP_FAILED);
  EXPECT_NE(::fcntl(b.fd(), F_ADD_SEALS, F_SEAL_FUTURE_WRITE), 0);
  // Moving keeps the descriptor and the bytes.
  ModelBuffer moved(std::move(b));
  EXPECT_EQ(moved.size(), 100003u);
  EXPECT_EQ(moved.view().substr(0, 4), "abcx");
  EXPECT_EQ(b.fd(), -1);  // NOLINT(bugprone-use-after-move): the moved-from state is defined
}

TEST(ModelBuffer, SealWaitsForATransientlyBusyBuffer) {
  // A writable shared mapping makes F_SEAL_WRITE fail with EBUSY, as the kernel's transient page
  // pins do; Seal tries again, so once the mapping goes away (here after 50 ms) it succeeds.
  ModelBuffer b(ModelBuffer::Backing::kMemfd);
  b.Append(std::string(8192, 'm'));
  void* writable = ::mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, b.fd(), 0);
  ASSERT_NE(writable, MAP_FAILED);
  ASSERT_NE(::fcntl(b.fd(), F_ADD_SEALS, F_SEAL_WRITE), 0);
  ASSERT_EQ(errno, EBUSY);
  std::thread unmap([writable] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ::munmap(writable, 8192);
  });
  b.Seal();
  unmap.join();
  EXPECT_TRUE(b.sealed());
  EXPECT_EQ(::fcntl(b.fd(), F_GET_SEALS), F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL);
  EXPECT_EQ(b.view(), std::string(8192, 'm'));
}

TEST(ModelBuffer, SealFailsWhenTheBufferStaysWritablyMapped) {
  ModelBuffer b(ModelBuffer::Backing::kMemfd);
  b.Append("abc");
  void* writable = ::mmap(nullptr, 3, PROT_READ | PROT_WRITE, MAP_SHARED, b.fd(), 0);
  ASSERT_NE(writable, MAP_FAILED);
  try {
    b.Seal();
    ADD_FAILURE() << "Seal succeeded on a writably mapped buffer";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code().value(), EBUSY);
    EXPECT_NE(std::string(e.what()).find("cannot seal the model buffer"), std::string::npos);
  }
  EXPECT_FALSE(b.sealed());
  ::munmap(writable, 3);
}

TEST(ModelBuffer, FileContentsAndHeapBuffers) {
  TempDir dir;
  const std::string content = ConformantModel("buffer-file") + std::string(3 << 20, '\x05');
  WriteFile(dir / "m.bin", content);
  const int fd = ::open((dir / "m.bin").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ModelBuffer b(ModelBuffer::Backing::kMemfd, content.size());
  while (b.AppendFrom(fd, content.size() - b.size()) > 0) {
  }
  ::close(fd);
  b.Seal();
  EXPECT_EQ(b.size(), content.size());
  EXPECT_EQ(b.view(), content);

  ModelBuffer heap(ModelBuffer::Backing::kHeap, 10);
  EXPECT_EQ(heap.backing(), ModelBuffer::Backing::kHeap);
  EXPECT_EQ(heap.fd(), -1);
  heap.Append("12");
  heap.Append("345");
  heap.Seal();
  EXPECT_EQ(heap.view(), "12345");
  const ModelBuffer s = ModelBuffer::FromString("bytes");
  EXPECT_TRUE(s.sealed());
  EXPECT_EQ(s.view(), "bytes");
  EXPECT_EQ(ModelBuffer::FromString("").view(), "");
}

// The loader takes a hash its caller computed (the server's own) instead of hashing again.
TEST(KnownSha256, TheReportCarriesTheGivenHashAndOtherwiseTheRealOne) {
  const std::string bytes = ConformantModel("known-hash");
  CheckOptions o;
  EXPECT_EQ(CheckBytes(bytes, "m.onnx", o).model.sha256, Sha256Hex(bytes));
  o.known_sha256 = Sha256Hex(bytes);
  EXPECT_EQ(CheckBytes(bytes, "m.onnx", o).model.sha256, Sha256Hex(bytes));
  // It is taken as given (callers vouch for it; the server passes only hashes it computed).
  o.known_sha256 = std::string(64, 'a');
  EXPECT_EQ(CheckBytes(bytes, "m.onnx", o).model.sha256, std::string(64, 'a'));
}

TEST(IsolateProtocol, ResultAndReadyRoundTrip) {
  isolate::CheckResultMsg r;
  r.kind = ResultKind::kInputError;
  r.error = "not a model";
  r.report_bytes = 99;
  r.timings.parse_s = 0.25;
  r.timings.report_s = 1.5;
  r.cpu_seconds = 0.125;
  const auto back = isolate::DecodeResult(isolate::Encode(r));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->kind, ResultKind::kInputError);
  EXPECT_EQ(back->error, "not a model");
  EXPECT_EQ(back->report_bytes, 99u);
  EXPECT_EQ(back->timings.parse_s, 0.25);
  EXPECT_EQ(back->timings.report_s, 1.5);
  EXPECT_EQ(back->cpu_seconds, 0.125);

  isolate::ReadyMsg ready;
  ready.pid = 4242;
  ready.baseline_vm_bytes = 1ull << 33;
  const auto rb = isolate::DecodeReady(isolate::Encode(ready));
  ASSERT_TRUE(rb.has_value());
  EXPECT_EQ(rb->pid, 4242);
  EXPECT_EQ(rb->baseline_vm_bytes, 1ull << 33);
  EXPECT_EQ(rb->version, isolate::kProtocolVersion);
}

TEST(IsolateProtocol, MalformedRecordsAreRejected) {
  isolate::CheckRequestMsg m;
  m.name = "m.onnx";
  const std::string good = isolate::Encode(m);
  // Every truncation, trailing bytes, another record's tag, a bad bool, an oversized string.
  for (std::size_t n = 0; n < good.size(); ++n) {
    EXPECT_FALSE(isolate::DecodeRequest(good.substr(0, n)).has_value()) << n;
  }
  EXPECT_FALSE(isolate::DecodeRequest(good + "x").has_value());
  EXPECT_FALSE(isolate::DecodeResult(good).has_value());
  EXPECT_FALSE(isolate::DecodeReady(good).has_value());
  std::string bad_bool = good;
  // check_value: after the tag, name (length + 6 bytes), path, model_bytes and sha256
  bad_bool[4 + (4 + 6) + 4 + 8 + 4] = 2;
  EXPECT_FALSE(isolate::DecodeRequest(bad_bool).has_value());
  std::string bad_flag = good;
  bad_flag[bad_flag.size() - 4 - 1] = 2;  // external_data
  EXPECT_FALSE(isolate::DecodeRequest(bad_flag).has_value());
  std::string many_files = good;
  many_files[many_files.size() - 4] = static_cast<char>(isolate::kMaxDataFiles + 1);
  EXPECT_FALSE(isolate::DecodeRequest(many_files).has_value());
  EXPECT_FALSE(isolate::DecodeDataFile(good).has_value());
  EXPECT_FALSE(isolate::DecodeDataFile(isolate::Encode(isolate::DataFileMsg{}) + "x").has_value());
  std::string huge = good;
  huge[4] = '\xff';  // name length low byte
  huge[7] = '\x7f';  // name length high byte: 2 GiB
  EXPECT_FALSE(isolate::DecodeRequest(huge).has_value());
  isolate::CheckResultMsg r;
  std::string bad_kind = isolate::Encode(r);
  bad_kind[4] = 9;
  EXPECT_FALSE(isolate::DecodeResult(bad_kind).has_value());
}

TEST(IsolateProtocol, AcceptedRoundTripsAndIsNoOtherRecord) {
  isolate::AcceptedMsg a;
  a.pid = 777;
  const std::string bytes = isolate::Encode(a);
  const auto back = isolate::DecodeAccepted(bytes);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->pid, 777);
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_FALSE(isolate::DecodeAccepted(bytes.substr(0, n)).has_value()) << n;
  }
  EXPECT_FALSE(isolate::DecodeAccepted(bytes + "x").has_value());
  EXPECT_FALSE(isolate::DecodeResult(bytes).has_value());
  EXPECT_FALSE(isolate::DecodeAccepted(isolate::Encode(isolate::CheckResultMsg{})).has_value());
}

TEST(IsolateProtocol, MessagesCarryOneDescriptor) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
  const int memfd = isolate::SealedMemfd("t", "model bytes");
  ASSERT_GE(memfd, 0);
  // Sealed: neither writable nor growable.
  EXPECT_LT(::write(memfd, "x", 1), 0);
  ASSERT_TRUE(isolate::SendMessage(sv[0], "first", memfd));
  ASSERT_TRUE(isolate::SendMessage(sv[0], "second"));
  ::close(memfd);
  std::string payload;
  int fd = -1;
  ASSERT_EQ(isolate::RecvMessage(sv[1], &payload, &fd, 1000), isolate::RecvStatus::kMessage);
  EXPECT_EQ(payload, "first");
  ASSERT_GE(fd, 0);
  std::string bytes;
  ASSERT_TRUE(isolate::ReadAll(fd, 11, &bytes));
  EXPECT_EQ(bytes, "model bytes");
  ::close(fd);
  ASSERT_EQ(isolate::RecvMessage(sv[1], &payload, &fd, 1000), isolate::RecvStatus::kMessage);
  EXPECT_EQ(payload, "second");
  EXPECT_EQ(fd, -1);
  EXPECT_EQ(isolate::RecvMessage(sv[1], &payload, &fd, 50), isolate::RecvStatus::kTimeout);
  ::close(sv[0]);
  EXPECT_EQ(isolate::RecvMessage(sv[1], &payload, &fd, 1000), isolate::RecvStatus::kClosed);
  ::close(sv[1]);
}

// ------------------------------------------------------------------------------------------------
// The pool.

PoolOptions Options(const char* program, unsigned size = 1) {
  PoolOptions o;
  o.program = program;
  o.size = size;
  o.memory_limit = 2ull << 30;
  o.cpu_seconds = 60;
  return o;
}

v1::Report ParseReport(const CheckResult& r) {
  v1::Report proto;
  EXPECT_TRUE(proto.ParseFromString(r.report));
  return proto;
}

CheckResult RunCheck(WorkerPool& pool, const std::string& bytes, const std::string& name) {
  CheckInput in;
  in.bytes = bytes;
  in.name = name;
  in.options.include_graph = true;  // as the server checks (DirectReport does the same)
  return pool.Check(in);
}

TEST(WorkerPool, ReportsAreIdenticalToInProcessChecks) {
  WorkerPool pool(Options(AXQC_WORKER_BIN, 2));
  for (const auto& [bytes, name] : {std::pair{ConformantModel("iso1"), "good.onnx"},
                                    std::pair{NonConformantModel("iso2"), "bad.onnx"}}) {
    const CheckResult r = RunCheck(pool, bytes, name);
    ASSERT_EQ(r.failure, Failure::kNone) << r.error;
    ASSERT_EQ(r.kind, ResultKind::kReport) << r.error;
    const v1::Report got = ParseReport(r);
    const v1::Report want = wire::ToProto(DirectReport(bytes, name));
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(got, want))
        << got.DebugString() << "\n---\n"
        << want.DebugString();
  }
  // An input error comes back as one, with the checker's message.
  const CheckResult bad = RunCheck(pool, NotOnnxBytes(), "junk.onnx");
  EXPECT_EQ(bad.failure, Failure::kNone);
  EXPECT_EQ(bad.kind, ResultKind::kInputError);
  std::string direct;
  try {
    (void)DirectReport(NotOnnxBytes(), "junk.onnx");
  } catch (const InputError& e) {
    direct = e.what();
  }
  EXPECT_EQ(bad.error, direct);
  EXPECT_EQ(pool.Pids().size(), 2u);
}

TEST(WorkerPool, ChipTargetsAreJudgedInTheWorkerLikeInProcess) {
  WorkerPool pool(Options(AXQC_WORKER_BIN, 1));
  const std::string bytes = GridSampleModel();  // fits AX650, not AX620E
  CheckInput in;
  in.bytes = bytes;
  in.name = "gs.onnx";
  in.options.include_graph = true;
  in.options.targets = {"ax650", "ax620e"};
  const CheckResult r = pool.Check(in);
  ASSERT_EQ(r.failure, Failure::kNone) << r.error;
  ASSERT_EQ(r.kind, ResultKind::kReport) << r.error;
  const v1::Report got = ParseReport(r);
  const v1::Report want = wire::ToProto(CheckBytes(bytes, "gs.onnx", in.options));
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(got, want))
      << got.DebugString() << "\n---\n"
      << want.DebugString();
  ASSERT_EQ(got.targets_size(), 2);
  EXPECT_EQ(got.targets(0).chip(), "ax650");
  EXPECT_EQ(got.targets(0).verdict(), "fits");
  EXPECT_EQ(got.targets(1).chip(), "ax620e");
  EXPECT_EQ(got.targets(1).verdict(), "does_not_fit");
  ASSERT_EQ(got.targets(1).blocking_size(), 1);
  EXPECT_EQ(got.targets(1).blocking(0).node(), "gs1");
  EXPECT_EQ(got.targets(1).blocking(0).rule(), "target/op-unsupported");
  // The proto round trip keeps what the JSON report says about the chips.
  const Report back = wire::FromProto(got);
  EXPECT_EQ(RenderJson(back), RenderJson(CheckBytes(bytes, "gs.onnx", in.options)));
}

// The Pulsar2 configuration travels to the worker as a sealed memfd; the report is the in-process
// one, from the model bytes and from a model file, and a second check on the same worker without a
// configuration has no pulsar2/* findings.
TEST(WorkerPool, Pulsar2ConfigIsJudgedInTheWorkerLikeInProcess) {
  PoolOptions options = Options(AXQC_WORKER_BIN, 1);
  options.allow_read = true;  // the file form, as the command line's --isolate
  WorkerPool pool(options);
  const std::string bytes = ConformantModel("p2-worker");
  // Beyond one control message (64 KiB): the text must come through the descriptor.
  const std::string config = R"({"model_type": "ONNX", "quant": {"layer_configs": [)" +
                             std::string(100000, ' ') +
                             R"({"layer_name": "no_such_node", "data_type": "U16"}]}})";
  CheckInput in;
  in.bytes = bytes;
  in.name = "p2.onnx";
  in.options.include_graph = true;
  in.options.pulsar2_config = config;
  const CheckResult r = pool.Check(in);
  ASSERT_EQ(r.failure, Failure::kNone) << r.error;
  ASSERT_EQ(r.kind, ResultKind::kReport) << r.error;
  const Report local = CheckBytes(bytes, "p2.onnx", in.options);
  EXPECT_EQ(RenderJson(wire::FromProto(ParseReport(r))), RenderJson(local));
  std::vector<std::string> rules;
  for (const auto& f : local.findings) {
    if (f.rule.rfind("pulsar2/", 0) == 0) rules.push_back(f.rule);
  }
  EXPECT_EQ(rules, (std::vector<std::string>{"pulsar2/model-type", "pulsar2/selector-no-match"}));
  // The file form (the CLI's --isolate) takes it too.
  TempDir dir;
  WriteFile(dir / "p2.onnx", bytes);
  CheckInput file;
  file.path = (dir / "p2.onnx").string();
  file.name = "p2.onnx";
  file.options = in.options;
  const CheckResult rf = pool.Check(file);
  ASSERT_EQ(rf.kind, ResultKind::kReport) << rf.error << rf.report;
  EXPECT_EQ(RenderJson(wire::FromProto(ParseReport(rf))),
            RenderJson(CheckFile(file.path, file.options)));
  // The next check on the same worker has no configuration.
  in.options.pulsar2_config.reset();
  const CheckResult plain = pool.Check(in);
  ASSERT_EQ(plain.kind, ResultKind::kReport) << plain.error;
  const v1::Report plain_report = ParseReport(plain);
  for (const auto& f : plain_report.findings()) {
    EXPECT_NE(f.rule().rfind("pulsar2/", 0), 0u) << f.rule();
  }
  // One worker served all three (the configuration did not cost it its life).
  EXPECT_EQ(rf.worker, r.worker);
  EXPECT_EQ(plain.worker, r.worker);
}

ModelBuffer SealedBuffer(const std::string& bytes) {
  ModelBuffer b(ModelBuffer::Backing::kMemfd);
  for (std::size_t off = 0; off < bytes.size(); off += 1000) b.Append(bytes.substr(off, 1000));
  b.Seal();
  return b;
}

TEST(WorkerPool, ReadsTheSealedMemfdOfAModelBufferAsItIs) {
  WorkerPool pool(Options(AXQC_WORKER_BIN));
  const std::string bytes = NonConformantModel("iso-memfd");
  const ModelBuffer b = SealedBuffer(bytes);
  ASSERT_GE(b.fd(), 0);
  CheckInput in;
  in.model = &b;
  in.name = "memfd.onnx";
  in.options.include_graph = true;
  in.sha256 = Sha256Hex(bytes);
  StageTimings timings;
  in.options.timings = &timings;
  const CheckResult r = pool.Check(in);
  ASSERT_EQ(r.failure, Failure::kNone) << r.error;
  ASSERT_EQ(r.kind, ResultKind::kReport) << r.error;
  const v1::Report want = wire::ToProto(DirectReport(bytes, "memfd.onnx"));
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(ParseReport(r), want));
  EXPECT_EQ(timings.sha256_s, 0.0);  // the worker did not hash the bytes again
  // The buffer is still open and unchanged (the worker had the same file, sealed).
  EXPECT_EQ(b.view(), bytes);
  EXPECT_EQ(::fcntl(b.fd(), F_GET_SEALS) & F_SEAL_WRITE, F_SEAL_WRITE);

  // Without a hash (or with one that is not 64 lowercase hex), the worker hashes.
  in.sha256 = "not-a-hash";
  const CheckResult hashed = pool.Check(in);
  ASSERT_EQ(hashed.kind, ResultKind::kReport) << hashed.error;
  EXPECT_EQ(ParseReport(hashed).model().sha256(), Sha256Hex(bytes));
  EXPECT_GT(timings.sha256_s, 0.0);

  // A heap buffer is copied into a sealed memfd for the worker.
  const ModelBuffer heap = ModelBuffer::FromString(bytes);
  in.model = &heap;
  in.sha256.clear();
  const CheckResult copied = pool.Check(in);
  ASSERT_EQ(copied.kind, ResultKind::kReport) << copied.error;
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(ParseReport(copied), want));
}

TEST(WorkerPool, PathChecksReadTheFileAndItsDirectory) {
  TempDir dir;
  const std::string model = NonConformantModel("iso-path");
  WriteFile(dir / "m.onnx", model);
  PoolOptions o = Options(AXQC_WORKER_BIN);
  o.allow_read = true;
  WorkerPool pool(o);
  CheckInput in;
  in.path = (dir / "m.onnx").string();
  const CheckResult r = pool.Check(in);
  ASSERT_EQ(r.kind, ResultKind::kReport) << r.error;
  CheckOptions opts;
  const v1::Report want = wire::ToProto(CheckFile(in.path, opts));
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(ParseReport(r), want));
}

// The worker's failure, then the pool's replacement of it (a new process that checks).
void ExpectFailureThenRecovery(WorkerPool& pool, const std::string& name, Failure failure,
                               int signal) {
  const auto before = pool.Pids();
  ASSERT_EQ(before.size(), 1u);
  const CheckResult r = RunCheck(pool, ConformantModel("victim-" + name), name);
  EXPECT_EQ(r.failure, failure) << isolate::FailureMessage(r);
  EXPECT_EQ(r.signal, signal) << isolate::FailureMessage(r);
  ASSERT_TRUE(WaitFor([&] { return pool.Pids().size() == 1; }, std::chrono::seconds(20)));
  EXPECT_NE(pool.Pids(), before);
  const CheckResult next = RunCheck(pool, ConformantModel("after"), "after.onnx");
  EXPECT_EQ(next.failure, Failure::kNone) << isolate::FailureMessage(next);
  EXPECT_EQ(next.kind, ResultKind::kReport);
}

TEST(WorkerPool, SeccompKillsNetworkExecForkAndThreads) {
  std::vector<std::pair<isolate::RestartCause, Failure>> restarts;
  std::mutex mu;
  PoolOptions o = Options(AXQC_TEST_WORKER_BIN);
  o.on_restart = [&](isolate::RestartCause c, Failure f) {
    std::lock_guard<std::mutex> lock(mu);
    restarts.emplace_back(c, f);
  };
  WorkerPool pool(o);
  for (const char* what :
       {"axqc-test:socket", "axqc-test:exec", "axqc-test:fork", "axqc-test:thread"}) {
    SCOPED_TRACE(what);
    ExpectFailureThenRecovery(pool, what, Failure::kCrashed, SIGSYS);
  }
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(restarts.size(), 4u);
  for (const auto& [cause, failure] : restarts) {
    EXPECT_EQ(cause, isolate::RestartCause::kFailure);
    EXPECT_EQ(failure, Failure::kCrashed);
  }
  CheckResult r;
  r.failure = Failure::kCrashed;
  r.signal = SIGSYS;
  EXPECT_EQ(isolate::FailureMessage(r),
            "the checker crashed on this model (signal 31: SIGSYS, a system call the sandbox "
            "refuses)");
}

TEST(WorkerPool, OpeningForWritingIsRefusedOrFatal) {
  {
    // Server mode: no opens at all (EACCES); the check fails without killing the worker.
    WorkerPool pool(Options(AXQC_TEST_WORKER_BIN));
    const auto pids = pool.Pids();
    const CheckResult r = RunCheck(pool, ConformantModel("w1"), "axqc-test:write");
    EXPECT_EQ(r.failure, Failure::kNone);
    EXPECT_EQ(r.kind, ResultKind::kInternalError);
    EXPECT_EQ(r.error, "open for writing: Permission denied");
    EXPECT_EQ(pool.Pids(), pids);
  }
  // Path mode: read-only opens allowed, a write open kills.
  PoolOptions o = Options(AXQC_TEST_WORKER_BIN);
  o.allow_read = true;
  WorkerPool pool(o);
  ExpectFailureThenRecovery(pool, "axqc-test:write", Failure::kCrashed, SIGSYS);
  EXPECT_FALSE(fs::exists("/tmp/axqc-test-worker-write"));
}

TEST(WorkerPool, CrashesAreReportedWithTheSignal) {
  WorkerPool pool(Options(AXQC_TEST_WORKER_BIN));
  ExpectFailureThenRecovery(pool, "axqc-test:segv", Failure::kCrashed, SIGSEGV);
  CheckResult r;
  r.failure = Failure::kCrashed;
  r.signal = SIGSEGV;
  EXPECT_EQ(isolate::FailureMessage(r), "the checker crashed on this model (signal 11: SIGSEGV)");
}

// A model whose node, tensor and op names are what a hostile or merely international exporter
// writes: quotes, DOT and HTML syntax, a file name for Graphviz's image attribute, CJK and emoji
// (glyphs that send a text layout to other fonts).
std::string HostileNamesModel() {
  modelgen::ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, {1, 8});
  b.Node("Relu", {"x"}, {"\",href=\"javascript:alert(1)"}, {}, "\",image=\"/etc/hostname");
  b.Node("Relu", {"\",href=\"javascript:alert(1)"}, {"\u5f20\u91cf-\U0001F600"}, {},
         "\u8282\u70b9</script><b>");
  b.Node("Sigmoid", {"\u5f20\u91cf-\U0001F600"}, {"y"}, {}, "}\n\"]; x [label=\"");
  b.Output("y", onnx::TensorProto::FLOAT, {1, 8});
  return b.Serialize();
}

CheckResult RenderInWorker(WorkerPool& pool, const v1::Report& report, const std::string& name) {
  const std::string bytes = report.SerializeAsString();
  CheckInput in;
  in.bytes = bytes;
  in.name = name;
  in.task = isolate::Task::kRenderHtml;
  return pool.Check(in);
}

TEST(WorkerPool, TheHtmlReportIsLaidOutInTheSandboxLikeInProcess) {
  WorkerPool pool(Options(AXQC_WORKER_BIN));
  const auto pids = pool.Pids();
  for (const auto& [bytes, name] : {std::pair{HostileNamesModel(), "hostile.onnx"},
                                    std::pair{NonConformantModel("iso-html"), "bad.onnx"}}) {
    SCOPED_TRACE(name);
    const CheckResult checked = RunCheck(pool, bytes, name);
    ASSERT_EQ(checked.kind, ResultKind::kReport) << checked.error;
    const v1::Report report = ParseReport(checked);
    ASSERT_GT(report.graph().nodes_size(), 0);
    const CheckResult r = RenderInWorker(pool, report, name);
    ASSERT_EQ(r.failure, Failure::kNone) << isolate::FailureMessage(r);
    ASSERT_EQ(r.kind, ResultKind::kReport) << r.error;
    // The same document as in this process (no font or plugin went missing under the filter).
    const std::string here = RenderHtml(wire::FromProto(report), HtmlOptions{});
    EXPECT_TRUE(r.report == here) << "the documents differ";
    EXPECT_NE(r.report.find("<svg"), std::string::npos);
    // Model text is never an attribute of a tag: no link, no image.
    EXPECT_FALSE(std::regex_search(r.report, std::regex("<[^>]*\\shref=\"javascript:")));
    EXPECT_FALSE(std::regex_search(r.report, std::regex("<[^>]*\\simage=")));
  }
  EXPECT_EQ(pool.Pids(), pids);  // no worker died
  // Bytes that are not a report: an input error of the render, the worker lives on.
  CheckInput junk;
  junk.bytes = NotOnnxBytes();
  junk.task = isolate::Task::kRenderHtml;
  const CheckResult bad = pool.Check(junk);
  EXPECT_EQ(bad.failure, Failure::kNone);
  EXPECT_EQ(bad.kind, ResultKind::kInputError);
  EXPECT_EQ(bad.error, "not a serialized axqc.v1.Report");
  EXPECT_EQ(pool.Pids(), pids);
}

TEST(WorkerPool, ALayoutThatCrashesOrSpinsCostsOnlyItsWorker) {
  PoolOptions o = Options(AXQC_TEST_WORKER_BIN);
  o.cpu_seconds = 1;
  o.deadline_seconds = 60;
  WorkerPool pool(o);
  const std::string bytes = ConformantModel("layout");
  const CheckResult checked = RunCheck(pool, bytes, "m-axqc-test:layout-segv.onnx");
  ASSERT_EQ(checked.kind, ResultKind::kReport) << checked.error;  // the check itself is fine
  const v1::Report report = ParseReport(checked);
  for (const auto& [name, failure, signal] :
       {std::tuple{"m-axqc-test:layout-segv.onnx", Failure::kCrashed, SIGSEGV},
        std::tuple{"m-axqc-test:layout-spin.onnx", Failure::kCpuTime, SIGXCPU}}) {
    SCOPED_TRACE(name);
    const auto before = pool.Pids();
    const CheckResult r = RenderInWorker(pool, report, name);
    EXPECT_EQ(r.failure, failure) << isolate::FailureMessage(r);
    EXPECT_EQ(r.signal, signal);
    EXPECT_FALSE(r.not_started);
    ASSERT_TRUE(WaitFor([&] { return pool.Pids().size() == 1 && pool.Pids() != before; },
                        std::chrono::seconds(20)));
    const CheckResult next = RenderInWorker(pool, report, "after.onnx");
    EXPECT_EQ(next.failure, Failure::kNone) << isolate::FailureMessage(next);
    EXPECT_NE(next.report.find("<svg"), std::string::npos);
  }
}

TEST(WorkerPool, MemoryLimitEndsTheCheck) {
  PoolOptions o = Options(AXQC_TEST_WORKER_BIN);
  o.memory_limit = 768ull << 20;
  o.memory_headroom = 128ull << 20;
  WorkerPool pool(o);
  ExpectFailureThenRecovery(pool, "axqc-test:alloc", Failure::kMemory, 0);
}

TEST(WorkerPool, CpuTimeLimitEndsTheCheck) {
  PoolOptions o = Options(AXQC_TEST_WORKER_BIN);
  o.cpu_seconds = 1;
  o.deadline_seconds = 60;
  WorkerPool pool(o);
  ExpectFailureThenRecovery(pool, "axqc-test:spin", Failure::kCpuTime, SIGXCPU);
}

TEST(WorkerPool, DeadlineKillsAWorkerThatDoesNotAnswer) {
  PoolOptions o = Options(AXQC_TEST_WORKER_BIN);
  o.cpu_seconds = 0;
  o.deadline_seconds = 1;
  WorkerPool pool(o);
  ExpectFailureThenRecovery(pool, "axqc-test:spin", Failure::kDeadline, 0);
}

TEST(WorkerPool, WorkersAreRecycledAfterMaxChecks) {
  std::atomic<int> recycled{0};
  PoolOptions o = Options(AXQC_WORKER_BIN);
  o.max_checks = 2;
  o.on_restart = [&](isolate::RestartCause c, Failure) {
    if (c == isolate::RestartCause::kMaxChecks) ++recycled;
  };
  WorkerPool pool(o);
  const auto first = pool.Pids();
  const std::string model = ConformantModel("recycle");
  EXPECT_EQ(RunCheck(pool, model, "a.onnx").kind, ResultKind::kReport);
  EXPECT_EQ(pool.Pids(), first);
  EXPECT_EQ(RunCheck(pool, model, "b.onnx").kind, ResultKind::kReport);
  EXPECT_EQ(recycled.load(), 1);
  ASSERT_TRUE(WaitFor([&] { return pool.Pids().size() == 1; }, std::chrono::seconds(20)));
  EXPECT_NE(pool.Pids(), first);
  EXPECT_EQ(RunCheck(pool, model, "c.onnx").kind, ResultKind::kReport);
}

// Idle workers killed from outside (the OOM killer): the next check runs on a live worker, the
// failure is nobody's, and every dead worker is replaced (cause kIdleExit).
TEST(WorkerPool, IdleWorkersKilledFromOutsideAreReplacedAndTheCheckRunsElsewhere) {
  std::mutex mu;
  std::vector<std::pair<isolate::RestartCause, Failure>> restarts;
  PoolOptions o = Options(AXQC_TEST_WORKER_BIN, 2);
  o.on_restart = [&](isolate::RestartCause c, Failure f) {
    std::lock_guard<std::mutex> lock(mu);
    restarts.emplace_back(c, f);
  };
  WorkerPool pool(o);
  const std::string model = ConformantModel("idle-kill");
  for (int round = 1; round <= 3; ++round) {
    SCOPED_TRACE(round);
    const auto before = pool.Pids();
    ASSERT_EQ(before.size(), 2u);
    for (pid_t p : before) ASSERT_EQ(::kill(p, SIGKILL), 0);
    const CheckResult r = RunCheck(pool, model, "good.onnx");
    ASSERT_EQ(r.failure, Failure::kNone) << r.error;
    EXPECT_EQ(r.kind, ResultKind::kReport);
    EXPECT_FALSE(r.not_started);
    EXPECT_GT(r.worker, 2u);  // not one of the first two workers
    ASSERT_TRUE(WaitFor(
        [&] {
          std::lock_guard<std::mutex> lock(mu);
          return restarts.size() == 2u * static_cast<unsigned>(round);
        },
        std::chrono::seconds(20)));
    ASSERT_TRUE(WaitFor([&] { return pool.Pids().size() == 2; }, std::chrono::seconds(20)));
    const auto after = pool.Pids();
    for (pid_t p : before) EXPECT_EQ(std::count(after.begin(), after.end(), p), 0);
  }
  std::lock_guard<std::mutex> lock(mu);
  for (const auto& [cause, failure] : restarts) {
    EXPECT_EQ(cause, isolate::RestartCause::kIdleExit);
    EXPECT_EQ(failure, Failure::kNone);
  }
  EXPECT_STREQ(isolate::RestartCauseName(isolate::RestartCause::kIdleExit, Failure::kNone),
               "idle_exit");
}

// A worker that is alive but never takes the request (stopped with SIGSTOP) is killed after the
// start timeout and the check goes to another worker; nothing is blamed on the model.
TEST(WorkerPool, AWorkerThatDoesNotTakeTheCheckIsReplacedAndTheCheckRetried) {
  std::atomic<int> idle_exits{0};
  PoolOptions o = Options(AXQC_TEST_WORKER_BIN, 2);
  o.start_timeout_seconds = 5;
  o.on_restart = [&](isolate::RestartCause c, Failure) {
    if (c == isolate::RestartCause::kIdleExit) ++idle_exits;
  };
  WorkerPool pool(o);
  const auto stopped = pool.Pids();
  for (pid_t p : stopped) ASSERT_EQ(::kill(p, SIGSTOP), 0);
  const CheckResult r = RunCheck(pool, ConformantModel("stopped"), "good.onnx");
  ASSERT_EQ(r.failure, Failure::kNone) << r.error;
  EXPECT_EQ(r.kind, ResultKind::kReport);
  // The check tried one stopped worker at least; the other may still be idle (and stopped).
  EXPECT_GE(idle_exits.load(), 1);
  const auto now = pool.Pids();
  EXPECT_LE(
      std::count_if(now.begin(), now.end(),
                    [&](pid_t p) { return std::count(stopped.begin(), stopped.end(), p) > 0; }),
      2 - idle_exits.load());
  for (pid_t p : now) ::kill(p, SIGCONT);
}

// No worker can take the check (the program fails after the pool started): a failure that says
// so, marked not_started (the server answers UNAVAILABLE and remembers nothing).
TEST(WorkerPool, ChecksThatNoWorkerTookAreMarkedNotStarted) {
  const fs::path dir = fs::temp_directory_path() / ("axqc-pool-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path program = dir / "worker";
  fs::copy_file(AXQC_TEST_WORKER_BIN, program, fs::copy_options::overwrite_existing);
  PoolOptions o = Options(program.c_str(), 1);
  o.start_timeout_seconds = 2;
  WorkerPool pool(o);
  // Replacements cannot start any more.
  fs::remove(program);
  ASSERT_EQ(::kill(pool.Pids().at(0), SIGKILL), 0);
  const CheckResult r = RunCheck(pool, ConformantModel("nobody"), "good.onnx");
  EXPECT_EQ(r.failure, Failure::kProtocol);
  EXPECT_TRUE(r.not_started);
  EXPECT_NE(r.error.find("no worker process"), std::string::npos) << r.error;
  fs::remove_all(dir);
}

TEST(WorkerPool, MissingProgramIsAStartupError) {
  PoolOptions o = Options("/nonexistent/axqc-worker");
  o.start_timeout_seconds = 5;
  try {
    WorkerPool pool(o);
    FAIL() << "the pool started";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/axqc-worker"), std::string::npos)
        << e.what();
  }
}

TEST(WorkerPool, WorkersInheritNoDescriptorsAndDieWithTheirParent) {
  WorkerPool pool(Options(AXQC_WORKER_BIN));
  const pid_t pid = pool.Pids().at(0);
  // 0, 1, 2 (/dev/null) and the control socket (3): nothing else.
  std::vector<std::string> fds;
  for (const auto& e : fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd")) {
    fds.push_back(e.path().filename().string());
  }
  std::sort(fds.begin(), fds.end());
  EXPECT_EQ(fds, (std::vector<std::string>{"0", "1", "2", "3"}));
  const std::string status = ReadFile("/proc/" + std::to_string(pid) + "/status");
  EXPECT_NE(status.find("NoNewPrivs:\t1"), std::string::npos) << status;
  EXPECT_NE(status.find("Seccomp:\t2"), std::string::npos) << status;
}

}  // namespace
}  // namespace axqc::test
