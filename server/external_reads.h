// What a report of a model with external data depends on: the graph file and the bytes of the data
// files the check read (Report.external_reads, recorded by the checker). The server keys such
// reports by ExternalReadKey (axqc/external_data.h), the same for a full upload, a path or URL
// reference and a ranged upload of the same model, and verifies that a ranged upload's check read
// exactly the bytes the client sent.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "axqc/external_data.h"
#include "axqc/v1/axqc.pb.h"
#include "data_files.h"

namespace axqc::server {

// The check of a ranged upload read bytes that were not sent: `needed` are the ranges of every
// data file the check reads (what the client sends next). Not an error of the model.
class ExternalRangesNeeded : public std::runtime_error {
 public:
  explicit ExternalRangesNeeded(std::vector<ExternalFileRanges> needed);
  const std::vector<ExternalFileRanges>& needed() const { return needed_; }

 private:
  std::vector<ExternalFileRanges> needed_;
};

// The client sent bytes of a ranged upload that the check did not read (INVALID_ARGUMENT), or the
// recorded reads do not fit the data files (INTERNAL-class). Not an error of the model.
class ExternalRangesRefused : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The ranges of Report.external_reads.
std::vector<ExternalFileRanges> ReadsOf(const v1::Report& report);
void ToProto(const std::vector<ExternalFileRanges>& ranges,
             google::protobuf::RepeatedPtrField<v1::FileRanges>* out);

// Takes Report.external_reads out of `report`, checks them against what a partial `data` holds
// (throws ExternalRangesNeeded or ExternalRangesRefused) and sets the report's model.sha256 to the
// external-read key of `graph_sha256` and those bytes, which it returns. Throws
// ExternalRangesRefused when the bytes cannot be read.
std::string SettleExternalReads(v1::Report& report, const isolate::DataFileSet& data,
                                const std::string& graph_sha256);

// The external-read key of a partial set: the key of the ranges sent (what a check of it must
// read). Throws ExternalRangesRefused when they cannot be read.
std::string SentRangesKey(const isolate::DataFileSet& data, const std::string& graph_sha256);

}  // namespace axqc::server
