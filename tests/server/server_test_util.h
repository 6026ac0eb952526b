// Helpers of the axqc-server tests: temporary directories, test models, an in-process server on a
// loopback port with a real client channel, a check gate, a Prometheus scrape over HTTP.
#pragma once

#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "axqc/checker.h"
#include "axqc/sha256.h"
#include "axqc/v1/axqc.grpc.pb.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpc/reflection/v1/reflection.grpc.pb.h"
#include "modelgen/model_builder.h"
#include "server.h"

namespace axqc::test {

namespace fs = std::filesystem;
using modelgen::ModelBuilder;
using modelgen::QParams;
using modelgen::QType;

// A fresh directory under the system temp dir, removed at destruction.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "axqc-server-test-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }
  fs::path operator/(const std::string& rel) const { return path_ / rel; }

 private:
  fs::path path_;
};

inline void WriteFile(const fs::path& p, const std::string& bytes) {
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + p.string());
}

inline std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

// ------------------------------------------------------------------------------------------------
// Models. `tag` goes into the graph name, so different tags give different bytes (and sha256).

inline std::vector<float> ChannelScales(int64_t n) {
  std::vector<float> s;
  for (int64_t i = 0; i < n; ++i) s.push_back(0.01f * static_cast<float>(i + 1));
  return s;
}

// x -> Q/DQ U8 -> Conv (S8 per-channel weight, INT32 bias) -> Q/DQ U8 -> y.
// Per-tensor weight (`broken`) violates role/weight-type (spec 4).
inline std::string ConvModelBytes(const std::string& tag, bool broken) {
  ModelBuilder b(21, 10, "g_" + tag);
  b.DocString("axqc server test model " + tag);
  const int64_t cin = 4;
  const int64_t cout = 8;
  b.Input("x", onnx::TensorProto::FLOAT, {1, cin, 8, 8});
  const QParams in = QParams::U8(0.02f, 128);
  const std::string x = b.QDQ("x", "x", in);
  const std::vector<float> ws = ChannelScales(cout);
  const QParams wp = broken ? QParams::S8(0.01f) : QParams::PerChannel(QType::kS8, ws, 0);
  const std::string w = b.WeightQDQ("w", {cout, cin, 3, 3}, wp);
  const std::vector<float> bias_scales =
      modelgen::BiasScales(in.scale[0], broken ? std::vector<float>(cout, 0.01f) : ws);
  const std::string bias = b.BiasInt32DQ("b", cout, bias_scales);
  b.Node("Conv", {x, w, bias}, {"conv_out"}, {ModelBuilder::AttrInts("pads", {1, 1, 1, 1})},
         "conv");
  b.Output(b.QDQ("conv_out", "y", QParams::U8(0.05f, 0)));
  return b.Serialize();
}

// x, grid -> GridSample "gs1" -> y: a float model (not_applicable) whose operator is in AX650's
// NPU operator table but not in AX620E's (the chip-target tests).
inline std::string GridSampleModel() {
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, {1, 4, 8, 8});
  b.Input("grid", onnx::TensorProto::FLOAT, {1, 8, 8, 2});
  b.Node("GridSample", {"x", "grid"}, {"y"}, {}, "gs1");
  b.Output("y");
  return b.Serialize();
}

inline std::string ConformantModel(const std::string& tag = "ok") {
  return ConvModelBytes(tag, false);
}
inline std::string NonConformantModel(const std::string& tag = "bad") {
  return ConvModelBytes(tag, true);
}
// Starts with byte 0xff: field number 31, wire type 7 (invalid) -> no protobuf parser accepts it.
inline std::string NotOnnxBytes() { return "\xff\xff\xff\xff this is not an ONNX model"; }

