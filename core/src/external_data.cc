#include "axqc/external_data.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <stdexcept>

#include "axqc/sha256.h"

namespace axqc {

std::size_t ExternalData::Find(std::string_view normalized_name) const {
  const std::size_t n = count();
  for (std::size_t i = 0; i < n; ++i) {
    if (name(i) == normalized_name) return i;
  }
  return n;
}

std::string ExternalDataNameProblem(std::string_view name) {
  if (name.empty()) return "is empty";
  if (name.size() > kMaxExternalDataNameBytes) {
    return "is longer than " + std::to_string(kMaxExternalDataNameBytes) + " bytes";
  }
  for (char c : name) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) return "contains a control character";
    if (c == '\\') return "contains a backslash";
  }
  if (name.front() == '/') return "is an absolute path";
  bool any = false;
  std::size_t start = 0;
  while (start <= name.size()) {
    std::size_t end = name.find('/', start);
    if (end == std::string_view::npos) end = name.size();
    const std::string_view part = name.substr(start, end - start);
    if (part == "..") return "contains '..'";
    if (!part.empty() && part != ".") any = true;
    start = end + 1;
  }
  if (!any) return "names no file";
  return {};
}

std::string NormalizeExternalDataName(std::string_view name) {
  if (std::string why = ExternalDataNameProblem(name); !why.empty()) {
    throw std::invalid_argument("external data name '" + std::string(name.substr(0, 200)) + "' " +
                                why);
  }
  std::string out;
  std::size_t start = 0;
  while (start <= name.size()) {
    std::size_t end = name.find('/', start);
    if (end == std::string_view::npos) end = name.size();
    const std::string_view part = name.substr(start, end - start);
    if (!part.empty() && part != ".") {
      if (!out.empty()) out += '/';
      out.append(part);
    }
    start = end + 1;
  }
  return out;
}

void ExternalDataMap::Add(std::string_view name, std::string_view bytes) {
  if (files_.size() >= kMaxExternalDataFiles) {
    throw std::invalid_argument("more than " + std::to_string(kMaxExternalDataFiles) +
                                " external data files");
  }
  std::string normalized = NormalizeExternalDataName(name);
  if (Find(normalized) != count()) {
    throw std::invalid_argument("external data file '" + normalized + "' given twice");
  }
  files_.push_back({std::move(normalized), bytes});
}

bool ExternalDataMap::Read(std::size_t i, std::uint64_t offset, char* out, std::size_t n) const {
  const auto& b = files_.at(i).bytes;
  if (offset > b.size() || n > b.size() - offset) return false;
  std::copy_n(b.data() + offset, n, out);
  return true;
}

void ExternalDataFds::Add(std::string_view name, int fd, std::uint64_t size) {
  if (files_.size() >= kMaxExternalDataFiles) {
    throw std::invalid_argument("more than " + std::to_string(kMaxExternalDataFiles) +
                                " external data files");
  }
  std::string normalized = NormalizeExternalDataName(name);
  if (Find(normalized) != count()) {
    throw std::invalid_argument("external data file '" + normalized + "' given twice");
  }
  files_.push_back({std::move(normalized), fd, size});
}

bool ExternalDataFds::Read(std::size_t i, std::uint64_t offset, char* out, std::size_t n) const {
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

void MergeRanges(std::vector<ExternalRange>& ranges) {
  std::erase_if(ranges, [](const ExternalRange& r) { return r.length == 0; });
  std::sort(ranges.begin(), ranges.end(), [](const ExternalRange& a, const ExternalRange& b) {
    return a.offset != b.offset ? a.offset < b.offset : a.length > b.length;
  });
  std::vector<ExternalRange> out;
  for (const auto& r : ranges) {
    const std::uint64_t end = r.length > UINT64_MAX - r.offset ? UINT64_MAX : r.offset + r.length;
    if (!out.empty() && r.offset <= out.back().offset + out.back().length) {
      const std::uint64_t back_end = out.back().offset + out.back().length;
      if (end > back_end) out.back().length = end - out.back().offset;
      continue;
    }
    out.push_back({r.offset, end - r.offset});
  }
  ranges = std::move(out);
}

std::vector<ExternalRange> RangesMissing(const std::vector<ExternalRange>& needed,
                                         const std::vector<ExternalRange>& have) {
  std::vector<ExternalRange> out;
  std::size_t h = 0;
  for (const auto& r : needed) {
    std::uint64_t pos = r.offset;
    const std::uint64_t end = r.offset + r.length;
    while (pos < end) {
      while (h < have.size() && have[h].offset + have[h].length <= pos) ++h;
      if (h == have.size() || have[h].offset >= end) {
        out.push_back({pos, end - pos});
        break;
      }
      if (have[h].offset > pos) out.push_back({pos, have[h].offset - pos});
      pos = std::min(end, have[h].offset + have[h].length);
    }
  }
  MergeRanges(out);
  return out;
}

std::string RangesProblem(const std::vector<ExternalRange>& ranges, std::uint64_t size) {
  std::uint64_t next = 0;  // the first offset the next range may start at
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    const auto& r = ranges[i];
    const std::string which = "range " + std::to_string(i) + " (offset " +
                              std::to_string(r.offset) + ", length " + std::to_string(r.length) +
                              ")";
    if (r.length == 0) return which + " is empty";
    if (r.offset > size || r.length > size - r.offset) {
      return which + " lies past the end of the file (" + std::to_string(size) + " bytes)";
    }
    if (i > 0 && r.offset < next) {
      return which + " is out of order, overlaps or touches the range before it";
    }
    next = r.offset + r.length + 1;
  }
  return {};
}

