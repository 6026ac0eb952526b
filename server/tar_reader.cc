#include "tar_reader.h"

#include <algorithm>

#include "request_validation.h"

namespace axqc::server {

namespace {

// The text of a NUL-padded header field.
std::string Field(const char* p, std::size_t n) {
  std::size_t len = 0;
  while (len < n && p[len] != '\0') ++len;
  return std::string(p, len);
}

// An octal number field (leading spaces, digits, then NUL or space), or GNU base-256 (first byte
// 0x80). False when malformed or over 2^63.
bool Number(const char* p, std::size_t n, std::uint64_t* out) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  std::uint64_t v = 0;
  if (u[0] == 0x80) {
    for (std::size_t i = 1; i < n; ++i) {
      if (v >> 55 != 0) return false;
      v = (v << 8) | u[i];
    }
    *out = v;
    return true;
  }
  std::size_t i = 0;
  while (i < n && p[i] == ' ') ++i;
  bool any = false;
  for (; i < n && p[i] >= '0' && p[i] <= '7'; ++i) {
    if (v >> 60 != 0) return false;
    v = (v << 3) | static_cast<std::uint64_t>(p[i] - '0');
    any = true;
  }
  for (; i < n; ++i) {
    if (p[i] != '\0' && p[i] != ' ') return false;
  }
  *out = v;
  return any;
}

}  // namespace

grpc::Status TarReader::Fail(grpc::Status s) {
  failed_ = true;
  error_ = s;
  return s;
}

grpc::Status TarReader::Header() {
  const char* h = header_.data();
  if (std::all_of(header_.begin(), header_.end(), [](char c) { return c == '\0'; })) {
    ended_ = true;
    return grpc::Status::OK;
  }
  std::uint64_t checksum = 0;
  if (!Number(h + 148, 8, &checksum)) return Fail(Invalid("tar: malformed header checksum"));
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < kBlock; ++i) {
    sum += (i >= 148 && i < 156) ? ' ' : static_cast<unsigned char>(h[i]);
  }
  if (sum != checksum) {
    return Fail(Invalid("tar: header checksum mismatch (not a tar stream, or corrupt)"));
  }
  std::uint64_t size = 0;
  if (!Number(h + 124, 12, &size)) return Fail(Invalid("tar: malformed member size"));
  std::string name = Field(h, 100);
  if (Field(h + 257, 5) == "ustar") {
    const std::string prefix = Field(h + 345, 155);
    if (!prefix.empty()) name = prefix + "/" + name;
  }
  const char type = h[156];
  if (++entries_ > kMaxMembers) {
    return Fail(Invalid("tar: more than " + std::to_string(kMaxMembers) + " members"));
  }
  switch (type) {
    case '0':
    case '\0':
    case '7':
      ++members_;
      in_regular_ = true;
      break;
    case '5':
      if (size != 0) return Fail(Invalid("tar: a directory member with contents"));
      in_regular_ = false;
      break;
    case 'x':
    case 'g':
    case 'L':
    case 'K':
      return Fail(
          Invalid("tar: pax or GNU long-name headers are not supported; write the archive in ustar "
                  "format (tar --format=ustar, Python tarfile.USTAR_FORMAT)"));
    default:
      return Fail(Invalid("tar: member '" + name.substr(0, 200) +
                          "' is a link, device or FIFO; only regular files are accepted"));
  }
  remaining_ = size;
  padding_ = (kBlock - size % kBlock) % kBlock;
  if (in_regular_) {
    if (grpc::Status s = member_(name, size); !s.ok()) return Fail(s);
  }
  return grpc::Status::OK;
}

grpc::Status TarReader::Feed(std::string_view bytes) {
  if (failed_) return error_;
  while (!bytes.empty()) {
    if (remaining_ > 0) {
      const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(remaining_, bytes.size()));
      if (in_regular_) {
        if (grpc::Status s = data_(bytes.substr(0, n)); !s.ok()) return Fail(s);
      }
      remaining_ -= n;
      bytes.remove_prefix(n);
      continue;
    }
    if (padding_ > 0) {
      const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(padding_, bytes.size()));
      padding_ -= n;
      bytes.remove_prefix(n);
      continue;
    }
    if (ended_) {
      // After the end-of-archive block: only zeros (the second block, tar's record padding).
      if (!std::all_of(bytes.begin(), bytes.end(), [](char c) { return c == '\0'; })) {
        return Fail(Invalid("tar: bytes after the end of the archive"));
      }
      return grpc::Status::OK;
    }
    const std::size_t n = std::min(kBlock - header_fill_, bytes.size());
    std::copy_n(bytes.data(), n, header_.data() + header_fill_);
    header_fill_ += n;
    bytes.remove_prefix(n);
    if (header_fill_ == kBlock) {
      header_fill_ = 0;
      if (grpc::Status s = Header(); !s.ok()) return s;
    }
  }
  return grpc::Status::OK;
}

grpc::Status TarReader::Finish() {
  if (failed_) return error_;
  if (remaining_ > 0 || header_fill_ != 0) {
    return Fail(Invalid("tar: the stream ended inside a member (truncated archive)"));
  }
  if (members_ == 0) return Fail(Invalid("tar: the archive holds no file"));
  return grpc::Status::OK;
}

}  // namespace axqc::server