// A model with external data: the Conv model's weight "w" and weight scales "w_scale" stored in
// the data file `location` (written to `data`). `scale_factor` multiplies the weight scales; a
// non-positive one makes qdq/scale-value fire, a finding only the data file shows.
struct ExternalDataModel {
  std::string model;
  std::string data;
};
inline ExternalDataModel MakeExternalDataModel(const std::string& tag, float scale_factor = 1.0f,
                                               const std::string& location = "weights.bin") {
  onnx::ModelProto m;
  m.ParseFromString(ConvModelBytes(tag, false));
  ExternalDataModel out;
  for (auto& t : *m.mutable_graph()->mutable_initializer()) {
    if (t.name() != "w" && t.name() != "w_scale") continue;
    std::string bytes = t.raw_data();
    if (bytes.empty()) {
      for (float f : t.float_data()) {
        if (t.name() == "w_scale") f *= scale_factor;
        bytes.append(reinterpret_cast<const char*>(&f), sizeof f);
      }
    } else if (t.name() == "w_scale") {
      for (std::size_t i = 0; i + 4 <= bytes.size(); i += 4) {
        float f;
        std::memcpy(&f, bytes.data() + i, 4);
        f *= scale_factor;
        std::memcpy(bytes.data() + i, &f, 4);
      }
    }
    const std::size_t offset = out.data.size();
    out.data += bytes;
    t.clear_raw_data();
    t.clear_float_data();
    t.set_data_location(onnx::TensorProto::EXTERNAL);
    for (const auto& [k, v] : std::vector<std::pair<std::string, std::string>>{
             {"location", location},
             {"offset", std::to_string(offset)},
             {"length", std::to_string(bytes.size())}}) {
      auto* e = t.add_external_data();
      e->set_key(k);
      e->set_value(v);
    }
  }
  out.model = m.SerializeAsString();
  return out;
}

// The bundle hash of a model and its data files (docs/api.md): sha256 of
// "axqc-external-data/1\n<graph sha256>\n" and, per file in name order,
// "<name>\n<size>\n<sha256>\n".
inline std::string BundleSha256(const std::string& model,
                                std::map<std::string, std::string> files) {
  std::string text = "axqc-external-data/1\n" + Sha256Hex(model) + "\n";
  for (const auto& [name, bytes] : files) {
    text += name + "\n" + std::to_string(bytes.size()) + "\n" + Sha256Hex(bytes) + "\n";
  }
  return Sha256Hex(text);
}

// The key of the report of a model with external data files (external-read key, docs/api.md):
// the graph file and the bytes of `files` the checker reads, as the checker itself reports them.
inline std::string ReadKey(const std::string& model,
                           const std::map<std::string, std::string>& files,
                           bool check_value = false) {
  ExternalDataMap map;
  for (const auto& [name, bytes] : files) map.Add(name, bytes);
  CheckOptions o;
  o.check_value = check_value;
  o.external_data = &map;
  const Report r = CheckBytes(model, "model.onnx", o);
  std::string error;
  return ExternalReadKey(Sha256Hex(model), r.external_reads, map, &error);
}

// The report the checker itself produces for `bytes` (what the server must return).
inline Report DirectReport(const std::string& bytes, const std::string& name,
                           bool check_value = false) {
  CheckOptions o;
  o.check_value = check_value;
  // As the service checks (CoreOptions): the report carries the graph excerpt.
  o.include_graph = true;
  return CheckBytes(bytes, name, o);
}

// ------------------------------------------------------------------------------------------------
// A gate that holds checks until opened (to fill the queue deterministically).

class Gate {
 public:
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return open_; });
  }
  void Open() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      open_ = true;
    }
    cv_.notify_all();
  }
  std::atomic<int> calls{0};

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

// Check function that counts calls and waits at the gate before running the real checker.
inline server::CheckFn GatedCheck(std::shared_ptr<Gate> gate) {
  return [gate](std::string_view bytes, const std::string& name, const CheckOptions& o) {
    gate->calls.fetch_add(1);
    gate->Wait();
    return CheckBytes(bytes, name, o);
  };
}

// Polls `pred` every 5 ms for up to `timeout`.
inline bool WaitFor(const std::function<bool()>& pred,
                    std::chrono::milliseconds timeout = std::chrono::milliseconds(5000)) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return pred();
}

