// The worker process's side: start-up (sandbox), then one check per request until the control
// socket closes. axqc-worker's main is RunWorker with no hook; tests build a worker with a hook
// (tests/isolate/), never the production binary.
#pragma once

#include <functional>
#include <string>

namespace axqc::isolate {

// Called before each check with the request's model name; may misbehave on purpose (tests).
using TestHook = std::function<void(const std::string& name)>;

// argv: --fd=N (control socket, default 3), --parent=PID, --memory-limit=BYTES,
// --allow-read (path requests: read-only opens allowed). Returns the process exit code.
int RunWorker(int argc, char** argv, const TestHook& hook = {});

// Exit codes of a worker that ends on its own.
inline constexpr int kExitOk = 0;                // the control socket closed
inline constexpr int kExitStartupFailed = 70;    // sandbox or warm-up failed (message sent)
inline constexpr int kExitMemoryExhausted = 71;  // an allocation failed (after the answer)
inline constexpr int kExitProtocol = 72;         // a malformed request

}  // namespace axqc::isolate
