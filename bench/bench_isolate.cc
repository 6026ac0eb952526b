// axqc-bench-isolate: per-check cost of process isolation (isolate/worker_pool.h) against the
// in-process checker, as axqc-server runs them.
//
//   axqc-bench-isolate --worker PATH [--repeat N] [--no-trim] [--json OUT.json] MODEL...
//
// For each model, as axqc-server holds it: the bytes in a sealed memfd model buffer
// (isolate/model_buffer.h) with the sha256 the server computed while receiving them (a fresh
// buffer for every run, made before the clock starts: receiving is the same in both modes).
// In-process = mapping the buffer + CheckBytes with the known sha256 + conversion to the
// axqc.v1.Report the server caches; isolated = the same buffer handed to one pre-started worker
// (its memfd, no copy; check; report memfd) + parsing the report into the axqc.v1.Report (what
// axqc-server does with a worker's answer). Runs alternate between the two (so load changes hit
// both alike), N runs each after one warm-up run of each. Two clocks: wall, and CPU time
// (in-process: the thread's; isolated: the calling thread's + the worker's own user + system time
// for the check, which it reports), the steadier one on a loaded machine. Prints the target
// (isolated within 10% of in-process, CPU median) with pass/miss per model.
#include <malloc.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "axqc/checker.h"
#include "axqc/sha256.h"
#include "model_buffer.h"
#include "report_proto.h"
#include "worker_pool.h"

namespace {

using Clock = std::chrono::steady_clock;

double ThreadCpuMs() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
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
  std::vector<std::string> models;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--worker" && i + 1 < argc) {
      worker = argv[++i];
    } else if (a == "--repeat" && i + 1 < argc) {
      repeat = std::max(1, std::stoi(argv[++i]));
    } else if (a == "--no-trim") {
      trim = false;
    } else if (a == "--json" && i + 1 < argc) {
      json_out = argv[++i];
    } else {
      models.push_back(a);
    }
  }
  if (worker.empty() || models.empty()) {
    std::cerr << "usage: axqc-bench-isolate --worker PATH [--repeat N] [--no-trim] [--json OUT] "
                 "MODEL...\n";
    return 2;
  }
  // In-process checks run under axqc-server's allocator settings (server/memory.cc,
  // ConfigureAllocator): buffers of 8 MiB or more are mappings of their own. --no-trim leaves
  // glibc's defaults and skips the trim after big checks (the bench before the server did both).
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
    axqc::StageTimings t_in;
    axqc::StageTimings t_iso;
    axqc::CheckOptions check_options;
    check_options.known_sha256 = sha256;
    auto in_process = [&] {
      const axqc::isolate::ModelBuffer buffer = received();
      const auto t0 = Clock::now();
      const double c0 = ThreadCpuMs();
      axqc::CheckOptions o = check_options;
      o.timings = &t_in;
      t_in = axqc::StageTimings{};
      {
        const axqc::Report r = axqc::CheckBytes(buffer.view(), name, o);
        if (r.model.sha256 != sha256) throw std::runtime_error(path + ": wrong sha256 in report");
        axqc::v1::Report proto;
        axqc::service::ToProto(r, &proto);
      }
      // What axqc-server's check engine does after a check of a model of 4 MiB or more
      // (server/memory.h, kTrimAfterBytes): give the freed memory back.
      if (trim && bytes.size() >= (4u << 20)) malloc_trim(0);
      return Sample{std::chrono::duration<double, std::milli>(Clock::now() - t0).count(),
                    ThreadCpuMs() - c0};
    };
    auto isolated = [&] {
      const axqc::isolate::ModelBuffer buffer = received();
      const auto t0 = Clock::now();
      const double c0 = ThreadCpuMs();
      axqc::isolate::CheckInput input;
      input.model = &buffer;
      input.sha256 = sha256;
      input.name = name;
      input.options = check_options;
      input.options.timings = &t_iso;
      t_iso = axqc::StageTimings{};
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
      return Sample{std::chrono::duration<double, std::milli>(Clock::now() - t0).count(),
                    ThreadCpuMs() - c0 + result.worker_cpu_seconds * 1e3};
    };
    in_process();
    isolated();
    std::vector<double> a_wall, a_cpu, b_wall, b_cpu;
    for (int i = 0; i < repeat; ++i) {
      const Sample a = in_process();
      const Sample b = isolated();
      a_wall.push_back(a.wall_ms);
      a_cpu.push_back(a.cpu_ms);
      b_wall.push_back(b.wall_ms);
      b_cpu.push_back(b.cpu_ms);
    }
    auto pct = [](double x, double y) { return (y / x - 1) * 100; };
    const double overhead_wall = pct(Median(a_wall), Median(b_wall));
    const double overhead_cpu = pct(Median(a_cpu), Median(b_cpu));
    auto min = [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); };
    std::cout << std::fixed << std::setprecision(2) << "| " << name << " | "
              << static_cast<double>(bytes.size()) / 1e6 << " | " << min(a_cpu) << " / "
              << Median(a_cpu) << " | " << min(b_cpu) << " / " << Median(b_cpu) << " | "
              << std::setprecision(1) << overhead_cpu << "% | " << std::setprecision(2)
              << Median(a_wall) << " / " << Median(b_wall) << " | " << std::setprecision(1)
              << overhead_wall << "% |\n";
    const bool met = overhead_cpu <= 10.0;
    verdicts << "target isolation overhead <= 10% (CPU median, in-process "
             << (trim ? "as axqc-server runs it" : "on a warm heap, --no-trim") << "), " << name
             << ": " << std::fixed << std::setprecision(1) << overhead_cpu << "% "
             << (met ? "PASS" : "MISS") << "\n";
    // The checker's own stages in the last run of each (where the time went).
    auto stages = [](const axqc::StageTimings& t) {
      return nlohmann::json{{"sha256_ms", t.sha256_s * 1e3},
                            {"parse_ms", t.parse_s * 1e3},
                            {"onnx_check_ms", t.onnx_check_s * 1e3}};
    };
    std::cerr << name << ": last runs' stages, in-process " << stages(t_in).dump() << ", isolated "
              << stages(t_iso).dump() << "\n";
    results.push_back({{"model", name},
                       {"bytes", bytes.size()},
                       {"repeat", repeat},
                       {"in_process_wall_ms", a_wall},
                       {"in_process_cpu_ms", a_cpu},
                       {"isolated_wall_ms", b_wall},
                       {"isolated_cpu_ms", b_cpu},
                       {"overhead_cpu_median_pct", overhead_cpu},
                       {"target_met", met},
                       {"in_process_stages", stages(t_in)},
                       {"isolated_stages", stages(t_iso)},
                       {"overhead_wall_median_pct", overhead_wall}});
  }
  std::cout << verdicts.str() << "load average: " << load_start << " at the start, " << loadavg()
            << " at the end\n";
  if (!json_out.empty()) {
    std::ofstream(json_out) << nlohmann::json{{"loadavg_start", load_start},
                                              {"loadavg_end", loadavg()},
                                              {"server_allocator", trim},
                                              {"models", results}}
                                   .dump(1)
                            << "\n";
  }
  return 0;
}
