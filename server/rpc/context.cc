#include "rpc/context.h"

#include <boost/asio/post.hpp>
#include <cmath>
#include <utility>

namespace axqc::server {

ServiceContext::ServiceContext(ServiceDeps service_deps)
    : deps(std::move(service_deps)),
      upload_budget(deps.config->max_inflight_upload_bytes, &deps.metrics->inflight_upload_bytes(),
                    "the server holds too many bytes of uploads in progress right now; retry "
                    "later"),
      upload_watchdog(std::chrono::milliseconds(
          static_cast<std::int64_t>(std::llround(deps.config->upload_idle_timeout_seconds * 1e3)))),
      // A key nobody here works on any more gives up this server's claim in a shared store (taken
      // when an upload announced its sha256), unless a check of it is still running (the engine
      // releases that claim when the check ends). On the I/O pool: never wait for the store on a
      // gRPC thread.
      watch([this](const std::string& key) {
        if (deps.engine->HasFlight(key)) return;
        boost::asio::post(*deps.io, [store = deps.store, key] { store->ReleaseClaim(key); });
      }) {}

}  // namespace axqc::server
