// The remote commands other than check: `axqc rules --server`, `axqc stats` and `axqc health`.
#include <google/protobuf/util/json_util.h>

#include <ctime>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <string_view>

#include "axqc/catalog.h"
#include "axqc/wire/report_proto.h"
#include "cli.h"
#include "exit_codes.h"
#include "remote.h"
#include "remote_transport.h"

namespace axqc::cli {

namespace {

std::string Percent(double rate) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(1) << rate * 100.0 << "%";
  return o.str();
}

std::string CountsLine(const v1::VerdictCounts& c) {
  std::ostringstream o;
  o << "requests " << c.requests() << "  conformant " << c.conformant() << "  non_conformant "
    << c.non_conformant() << "  not_applicable " << c.not_applicable() << "  invalid_input "
    << c.invalid_input() << "  pass rate " << (c.has_pass_rate() ? Percent(c.pass_rate()) : "n/a");
  if (c.gated() > 0) {
    // Clients that applied waivers or a baseline and reported their gate (RecordGate).
    o << "  gate passed " << c.gate_passed() << "/" << c.gated() << " (waived "
      << c.waived_findings() << ", baselined " << c.baselined_findings() << ")";
  }
  return o.str();
}

std::string ProtoJson(const google::protobuf::Message& msg) {
  std::string out;
  google::protobuf::util::JsonPrintOptions o;
  o.add_whitespace = true;
  o.preserve_proto_field_names = true;
  o.always_print_primitive_fields = true;
  (void)google::protobuf::util::MessageToJsonString(msg, &out, o);
  return out;
}

std::string Pad(std::string_view s, std::size_t width) {
  std::string out(s);
  out += std::string(s.size() < width ? width - s.size() : 1, ' ');
  return out;
}

}  // namespace

int RunRemoteRules(const RemoteArgs& remote, const std::string& format) {
  auto c = Connection::Open(remote, 2, 30);
  if (c == nullptr) return kExitError;
  v1::ListRulesResponse resp;
  std::string request_id;
  const grpc::Status s = c->Call(
      [&](grpc::ClientContext* ctx) {
        resp.Clear();
        return c->stub().ListRules(ctx, v1::ListRulesRequest(), &resp);
      },
      &request_id);
  if (!s.ok()) {
    std::cerr << "axqc: " << c->Describe(s, request_id) << "\n";
    return ExitCodeForStatus(s);
  }
  if (format == "json") {
    nlohmann::json rules = nlohmann::json::array();
    for (const auto& r : resp.rules()) {
      std::string sev = "error";
      try {
        sev = std::string(SeverityName(wire::SeverityFromProto(r.severity())));
      } catch (const std::exception&) {
        sev = "unknown";
      }
      rules.push_back({{"id", r.id()},
                       {"severity", sev},
                       {"check_value", r.check_value()},
                       {"section", r.section()},
                       {"summary", r.summary()},
                       {"fix", r.fix()}});
    }
    std::cout << nlohmann::json{{"rule_set_version", resp.rule_set_version()},
                                {"tool_version", resp.tool_version()},
                                {"server", c->server()},
                                {"rules", rules}}
                     .dump(2)
              << "\n";
    return 0;
  }
  std::cout << "ax quant spec rule set " << resp.rule_set_version() << " (axqc-server "
            << c->server() << ", version " << resp.tool_version() << ")\n";
  for (const auto& r : resp.rules()) {
    std::string sev = "?";
    try {
      sev = std::string(SeverityName(wire::SeverityFromProto(r.severity())));
    } catch (const std::exception&) {
    }
    std::cout << "  " << Pad(r.id(), 32) << sev << (r.check_value() ? " [cv]" : "     ")
              << std::string(sev.size() < 7 ? 7 - sev.size() : 1, ' ') << Pad(r.section(), 6)
              << r.summary() << "\n";
  }
  return 0;
}

