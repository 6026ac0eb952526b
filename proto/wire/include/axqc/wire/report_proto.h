// Conversion between the core's report model (axqc::Report) and the axqc.v1 protobuf messages,
// the request options' defaults and the report cache keys. Library axqc_wire (proto/wire/):
// shared by axqc-server, the worker (isolate/) and the remote client; protobuf only, no gRPC.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "axqc/catalog.h"
#include "axqc/checker.h"
#include "axqc/report.h"
#include "axqc/v1/axqc.pb.h"

namespace axqc::wire {

v1::Verdict VerdictToProto(Verdict v);
// Throws std::invalid_argument for VERDICT_UNSPECIFIED or unknown values.
Verdict VerdictFromProto(v1::Verdict v);
v1::Severity SeverityToProto(Severity s);
// Throws std::invalid_argument for SEVERITY_UNSPECIFIED or unknown values.
Severity SeverityFromProto(v1::Severity s);

// Lossless: FromProto(ToProto(r)) == r field by field.
void ToProto(const Report& report, v1::Report* out);
v1::Report ToProto(const Report& report);
// Throws std::invalid_argument on enum values that have no core equivalent.
Report FromProto(const v1::Report& report);

void RuleToProto(const RuleInfo& rule, v1::Rule* out);

// Defaults applied to request options: max_locations 0 -> 5; values above kMaxLocations refused
// by the server.
inline constexpr std::uint32_t kDefaultMaxLocations = 5;
inline constexpr std::uint32_t kMaxLocations = 1000;

// The core options for request options (after defaults).
CheckOptions CoreOptions(const v1::CheckOptions& options);

// Canonical text of the options that change a report, e.g. "cv=1;ml=5". `format` is excluded.
std::string OptionsKey(const v1::CheckOptions& options);

// Revision of the stored report's content beyond the rule set: reports of an older revision
// lack fields (r2: Finding.fingerprint; r3: Finding.id, cause and hint, Summary.causes; r4:
// Report.graph) and are checked again instead of being served.
inline constexpr const char* kReportRevision = "r4";

// Cache key of a report: sha256 + options + rule-set version + report revision,
// e.g. "<sha256>|cv=0;ml=5|2026.12.1|r3".
std::string CacheKey(const std::string& sha256, const v1::CheckOptions& options);
// The same from an OptionsKey.
std::string CacheKeyOf(const std::string& sha256, const std::string& options_key);

// The query string of GET /models/{sha256} and GET /v1/reports/{sha256} that asks for the
// report of the options `options_key` (an OptionsKey; "" = the defaults): "" for the defaults,
// e.g. "check_value=true&target=ax650". nullopt when the options cannot be written as a query:
// a Pulsar2 configuration is in the key by its sha256 only, or the key is not one OptionsKey
// writes.
std::optional<std::string> OptionsQueryOfKey(const std::string& options_key);
// The chips an OptionsKey names ("t=ax650,ax620e"); none for a key without targets.
std::vector<std::string> TargetsOfKey(const std::string& options_key);

}  // namespace axqc::wire
