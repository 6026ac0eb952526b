// axqc-bench-isolate: per-check cost of process isolation (isolate/worker_pool.h) against the
// in-process checker, as axqc-server runs them.
//
//   axqc-bench-isolate --worker PATH [--repeat N] [--no-trim | --trim-each] [--mode both|in|iso]
//                      [--json OUT.json] MODEL...
//
// For each model, as axqc-server holds it: the bytes in a sealed memfd model buffer
// (isolate/model_buffer.h) with the sha256 the server computed while receiving them (a fresh
// buffer for every run, made before the clock starts: receiving is the same in both modes).
// In-process = mapping the buffer + CheckBytes with the known sha256 + conversion to the
// axqc.v1.Report the server caches; isolated = the same buffer handed to one pre-started worker
// (its memfd, no copy; check; report memfd) + parsing the report into the axqc.v1.Report (what
// axqc-server does with a worker's answer). Runs alternate between the two (so load changes hit
// both alike), N runs each after one warm-up run of each. Two clocks: wall, and CPU time
// (this process's, all threads: the in-process checker runs part of its work on a second thread;
// isolated: plus the worker's CPU time from the scheduler, /proc/PID/schedstat, which covers
// receiving the request and unmapping the model too), the steadier one on a loaded machine. The
// model buffer is released inside the timed window (unmapping it), its pages after. Prints the
// target (isolated within 10% of in-process, CPU median) with pass/miss per model, and the
// checker's stage CPU times of both. --mode in / iso runs one side only (for a profiler: `perf
// record` of this process, or of the worker).
#include <malloc.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "axqc/checker.h"
#include "axqc/sha256.h"
#include "axqc/wire/report_proto.h"
#include "model_buffer.h"
#include "worker_pool.h"