int RunRemoteStats(const StatsArgs& args) {
  v1::GetStatsRequest req;
  if (!args.since.empty()) {
    const auto seconds = ParseWindowSeconds(args.since);
    if (!seconds) {
      std::cerr << "axqc: --since expects a duration with a unit, like 2w, 7d, 24h, 30m or 90s, "
                   "got '"
                << args.since << "'\n";
      return kExitError;
    }
    req.mutable_window()->set_seconds(*seconds);
  }
  req.set_group_by(args.by);
  for (const auto& [k, v] : args.labels) (*req.mutable_label_filter())[k] = v;
  req.set_top_rules(args.top);
  auto c = Connection::Open(args.remote, 2, 30);
  if (c == nullptr) return kExitError;
  v1::GetStatsResponse resp;
  std::string request_id;
  const grpc::Status s = c->Call(
      [&](grpc::ClientContext* ctx) {
        resp.Clear();
        return c->stub().GetStats(ctx, req, &resp);
      },
      &request_id);
  if (!s.ok()) {
    std::cerr << "axqc: " << c->Describe(s, request_id) << "\n";
    return ExitCodeForStatus(s);
  }
  if (args.format == "json") {
    // A window without decided requests has no pass rate: null rather than absent.
    auto j = nlohmann::ordered_json::parse(ProtoJson(resp));
    auto null_rate = [](nlohmann::ordered_json& counts) {
      if (counts.is_object() && !counts.contains("pass_rate")) counts["pass_rate"] = nullptr;
    };
    null_rate(j["total"]);
    if (j.contains("groups")) {
      for (auto& g : j["groups"]) null_rate(g["counts"]);
    }
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  auto ts = [](const google::protobuf::Timestamp& t) -> std::string {
    if (t.seconds() == 0 && t.nanos() == 0) return "the beginning";
    const std::time_t secs = static_cast<std::time_t>(t.seconds());
    std::tm tm{};
    gmtime_r(&secs, &tm);
    std::ostringstream o;
    o << std::put_time(&tm, "%Y-%m-%dT%H:%M:%SZ");
    return o.str();
  };
  std::cout << "axqc-server " << c->server() << ": requests from "
            << (resp.has_since() ? ts(resp.since()) : std::string("the beginning")) << " to "
            << ts(resp.until()) << "\n";
  std::cout << "  total: " << CountsLine(resp.total()) << "\n";
  if (!args.by.empty()) {
    std::cout << "by " << args.by << ":\n";
    for (const auto& g : resp.groups()) {
      std::cout << "  " << Pad(g.label_value().empty() ? "(none)" : g.label_value(), 20)
                << CountsLine(g.counts()) << "\n";
    }
  }
  if (resp.top_failing_rules_size() > 0) {
    std::cout << "top failing rules:\n";
    for (const auto& r : resp.top_failing_rules()) {
      std::cout << "  " << Pad(r.rule(), 32) << r.requests() << " request"
                << (r.requests() == 1 ? "" : "s") << ", " << r.findings() << " finding"
                << (r.findings() == 1 ? "" : "s") << "\n";
    }
  }
  return 0;
}

int RunHealth(const RemoteArgs& remote, const std::string& service) {
  auto c = Connection::Open(remote, 0, 5);
  if (c == nullptr) return kExitError;
  grpc::health::v1::HealthCheckRequest req;
  req.set_service(service);
  grpc::health::v1::HealthCheckResponse resp;
  const grpc::Status s = c->Call([&](grpc::ClientContext* ctx) {
    resp.Clear();
    return c->health().Check(ctx, req, &resp);
  });
  if (!s.ok()) {
    // Describe first: its probe of the transport may take seconds, and the line is written whole.
    const std::string why = c->Describe(s);
    std::cerr << "axqc: health: " << why << "\n";
    return kExitNoVerdict;
  }
  const std::string status =
      grpc::health::v1::HealthCheckResponse::ServingStatus_Name(resp.status());
  std::cout << status << "\n";
  return resp.status() == grpc::health::v1::HealthCheckResponse::SERVING ? 0 : 1;
}

}  // namespace axqc::cli
