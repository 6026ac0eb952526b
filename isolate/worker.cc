#include "worker.h"

#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "axqc/checker.h"
#include "axqc/external_data.h"
#include "axqc/render_graph.h"
#include "axqc/sha256.h"
#include "axqc/threads.h"
#include "axqc/wire/report_proto.h"
#include "protocol.h"
#include "sandbox.h"

namespace axqc::isolate {

namespace {

// Set by the new-handler when an allocation fails: the checker may catch the std::bad_alloc and
// report something else, but the check ran out of memory all the same.
std::atomic<bool> g_allocation_failed{false};

void OnAllocationFailure() {
  g_allocation_failed.store(true);
  std::set_new_handler(nullptr);  // the next failure of this allocation throws std::bad_alloc
  throw std::bad_alloc();
}

double ProcessCpuSeconds() {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

struct Args {
  int fd = 3;
  int parent = 0;
  std::uint64_t memory_limit = 0;
  bool allow_read = false;
};

bool ParseArgs(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    auto value = [&](std::string_view prefix, std::uint64_t* out) {
      if (arg.substr(0, prefix.size()) != prefix) return false;
      char* end = nullptr;
      const std::string v(arg.substr(prefix.size()));
      *out = std::strtoull(v.c_str(), &end, 10);
      return !v.empty() && *end == '\0';
    };
    std::uint64_t v = 0;
    if (value("--fd=", &v)) {
      a->fd = static_cast<int>(v);
    } else if (value("--parent=", &v)) {
      a->parent = static_cast<int>(v);
    } else if (value("--memory-limit=", &v)) {
      a->memory_limit = v;
    } else if (arg == "--allow-read") {
      a->allow_read = true;
    } else {
      return false;
    }
  }
  return a->parent > 0;
}

// A tiny valid model (Relu, opset 13): the first check initialises ONNX's schema registry and
// everything else lazy before the sandbox closes, and proves the checker runs.
std::string WarmUpModel() {
  // Serialized by hand: ModelProto{ir_version 8, opset_import{"" 13}, graph{node Relu x->y,
  // name "g", input x float[1], output y float[1]}}.
  auto varint = [](std::string& s, std::uint64_t v) {
    while (v >= 0x80) {
      s.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    s.push_back(static_cast<char>(v));
  };
  auto field = [&](std::string& s, int number, const std::string& bytes) {
    varint(s, (static_cast<std::uint64_t>(number) << 3) | 2);
    varint(s, bytes.size());
    s += bytes;
  };
  auto value_info = [&](const std::string& name) {
    std::string dim;  // TensorShapeProto.Dimension{dim_value 1}
    varint(dim, (1 << 3) | 0);
    varint(dim, 1);
    std::string shape;
    field(shape, 1, dim);
    std::string tensor;  // TypeProto.Tensor{elem_type FLOAT, shape}
    varint(tensor, (1 << 3) | 0);
    varint(tensor, 1);
    field(tensor, 2, shape);
    std::string type;
    field(type, 1, tensor);
    std::string vi;
    field(vi, 1, name);
    field(vi, 2, type);
    return vi;
  };
  std::string node;
  field(node, 1, "x");
  field(node, 2, "y");
  field(node, 3, "relu");
  field(node, 4, "Relu");
  std::string graph;
  field(graph, 1, node);
  field(graph, 2, "g");
  field(graph, 11, value_info("x"));
  field(graph, 12, value_info("y"));
  std::string opset;
  field(opset, 1, "");
  varint(opset, (2 << 3) | 0);
  varint(opset, 13);
  std::string model;
  varint(model, (1 << 3) | 0);
  varint(model, 8);
  field(model, 7, graph);
  field(model, 8, opset);
  return model;
}

HtmlOptions ToHtmlOptions(const HtmlSettings& s) {
  HtmlOptions o;
  o.rules_url = s.rules_url;
  o.home_url = s.home_url;
  o.home_label = s.home_label;
  o.hops = static_cast<int>(std::min<std::uint32_t>(s.hops, 8));
  o.view_max_nodes = s.view_max_nodes;
  o.whole_model_max_nodes = s.whole_model_max_nodes;
  o.view_max_edges = s.view_max_edges;
  o.whole_model_max_edges = s.whole_model_max_edges;
  o.layout_seconds = s.layout_seconds;
  o.repair_by_file_name = s.repair_by_file_name;
  return o;
}

// Task::kRenderHtml: the HTML report of the serialized axqc.v1.Report in `bytes`.
std::string RenderReport(std::string_view bytes, const HtmlSettings& settings) {
  v1::Report proto;
  if (bytes.size() > static_cast<std::size_t>(INT32_MAX) ||
      !proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    throw InputError("not a serialized axqc.v1.Report");
  }
  return RenderHtml(wire::FromProto(proto), ToHtmlOptions(settings));
}

CheckResultMsg RunCheck(const CheckRequestMsg& req, int model_fd, const std::vector<int>& data_fds,
                        std::optional<std::string> pulsar2_config, int* report_fd,
                        const TestHook& hook) {
  const double cpu_start = ProcessCpuSeconds();
  CheckResultMsg result;
  CheckOptions options;
  options.check_value = req.check_value;
  options.include_units = req.include_units;
  options.include_graph = req.include_graph;
  options.max_locations = req.max_locations;
  options.targets = req.targets;
  options.pulsar2_config = std::move(pulsar2_config);
  result.timings.thread_cpu = req.timings_cpu;
  options.timings = &result.timings;
  // The parent hashed these bytes itself (the protocol never carries a client's claim): the
  // report names them by that hash without hashing 65 MB again.
  if (model_fd >= 0 && IsSha256Hex(req.sha256)) options.known_sha256 = req.sha256;
  void* map = nullptr;
  std::size_t map_len = 0;
  g_allocation_failed.store(false);
  std::set_new_handler(OnAllocationFailure);
  SetCheckLimits(req.memory_bytes, req.cpu_seconds);
  try {
    if (hook) hook(req.task == Task::kRenderHtml ? "html:" + req.name : req.name);
    std::string serialized;
    if (model_fd >= 0) {
      std::string_view bytes;
      if (req.model_bytes > 0) {
        map_len = req.model_bytes;
        // MAP_POPULATE: the pages are mapped in one go instead of one fault per few pages while
        // the checker hashes and parses them.
        map = ::mmap(nullptr, map_len, PROT_READ, MAP_PRIVATE | MAP_POPULATE, model_fd, 0);
        if (map == MAP_FAILED) {
          map = nullptr;
          if (errno == ENOMEM) throw std::bad_alloc();
          throw std::runtime_error(std::string("cannot map the model: ") + std::strerror(errno));
        }
        bytes = std::string_view(static_cast<const char*>(map), map_len);
      }
      // External data is read with pread from the descriptors the parent sent (never mapped:
      // the address-space limit counts only the ranges the checker reads).
      ExternalDataFds files;
      if (req.external_data) {
        for (std::size_t i = 0; i < data_fds.size(); ++i) {
          struct stat st {};
          if (::fstat(data_fds[i], &st) != 0 || !S_ISREG(st.st_mode) ||
              static_cast<std::uint64_t>(st.st_size) != req.data_files[i].size) {
            throw std::runtime_error("data file descriptor " + std::to_string(i) +
                                     " does not match its declared size");
          }
          files.Add(req.data_files[i].name, data_fds[i], req.data_files[i].size);
        }
        options.external_data = &files;
      }
      serialized = req.task == Task::kRenderHtml
                       ? RenderReport(bytes, req.html)
                       : wire::ToProto(CheckBytes(bytes, req.name, options)).SerializeAsString();
    } else {
      serialized = wire::ToProto(CheckFile(req.path, options)).SerializeAsString();
    }
    if (map != nullptr) ::munmap(map, map_len);
    map = nullptr;
    SetCheckLimits(0, 0);
    const int fd =
        SealedMemfd(req.task == Task::kRenderHtml ? "axqc-html" : "axqc-report", serialized);
    if (fd < 0) throw std::runtime_error("cannot create the report memfd");
    result.kind = ResultKind::kReport;
    result.report_bytes = serialized.size();
    *report_fd = fd;
  } catch (const std::bad_alloc&) {
    g_allocation_failed.store(true);
  } catch (const InputError& e) {
    result.kind = ResultKind::kInputError;
    result.error = e.what();
  } catch (const std::exception& e) {
    result.kind = ResultKind::kInternalError;
    result.error = e.what();
  }
  if (map != nullptr) ::munmap(map, map_len);
  SetCheckLimits(0, 0);
  std::set_new_handler(nullptr);
  if (g_allocation_failed.load()) {
    if (*report_fd >= 0) ::close(*report_fd);
    *report_fd = -1;
    result = CheckResultMsg{};
    result.kind = ResultKind::kMemoryExhausted;
    result.error = "an allocation failed under the worker's memory limit";
  }
  result.cpu_seconds = ProcessCpuSeconds() - cpu_start;
  return result;
}

}  // namespace

int RunWorker(int argc, char** argv, const TestHook& hook) {
  Args args;
  if (!ParseArgs(argc, argv, &args)) return kExitProtocol;
  if (!DieWithParent(args.parent)) return kExitOk;
  CloseDescriptorsFrom(args.fd + 1);
  const int sock = args.fd;
  std::uint64_t baseline = 0;
  try {
    ApplyStartupLimits(args.memory_limit);
    SetParallelChecks(false);  // the seccomp filter (sandbox.cc) allows no new threads
    // With the graph, and laid out as an HTML report: Graphviz loads its plugins and fonts now,
    // while files can still be opened (Task::kRenderHtml runs under the same filter).
    CheckOptions warm_up;
    warm_up.include_graph = true;
    (void)RenderHtml(CheckBytes(WarmUpModel(), "warm-up.onnx", warm_up), HtmlOptions{});
    baseline = CurrentVmBytes();
    ApplySeccomp(args.allow_read);
  } catch (const std::exception& e) {
    CheckResultMsg failed;
    failed.kind = ResultKind::kInternalError;
    failed.error = std::string("worker start-up failed: ") + e.what();
    SendMessage(sock, Encode(failed));
    return kExitStartupFailed;
  }
  ReadyMsg ready;
  ready.pid = static_cast<std::int32_t>(::getpid());
  ready.baseline_vm_bytes = baseline;
  if (!SendMessage(sock, Encode(ready))) return kExitOk;

  std::string payload;
  for (;;) {
    int model_fd = -1;
    const RecvStatus st = RecvMessage(sock, &payload, &model_fd);
    if (st == RecvStatus::kClosed) return kExitOk;
    if (st != RecvStatus::kMessage) return kExitProtocol;
    const auto req = DecodeRequest(payload);
    if (!req || (model_fd < 0 && req->path.empty()) || (model_fd < 0 && req->external_data) ||
        (!req->external_data && !req->data_files.empty()) ||
        (req->task == Task::kRenderHtml &&
         (model_fd < 0 || req->external_data || req->pulsar2_config_bytes))) {
      if (model_fd >= 0) ::close(model_fd);
      return kExitProtocol;
    }
    // The data files follow the request, one descriptor each, in order.
    std::vector<int> data_fds;
    auto close_data = [&] {
      for (int fd : data_fds) ::close(fd);
      data_fds.clear();
    };
    for (std::size_t i = 0; i < req->data_files.size(); ++i) {
      int fd = -1;
      const RecvStatus fst = RecvMessage(sock, &payload, &fd, 30'000);
      const auto file = fst == RecvStatus::kMessage ? DecodeDataFile(payload) : std::nullopt;
      if (!file || file->index != i || fd < 0) {
        if (fd >= 0) ::close(fd);
        close_data();
        ::close(model_fd);
        return kExitProtocol;
      }
      data_fds.push_back(fd);
    }
    // Then the Pulsar2 build configuration, when the check judges one: a sealed memfd of the
    // declared size.
    std::optional<std::string> pulsar2_config;
    if (req->pulsar2_config_bytes) {
      int fd = -1;
      const RecvStatus cst = RecvMessage(sock, &payload, &fd, 30'000);
      const bool framed = cst == RecvStatus::kMessage && DecodePulsar2Config(payload) && fd >= 0;
      struct stat config_stat {};
      std::string text;
      const bool received =
          framed && ::fstat(fd, &config_stat) == 0 && S_ISREG(config_stat.st_mode) &&
          static_cast<std::uint64_t>(config_stat.st_size) == *req->pulsar2_config_bytes &&
          ReadAll(fd, *req->pulsar2_config_bytes, &text);
      if (fd >= 0) ::close(fd);
      if (!received) {
        close_data();
        if (model_fd >= 0) ::close(model_fd);
        return kExitProtocol;
      }
      pulsar2_config = std::move(text);
    }
    // Taken: from here on a death of this process is the check's (worker_pool.h).
    AcceptedMsg accepted;
    accepted.pid = static_cast<std::int32_t>(::getpid());
    if (!SendMessage(sock, Encode(accepted))) {
      if (model_fd >= 0) ::close(model_fd);
      close_data();
      return kExitOk;
    }
    int report_fd = -1;
    const CheckResultMsg result =
        RunCheck(*req, model_fd, data_fds, std::move(pulsar2_config), &report_fd, hook);
    if (model_fd >= 0) ::close(model_fd);
    close_data();
    const bool sent = SendMessage(sock, Encode(result), report_fd);
    if (report_fd >= 0) ::close(report_fd);
    if (result.kind == ResultKind::kMemoryExhausted) return kExitMemoryExhausted;
    if (!sent) return kExitOk;
  }
}

}  // namespace axqc::isolate
