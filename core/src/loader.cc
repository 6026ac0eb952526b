#include "loader.h"

#include <fcntl.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/wire_format_lite.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "axqc/errors.h"
#include "axqc/external_data.h"
#include "axqc/sha256.h"
#include "beside.h"
#include "lfs_pointer.h"
#include "stage_clock.h"

namespace axqc::detail {

namespace fs = std::filesystem;

double StageNow(const StageTimings& t) {
  if (t.thread_cpu) {
    timespec ts{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

namespace {

// "; the file is a Git LFS pointer file ..." when the data file at `path` (`size` bytes) is one:
// a clone without Git LFS leaves pointers in place of the weights.
std::string LfsPointerNote(const fs::path& path, std::uint64_t size) {
  if (size > 1024) return {};
  std::ifstream in(path, std::ios::binary);
  std::string bytes(static_cast<std::size_t>(size), '\0');
  if (!in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()))) return {};
  const auto pointer = ParseLfsPointer(bytes);
  return pointer ? "; the file is " + LfsPointerMessage(*pointer) : std::string();
}

// protobuf's 2 GiB limit: CodedInputStream takes an int size.
constexpr std::uint64_t kMaxModelBytes = INT_MAX;
// Message nesting accepted by the parser (protobuf's default is 100). Each level of If/Loop/Scan
// bodies costs three (NodeProto, AttributeProto, GraphProto), so this admits ~160 nested bodies;
// deeper inputs are recursion bombs for the parser, the ONNX checker and shape inference (all
// recursive) and are rejected as input errors before anything recurses over them.
constexpr int kMaxMessageDepth = 500;

// Strict decimal parse of an external-data offset/length ("12abc", "-1", "" are rejected).
std::optional<std::uint64_t> ParseU64(const std::string& s) {
  std::uint64_t v = 0;
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, v);
  if (s.empty() || ec != std::errc() || p != end) return std::nullopt;
  return v;
}

// Deepest message nesting in `bytes` read as `type`, walked iteratively over the wire format
// (fields of message type are descended into, everything else is skipped). Stops counting once
// `stop` is exceeded. Used to name the cause when the parser rejects a model.
int MessageDepth(std::string_view bytes, const google::protobuf::Descriptor* type, int stop) {
  using google::protobuf::FieldDescriptor;
  using google::protobuf::internal::WireFormatLite;
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const std::uint8_t*>(bytes.data()),
                                            static_cast<int>(bytes.size()));
  struct Frame {
    const google::protobuf::Descriptor* type;
    google::protobuf::io::CodedInputStream::Limit limit;
  };
  std::vector<Frame> stack{{type, 0}};
  int deepest = 1;
  while (!stack.empty()) {
    const std::uint32_t tag = in.ReadTag();
    if (tag == 0) {
      if (stack.size() == 1 || in.BytesUntilLimit() != 0) break;  // end of input or corrupt
      in.PopLimit(stack.back().limit);
      stack.pop_back();
      continue;
    }
    const auto* field = stack.back().type->FindFieldByNumber(static_cast<int>(tag >> 3));
    if (field != nullptr && field->type() == FieldDescriptor::TYPE_MESSAGE &&
        WireFormatLite::GetTagWireType(tag) == WireFormatLite::WIRETYPE_LENGTH_DELIMITED) {
      std::uint32_t len = 0;
      if (!in.ReadVarint32(&len)) break;
      stack.push_back({field->message_type(), in.PushLimit(static_cast<int>(len))});
      deepest = std::max(deepest, static_cast<int>(stack.size()));
      if (deepest > stop) break;
      continue;
    }
    if (!WireFormatLite::SkipField(&in, tag)) break;
  }
  return deepest;
}

// Resolves external data strictly inside the model directory (no absolute paths, no "..", no
// symlink escapes) and reads bounded byte ranges.
class DirExternalReader final : public ExternalDataReader {
 public:
  explicit DirExternalReader(std::string dir) : dir_(std::move(dir)) {}

