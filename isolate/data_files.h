// The external data files of one model held by a checking process: each an open, read-only
// descriptor (a file under an allowed root opened by the server, or an unlinked temporary file or
// sealed memfd the server wrote an upload or download into), with its name, size and sha256 as
// this process computed them. Read with pread by the in-process checker (axqc::ExternalData);
// handed to a worker process as descriptors (the worker opens no file).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "axqc/external_data.h"

namespace axqc::isolate {

class DataFileSet final : public ExternalData {
 public:
  DataFileSet() = default;
  ~DataFileSet() override;
  DataFileSet(const DataFileSet&) = delete;
  DataFileSet& operator=(const DataFileSet&) = delete;

  // Takes ownership of `fd` (closed by the set, also when this throws). Throws
  // std::invalid_argument for a name axqc::NormalizeExternalDataName refuses, a name given twice,
  // or too many files.
  void Add(std::string_view name, int fd, std::uint64_t size, std::string sha256);

  std::size_t count() const override { return files_.size(); }
  const std::string& name(std::size_t i) const override { return files_[i].name; }
  std::uint64_t size(std::size_t i) const override { return files_[i].size; }
  bool Read(std::size_t i, std::uint64_t offset, char* out, std::size_t n) const override;
  int fd(std::size_t i) const { return files_[i].fd; }
  const std::string& sha256(std::size_t i) const { return files_[i].sha256; }
  std::uint64_t total_bytes() const;

  // The identity of a model with these data files: sha256 of "axqc-external-data/1\n", the graph
  // file's sha256 and, for every file in name order, its name, size and sha256 (one line each).
  // Two requests with the same graph and the same data files get the same hash; any other change
  // gives another.
  std::string BundleSha256(const std::string& graph_sha256) const;

  // A ranged upload (UploadMetadata.ranged_data): file `i` holds only `ranges` (merged; the rest
  // reads as zeros and is not part of the model as sent). A check of such a set counts only when
  // it read exactly the bytes sent (server/external_reads.h).
  void SetSent(std::size_t i, std::vector<ExternalRange> ranges);
  bool partial() const { return partial_; }
  // The ranges sent of file `i` (partial sets only).
  const std::vector<ExternalRange>& sent(std::size_t i) const { return files_.at(i).sent; }

 private:
  struct File {
    std::string name;
    int fd = -1;
    std::uint64_t size = 0;
    std::string sha256;
    std::vector<ExternalRange> sent;
  };
  std::vector<File> files_;
  bool partial_ = false;
};

// A read-only descriptor of an unlinked temporary file in `dir` (empty: $TMPDIR or /tmp) that the
// caller fills through `*write_fd` (closed by the caller when done). Throws std::system_error.
// The read-only descriptor is what workers get: they cannot change the bytes the server hashed.
int TempDataFile(const std::string& dir, int* write_fd);

}  // namespace axqc::isolate