// Everything the peer sends on `fd` until it closes the connection (or an error).
inline std::string RecvAll(int fd) {
  std::string out;
  char buf[8192];
  for (;;) {
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

// ------------------------------------------------------------------------------------------------
// Prometheus scrape: HTTP/1.0 GET over a loopback socket, parsed into "name{k="v",...}" -> value
// with labels sorted by name.

inline std::string HttpGet(int port, const std::string& path) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("socket failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    throw std::runtime_error("connect to 127.0.0.1:" + std::to_string(port) + " failed");
  }
  const std::string req = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  (void)::send(fd, req.data(), req.size(), 0);
  std::string out = RecvAll(fd);
  ::close(fd);
  return out;
}

struct Scrape {
  int http_status = 0;
  std::string body;
  std::map<std::string, double> series;

  std::optional<double> Get(const std::string& name,
                            const std::map<std::string, std::string>& labels = {}) const {
    std::string key = name;
    if (!labels.empty()) {
      key += "{";
      bool first = true;
      for (const auto& [k, v] : labels) {
        if (!first) key += ",";
        first = false;
        key += k + "=\"" + v + "\"";
      }
      key += "}";
    }
    auto it = series.find(key);
    if (it == series.end()) return std::nullopt;
    return it->second;
  }
  // Value or 0 when absent (counters that never moved are absent).
  double Value(const std::string& name,
               const std::map<std::string, std::string>& labels = {}) const {
    return Get(name, labels).value_or(0.0);
  }
};

inline Scrape ParseScrape(const std::string& response) {
  Scrape s;
  const auto header_end = response.find("\r\n\r\n");
  const std::string status_line = response.substr(0, response.find("\r\n"));
  if (status_line.size() > 12) s.http_status = std::atoi(status_line.substr(9, 3).c_str());
  s.body = header_end == std::string::npos ? "" : response.substr(header_end + 4);
  std::istringstream lines(s.body);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::string name;
    std::map<std::string, std::string> labels;
    std::size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ') name.push_back(line[i++]);
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (i < line.size() && line[i] != '}') {
        std::string k;
        while (line[i] != '=') k.push_back(line[i++]);
        i += 2;  // ="
        std::string v;
        while (line[i] != '"') {
          if (line[i] == '\\') ++i;
          v.push_back(line[i++]);
        }
        ++i;  // closing quote
        if (line[i] == ',') ++i;
        labels[k] = v;
      }
      ++i;  // }
    }
    std::string key = name;
    if (!labels.empty()) {
      key += "{";
      bool first = true;
      for (const auto& [k, v] : labels) {
        if (!first) key += ",";
        first = false;
        key += k + "=\"" + v + "\"";
      }
      key += "}";
    }
    std::istringstream rest(line.substr(i));
    double value = 0;
    rest >> value;
    s.series[key] = value;
  }
  return s;
}

inline Scrape ScrapeMetrics(int port) { return ParseScrape(HttpGet(port, "/metrics")); }

// ------------------------------------------------------------------------------------------------
// An in-process server on 127.0.0.1:<picked port>, with its store, allowed root and log file in a
// temp dir, and a client stub on a real channel.

struct TestServerOptions {
  std::function<void(server::ServerConfig&)> configure;
  server::ServerHooks hooks;
};

class TestServer {
 public:
  // `dir` outlives the server; the store is dir/store.sqlite3, the allowed root dir/root.
  TestServer(const TempDir& dir, TestServerOptions options = {}) : dir_(dir) {
    config_.listen = "127.0.0.1:0";
    config_.metrics_listen = "127.0.0.1:0";
    config_.store_path = (dir / "store.sqlite3").string();
    fs::create_directories(dir / "root");
    config_.allowed_roots = {(dir / "root").string()};
    config_.workers = 2;
    config_.isolation = "off";  // in-process checks (the isolation tests use the binary)
    config_.queue_capacity = 8;
    config_.io_threads = 2;
    config_.grace_period_seconds = 5;
    config_.log_file = (dir / "server.log").string();
    if (options.configure) options.configure(config_);
    logger_ = std::make_shared<server::Logger>(server::LogLevel::kDebug, config_.log_file);
    server_ = server::Server::Start(config_, logger_, std::move(options.hooks));
    channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(server_->grpc_port()),
                                   grpc::InsecureChannelCredentials());
    stub_ = v1::Checker::NewStub(channel_);
    health_ = grpc::health::v1::Health::NewStub(channel_);
  }
  ~TestServer() { Stop(); }

  void Stop() {
    if (server_ != nullptr) {
      server_->Shutdown();
      server_.reset();
    }
  }

  server::Server& server() { return *server_; }
  v1::Checker::Stub& stub() { return *stub_; }
  grpc::health::v1::Health::Stub& health() { return *health_; }
  const server::ServerConfig& config() const { return config_; }
  Scrape Metrics() { return ScrapeMetrics(server_->metrics_port()); }
  std::string Log() const { return ReadFile(config_.log_file); }

 private:
  const TempDir& dir_;
  server::ServerConfig config_;
  std::shared_ptr<server::Logger> logger_;
  std::unique_ptr<server::Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Checker::Stub> stub_;
  std::unique_ptr<grpc::health::v1::Health::Stub> health_;
};