  std::optional<std::string> Read(const onnx::TensorProto& t,
                                  std::size_t max_bytes) const override {
    std::string location;
    std::uint64_t offset = 0;
    std::optional<std::uint64_t> length;
    for (const auto& kv : t.external_data()) {
      if (kv.key() == "location") location = kv.value();
      if (kv.key() == "offset" || kv.key() == "length") {
        auto v = ParseU64(kv.value());
        if (!v) return std::nullopt;
        if (kv.key() == "offset") {
          offset = *v;
        } else {
          length = *v;
        }
      }
    }
    auto path = Resolve(location);
    if (!path) return std::nullopt;
    int fd = ::open(path->c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) return std::nullopt;
    struct stat st {};
    std::optional<std::string> out;
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
      auto size = static_cast<std::uint64_t>(st.st_size);
      std::uint64_t len = length ? *length : (offset <= size ? size - offset : 0);
      if (offset <= size && len <= size - offset && len <= max_bytes) {
        std::string buf(len, '\0');
        auto got = ::pread(fd, buf.data(), len, static_cast<off_t>(offset));
        if (got == static_cast<ssize_t>(len)) out = std::move(buf);
      }
    }
    ::close(fd);
    return out;
  }

  // Validates a location; returns the canonical path or nullopt. Throws nothing.
  std::optional<std::string> Resolve(const std::string& location) const {
    std::string why = Problem(location);
    if (!why.empty()) return std::nullopt;
    std::error_code ec;
    auto canon = fs::weakly_canonical(fs::path(dir_) / location, ec);
    if (ec) return std::nullopt;
    return canon.string();
  }

  // Empty when the location is acceptable; else the reason.
  std::string Problem(const std::string& location) const {
    if (location.empty()) return "has an empty location";
    if (location.find('\0') != std::string::npos) return "location contains a NUL byte";
    fs::path p(location);
    if (p.is_absolute()) return "location '" + location + "' is an absolute path";
    for (const auto& part : p) {
      if (part == "..") return "location '" + location + "' contains '..'";
    }
    std::error_code ec;
    auto base = fs::canonical(dir_.empty() ? fs::path(".") : fs::path(dir_), ec);
    if (ec) return "model directory cannot be resolved";
    auto target = fs::canonical(base / p, ec);
    if (ec) return "location '" + location + "' does not exist";
    auto rel = target.lexically_relative(base);
    if (rel.empty() || *rel.begin() == "..") {
      return "location '" + location + "' resolves outside the model directory (symlink)";
    }
    if (!fs::is_regular_file(target, ec))
      return "location '" + location + "' is not a regular file";
    return {};
  }

  // Validates every external tensor's location and byte range; throws InputError.
  void ValidateAll(const onnx::GraphProto& g, const std::string& model_name) const {
    auto check = [&](const onnx::TensorProto& t) {
      if (!IsExternal(t)) return;
      std::string location;
      std::uint64_t offset = 0;
      std::optional<std::uint64_t> length;
      for (const auto& kv : t.external_data()) {
        if (kv.key() == "location") location = kv.value();
        if (kv.key() == "offset" || kv.key() == "length") {
          auto v = ParseU64(kv.value());
          if (!v) {
            throw InputError(model_name + ": external data of tensor '" + t.name() + "' has " +
                             kv.key() + " '" + kv.value() +
                             "', which is not a non-negative decimal number");
          }
          if (kv.key() == "offset") {
            offset = *v;
          } else {
            length = *v;
          }
        }
      }
      std::string why = Problem(location);
      if (!why.empty()) {
        throw InputError(model_name + ": external data of tensor '" + t.name() + "' " + why);
      }
      std::error_code ec;
      auto size = fs::file_size(fs::path(dir_) / location, ec);
      if (ec) throw InputError(model_name + ": cannot stat external data '" + location + "'");
      std::uint64_t len = length.value_or(offset <= size ? size - offset : 0);
      if (offset > size || len > size - offset) {
        throw InputError(model_name + ": external data of tensor '" + t.name() + "' (offset " +
                         std::to_string(offset) + ", length " + std::to_string(len) +
                         ") lies past the end of '" + location + "' (" + std::to_string(size) +
                         " bytes)" + LfsPointerNote(fs::path(dir_) / location, size));
      }
    };
    ForEachTensor(g, [&](const onnx::TensorProto& t, const TensorSite&) { check(t); });
  }

 private:
  std::string dir_;
};

// External data from files handed over with an in-memory model (CheckOptions::external_data):
// the same rules as DirExternalReader, with the file set in place of the model's directory.
class MemExternalReader final : public ExternalDataReader {
 public:
  explicit MemExternalReader(const ExternalData& files) : files_(files) {}

