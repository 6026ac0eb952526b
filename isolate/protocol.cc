#include "protocol.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "axqc/pulsar2.h"

namespace axqc::isolate {

namespace {

// Record tags: a record of one kind is never decoded as another.
constexpr std::uint32_t kTagReady = 0x41585201;          // "AXR" 1
constexpr std::uint32_t kTagRequest = 0x41585202;        // "AXR" 2
constexpr std::uint32_t kTagResult = 0x41585203;         // "AXR" 3
constexpr std::uint32_t kTagAccepted = 0x41585204;       // "AXR" 4
constexpr std::uint32_t kTagDataFile = 0x41585205;       // "AXR" 5
constexpr std::uint32_t kTagPulsar2Config = 0x41585206;  // "AXR" 6
constexpr std::uint32_t kMaxString = 16 * 1024;

class Writer {
 public:
  void U8(std::uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void U32(std::uint32_t v) {
    for (int i = 0; i < 4; ++i) U8(static_cast<std::uint8_t>(v >> (8 * i)));
  }
  void U64(std::uint64_t v) {
    for (int i = 0; i < 8; ++i) U8(static_cast<std::uint8_t>(v >> (8 * i)));
  }
  void F64(double v) {
    std::uint64_t bits = 0;
    std::memcpy(&bits, &v, sizeof bits);
    U64(bits);
  }
  void Str(std::string_view s) {
    const auto n = static_cast<std::uint32_t>(std::min<std::size_t>(s.size(), kMaxString));
    U32(n);
    out_.append(s.data(), n);
  }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  bool U8(std::uint8_t* v) {
    if (in_.size() - pos_ < 1) return false;
    *v = static_cast<std::uint8_t>(in_[pos_++]);
    return true;
  }
  bool U32(std::uint32_t* v) {
    std::uint64_t x = 0;
    if (!Bytes(4, &x)) return false;
    *v = static_cast<std::uint32_t>(x);
    return true;
  }
  bool U64(std::uint64_t* v) { return Bytes(8, v); }
  bool F64(double* v) {
    std::uint64_t bits = 0;
    if (!U64(&bits)) return false;
    std::memcpy(v, &bits, sizeof bits);
    return true;
  }
  bool Bool(bool* v) {
    std::uint8_t b = 0;
    if (!U8(&b) || b > 1) return false;
    *v = b == 1;
    return true;
  }
  bool Str(std::string* s) {
    std::uint32_t n = 0;
    if (!U32(&n) || n > kMaxString || in_.size() - pos_ < n) return false;
    s->assign(in_.substr(pos_, n));
    pos_ += n;
    return true;
  }
  bool Tag(std::uint32_t expected) {
    std::uint32_t t = 0;
    return U32(&t) && t == expected;
  }
  bool AtEnd() const { return pos_ == in_.size(); }

 private:
  bool Bytes(int n, std::uint64_t* v) {
    if (in_.size() - pos_ < static_cast<std::size_t>(n)) return false;
    std::uint64_t x = 0;
    for (int i = 0; i < n; ++i) {
      x |= static_cast<std::uint64_t>(static_cast<std::uint8_t>(in_[pos_ + i])) << (8 * i);
    }
    pos_ += static_cast<std::size_t>(n);
    *v = x;
    return true;
  }
  std::string_view in_;
  std::size_t pos_ = 0;
};

double* TimingFields(StageTimings& t, std::size_t i) {
  double* fields[] = {&t.read_s,  &t.sha256_s, &t.parse_s, &t.onnx_check_s, &t.guards_s,
                      &t.index_s, &t.quant_s,  &t.units_s, &t.rules_s,      &t.report_s};
  return i < std::size(fields) ? fields[i] : nullptr;
}
constexpr std::size_t kTimingCount = 10;

}  // namespace

std::string Encode(const ReadyMsg& m) {
  Writer w;
  w.U32(kTagReady);
  w.U32(m.version);
  w.U32(static_cast<std::uint32_t>(m.pid));
  w.U64(m.baseline_vm_bytes);
  return w.Take();
}

std::string Encode(const CheckRequestMsg& m) {
  Writer w;
  w.U32(kTagRequest);
  w.Str(m.name);
  w.Str(m.path);
  w.U64(m.model_bytes);
  w.Str(m.sha256);
  w.U8(m.check_value ? 1 : 0);
  w.U8(m.include_units ? 1 : 0);
  w.U8(m.include_graph ? 1 : 0);
  w.U8(m.timings_cpu ? 1 : 0);
  w.U32(m.max_locations);
  w.U32(m.cpu_seconds);
  w.U64(m.memory_bytes);
  w.U8(static_cast<std::uint8_t>(m.task));
  w.Str(m.html.rules_url);
  w.Str(m.html.home_url);
  w.Str(m.html.home_label);
  w.U32(m.html.hops);
  w.U32(m.html.view_max_nodes);
  w.U32(m.html.whole_model_max_nodes);
  w.U32(m.html.view_max_edges);
  w.U32(m.html.whole_model_max_edges);
  w.F64(m.html.layout_seconds);
  w.U8(m.html.repair_by_file_name ? 1 : 0);
  w.U8(m.external_data ? 1 : 0);
  w.U32(static_cast<std::uint32_t>(m.data_files.size()));
  for (const auto& f : m.data_files) {
    w.Str(f.name);
    w.U64(f.size);
  }
  w.U32(static_cast<std::uint32_t>(m.targets.size()));
  for (const auto& t : m.targets) w.Str(t);
  w.U8(m.pulsar2_config_bytes ? 1 : 0);
  w.U32(m.pulsar2_config_bytes.value_or(0));
  return w.Take();
}

std::string Encode(const DataFileMsg& m) {
  Writer w;
  w.U32(kTagDataFile);
  w.U32(m.index);
  return w.Take();
}

std::string Encode(const Pulsar2ConfigMsg& /*m*/) {
  Writer w;
  w.U32(kTagPulsar2Config);
  return w.Take();
}

std::optional<Pulsar2ConfigMsg> DecodePulsar2Config(std::string_view data) {
  Reader r(data);
  if (!r.Tag(kTagPulsar2Config) || !r.AtEnd()) return std::nullopt;
  return Pulsar2ConfigMsg{};
}

std::optional<DataFileMsg> DecodeDataFile(std::string_view data) {
  Reader r(data);
  DataFileMsg m;
  if (!r.Tag(kTagDataFile) || !r.U32(&m.index) || !r.AtEnd()) return std::nullopt;
  return m;
}

std::string Encode(const CheckResultMsg& m) {
  Writer w;
  w.U32(kTagResult);
  w.U8(static_cast<std::uint8_t>(m.kind));
  w.Str(m.error);
  w.U64(m.report_bytes);
  StageTimings t = m.timings;
  w.U8(t.thread_cpu ? 1 : 0);
  for (std::size_t i = 0; i < kTimingCount; ++i) w.F64(*TimingFields(t, i));
  w.F64(m.cpu_seconds);
  return w.Take();
}

std::string Encode(const AcceptedMsg& m) {
  Writer w;
  w.U32(kTagAccepted);
  w.U32(static_cast<std::uint32_t>(m.pid));
  return w.Take();
}

std::optional<AcceptedMsg> DecodeAccepted(std::string_view data) {
  Reader r(data);
  AcceptedMsg m;
  std::uint32_t pid = 0;
  if (!r.Tag(kTagAccepted) || !r.U32(&pid) || !r.AtEnd()) return std::nullopt;
  m.pid = static_cast<std::int32_t>(pid);
  return m;
}

std::optional<ReadyMsg> DecodeReady(std::string_view data) {
  Reader r(data);
  ReadyMsg m;
  std::uint32_t pid = 0;
  if (!r.Tag(kTagReady) || !r.U32(&m.version) || !r.U32(&pid) || !r.U64(&m.baseline_vm_bytes) ||
      !r.AtEnd()) {
    return std::nullopt;
  }
  m.pid = static_cast<std::int32_t>(pid);
  return m;
}

std::optional<CheckRequestMsg> DecodeRequest(std::string_view data) {
  Reader r(data);
  CheckRequestMsg m;
  if (!r.Tag(kTagRequest) || !r.Str(&m.name) || !r.Str(&m.path) || !r.U64(&m.model_bytes) ||
      !r.Str(&m.sha256) || !r.Bool(&m.check_value) || !r.Bool(&m.include_units) ||
      !r.Bool(&m.include_graph) || !r.Bool(&m.timings_cpu) || !r.U32(&m.max_locations) ||
      !r.U32(&m.cpu_seconds) || !r.U64(&m.memory_bytes)) {
    return std::nullopt;
  }
  std::uint8_t task = 0;
  if (!r.U8(&task) || task > static_cast<std::uint8_t>(Task::kRenderHtml) ||
      !r.Str(&m.html.rules_url) || !r.Str(&m.html.home_url) || !r.Str(&m.html.home_label) ||
      !r.U32(&m.html.hops) || !r.U32(&m.html.view_max_nodes) ||
      !r.U32(&m.html.whole_model_max_nodes) || !r.U32(&m.html.view_max_edges) ||
      !r.U32(&m.html.whole_model_max_edges) || !r.F64(&m.html.layout_seconds) ||
      !r.Bool(&m.html.repair_by_file_name)) {
    return std::nullopt;
  }
  m.task = static_cast<Task>(task);
  std::uint32_t files = 0;
  if (!r.Bool(&m.external_data) || !r.U32(&files) || files > kMaxDataFiles) return std::nullopt;
  for (std::uint32_t i = 0; i < files; ++i) {
    CheckRequestMsg::DataFile f;
    if (!r.Str(&f.name) || !r.U64(&f.size)) return std::nullopt;
    m.data_files.push_back(std::move(f));
  }
  std::uint32_t targets = 0;
  if (!r.U32(&targets) || targets > kMaxTargets) return std::nullopt;
  for (std::uint32_t i = 0; i < targets; ++i) {
    std::string t;
    if (!r.Str(&t)) return std::nullopt;
    m.targets.push_back(std::move(t));
  }
  bool has_config = false;
  std::uint32_t config_bytes = 0;
  if (!r.Bool(&has_config) || !r.U32(&config_bytes) || config_bytes > kMaxPulsar2ConfigBytes ||
      (!has_config && config_bytes != 0)) {
    return std::nullopt;
  }
  if (has_config) m.pulsar2_config_bytes = config_bytes;
  if (!r.AtEnd()) return std::nullopt;
  return m;
}

std::optional<CheckResultMsg> DecodeResult(std::string_view data) {
  Reader r(data);
  CheckResultMsg m;
  std::uint8_t kind = 0;
  if (!r.Tag(kTagResult) || !r.U8(&kind) || kind < 1 || kind > 4 || !r.Str(&m.error) ||
      !r.U64(&m.report_bytes) || !r.Bool(&m.timings.thread_cpu)) {
    return std::nullopt;
  }
  m.kind = static_cast<ResultKind>(kind);
  for (std::size_t i = 0; i < kTimingCount; ++i) {
    if (!r.F64(TimingFields(m.timings, i))) return std::nullopt;
  }
  if (!r.F64(&m.cpu_seconds) || !r.AtEnd()) return std::nullopt;
  return m;
}

bool SendMessage(int sock, std::string_view payload, int fd) {
  iovec iov{};
  iov.iov_base = const_cast<char*>(payload.data());
  iov.iov_len = payload.size();
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  if (fd >= 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  }
  for (;;) {
    const ssize_t n = ::sendmsg(sock, &msg, MSG_NOSIGNAL);
    if (n >= 0) return static_cast<std::size_t>(n) == payload.size();
    if (errno != EINTR) return false;
  }
}

RecvStatus RecvMessage(int sock, std::string* payload, int* fd, int timeout_ms) {
  *fd = -1;
  if (timeout_ms >= 0) {
    pollfd p{sock, POLLIN, 0};
    int rc = 0;
    do {
      rc = ::poll(&p, 1, timeout_ms);
    } while (rc < 0 && errno == EINTR);
    if (rc == 0) return RecvStatus::kTimeout;
    if (rc < 0) return RecvStatus::kError;
  }
  payload->resize(kMaxMessageBytes);
  iovec iov{};
  iov.iov_base = payload->data();
  iov.iov_len = payload->size();
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)] = {};
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n = 0;
  do {
    n = ::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    payload->clear();
    return errno == ECONNRESET ? RecvStatus::kClosed : RecvStatus::kError;
  }
  // Collect every descriptor that arrived, whatever else is wrong with the message.
  int fds[8];
  std::size_t nfds = 0;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < count && nfds < std::size(fds); ++i) {
      std::memcpy(&fds[nfds++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
    }
  }
  const bool bad = (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0 || nfds > 1;
  if (bad) {
    for (std::size_t i = 0; i < nfds; ++i) ::close(fds[i]);
    payload->clear();
    return RecvStatus::kError;
  }
  if (n == 0 && nfds == 0) {
    payload->clear();
    return RecvStatus::kClosed;
  }
  payload->resize(static_cast<std::size_t>(n));
  if (nfds == 1) *fd = fds[0];
  return RecvStatus::kMessage;
}

int SealedMemfd(const char* name, std::string_view bytes) {
  const int fd = ::memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return -1;
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int saved = errno;
      ::close(fd);
      errno = saved;
      return -1;
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0) {
    const int saved = errno;
    ::close(fd);
    errno = saved;
    return -1;
  }
  return fd;
}

bool ReadAll(int fd, std::uint64_t size, std::string* out) {
  out->resize(size);
  std::uint64_t done = 0;
  while (done < size) {
    const ssize_t n = ::pread(fd, out->data() + done, size - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::uint64_t>(n);
  }
  return true;
}

}  // namespace axqc::isolate