// ------------------------------------------------------------------------------------------------
// Client calls.

inline grpc::Status CheckInline(v1::Checker::Stub& stub, const std::string& bytes,
                                v1::CheckResponse* resp,
                                std::map<std::string, std::string> labels = {},
                                bool check_value = false,
                                std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + timeout);
  v1::CheckRequest req;
  req.set_content(bytes);
  req.set_name("model.onnx");
  for (const auto& [k, v] : labels) (*req.mutable_labels())[k] = v;
  req.mutable_options()->set_check_value(check_value);
  return stub.Check(&ctx, req, resp);
}

inline grpc::Status CheckPath(v1::Checker::Stub& stub, const std::string& path,
                              v1::CheckResponse* resp) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  v1::CheckRequest req;
  req.set_path(path);
  return stub.Check(&ctx, req, resp);
}

struct UploadArgs {
  std::string file_name = "upload.onnx";
  std::map<std::string, std::string> labels;
  std::uint64_t declared_size = 0;
  std::string declared_sha256;
  std::size_t chunk = 1000;
  v1::ReportFormat format = v1::REPORT_FORMAT_PROTOBUF;
};

inline grpc::Status Upload(v1::Checker::Stub& stub, const std::string& bytes,
                           v1::CheckResponse* resp, const UploadArgs& a = {}) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  auto writer = stub.Upload(&ctx, resp);
  v1::UploadRequest first;
  auto* m = first.mutable_metadata();
  m->set_file_name(a.file_name);
  for (const auto& [k, v] : a.labels) (*m->mutable_labels())[k] = v;
  m->set_size_bytes(a.declared_size);
  m->set_sha256(a.declared_sha256);
  m->mutable_options()->set_format(a.format);
  bool ok = writer->Write(first);
  for (std::size_t off = 0; ok && off < bytes.size(); off += a.chunk) {
    v1::UploadRequest msg;
    msg.set_chunk(bytes.substr(off, a.chunk));
    ok = writer->Write(msg);
  }
  writer->WritesDone();
  return writer->Finish();
}

// An Upload of a model and its external data files: `files` are listed in the metadata with
// `declared` sizes and sha256 (the real ones unless given), then sent after the model in chunks
// of `chunk` bytes, the files interleaved.
struct DataFileArg {
  DataFileArg(std::string n, std::string b) : name(std::move(n)), bytes(std::move(b)) {}
  DataFileArg(std::string n, std::string b, std::optional<std::uint64_t> size, std::string sha,
              std::optional<std::uint32_t> i)
      : name(std::move(n)),
        bytes(std::move(b)),
        declared_size(size),
        declared_sha256(std::move(sha)),
        index(i) {}
  std::string name;
  std::string bytes;
  std::optional<std::uint64_t> declared_size;
  std::string declared_sha256;         // empty: the real one
  std::optional<std::uint32_t> index;  // data_chunk.file for its chunks; default: its position
};
inline grpc::Status UploadWithData(v1::Checker::Stub& stub, const std::string& model,
                                   const std::vector<DataFileArg>& files, v1::CheckResponse* resp,
                                   std::size_t chunk = 1000) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  auto writer = stub.Upload(&ctx, resp);
  v1::UploadRequest first;
  auto* m = first.mutable_metadata();
  m->set_file_name("model.onnx");
  m->set_size_bytes(model.size());
  for (const auto& f : files) {
    auto* d = m->add_data_files();
    d->set_name(f.name);
    d->set_size_bytes(f.declared_size.value_or(f.bytes.size()));
    d->set_sha256(f.declared_sha256.empty() ? Sha256Hex(f.bytes) : f.declared_sha256);
  }
  bool ok = writer->Write(first);
  for (std::size_t off = 0; ok && off < model.size(); off += chunk) {
    v1::UploadRequest msg;
    msg.set_chunk(model.substr(off, chunk));
    ok = writer->Write(msg);
  }
  for (std::size_t off = 0; ok; off += chunk) {
    bool any = false;
    for (std::size_t i = 0; ok && i < files.size(); ++i) {
      if (off >= files[i].bytes.size()) continue;
      any = true;
      v1::UploadRequest msg;
      msg.mutable_data_chunk()->set_file(files[i].index.value_or(static_cast<std::uint32_t>(i)));
      msg.mutable_data_chunk()->set_data(files[i].bytes.substr(off, chunk));
      ok = writer->Write(msg);
    }
    if (!any) break;
  }
  writer->WritesDone();
  return writer->Finish();
}