  struct Range {
    std::size_t file = 0;
    std::uint64_t offset = 0;
    std::uint64_t length = 0;
  };

  // The file and byte range of an external tensor, or the reason it has none ("" = ok).
  std::string Locate(const onnx::TensorProto& t, Range* out) const {
    std::string location;
    bool has_location = false;
    std::uint64_t offset = 0;
    std::optional<std::uint64_t> length;
    for (const auto& kv : t.external_data()) {
      if (kv.key() == "location") {
        location = kv.value();
        has_location = true;
      }
      if (kv.key() == "offset" || kv.key() == "length") {
        auto v = ParseU64(kv.value());
        if (!v) {
          return "has " + kv.key() + " '" + CleanText(kv.value().substr(0, 64)) +
                 "', which is not a non-negative decimal number";
        }
        if (kv.key() == "offset") {
          offset = *v;
        } else {
          length = *v;
        }
      }
    }
    if (!has_location || location.empty()) return "has an empty location";
    const std::string shown = CleanText(location.substr(0, 256));
    if (std::string why = ExternalDataNameProblem(location); !why.empty()) {
      return "location '" + shown + "' " + why;
    }
    const std::size_t i = files_.Find(NormalizeExternalDataName(location));
    if (i == files_.count()) {
      return "location '" + shown + "' is not among the data files sent with the model";
    }
    const std::uint64_t size = files_.size(i);
    const std::uint64_t len = length.value_or(offset <= size ? size - offset : 0);
    if (offset > size || len > size - offset) {
      return "(offset " + std::to_string(offset) + ", length " + std::to_string(len) +
             ") lies past the end of '" + shown + "' (" + std::to_string(size) + " bytes)";
    }
    *out = {i, offset, len};
    return {};
  }

  std::optional<std::string> Read(const onnx::TensorProto& t,
                                  std::size_t max_bytes) const override {
    Range r;
    if (!Locate(t, &r).empty() || r.length > max_bytes) return std::nullopt;
    {
      // Every read is recorded: the report depends on these bytes (Report::external_reads).
      std::lock_guard<std::mutex> lock(mu_);
      if (reads_.size() < files_.count()) reads_.resize(files_.count());
      reads_[r.file].push_back({r.offset, r.length});
    }
    std::string buf(static_cast<std::size_t>(r.length), '\0');
    if (!files_.Read(r.file, r.offset, buf.data(), buf.size())) return std::nullopt;
    return buf;
  }

  std::vector<ExternalFileRanges> Reads() const override {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<ExternalFileRanges> out;
    for (std::size_t i = 0; i < reads_.size(); ++i) {
      std::vector<ExternalRange> r = reads_[i];
      MergeRanges(r);
      if (r.empty()) continue;
      out.push_back({files_.name(i), files_.size(i), std::move(r)});
    }
    std::sort(out.begin(), out.end(), [](const ExternalFileRanges& a, const ExternalFileRanges& b) {
      return a.name < b.name;
    });
    return out;
  }

  // Every external tensor names a file given and lies inside it; every file given is named.
  void ValidateAll(const onnx::ModelProto& model, const std::string& model_name) const {
    std::vector<bool> used(files_.count(), false);
    ForEachTensor(model, [&](const onnx::TensorProto& t, const TensorSite&) {
      if (!IsExternal(t)) return;
      Range r;
      if (std::string why = Locate(t, &r); !why.empty()) {
        throw InputError(model_name + ": external data of tensor '" +
                         CleanText(t.name().substr(0, 256)) + "' " + why);
      }
      used[r.file] = true;
    });
    for (std::size_t i = 0; i < used.size(); ++i) {
      if (!used[i]) {
        throw InputError(model_name + ": data file '" + CleanText(files_.name(i)) +
                         "' was sent with the model but no tensor's location names it");
      }
    }
  }

 private:
  const ExternalData& files_;
  mutable std::mutex mu_;
  mutable std::vector<std::vector<ExternalRange>> reads_;
};

