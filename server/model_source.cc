#include "model_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

#include "axqc/external_data.h"
#include "axqc/sha256.h"
#include "protocol.h"
#include "request_validation.h"

namespace axqc::server {

namespace fs = std::filesystem;

bool ByteBudget::TryReserve(std::uint64_t n) {
  std::uint64_t cur = used_.load();
  do {
    if (n > limit_ || cur > limit_ - n) return false;
  } while (!used_.compare_exchange_weak(cur, cur + n));
  if (gauge_ != nullptr) gauge_->Increment(static_cast<double>(n));
  return true;
}

void ByteBudget::Release(std::uint64_t n) {
  used_.fetch_sub(n);
  if (gauge_ != nullptr) gauge_->Decrement(static_cast<double>(n));
}

Reservation& Reservation::operator=(Reservation&& o) noexcept {
  if (this != &o) {
    Reset();
    budget_ = o.budget_;
    bytes_ = o.bytes_;
    o.bytes_ = 0;
  }
  return *this;
}

void Reservation::Grow(std::uint64_t n) {
  if (budget_ == nullptr || n == 0) return;
  if (!budget_->TryReserve(n)) {
    throw SourceError(grpc::StatusCode::RESOURCE_EXHAUSTED, budget_->exhausted_message());
  }
  bytes_ += n;
}

void Reservation::Reset() {
  if (budget_ != nullptr && bytes_ > 0) budget_->Release(bytes_);
  bytes_ = 0;
}

std::shared_ptr<const isolate::ModelBuffer> AccountedBytes(isolate::ModelBuffer&& buffer,
                                                           Reservation&& reservation) {
  buffer.Seal();
  auto* owned = new isolate::ModelBuffer(std::move(buffer));
  auto res = std::make_shared<Reservation>(std::move(reservation));
  return std::shared_ptr<const isolate::ModelBuffer>(owned, [res](const isolate::ModelBuffer* p) {
    delete p;
    res->Reset();
  });
}

bool IsWithin(const fs::path& path, const fs::path& root) {
  auto p = path.begin();
  for (auto r = root.begin(); r != root.end(); ++r, ++p) {
    if (r->empty()) continue;  // trailing separator of the root
    if (p == path.end() || *p != *r) return false;
  }
  return true;
}

PathResolver::PathResolver(const std::vector<std::string>& roots) {
  for (const auto& r : roots) {
    fs::path configured = fs::absolute(fs::path(r)).lexically_normal();
    std::error_code ec;
    fs::path canonical = fs::canonical(configured, ec);
    if (ec) throw std::runtime_error("allowed root " + r + ": " + ec.message());
    if (!fs::is_directory(canonical)) {
      throw std::runtime_error("allowed root " + r + " is not a directory");
    }
    roots_.push_back(Root{configured, canonical});
  }
}

namespace {

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      if (fd_ >= 0) ::close(fd_);
      fd_ = o.fd_;
      o.fd_ = -1;
    }
    return *this;
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

[[noreturn]] void FailOpen(int err, const std::string& shown) {
  switch (err) {
    case ENOENT:
    case ENOTDIR:
      throw SourceError(grpc::StatusCode::NOT_FOUND, "model file not found: " + shown);
    case ELOOP:
      throw SourceError(grpc::StatusCode::PERMISSION_DENIED,
                        "path changed to a symbolic link while opening: " + shown);
    case ENAMETOOLONG:
      throw SourceError(grpc::StatusCode::INVALID_ARGUMENT,
                        "path is too long (a component over 255 bytes, or over 4096 bytes in "
                        "all): " +
                            Clip(shown));
    case EACCES:
    case EPERM:
      throw SourceError(grpc::StatusCode::PERMISSION_DENIED, "the server may not read " + shown);
    default:
      throw SourceError(grpc::StatusCode::INTERNAL,
                        "cannot open " + shown + ": " + std::strerror(err));
  }
}

}  // namespace

