#include "isolated.h"

#include <stdexcept>

#ifdef AXQC_ISOLATE
#include "axqc/wire/report_proto.h"
#include "worker_pool.h"
#endif

namespace axqc::cli {

#ifdef AXQC_ISOLATE

namespace {

class PoolChecker final : public IsolatedChecker {
 public:
  explicit PoolChecker(isolate::PoolOptions options) : pool_(std::move(options)) {}

  Report Check(const std::string& path, const CheckOptions& options) override {
    isolate::CheckInput input;
    input.path = path;
    input.options = options;
    const isolate::CheckResult r = pool_.Check(input);
    if (r.failure != isolate::Failure::kNone) throw std::runtime_error(isolate::FailureMessage(r));
    if (r.kind == isolate::ResultKind::kInputError) throw InputError(r.error);
    if (r.kind != isolate::ResultKind::kReport) throw std::runtime_error(r.error);
    v1::Report proto;
    if (!proto.ParseFromString(r.report)) {
      throw std::runtime_error("the worker's report does not parse");
    }
    return wire::FromProto(proto);
  }

 private:
  isolate::WorkerPool pool_;
};

}  // namespace

std::unique_ptr<IsolatedChecker> MakeIsolatedChecker() {
  isolate::PoolOptions options;
  options.program = isolate::FindWorkerProgram();
  options.allow_read = true;  // the model file and its external data, read-only
  options.size = 1;
  options.memory_limit = isolate::DefaultMemoryLimit(1);
  return std::make_unique<PoolChecker>(std::move(options));
}

#else

std::unique_ptr<IsolatedChecker> MakeIsolatedChecker() {
  throw std::runtime_error("this axqc was built without process isolation (AXQC_BUILD_SERVER=OFF)");
}

#endif

}  // namespace axqc::cli