void ParseInto(std::string_view bytes, const std::string& name, onnx::ModelProto& proto) {
  if (bytes.empty()) throw InputError(name + ": the file is empty (0 bytes), not an ONNX model");
  if (bytes.size() > kMaxModelBytes) {
    throw InputError(name + ": " + std::to_string(bytes.size()) +
                     " bytes exceeds the 2 GiB protobuf limit; store weights as external data");
  }
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const std::uint8_t*>(bytes.data()),
                                            static_cast<int>(bytes.size()));
  in.SetTotalBytesLimit(static_cast<int>(kMaxModelBytes));
  in.SetRecursionLimit(kMaxMessageDepth);
  if (!proto.ParseFromCodedStream(&in) || !in.ConsumedEntireMessage()) {
    proto.Clear();
    if (MessageDepth(bytes, onnx::ModelProto::descriptor(), kMaxMessageDepth) > kMaxMessageDepth) {
      throw InputError(name + ": protobuf messages nested more than " +
                       std::to_string(kMaxMessageDepth) +
                       " levels deep (nested subgraphs or types); rejected as a recursion bomb");
    }
    if (const auto pointer = ParseLfsPointer(bytes)) {
      throw InputError(name + ": " + LfsPointerMessage(*pointer));
    }
    throw InputError(name + ": not an ONNX model (protobuf parse failed: truncated, corrupt or " +
                     "another file type)");
  }
  if (!proto.has_graph() && proto.ir_version() == 0 && proto.opset_import_size() == 0) {
    throw InputError(name + ": not an ONNX model (no graph, IR version or opset)");
  }
}

bool HasExternal(const onnx::GraphProto& g) {
  bool any = false;
  ForEachTensor(g,
                [&](const onnx::TensorProto& t, const TensorSite&) { any = any || IsExternal(t); });
  return any;
}

}  // namespace

LoadedModel LoadFromFile(const std::string& path, StageTimings* timings, bool parallel) {
  StageClock clock(timings);
  // stat first, so that FIFOs, sockets and devices are never opened; then open without blocking
  // and re-check the opened file (the path may have been swapped in between).
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    throw InputError(path + ": cannot open (" + std::strerror(errno) + ")");
  }
  auto check_type = [&](const struct stat& s) {
    if (S_ISDIR(s.st_mode)) throw InputError(path + ": is a directory, not an ONNX model");
    if (S_ISFIFO(s.st_mode)) {
      throw InputError(path + ": is a FIFO (named pipe), not a regular file");
    }
    if (!S_ISREG(s.st_mode)) throw InputError(path + ": is not a regular file");
    if (static_cast<std::uint64_t>(s.st_size) > kMaxModelBytes) {
      throw InputError(path + ": " + std::to_string(s.st_size) +
                       " bytes exceeds the 2 GiB protobuf limit");
    }
  };
  check_type(st);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) throw InputError(path + ": cannot open (" + std::strerror(errno) + ")");
  struct stat fst {};
  if (::fstat(fd, &fst) != 0 || fst.st_dev != st.st_dev || fst.st_ino != st.st_ino) {
    ::close(fd);
    throw InputError(path + ": changed while being opened");
  }
  try {
    check_type(fst);
  } catch (...) {
    ::close(fd);
    throw;
  }
  st = fst;
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};

  // Pass 1: hash the file in chunks (read and sha256 timed separately), with pread (the parse
  // reads the same descriptor from its own offset), beside the parse when `parallel`. The file is
  // never held in memory as a whole: peak memory is the parsed model, not file + model.
  LoadedModel m;
  m.name = path;
  m.size = static_cast<std::uint64_t>(st.st_size);
  StageTimings hash_times;
  if (timings != nullptr) hash_times.thread_cpu = timings->thread_cpu;
  Beside hashing(parallel, [&] {
    Sha256 hash;
    std::vector<char> chunk(std::size_t{1} << 20);
    double read_s = 0, hash_s = 0;
    std::uint64_t done = 0;
    for (;;) {
      const double a0 = timings ? StageNow(hash_times) : 0;
      auto got = ::pread(fd, chunk.data(), chunk.size(), static_cast<off_t>(done));
      if (got < 0 && errno == EINTR) continue;
      const double a1 = timings ? StageNow(hash_times) : 0;
      read_s += a1 - a0;
      if (got < 0) throw InputError(path + ": read error (" + std::strerror(errno) + ")");
      if (got == 0) break;
      hash.Update(std::string_view(chunk.data(), static_cast<std::size_t>(got)));
      done += static_cast<std::uint64_t>(got);
      if (timings) hash_s += StageNow(hash_times) - a1;
    }
    if (done != m.size) throw InputError(path + ": changed while being read (size)");
    m.sha256 = hash.HexDigest();
    hash_times.read_s = read_s;
    hash_times.sha256_s = hash_s;
  });
  clock.Restart();

  // Pass 2: parse straight from the file descriptor.
  bool parsed = false;
  if (m.size > 0 && ::lseek(fd, 0, SEEK_SET) == 0) {
    google::protobuf::io::FileInputStream raw(fd, 1 << 20);
    google::protobuf::io::CodedInputStream in(&raw);
    in.SetTotalBytesLimit(static_cast<int>(kMaxModelBytes));
    in.SetRecursionLimit(kMaxMessageDepth);
    parsed = m.proto->ParseFromCodedStream(&in) && in.ConsumedEntireMessage() &&
             in.CurrentPosition() == static_cast<int>(m.size);
  }
  // The hash's errors (read error, size changed) come first, as when it ran before the parse.
  hashing.Join();
  if (timings != nullptr) {
    timings->read_s += hash_times.read_s;
    timings->sha256_s += hash_times.sha256_s;
  }
  if (!parsed ||
      (!m.proto->has_graph() && m.proto->ir_version() == 0 && m.proto->opset_import_size() == 0)) {
    // Error path: read the bytes to explain the failure (empty, too deep, not a model, ...).
    std::string bytes(static_cast<std::size_t>(m.size), '\0');
    std::size_t got_total = 0;
    if (::lseek(fd, 0, SEEK_SET) == 0) {
      while (got_total < bytes.size()) {
        auto got = ::read(fd, bytes.data() + got_total, bytes.size() - got_total);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        got_total += static_cast<std::size_t>(got);
      }
    }
    bytes.resize(got_total);
    m.proto->Clear();
    ParseInto(bytes, path, *m.proto);  // throws InputError with the cause
  }
  struct stat after {};
  if (::fstat(fd, &after) != 0 || after.st_size != st.st_size ||
      after.st_mtim.tv_sec != st.st_mtim.tv_sec || after.st_mtim.tv_nsec != st.st_mtim.tv_nsec) {
    throw InputError(path + ": changed while being read");
  }
  m.dir = fs::path(path).parent_path().string();
  if (m.dir.empty()) m.dir = ".";
  auto reader = std::make_unique<DirExternalReader>(m.dir);
  reader->ValidateAll(m.proto->graph(), path);
  m.external = std::move(reader);
  clock.Lap(&StageTimings::parse_s);
  return m;
}