SourcedModel PathResolver::Load(const std::string& request_path, std::uint64_t max_bytes,
                                ByteBudget& budget, std::uint64_t max_data_bytes) const {
  if (!enabled()) {
    throw SourceError(grpc::StatusCode::PERMISSION_DENIED,
                      "path references are disabled on this server (no --allowed-root)");
  }
  if (request_path.empty()) {
    throw SourceError(grpc::StatusCode::INVALID_ARGUMENT, "empty path");
  }
  if (request_path.find('\0') != std::string::npos) {
    throw SourceError(grpc::StatusCode::INVALID_ARGUMENT, "path contains a NUL byte");
  }
  fs::path p(request_path);
  for (const auto& part : p) {
    if (part == "..") {
      throw SourceError(grpc::StatusCode::PERMISSION_DENIED,
                        "path traversal ('..') is not allowed: " + request_path);
    }
  }
  if (p.is_relative()) p = roots_.front().configured / p;
  p = p.lexically_normal();

  bool lexically_inside = false;
  for (const auto& r : roots_) {
    if (IsWithin(p, r.configured) || IsWithin(p, r.canonical)) lexically_inside = true;
  }
  if (!lexically_inside) {
    throw SourceError(grpc::StatusCode::PERMISSION_DENIED,
                      "path is outside the server's allowed roots: " + request_path);
  }

  std::error_code ec;
  const fs::path canonical = fs::canonical(p, ec);
  if (ec) FailOpen(ec.value(), request_path);
  const Root* root = nullptr;
  for (const auto& r : roots_) {
    if (IsWithin(canonical, r.canonical)) {
      root = &r;
      break;
    }
  }
  if (root == nullptr) {
    throw SourceError(
        grpc::StatusCode::PERMISSION_DENIED,
        "path resolves outside the server's allowed roots (symbolic link): " + request_path);
  }

  // Walk from the root with O_NOFOLLOW: the canonical path has no symlink, so meeting one means
  // the tree changed after the check above.
  Fd dir(::open(root->canonical.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (dir.get() < 0) FailOpen(errno, request_path);
  const fs::path rel = canonical.lexically_relative(root->canonical);
  std::vector<std::string> parts;
  for (const auto& part : rel) {
    if (!part.empty() && part != ".") parts.push_back(part.string());
  }
  if (parts.empty()) {
    throw SourceError(grpc::StatusCode::INVALID_ARGUMENT, "not a regular file: " + request_path);
  }
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    Fd next(::openat(dir.get(), parts[i].c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (next.get() < 0) FailOpen(errno, request_path);
    dir = std::move(next);
  }
  Fd file(
      ::openat(dir.get(), parts.back().c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (file.get() < 0) FailOpen(errno, request_path);

  struct stat st {};
  if (::fstat(file.get(), &st) != 0) FailOpen(errno, request_path);
  if (!S_ISREG(st.st_mode)) {
    throw SourceError(grpc::StatusCode::INVALID_ARGUMENT, "not a regular file: " + request_path);
  }
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (size > max_bytes) {
    throw SourceError(grpc::StatusCode::RESOURCE_EXHAUSTED,
                      "model file is " + std::to_string(size) + " bytes, over the limit of " +
                          std::to_string(max_bytes),
                      SourceError::Kind::kTooLarge);
  }
  Reservation reservation(&budget);
  reservation.Grow(size);
  // Straight into the model buffer (a memfd: copied by the kernel, and later handed to a worker
  // process as it is); hashed from the buffer.
  isolate::ModelBuffer buffer(isolate::ModelBuffer::Backing::kMemfd, size);
  try {
    while (buffer.size() < size) {
      if (buffer.AppendFrom(file.get(), size - buffer.size()) == 0) {
        throw SourceError(grpc::StatusCode::UNAVAILABLE,
                          "model file shrank while reading: " + request_path);
      }
    }
    buffer.Seal();
  } catch (const std::system_error& e) {
    FailOpen(e.code().value(), request_path);
  }
  SourcedModel out;
  out.sha256 = axqc::Sha256Hex(buffer.view());
  // The external data files the model names, opened beside it (below its directory).
  bool more = false;
  const auto locations = ExternalDataLocations(buffer.view(), isolate::kMaxDataFiles, &more);
  if (more) {
    throw SourceError(grpc::StatusCode::INVALID_ARGUMENT,
                      "the model names more than " + std::to_string(isolate::kMaxDataFiles) +
                          " external data files; the service takes at most that many");
  }
  if (!locations.empty()) {
    out.data = OpenDataFiles(dir.get(), locations, max_data_bytes, request_path);
    out.graph_sha256 = out.sha256;
    out.sha256 = out.data->BundleSha256(out.graph_sha256);
  }
  out.bytes = AccountedBytes(std::move(buffer), std::move(reservation));
  return out;
}

std::shared_ptr<const isolate::DataFileSet> OpenDataFiles(int model_dir,
                                                          const std::vector<std::string>& locations,
                                                          std::uint64_t max_data_bytes,
                                                          const std::string& shown_model) {
  auto set = std::make_shared<isolate::DataFileSet>();
  std::uint64_t total = 0;
  for (const auto& location : locations) {
    // A location the checker refuses (absolute, "..", control characters) is not opened: the
    // check then fails on it with the checker's own message, as on the command line.
    if (!ExternalDataNameProblem(location).empty()) continue;
    const std::string name = NormalizeExternalDataName(location);
    if (set->Find(name) != set->count()) continue;
    const std::string shown = "external data file '" + Clip(name) + "' of " + Clip(shown_model);
    auto fail = [&](int err, int at, const std::string& component) {
      struct stat lst {};
      if (::fstatat(at, component.c_str(), &lst, AT_SYMLINK_NOFOLLOW) == 0 &&
          S_ISLNK(lst.st_mode)) {
        throw SourceError(grpc::StatusCode::PERMISSION_DENIED,
                          shown +
                              " is or lies under a symbolic link; data files must be plain "
                              "files beside the model");
      }
      if (err == ENOENT || err == ENOTDIR) {
        throw SourceError(grpc::StatusCode::NOT_FOUND, shown + " does not exist beside the model");
      }
      FailOpen(err, shown);
    };
    std::vector<std::string> parts;
    for (const auto& part : fs::path(name)) parts.push_back(part.string());
    Fd dir(::fcntl(model_dir, F_DUPFD_CLOEXEC, 0));
    for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
      Fd next(::openat(dir.get(), parts[i].c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (next.get() < 0) fail(errno, dir.get(), parts[i]);
      dir = std::move(next);
    }
    const int fd =
        ::openat(dir.get(), parts.back().c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) fail(errno, dir.get(), parts.back());
    Fd file(fd);
    struct stat st {};
    if (::fstat(file.get(), &st) != 0) FailOpen(errno, shown);
    if (!S_ISREG(st.st_mode)) {
      throw SourceError(grpc::StatusCode::INVALID_ARGUMENT, shown + " is not a regular file");
    }
    const auto size = static_cast<std::uint64_t>(st.st_size);
    total += size;
    if (total > max_data_bytes) {
      throw SourceError(grpc::StatusCode::RESOURCE_EXHAUSTED,
                        "the model's external data files are " + std::to_string(total) +
                            "+ bytes, over the limit of " + std::to_string(max_data_bytes) +
                            " (max-external-data-bytes)",
                        SourceError::Kind::kTooLarge);
    }
    axqc::Sha256 hash;
    std::vector<char> chunk(std::size_t{1} << 20);
    std::uint64_t done = 0;
    while (done < size) {
      const ssize_t got =
          ::pread(file.get(), chunk.data(),
                  static_cast<std::size_t>(std::min<std::uint64_t>(chunk.size(), size - done)),
                  static_cast<off_t>(done));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) FailOpen(errno, shown);
      if (got == 0) {
        throw SourceError(grpc::StatusCode::UNAVAILABLE, shown + " shrank while being read");
      }
      hash.Update(std::string_view(chunk.data(), static_cast<std::size_t>(got)));
      done += static_cast<std::uint64_t>(got);
    }
    // The set owns the descriptor from here on.
    set->Add(name, ::fcntl(file.get(), F_DUPFD_CLOEXEC, 0), size, hash.HexDigest());
  }
  return set;
}

}  // namespace axqc::server
