// An incremental reader of a tar stream (POSIX ustar, as `tar --format=ustar` and Python's
// tarfile write by default for short names; GNU base-256 sizes are read too): the HTTP upload of a
// model with its external data files (server/http/check.cc). Bytes are fed as they arrive; member
// contents are passed on as they arrive, never buffered beyond one 512-byte header.
//
// Accepted: regular files (typeflag '0', '\0' or '7') and directories (skipped; size 0). Refused
// (INVALID_ARGUMENT): links, devices, FIFOs, pax and GNU long-name headers (names over 100 bytes
// must use the ustar prefix field), a header with a wrong checksum, more than kMaxMembers members,
// bytes after the end-of-archive blocks other than zeros, and a stream that ends inside a member.
#pragma once

#include <grpcpp/support/status.h>

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace axqc::server {

class TarReader {
 public:
  static constexpr std::size_t kBlock = 512;
  static constexpr unsigned kMaxMembers = 128;

  // `member`: a regular file starts (its full name: prefix/name, at most 256 bytes). `data`: the
  // next bytes of the current member. A status other than OK stops the reader and is returned.
  using MemberFn = std::function<grpc::Status(const std::string& name, std::uint64_t size)>;
  using DataFn = std::function<grpc::Status(std::string_view bytes)>;
  TarReader(MemberFn member, DataFn data) : member_(std::move(member)), data_(std::move(data)) {}

  grpc::Status Feed(std::string_view bytes);
  // The stream ended: OK when it ended at a member boundary (with or without the end-of-archive
  // blocks) after at least one member.
  grpc::Status Finish();

  unsigned members() const { return members_; }

 private:
  grpc::Status Header();
  grpc::Status Fail(grpc::Status s);

  MemberFn member_;
  DataFn data_;
  std::array<char, kBlock> header_{};
  std::size_t header_fill_ = 0;
  std::uint64_t remaining_ = 0;  // content bytes of the current member still to come
  std::uint64_t padding_ = 0;    // then padding bytes to the next block
  bool in_regular_ = false;      // the current member's bytes go to data_
  bool ended_ = false;           // a zero block was read
  bool failed_ = false;
  grpc::Status error_;
  unsigned members_ = 0;
  unsigned entries_ = 0;  // members and directories
};

}  // namespace axqc::server
