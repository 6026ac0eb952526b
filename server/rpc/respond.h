// Answering a check request (Check, Upload, a recorded GetReport) with a report: the response in
// the requested format, the request-history row, the check metrics.
#pragma once

#include <memory>
#include <string>

#include "axqc/v1/axqc.pb.h"
#include "cached_report.h"
#include "rpc/call.h"
#include "rpc/context.h"

namespace axqc::server {

// Fills the call's response with `report` and records its verdict in the call's fields; false
// when encoding failed (the call is then finished with INTERNAL). A JSON response carries the
// report's kept JSON text (cached_report.h: rendered once per cached report). With `grpc_resp`
// (GetReport), a protobuf response without a renamed file borrows the cached (immutable) report
// instead of copying it; the reactor gives it back when gRPC is done with the call.
bool FillResponse(const ServiceDeps& d, const std::shared_ptr<CheckCall>& call,
                  const std::shared_ptr<const CachedReport>& report, v1::CacheResult cache,
                  v1::CheckResponse* grpc_resp);

// One request-history row for a check request (`report` null: invalid input).
void RecordHistory(const ServiceDeps& d, const CheckCall& call, const v1::Report* report);

// Answers a Check or Upload with `report`: response, history row, axqc_checks_total{source},
// findings metrics.
void RespondWithReport(const ServiceDeps& d, const std::shared_ptr<CheckCall>& call,
                       const std::shared_ptr<const CachedReport>& report, v1::CacheResult cache);

// Answers a Check or Upload whose bytes are not a readable ONNX model (INVALID_ARGUMENT; a history
// row with the verdict invalid_input).
void RespondInputError(const ServiceDeps& d, const std::shared_ptr<CheckCall>& call,
                       const std::string& message);

// Answers a Check or Upload whose check made the worker process fail (crash: INTERNAL, memory
// limit: RESOURCE_EXHAUSTED, CPU time or deadline: DEADLINE_EXCEEDED), or a model remembered for
// such a failure (`remembered`): a history row with the verdict checker_failed.
void RespondCheckerFailure(const ServiceDeps& d, const std::shared_ptr<CheckCall>& call,
                           CheckerFailure::Cause cause, const std::string& message,
                           bool remembered);

}  // namespace axqc::server
