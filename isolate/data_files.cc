#include "data_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <stdexcept>
#include <system_error>

#include "axqc/sha256.h"

namespace axqc::isolate {

DataFileSet::~DataFileSet() {
  for (auto& f : files_) {
    if (f.fd >= 0) ::close(f.fd);
  }
}

void DataFileSet::Add(std::string_view name, int fd, std::uint64_t size, std::string sha256) {
  try {
    if (files_.size() >= kMaxExternalDataFiles) {
      throw std::invalid_argument("more than " + std::to_string(kMaxExternalDataFiles) +
                                  " external data files");
    }
    std::string normalized = NormalizeExternalDataName(name);
    if (Find(normalized) != count()) {
      throw std::invalid_argument("external data file '" + normalized + "' given twice");
    }
    files_.push_back({std::move(normalized), fd, size, std::move(sha256), {}});
  } catch (...) {
    if (fd >= 0) ::close(fd);
    throw;
  }
}

bool DataFileSet::Read(std::size_t i, std::uint64_t offset, char* out, std::size_t n) const {
  const auto& f = files_.at(i);
  if (offset > f.size || n > f.size - offset) return false;
  std::size_t done = 0;
  while (done < n) {
    const ssize_t got = ::pread(f.fd, out + done, n - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    done += static_cast<std::size_t>(got);
  }
  return true;
}

void DataFileSet::SetSent(std::size_t i, std::vector<ExternalRange> ranges) {
  MergeRanges(ranges);
  files_.at(i).sent = std::move(ranges);
  partial_ = true;
}

std::uint64_t DataFileSet::total_bytes() const {
  std::uint64_t n = 0;
  for (const auto& f : files_) n += f.size;
  return n;
}

std::string DataFileSet::BundleSha256(const std::string& graph_sha256) const {
  std::vector<const File*> sorted;
  for (const auto& f : files_) sorted.push_back(&f);
  std::sort(sorted.begin(), sorted.end(),
            [](const File* a, const File* b) { return a->name < b->name; });
  std::string text = "axqc-external-data/1\n" + graph_sha256 + "\n";
  for (const File* f : sorted) {
    text += f->name + "\n" + std::to_string(f->size) + "\n" + f->sha256 + "\n";
  }
  return Sha256Hex(text);
}

int TempDataFile(const std::string& dir, int* write_fd) {
  std::string d = dir;
  if (d.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    d = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  }
  const int w = ::open(d.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (w < 0) {
    throw std::system_error(errno, std::generic_category(),
                            "cannot create a temporary data file in " + d);
  }
  // A second, read-only open of the same (unlinked) file.
  const std::string self = "/proc/self/fd/" + std::to_string(w);
  const int r = ::open(self.c_str(), O_RDONLY | O_CLOEXEC);
  if (r < 0) {
    const int saved = errno;
    ::close(w);
    throw std::system_error(saved, std::generic_category(), "cannot reopen a temporary data file");
  }
  *write_fd = w;
  return r;
}

}  // namespace axqc::isolate
