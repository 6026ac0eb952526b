#include "external_reads.h"

#include <algorithm>
#include <utility>

namespace axqc::server {

namespace {

std::string Describe(const std::string& file, const std::vector<ExternalRange>& ranges) {
  std::string out = "'" + file + "'";
  std::size_t shown = 0;
  for (const auto& r : ranges) {
    if (++shown > 3) {
      out += " and " + std::to_string(ranges.size() - 3) + " more";
      break;
    }
    out += " [" + std::to_string(r.offset) + ", " + std::to_string(r.offset + r.length) + ")";
  }
  return out;
}

}  // namespace

ExternalRangesNeeded::ExternalRangesNeeded(std::vector<ExternalFileRanges> needed)
    : std::runtime_error("the check reads bytes of the external data files that were not sent"),
      needed_(std::move(needed)) {}

std::vector<ExternalFileRanges> ReadsOf(const v1::Report& report) {
  std::vector<ExternalFileRanges> out;
  for (const auto& f : report.external_reads()) {
    ExternalFileRanges r;
    r.name = f.name();
    r.size = f.size_bytes();
    for (const auto& b : f.ranges()) r.ranges.push_back({b.offset(), b.length()});
    MergeRanges(r.ranges);
    out.push_back(std::move(r));
  }
  return out;
}

void ToProto(const std::vector<ExternalFileRanges>& ranges,
             google::protobuf::RepeatedPtrField<v1::FileRanges>* out) {
  for (const auto& f : ranges) {
    auto* pf = out->Add();
    pf->set_name(f.name);
    pf->set_size_bytes(f.size);
    for (const auto& r : f.ranges) {
      auto* pr = pf->add_ranges();
      pr->set_offset(r.offset);
      pr->set_length(r.length);
    }
  }
}

std::string SettleExternalReads(v1::Report& report, const isolate::DataFileSet& data,
                                const std::string& graph_sha256) {
  std::vector<ExternalFileRanges> reads = ReadsOf(report);
  report.clear_external_reads();
  for (const auto& f : reads) {
    const std::size_t i = data.Find(f.name);
    if (i == data.count() || f.size != data.size(i)) {
      throw ExternalRangesRefused("the check's reads name data file '" + f.name +
                                  "', which is not among the model's as sent");
    }
  }
  if (data.partial()) {
    std::string missing;
    std::string unread;
    for (std::size_t i = 0; i < data.count(); ++i) {
      std::vector<ExternalRange> read;
      for (const auto& f : reads) {
        if (f.name == data.name(i)) read = f.ranges;
      }
      if (auto m = RangesMissing(read, data.sent(i)); !m.empty()) {
        missing += (missing.empty() ? "" : ", ") + Describe(data.name(i), m);
      }
      if (auto u = RangesMissing(data.sent(i), read); !u.empty()) {
        unread += (unread.empty() ? "" : ", ") + Describe(data.name(i), u);
      }
    }
    if (!missing.empty()) {
      // Every file of the model is listed (with its size), also those the check does not read.
      std::vector<ExternalFileRanges> needed;
      for (std::size_t i = 0; i < data.count(); ++i) {
        ExternalFileRanges f{data.name(i), data.size(i), {}};
        for (const auto& r : reads) {
          if (r.name == f.name) f.ranges = r.ranges;
        }
        needed.push_back(std::move(f));
      }
      throw ExternalRangesNeeded(std::move(needed));
    }
    if (!unread.empty()) {
      throw ExternalRangesRefused(
          "the ranged upload sent bytes of the external data files that the check does not "
          "read: " +
          unread + "; send exactly the ranges the server named (CheckResponse.external_ranges)");
    }
  }
  std::string error;
  std::string key = ExternalReadKey(graph_sha256, reads, data, &error);
  if (key.empty()) throw ExternalRangesRefused(error);
  report.mutable_model()->set_sha256(key);
  return key;
}

std::string SentRangesKey(const isolate::DataFileSet& data, const std::string& graph_sha256) {
  std::vector<ExternalFileRanges> sent;
  for (std::size_t i = 0; i < data.count(); ++i) {
    if (!data.sent(i).empty()) sent.push_back({data.name(i), data.size(i), data.sent(i)});
  }
  std::string error;
  std::string key = ExternalReadKey(graph_sha256, sent, data, &error);
  if (key.empty()) throw ExternalRangesRefused(error);
  return key;
}

}  // namespace axqc::server
