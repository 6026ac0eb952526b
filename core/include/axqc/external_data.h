// External data files of a model checked from memory (CheckBytes): the files its tensors name in
// their `location` entries, by name relative to the model's folder. The checker reads only the
// byte ranges of the tensors its rules look at, through Read; it never opens a file by name.
//
// The rules of path loads hold here too: a location must be relative, without "..", and name one
// of the files given; offset and length must lie inside that file; every file given must be named
// by some tensor (a file nobody refers to is an input error: the sender is confused about what the
// model needs).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace axqc {

// Limits on what a caller may hand over (a server takes the names from clients).
inline constexpr std::size_t kMaxExternalDataFiles = 256;
inline constexpr std::size_t kMaxExternalDataNameBytes = 1024;

class ExternalData {
 public:
  virtual ~ExternalData() = default;
  virtual std::size_t count() const = 0;
  // The file's name: a normalized relative path (NormalizeExternalDataName).
  virtual const std::string& name(std::size_t i) const = 0;
  virtual std::uint64_t size(std::size_t i) const = 0;
  // Reads `n` bytes at `offset` of file `i` into `out`; false when they cannot be read (the
  // caller has checked that the range lies inside size(i)).
  virtual bool Read(std::size_t i, std::uint64_t offset, char* out, std::size_t n) const = 0;
  // The index of the file named `normalized_name`, or count() when there is none.
  std::size_t Find(std::string_view normalized_name) const;
};

// Files held in memory (the views must outlive the checks that use them).
class ExternalDataMap final : public ExternalData {
 public:
  // Throws std::invalid_argument for a name NormalizeExternalDataName refuses, a name given
  // twice, or more than kMaxExternalDataFiles files.
  void Add(std::string_view name, std::string_view bytes);
  std::size_t count() const override { return files_.size(); }
  const std::string& name(std::size_t i) const override { return files_[i].name; }
  std::uint64_t size(std::size_t i) const override { return files_[i].bytes.size(); }
  bool Read(std::size_t i, std::uint64_t offset, char* out, std::size_t n) const override;

 private:
  struct File {
    std::string name;
    std::string_view bytes;
  };
  std::vector<File> files_;
};

// Files open as descriptors, read with pread (not owned: the caller closes them).
class ExternalDataFds final : public ExternalData {
 public:
  // As ExternalDataMap::Add.
  void Add(std::string_view name, int fd, std::uint64_t size);
  std::size_t count() const override { return files_.size(); }
  const std::string& name(std::size_t i) const override { return files_[i].name; }
  std::uint64_t size(std::size_t i) const override { return files_[i].size; }
  bool Read(std::size_t i, std::uint64_t offset, char* out, std::size_t n) const override;

 private:
  struct File {
    std::string name;
    int fd;
    std::uint64_t size;
  };
  std::vector<File> files_;
};

// Why `name` cannot name an external data file (empty when it can): empty, longer than
// kMaxExternalDataNameBytes, a NUL or other control character, a backslash, absolute, a ".."
// component, or nothing but "." components.
std::string ExternalDataNameProblem(std::string_view name);
// The normalized form of an acceptable name ("./w/../x" is refused for its "..", "./a//b" is
// "a/b"); the same form as a location is matched in. Throws std::invalid_argument with the
// problem.
std::string NormalizeExternalDataName(std::string_view name);

// A byte range of a file.
struct ExternalRange {
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
  bool operator==(const ExternalRange&) const = default;
};

// Byte ranges of one external data file (by its normalized name).
struct ExternalFileRanges {
  std::string name;
  std::uint64_t size = 0;
  std::vector<ExternalRange> ranges;  // merged (MergeRanges)
  bool operator==(const ExternalFileRanges&) const = default;
};

// Sorts `ranges` by offset, drops empty ones and merges those that overlap or touch.
void MergeRanges(std::vector<ExternalRange>& ranges);

// The parts of `needed` that are not inside `have` (both merged), merged.
std::vector<ExternalRange> RangesMissing(const std::vector<ExternalRange>& needed,
                                         const std::vector<ExternalRange>& have);

// Why `ranges` (a client's list for a file of `size` bytes) is not a merged list of ranges inside
// the file: empty when it is. Sorted by offset, each non-empty, inside the file, no two
// overlapping or touching.
std::string RangesProblem(const std::vector<ExternalRange>& ranges, std::uint64_t size);

// The external-read key of a check: what its report depends on besides the options. sha256 of
// "axqc-external-reads/1\n", the graph file's sha256 and, for every file of `files` in name
// order, its name and size, then for each range of it in `reads` the offset, length and the
// sha256 of those bytes (read through `files`). The same for every way the bytes reach the
// checker (a full upload, a path, a ranged upload). Empty, with `*error` set, when a range lies
// outside its file, names a file not in `files`, or cannot be read.
std::string ExternalReadKey(std::string_view graph_sha256,
                            const std::vector<ExternalFileRanges>& reads, const ExternalData& files,
                            std::string* error);

// The distinct `location` values of the external-data tensors of a serialized model, in order of
// first appearance, read from the protobuf wire format without parsing the model (iterative, no
// recursion; the bytes are not trusted). At most `max_locations` are returned; `*more` (optional)
// is set when there were more. Malformed bytes end the scan (what was found so far is returned).
// Servers use it to learn which data files to fetch or open beside a model.
std::vector<std::string> ExternalDataLocations(std::string_view model_bytes,
                                               std::size_t max_locations = kMaxExternalDataFiles,
                                               bool* more = nullptr);

}  // namespace axqc