namespace {

using Clock = std::chrono::steady_clock;

// CPU time of this process (every thread: the in-process checker's second thread included; the
// pool's respawner thread sleeps meanwhile).
double ProcessCpuMs() {
  timespec ts{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

// CPU time a process has run, from the scheduler (/proc/PID/schedstat, nanoseconds).
double WorkerCpuMs(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/schedstat");
  double ns = 0;
  in >> ns;
  return ns * 1e-6;
}

struct Sample {
  double wall_ms = 0;
  double cpu_ms = 0;
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 == 1 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string worker;
  std::string json_out;
  int repeat = 20;
  bool trim = true;
  bool trim_each = false;
  std::string mode = "both";
  std::vector<std::string> models;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--worker" && i + 1 < argc) {
      worker = argv[++i];
    } else if (a == "--repeat" && i + 1 < argc) {
      repeat = std::max(1, std::stoi(argv[++i]));
    } else if (a == "--no-trim") {
      trim = false;
    } else if (a == "--trim-each") {
      trim_each = true;
    } else if (a == "--mode" && i + 1 < argc) {
      mode = argv[++i];
    } else if (a == "--json" && i + 1 < argc) {
      json_out = argv[++i];
    } else {
      models.push_back(a);
    }
  }
  if (worker.empty() || models.empty() || (mode != "both" && mode != "in" && mode != "iso")) {
    std::cerr << "usage: axqc-bench-isolate --worker PATH [--repeat N] [--no-trim | --trim-each] "
                 "[--mode both|in|iso] [--json OUT] MODEL...\n";
    return 2;
  }
  // In-process checks run under axqc-server's allocator settings (server/memory.cc,
  // ConfigureAllocator): buffers of 8 MiB or more are mappings of their own. Checks follow each
  // other, so the server's trim (server/memory.h: once idle) never runs between them; --trim-each
  // trims after every check of 4 MiB or more (the server with memory-trim-idle-seconds 0, its
  // behaviour before 2026-12-02). --no-trim leaves glibc's defaults (a warm heap).
  if (!trim) trim_each = false;
  if (trim) mallopt(M_MMAP_THRESHOLD, 8 << 20);
  axqc::isolate::PoolOptions options;
  options.program = worker;
  options.size = 1;
  options.memory_limit = axqc::isolate::DefaultMemoryLimit(1);
  options.cpu_seconds = 300;
  axqc::isolate::WorkerPool pool(options);

  nlohmann::json results = nlohmann::json::array();
  std::ostringstream verdicts;
  const auto loadavg = [] {
    std::ifstream f("/proc/loadavg");
    std::string a, b, c;
    f >> a >> b >> c;
    return a + " " + b + " " + c;
  };
  const std::string load_start = loadavg();
  std::cout << "| model | file MB | in-process CPU ms (min / median) | isolated CPU ms (min / "
               "median) | CPU overhead (median) | wall ms in-process / isolated (median) | wall "
               "overhead |\n|---|---:|---:|---:|---:|---:|---:|\n";
  for (const auto& path : models) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string bytes = ss.str();
    const std::string sha256 = axqc::Sha256Hex(bytes);
    const std::string name = path.substr(path.find_last_of('/') + 1);
    auto received = [&] {
      axqc::isolate::ModelBuffer b(axqc::isolate::ModelBuffer::Backing::kMemfd, bytes.size());
      for (std::size_t off = 0; off < bytes.size(); off += 1 << 20) {
        b.Append(std::string_view(bytes).substr(off, 1 << 20));
      }
      b.Seal();
      return b;
    };
    std::vector<double> worker_self_ms;  // the worker's own measurement of each check
    axqc::StageTimings t_in;
    axqc::StageTimings t_iso;
    axqc::CheckOptions check_options;
    check_options.known_sha256 = sha256;
    // The buffer goes away inside the timed window (the in-process checker's mapping of it is
    // unmapped then, as the worker unmaps its own), while a duplicate of its memfd keeps the pages:
    // freeing them is the same in both modes and happens after the clock stops.
    auto in_process = [&] {
      std::optional<axqc::isolate::ModelBuffer> buffer(received());
      const int keep = ::dup(buffer->fd());
      const auto t0 = Clock::now();
      const double c0 = ProcessCpuMs();
      axqc::CheckOptions o = check_options;
      o.timings = &t_in;
      t_in = axqc::StageTimings{};
      t_in.thread_cpu = true;
      {
        const axqc::Report r = axqc::CheckBytes(buffer->view(), name, o);
        if (r.model.sha256 != sha256) throw std::runtime_error(path + ": wrong sha256 in report");
        axqc::v1::Report proto;
        axqc::wire::ToProto(r, &proto);
      }
      // What axqc-server's check engine does after a check of a model of 4 MiB or more
      // (server/memory.h, kTrimAfterBytes): give the freed memory back.
      buffer.reset();
      if (trim_each && bytes.size() >= (4u << 20)) malloc_trim(0);
      const Sample sample{std::chrono::duration<double, std::milli>(Clock::now() - t0).count(),
                          ProcessCpuMs() - c0};
      ::close(keep);
      return sample;
    };
    auto isolated = [&] {
      std::optional<axqc::isolate::ModelBuffer> buffer(received());
      const int keep = ::dup(buffer->fd());
      const auto pids = pool.Pids();
      const double w0 = pids.empty() ? 0 : WorkerCpuMs(pids.front());
      const auto t0 = Clock::now();
      const double c0 = ProcessCpuMs();
      axqc::isolate::CheckInput input;
      input.model = &*buffer;
      input.sha256 = sha256;
      input.name = name;
      input.options = check_options;
      input.options.timings = &t_iso;
      t_iso = axqc::StageTimings{};
      t_iso.thread_cpu = true;
      const auto result = pool.Check(input);
      if (result.failure != axqc::isolate::Failure::kNone ||
          result.kind != axqc::isolate::ResultKind::kReport) {
        throw std::runtime_error(path + ": " + axqc::isolate::FailureMessage(result));
      }
      axqc::v1::Report parsed;
      parsed.ParseFromString(result.report);
      if (parsed.model().sha256() != sha256) {
        throw std::runtime_error(path + ": wrong sha256 in the worker's report");
      }
      buffer.reset();
      const double c1 = ProcessCpuMs();
      const auto t1 = Clock::now();
      // The worker's whole CPU time for this check (receiving the request, mapping, checking,
      // unmapping, the report): from the scheduler, not only what the worker measured itself.
      const double worker_ms =
          pids.empty() ? result.worker_cpu_seconds * 1e3 : WorkerCpuMs(pids.front()) - w0;
      worker_self_ms.push_back(result.worker_cpu_seconds * 1e3);
      ::close(keep);
      return Sample{std::chrono::duration<double, std::milli>(t1 - t0).count(),
                    c1 - c0 + worker_ms};
    };
    // The checker's stages (CPU ms of the thread that ran each), per run.
    using StageRuns = std::map<std::string, std::vector<double>>;
    StageRuns s_in, s_iso;
    auto record = [](StageRuns& runs, const axqc::StageTimings& t) {
      const std::pair<const char*, double> stages[] = {
          {"parse", t.parse_s}, {"onnx_check", t.onnx_check_s}, {"guards", t.guards_s},
          {"index", t.index_s}, {"quant", t.quant_s},           {"units", t.units_s},
          {"rules", t.rules_s}, {"report", t.report_s},         {"sha256", t.sha256_s}};
      for (const auto& [stage, seconds] : stages) runs[stage].push_back(seconds * 1e3);
    };
    auto stage_medians = [](const StageRuns& runs) {
      nlohmann::json out = nlohmann::json::object();
      for (const auto& [stage, v] : runs) out[stage + "_ms"] = std::round(Median(v) * 100) / 100;
      return out;
    };
    auto min = [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); };
    if (mode != "both") {
      // One side only (profiling): no comparison.
      const bool in_mode = mode == "in";
      in_mode ? in_process() : isolated();
      std::vector<double> wall, cpu;
      StageRuns s;
      for (int i = 0; i < repeat; ++i) {
        const Sample x = in_mode ? in_process() : isolated();
        wall.push_back(x.wall_ms);
        cpu.push_back(x.cpu_ms);
        record(s, in_mode ? t_in : t_iso);
      }
      std::cout << std::fixed << std::setprecision(2) << name << " " << mode << ": CPU ms min "
                << min(cpu) << " median " << Median(cpu) << ", wall ms median " << Median(wall)
                << ", stage CPU medians " << stage_medians(s).dump();
      if (!in_mode) std::cout << ", worker's own CPU ms median " << Median(worker_self_ms);
      std::cout << "\n";
      continue;
    }
    in_process();
    isolated();
    std::vector<double> a_wall, a_cpu, b_wall, b_cpu;
    for (int i = 0; i < repeat; ++i) {
      const Sample a = in_process();
      record(s_in, t_in);
      const Sample b = isolated();
      record(s_iso, t_iso);
      a_wall.push_back(a.wall_ms);
      a_cpu.push_back(a.cpu_ms);
      b_wall.push_back(b.wall_ms);
      b_cpu.push_back(b.cpu_ms);
    }
    auto pct = [](double x, double y) { return (y / x - 1) * 100; };
    const double overhead_wall = pct(Median(a_wall), Median(b_wall));
    const double overhead_cpu = pct(Median(a_cpu), Median(b_cpu));
    std::cout << std::fixed << std::setprecision(2) << "| " << name << " | "
              << static_cast<double>(bytes.size()) / 1e6 << " | " << min(a_cpu) << " / "
              << Median(a_cpu) << " | " << min(b_cpu) << " / " << Median(b_cpu) << " | "
              << std::setprecision(1) << overhead_cpu << "% | " << std::setprecision(2)
              << Median(a_wall) << " / " << Median(b_wall) << " | " << std::setprecision(1)
              << overhead_wall << "% |\n";
    const bool met = overhead_cpu <= 10.0;
    verdicts << "target isolation overhead <= 10% (CPU median, in-process "
             << (!trim       ? "on a warm heap, glibc defaults, --no-trim"
                 : trim_each ? "trimmed after each check, --trim-each"
                             : "as axqc-server runs checks back to back")
             << "), " << name << ": " << std::fixed << std::setprecision(1) << overhead_cpu << "% "
             << (met ? "PASS" : "MISS") << "\n";
    // The checker's own stages (CPU medians: where the time went).
    std::cerr << name << ": stage CPU ms (medians), in-process " << stage_medians(s_in).dump()
              << ", isolated " << stage_medians(s_iso).dump()
              << "; the worker's CPU ms per check (median): " << Median(worker_self_ms)
              << " measured by itself (the check), in the isolated column from the scheduler\n";
    results.push_back({{"model", name},
                       {"bytes", bytes.size()},
                       {"repeat", repeat},
                       {"in_process_wall_ms", a_wall},
                       {"in_process_cpu_ms", a_cpu},
                       {"isolated_wall_ms", b_wall},
                       {"isolated_cpu_ms", b_cpu},
                       {"overhead_cpu_median_pct", overhead_cpu},
                       {"target_met", met},
                       {"in_process_stages", stage_medians(s_in)},
                       {"isolated_stages", stage_medians(s_iso)},
                       {"overhead_wall_median_pct", overhead_wall}});
  }
  std::cout << verdicts.str() << "load average: " << load_start << " at the start, " << loadavg()
            << " at the end\n";
  if (!json_out.empty()) {
    std::ofstream(json_out) << nlohmann::json{{"loadavg_start", load_start},
                                              {"loadavg_end", loadavg()},
                                              {"server_allocator", trim},
                                              {"trim_each", trim_each},
                                              {"models", results}}
                                   .dump(1)
                            << "\n";
  }
  return 0;
}
