// The messages between a checking process (axqc-server, `axqc check --isolate`) and a worker
// process (axqc-worker): fixed little-endian binary records, one per SOCK_SEQPACKET message, with
// at most one descriptor passed alongside (SCM_RIGHTS). The model travels as a sealed memfd (or,
// for a file the worker may read itself, as a path); the report comes back as a memfd holding the
// serialized axqc.v1.Report. No model or report bytes go through the socket itself.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "axqc/timing.h"

namespace axqc::isolate {

// 2: CheckRequestMsg.sha256 (the parent's hash of the model) and include_graph
// 3: CheckRequestMsg.timings_cpu
// 4: AcceptedMsg (the worker took the request before it checks)
// 5: CheckRequestMsg.task and .html (the worker lays out the HTML report of a report)
// 6: CheckRequestMsg.data_files and DataFileMsg (external data files as descriptors)
inline constexpr std::uint32_t kProtocolVersion = 9;
// Most external data files of one check: their names (at most axqc::kMaxExternalDataNameBytes
// each) travel in the request, which must fit in kMaxMessageBytes.
inline constexpr std::uint32_t kMaxDataFiles = 32;
// Chip targets one check request carries at most.
inline constexpr std::uint32_t kMaxTargets = 16;

// What a request asks of the worker.
enum class Task : std::uint8_t {
  kCheck = 0,       // check the model; the answer is the serialized axqc.v1.Report
  kRenderHtml = 1,  // the descriptor holds a serialized axqc.v1.Report; the answer is its HTML
                    // report (axqc::RenderHtml, laid out by Graphviz under the check's limits)
};

// The HTML report's settings (axqc::HtmlOptions, with its defaults) for Task::kRenderHtml.
struct HtmlSettings {
  std::string rules_url = "docs/rules/";
  std::string home_url;
  std::string home_label = "dashboard";
  std::uint32_t hops = 2;
  std::uint32_t view_max_nodes = 60;
  std::uint32_t whole_model_max_nodes = 300;
  std::uint32_t view_max_edges = 240;
  std::uint32_t whole_model_max_edges = 600;
  double layout_seconds = 10.0;
  bool repair_by_file_name = false;
};

// Worker -> parent, once, after the sandbox is in place.
struct ReadyMsg {
  std::uint32_t version = kProtocolVersion;
  std::int32_t pid = 0;
  std::uint64_t baseline_vm_bytes = 0;  // address space after start-up (before any check)
};

// Parent -> worker: one check. With a descriptor: the model bytes (`model_bytes` of them);
// without: the worker checks the file at `path` (external data resolves next to it).
struct CheckRequestMsg {
  std::string name;  // model name in the report (descriptor form)
  std::string path;  // file form
  std::uint64_t model_bytes = 0;
  // Descriptor form: the SHA-256 of the model bytes as the parent computed them (64 lowercase hex)
  // or empty; the worker then does not hash the bytes again (CheckOptions::known_sha256).
  std::string sha256;
  bool check_value = false;
  bool include_units = true;
  bool include_graph = false;  // the graph for pictures (stored as an excerpt in the report)
  bool timings_cpu = false;    // stage timings on the worker's CPU clock (StageTimings::thread_cpu)
  std::uint32_t max_locations = 5;
  std::uint32_t cpu_seconds = 0;   // CPU-time limit of this check; 0 = none
  std::uint64_t memory_bytes = 0;  // address-space limit of this check; 0 = the worker's own
  Task task = Task::kCheck;
  HtmlSettings html;  // Task::kRenderHtml
  // Descriptor form: the model's external data files (name relative to the model, size). Each
  // follows the request as a DataFileMsg carrying the file's read-only descriptor, in this order.
  struct DataFile {
    std::string name;
    std::uint64_t size = 0;
  };
  std::vector<DataFile> data_files;
  // Chip targets of the check (CheckOptions::targets): resolved chip names, at most kMaxTargets.
  std::vector<std::string> targets;
  // A Pulsar2 build configuration to judge (CheckOptions::pulsar2_config): its size in bytes, at
  // most axqc::kMaxPulsar2ConfigBytes. The text follows the request (after the data files) as a
  // Pulsar2ConfigMsg carrying a sealed memfd of exactly this size. nullopt: none.
  std::optional<std::uint32_t> pulsar2_config_bytes;
  // The model comes with its data files (possibly none of them, when every location the model
  // names is one the checker refuses): external data resolves among `data_files` only.
  bool external_data = false;
};

// Parent -> worker, after a CheckRequestMsg with data files: the descriptor of data file `index`.
struct DataFileMsg {
  std::uint32_t index = 0;
};

// Parent -> worker, after the data files of a CheckRequestMsg with pulsar2_config_bytes: the
// descriptor of the configuration's text.
struct Pulsar2ConfigMsg {};

// Worker -> parent, once per request, as soon as the request was received and decoded (before the
// check starts). A worker that dies before this message never looked at the model: the parent
// runs the check on another worker instead of blaming the model (worker_pool.h).
struct AcceptedMsg {
  std::int32_t pid = 0;
};

enum class ResultKind : std::uint8_t {
  kReport = 1,          // descriptor: memfd with the serialized axqc.v1.Report (kRenderHtml: the
                        // HTML document)
  kInputError = 2,      // `error`: not a readable model (axqc::InputError) or, kRenderHtml, not
                        // a readable report
  kInternalError = 3,   // `error`: the checker threw something else
  kMemoryExhausted = 4  // an allocation failed under the address-space limit; the worker exits
};

// Worker -> parent: the outcome of one check.
struct CheckResultMsg {
  ResultKind kind = ResultKind::kInternalError;
  std::string error;
  std::uint64_t report_bytes = 0;
  StageTimings timings;
  double cpu_seconds = 0;  // CPU time (user + system) the worker spent on this check
};

// Encoding and decoding. Decode returns nullopt on a malformed or truncated record (trailing
// bytes included), never reads past `data`.
std::string Encode(const ReadyMsg& m);
std::string Encode(const CheckRequestMsg& m);
std::string Encode(const CheckResultMsg& m);
std::string Encode(const AcceptedMsg& m);
std::string Encode(const DataFileMsg& m);
std::string Encode(const Pulsar2ConfigMsg& m);
std::optional<ReadyMsg> DecodeReady(std::string_view data);
std::optional<CheckRequestMsg> DecodeRequest(std::string_view data);
std::optional<CheckResultMsg> DecodeResult(std::string_view data);
std::optional<AcceptedMsg> DecodeAccepted(std::string_view data);
std::optional<DataFileMsg> DecodeDataFile(std::string_view data);
std::optional<Pulsar2ConfigMsg> DecodePulsar2Config(std::string_view data);

// Largest message on the control socket (no bulk data travels there).
inline constexpr std::size_t kMaxMessageBytes = 64 * 1024;

// Sends one message with an optional descriptor (fd < 0: none). Returns false on error (errno).
bool SendMessage(int sock, std::string_view payload, int fd = -1);

enum class RecvStatus { kMessage, kClosed, kTimeout, kError };
// Receives one message and the descriptor sent with it (*fd = -1 when none; the caller owns it).
// timeout_ms < 0 waits forever. A message with more than one descriptor, or truncated, is kError
// (descriptors received are closed).
RecvStatus RecvMessage(int sock, std::string* payload, int* fd, int timeout_ms = -1);

// A sealed (read-only, fixed-size) memfd holding `bytes`; -1 on error (errno).
int SealedMemfd(const char* name, std::string_view bytes);
// Reads all of `fd` (`size` bytes) into a string; false on short read.
bool ReadAll(int fd, std::uint64_t size, std::string* out);

}  // namespace axqc::isolate
