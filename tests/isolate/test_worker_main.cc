// A worker for tests only: axqc-worker's request loop (isolate/worker.h) with a hook that
// misbehaves when the request's model name asks for it. Never installed; the production worker
// has no such hook and no flag that enables one.
//   axqc-test:spin    burns CPU until stopped (CPU-time limit, deadline, kill -9 during a check)
//   axqc-test:alloc   allocates (and touches) memory until an allocation fails (memory limit)
//   axqc-test:socket  creates a network socket (seccomp: the worker is killed with SIGSYS)
//   axqc-test:exec    runs /bin/true (seccomp: SIGSYS)
//   axqc-test:fork    forks (seccomp: SIGSYS)
//   axqc-test:thread  starts a thread (seccomp: SIGSYS)
//   axqc-test:write   opens a file for writing (seccomp: SIGSYS with --allow-read; EACCES else,
//                     which the hook reports as an internal error)
//   axqc-test:segv    dereferences a null pointer (SIGSEGV)
// and, only while the HTML report of a model so named is laid out (Task::kRenderHtml; its check
// runs normally):
//   axqc-test:layout-segv   SIGSEGV
//   axqc-test:layout-spin   burns CPU until stopped
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "worker.h"

namespace {

void Misbehave(const std::string& name) {
  auto is = [&](const char* what) { return name.find(what) != std::string::npos; };
  if (is("axqc-test:spin")) {
    volatile unsigned long long n = 0;
    for (;;) n = n + 1;
  }
  if (is("axqc-test:alloc")) {
    static std::vector<std::unique_ptr<char[]>> held;
    for (;;) {
      constexpr std::size_t kChunk = 32u << 20;
      auto block = std::make_unique<char[]>(kChunk);
      std::memset(block.get(), 1, kChunk);
      held.push_back(std::move(block));
    }
  }
  if (is("axqc-test:socket")) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    throw std::runtime_error("socket() returned " + std::to_string(fd));
  }
  if (is("axqc-test:exec")) {
    char* argv[] = {const_cast<char*>("/bin/true"), nullptr};
    ::execv("/bin/true", argv);
    throw std::runtime_error(std::string("execv failed: ") + std::strerror(errno));
  }
  if (is("axqc-test:fork")) {
    const pid_t pid = ::fork();
    if (pid == 0) ::_exit(0);
    throw std::runtime_error("fork() returned " + std::to_string(pid));
  }
  if (is("axqc-test:thread")) {
    std::thread t([] {});
    t.join();
    throw std::runtime_error("a thread started");
  }
  if (is("axqc-test:write")) {
    const int fd = ::open("/tmp/axqc-test-worker-write", O_WRONLY | O_CREAT | O_TRUNC, 0600);
    throw std::runtime_error(fd < 0 ? std::string("open for writing: ") + std::strerror(errno)
                                    : std::string("opened for writing"));
  }
  if (is("axqc-test:segv")) {
    volatile int* p = nullptr;
    *p = 1;
  }
  const bool layout = name.rfind("html:", 0) == 0;
  if (layout && is("axqc-test:layout-segv")) {
    volatile int* p = nullptr;
    *p = 1;
  }
  if (layout && is("axqc-test:layout-spin")) {
    volatile unsigned long long n = 0;
    for (;;) n = n + 1;
  }
}

}  // namespace

int main(int argc, char** argv) { return axqc::isolate::RunWorker(argc, argv, Misbehave); }