std::string ExternalReadKey(std::string_view graph_sha256,
                            const std::vector<ExternalFileRanges>& reads, const ExternalData& files,
                            std::string* error) {
  std::vector<std::size_t> order(files.count());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return files.name(a) < files.name(b); });
  for (const auto& f : reads) {
    if (files.Find(f.name) == files.count()) {
      *error = "the check read data file '" + f.name + "', which is not among the model's";
      return {};
    }
  }
  std::string text = "axqc-external-reads/1\n";
  text.append(graph_sha256);
  text += '\n';
  std::string buf;
  for (std::size_t i : order) {
    const std::uint64_t size = files.size(i);
    text += files.name(i) + "\n" + std::to_string(size) + "\n";
    for (const auto& f : reads) {
      if (f.name != files.name(i)) continue;
      for (const auto& r : f.ranges) {
        if (r.offset > size || r.length > size - r.offset) {
          *error = "a range the check read lies outside data file '" + f.name + "'";
          return {};
        }
        Sha256 h;
        std::uint64_t done = 0;
        while (done < r.length) {
          const auto n =
              static_cast<std::size_t>(std::min<std::uint64_t>(r.length - done, 1u << 20));
          buf.resize(n);
          if (!files.Read(i, r.offset + done, buf.data(), n)) {
            *error = "cannot read data file '" + f.name + "'";
            return {};
          }
          h.Update(buf);
          done += n;
        }
        text +=
            std::to_string(r.offset) + " " + std::to_string(r.length) + " " + h.HexDigest() + "\n";
      }
    }
  }
  return Sha256Hex(text);
}

std::vector<std::string> ExternalDataLocations(std::string_view bytes, std::size_t max_locations,
                                               bool* more) {
  using google::protobuf::Descriptor;
  using google::protobuf::FieldDescriptor;
  using google::protobuf::internal::WireFormatLite;
  if (more != nullptr) *more = false;
  std::vector<std::string> out;
  if (bytes.size() > static_cast<std::size_t>(INT_MAX)) return out;
  constexpr std::size_t kMaxDepth = 500;
  const Descriptor* tensor_type = onnx::TensorProto::descriptor();
  const Descriptor* entry_type = onnx::StringStringEntryProto::descriptor();
  const int kExternalData = onnx::TensorProto::kExternalDataFieldNumber;
  const int kDataLocation = onnx::TensorProto::kDataLocationFieldNumber;
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const std::uint8_t*>(bytes.data()),
                                            static_cast<int>(bytes.size()));
  in.SetTotalBytesLimit(INT_MAX);
  struct Frame {
    const Descriptor* type = nullptr;
    google::protobuf::io::CodedInputStream::Limit limit = 0;
    bool entry = false;      // a TensorProto.external_data entry
    bool external = false;   // TensorProto: data_location EXTERNAL
    std::string key, value;  // entry
    std::string location;    // TensorProto: its location entry
  };
  auto frame = [](const Descriptor* type, google::protobuf::io::CodedInputStream::Limit limit) {
    Frame f;
    f.type = type;
    f.limit = limit;
    return f;
  };
  std::vector<Frame> stack;
  stack.push_back(frame(onnx::ModelProto::descriptor(), 0));
  auto add = [&](std::string loc) {
    if (std::find(out.begin(), out.end(), loc) != out.end()) return true;
    if (out.size() >= max_locations) {
      if (more != nullptr) *more = true;
      return false;
    }
    out.push_back(std::move(loc));
    return true;
  };
  while (!stack.empty()) {
    const std::uint32_t tag = in.ReadTag();
    if (tag == 0) {
      if (stack.size() == 1 || in.BytesUntilLimit() != 0) break;  // end of input or corrupt
      Frame done = std::move(stack.back());
      stack.pop_back();
      in.PopLimit(done.limit);
      if (done.entry && done.key == "location") stack.back().location = std::move(done.value);
      if (done.type == tensor_type && done.external && !done.location.empty()) {
        if (!add(std::move(done.location))) break;
      }
      continue;
    }
    Frame& top = stack.back();
    const int number = static_cast<int>(tag >> 3);
    const auto wire = WireFormatLite::GetTagWireType(tag);
    if (top.entry && wire == WireFormatLite::WIRETYPE_LENGTH_DELIMITED &&
        (number == 1 || number == 2)) {
      std::uint32_t len = 0;
      if (!in.ReadVarint32(&len) || len > kMaxExternalDataNameBytes * 4) break;
      std::string s;
      if (!in.ReadString(&s, static_cast<int>(len))) break;
      (number == 1 ? top.key : top.value) = std::move(s);
      continue;
    }
    if (top.type == tensor_type && number == kDataLocation &&
        wire == WireFormatLite::WIRETYPE_VARINT) {
      std::uint64_t v = 0;
      if (!in.ReadVarint64(&v)) break;
      top.external = v == onnx::TensorProto::EXTERNAL;
      continue;
    }
    const FieldDescriptor* field = top.type->FindFieldByNumber(number);
    if (field != nullptr && field->type() == FieldDescriptor::TYPE_MESSAGE &&
        wire == WireFormatLite::WIRETYPE_LENGTH_DELIMITED) {
      std::uint32_t len = 0;
      if (!in.ReadVarint32(&len) || stack.size() >= kMaxDepth) break;
      const bool entry = top.type == tensor_type && number == kExternalData;
      Frame f = frame(field->message_type(), in.PushLimit(static_cast<int>(len)));
      f.entry = entry && field->message_type() == entry_type;
      stack.push_back(std::move(f));
      continue;
    }
    if (!WireFormatLite::SkipField(&in, tag)) break;
  }
  return out;
}

}  // namespace axqc