inline grpc::health::v1::HealthCheckResponse::ServingStatus HealthStatus(
    grpc::health::v1::Health::Stub& health, const std::string& service = "") {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  grpc::health::v1::HealthCheckRequest req;
  req.set_service(service);
  grpc::health::v1::HealthCheckResponse resp;
  const grpc::Status s = health.Check(&ctx, req, &resp);
  if (!s.ok()) return grpc::health::v1::HealthCheckResponse::UNKNOWN;
  return resp.status();
}

// ------------------------------------------------------------------------------------------------
// HTTP/JSON API calls.

struct HttpAnswer {
  int status = 0;
  std::string head;  // status line and headers
  std::string body;
  nlohmann::json Json() const { return nlohmann::json::parse(body); }
  std::string Header(const std::string& name) const {
    const auto at = head.find("\r\n" + name + ": ");
    if (at == std::string::npos) return {};
    const auto start = at + 4 + name.size();
    return head.substr(start, head.find("\r\n", start) - start);
  }
};

// One HTTP/1.1 request over a fresh loopback connection (Connection: close).
inline HttpAnswer HttpCall(int port, const std::string& method, const std::string& target,
                           const std::string& body = "", const std::string& content_type = "") {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("socket failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return {};
  }
  std::string req = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
  if (!content_type.empty()) req += "Content-Type: " + content_type + "\r\n";
  if (method == "POST") req += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  req += "\r\n" + body;
  for (std::size_t off = 0; off < req.size();) {
    const ssize_t n = ::send(fd, req.data() + off, req.size() - off, MSG_NOSIGNAL);
    if (n <= 0) break;
    off += static_cast<std::size_t>(n);
  }
  std::string out = RecvAll(fd);
  ::close(fd);
  HttpAnswer a;
  if (out.rfind("HTTP/1.1 ", 0) == 0) a.status = std::stoi(out.substr(9, 3));
  const auto end = out.find("\r\n\r\n");
  a.head = out.substr(0, end);
  if (end != std::string::npos) a.body = out.substr(end + 4);
  return a;
}

// Standard base64 with padding: the proto3 JSON mapping of `bytes` (CheckRequest.content).
inline std::string Base64(const std::string& bytes) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::size_t i = 0;
  const auto at = [&](std::size_t j) {
    return static_cast<unsigned>(static_cast<unsigned char>(bytes[j]));
  };
  for (; i + 2 < bytes.size(); i += 3) {
    const unsigned v = (at(i) << 16) | (at(i + 1) << 8) | at(i + 2);
    out += {k[(v >> 18) & 63], k[(v >> 12) & 63], k[(v >> 6) & 63], k[v & 63]};
  }
  if (i + 1 == bytes.size()) {
    const unsigned v = at(i) << 16;
    out += {k[(v >> 18) & 63], k[(v >> 12) & 63], '=', '='};
  } else if (i + 2 == bytes.size()) {
    const unsigned v = (at(i) << 16) | (at(i + 1) << 8);
    out += {k[(v >> 18) & 63], k[(v >> 12) & 63], k[(v >> 6) & 63], '='};
  }
  return out;
}

// `s` percent-encoded for a query string (every byte but the unreserved ones).
inline std::string UrlEncode(std::string_view s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(ch);
    } else {
      out += {'%', hex[c >> 4], hex[c & 15]};
    }
  }
  return out;
}

inline std::string ErrorField(const HttpAnswer& a, const char* key) {
  return a.Json().at("error").at(key).get<std::string>();
}

// ------------------------------------------------------------------------------------------------
// The in-process server with the HTTP/JSON API.

inline TestServerOptions WithHttp(std::function<void(server::ServerConfig&)> more = {}) {
  TestServerOptions o;
  o.configure = [more](server::ServerConfig& c) {
    c.http_listen = "127.0.0.1:0";
    if (more) more(c);
  };
  return o;
}

}  // namespace axqc::test
