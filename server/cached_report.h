// A report as the service keeps and serves it. The protobuf form is what the store holds and what
// gRPC answers carry; the JSON text (RenderJson) is what JSON answers carry (gRPC's report_json,
// GET /v1/reports/{sha256}, POST /v1/check). The JSON is made once, on the first JSON answer, and
// kept with the report, so that a cached report is served as stored bytes: no conversion back to
// the core's Report and no rendering per request.
//
// The JSON names the model's file once ("model": {"file": ...}); an answer for another name (a
// request's `name`) puts that name there by splicing it into the kept text (the text is rendered
// with a random marker in place of the file name, and split at the marker). The result is the same
// bytes RenderJson gives for the report with that file name.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "axqc/v1/axqc.pb.h"

namespace axqc::server {

class CachedReport {
 public:
  explicit CachedReport(v1::Report proto);
  CachedReport(const CachedReport&) = delete;
  CachedReport& operator=(const CachedReport&) = delete;

  const v1::Report& proto() const { return proto_; }

  // The report as JSON text (axqc::RenderJson of wire::FromProto(proto())), with `file` as the
  // model's file name, or the report's own when `file` is empty. Thread-safe; renders at most
  // once per report. Throws what the conversion throws (std::exception).
  std::string Json(std::string_view file = {}) const;

  // Whether the JSON was made already.
  bool json_ready() const { return ready_.load(std::memory_order_acquire); }

  // The estimated memory of the report with its JSON text, for the cache's byte bound (counted
  // from the start, before the JSON exists, so that an entry's cost never changes).
  std::size_t EstimatedBytes() const;

 private:
  struct Json_ {
    std::string before;  // the document up to the file name's JSON string
    std::string after;   // ... from after it
    bool split = false;  // false: `before` is the whole document for the report's own name
  };
  const Json_& Rendered() const;

  v1::Report proto_;
  std::size_t wire_bytes_;
  mutable std::once_flag once_;
  mutable Json_ json_;
  mutable std::atomic<bool> ready_{false};
};

// A fresh report for the cache.
inline std::shared_ptr<const CachedReport> MakeCachedReport(v1::Report proto) {
  return std::make_shared<const CachedReport>(std::move(proto));
}

}  // namespace axqc::server
