#include "loader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include <google/protobuf/io/coded_stream.h>
#include <openssl/evp.h>

#include "axqc/checker.h"

namespace axqc::detail {

namespace fs = std::filesystem;

std::string Sha256Hex(std::string_view bytes) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(bytes.data(), bytes.size(), md, &len, EVP_sha256(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(std::size_t{len} * 2);
  for (unsigned int i = 0; i < len; ++i) {
    out.push_back(kHex[md[i] >> 4]);
    out.push_back(kHex[md[i] & 0xf]);
  }
  return out;
}

namespace {

constexpr std::uint64_t kMaxModelBytes = std::uint64_t{2} << 30;  // protobuf's 2 GiB limit

// Resolves external data strictly inside the model directory (no absolute paths, no "..", no
// symlink escapes) and reads bounded byte ranges.
class DirExternalReader final : public ExternalDataReader {
 public:
  explicit DirExternalReader(std::string dir) : dir_(std::move(dir)) {}

  std::optional<std::string> Read(const onnx::TensorProto& t, std::size_t max_bytes) const override {
    std::string location;
    std::uint64_t offset = 0;
    std::optional<std::uint64_t> length;
    for (const auto& kv : t.external_data()) {
      try {
        if (kv.key() == "location") location = kv.value();
        if (kv.key() == "offset") offset = std::stoull(kv.value());
        if (kv.key() == "length") length = std::stoull(kv.value());
      } catch (const std::exception&) {
        return std::nullopt;
      }
    }
    auto path = Resolve(location);
    if (!path) return std::nullopt;
    int fd = ::open(path->c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
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
    if (!fs::is_regular_file(target, ec)) return "location '" + location + "' is not a regular file";
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
        try {
          if (kv.key() == "location") location = kv.value();
          if (kv.key() == "offset") offset = std::stoull(kv.value());
          if (kv.key() == "length") length = std::stoull(kv.value());
        } catch (const std::exception&) {
          throw InputError(model_name + ": external data of tensor '" + t.name() +
                           "' has a non-numeric offset or length");
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
                         " bytes)");
      }
    };
    for (const auto& t : g.initializer()) check(t);
    for (const auto& n : g.node()) {
      for (const auto& a : n.attribute()) {
        if (a.has_t()) check(a.t());
      }
    }
  }

 private:
  std::string dir_;
};

void ParseInto(std::string_view bytes, const std::string& name, onnx::ModelProto& proto) {
  if (bytes.empty()) throw InputError(name + ": the file is empty (0 bytes), not an ONNX model");
  if (bytes.size() > kMaxModelBytes) {
    throw InputError(name + ": " + std::to_string(bytes.size()) +
                     " bytes exceeds the 2 GiB protobuf limit; store weights as external data");
  }
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const std::uint8_t*>(bytes.data()),
                                            static_cast<int>(bytes.size()));
  in.SetTotalBytesLimit(static_cast<int>(kMaxModelBytes - 1));
  in.SetRecursionLimit(100);
  if (!proto.ParseFromCodedStream(&in) || !in.ConsumedEntireMessage()) {
    throw InputError(name + ": not an ONNX model (protobuf parse failed: truncated, corrupt or " +
                     "another file type)");
  }
  if (!proto.has_graph() && proto.ir_version() == 0 && proto.opset_import_size() == 0) {
    throw InputError(name + ": not an ONNX model (no graph, IR version or opset)");
  }
}

bool HasExternal(const onnx::GraphProto& g) {
  for (const auto& t : g.initializer()) {
    if (IsExternal(t)) return true;
  }
  for (const auto& n : g.node()) {
    for (const auto& a : n.attribute()) {
      if (a.has_t() && IsExternal(a.t())) return true;
    }
  }
  return false;
}

}  // namespace

LoadedModel LoadFromFile(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    throw InputError(path + ": cannot open (" + std::strerror(errno) + ")");
  }
  if (S_ISDIR(st.st_mode)) throw InputError(path + ": is a directory, not an ONNX model");
  if (!S_ISREG(st.st_mode)) throw InputError(path + ": is not a regular file");
  if (static_cast<std::uint64_t>(st.st_size) > kMaxModelBytes) {
    throw InputError(path + ": " + std::to_string(st.st_size) +
                     " bytes exceeds the 2 GiB protobuf limit");
  }
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw InputError(path + ": cannot open (" + std::strerror(errno) + ")");
  std::string bytes(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t done = 0;
  while (done < bytes.size()) {
    auto got = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    done += static_cast<std::size_t>(got);
  }
  ::close(fd);
  if (done != bytes.size()) throw InputError(path + ": short read");

  LoadedModel m;
  m.name = path;
  m.size = bytes.size();
  m.sha256 = Sha256Hex(bytes);
  ParseInto(bytes, path, m.proto);
  std::string().swap(bytes);
  m.dir = fs::path(path).parent_path().string();
  if (m.dir.empty()) m.dir = ".";
  auto reader = std::make_unique<DirExternalReader>(m.dir);
  reader->ValidateAll(m.proto.graph(), path);
  m.external = std::move(reader);
  return m;
}

LoadedModel LoadFromBytes(std::string_view bytes, const std::string& name) {
  LoadedModel m;
  m.name = name;
  m.size = bytes.size();
  m.sha256 = Sha256Hex(bytes);
  ParseInto(bytes, name, m.proto);
  if (HasExternal(m.proto.graph())) {
    throw InputError(name + ": tensors stored as external data cannot be checked from memory; "
                            "check the model by path or embed the weights");
  }
  return m;
}

}  // namespace axqc::detail
