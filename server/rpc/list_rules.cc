// ListRules: the rule catalog with the rule-set and tool versions.
#include "axqc/catalog.h"
#include "axqc/wire/report_proto.h"
#include "rpc/handlers.h"

namespace axqc::server {

grpc::Status ListRulesRpc::Validate(const Request& /*req*/) { return grpc::Status::OK; }

void ListRulesRpc::Run(ServiceContext& /*s*/, const std::shared_ptr<Call<Response>>& call,
                       const Request& /*req*/, Response* /*grpc_resp*/) {
  for (const auto& rule : Rules()) wire::RuleToProto(rule, call->response.add_rules());
  call->response.set_rule_set_version(std::string(kRuleSetVersion));
  call->response.set_tool_version(std::string(ToolVersion()));
  call->Finish(grpc::Status::OK);
}

}  // namespace axqc::server