LoadedModel LoadFromBytes(std::string_view bytes, const std::string& name, StageTimings* timings,
                          bool parallel, const std::string& known_sha256,
                          const ExternalData* external) {
  StageClock clock(timings);
  LoadedModel m;
  m.name = name;
  m.size = bytes.size();
  StageTimings hash_times;
  if (timings != nullptr) hash_times.thread_cpu = timings->thread_cpu;
  // The caller's own hash of these bytes (CheckOptions::known_sha256): no sha256 stage.
  if (!known_sha256.empty()) m.sha256 = known_sha256;
  Beside hashing(parallel && known_sha256.empty(), [&] {
    if (!known_sha256.empty()) return;
    StageClock hash_clock(timings != nullptr ? &hash_times : nullptr);
    m.sha256 = Sha256Hex(bytes);
    hash_clock.Lap(&StageTimings::sha256_s);
  });
  clock.Restart();
  try {
    ParseInto(bytes, name, *m.proto);
  } catch (...) {
    hashing.Join();
    throw;
  }
  hashing.Join();
  if (timings != nullptr) timings->sha256_s += hash_times.sha256_s;
  clock.Lap(&StageTimings::parse_s);
  if (external != nullptr) {
    auto reader = std::make_unique<MemExternalReader>(*external);
    reader->ValidateAll(*m.proto, name);
    m.external = std::move(reader);
    m.external_in_memory = true;
  } else if (HasExternal(m.proto->graph())) {
    throw InputError(name +
                     ": tensors stored as external data cannot be checked from memory without "
                     "their data files; check the model by path or send its data files with it");
  }
  return m;
}

}  // namespace axqc::detail
