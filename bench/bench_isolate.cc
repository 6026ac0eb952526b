// axqc-bench-isolate: per-check cost of process isolation (isolate/worker_pool.h) against the
// in-process checker, as axqc-server runs them.
//
//   axqc-bench-isolate --worker PATH [--repeat N] [--json OUT.json] MODEL...
//
// For each model (bytes read once): in-process = CheckBytes + conversion to the axqc.v1.Report
// the server caches; isolated = the same bytes through one pre-started worker (sealed memfd,
// check, report memfd) + parsing the report into the axqc.v1.Report (what axqc-server does with
// a worker's answer). Runs alternate between the two (so load changes hit both alike); wall clock,
// min and median of N runs each, after one warm-up run of each.
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
#include "report_proto.h"
#include "worker_pool.h"

namespace {

using Clock = std::chrono::steady_clock;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 == 1 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string worker;
  std::string json_out;
  int repeat = 20;
  std::vector<std::string> models;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--worker" && i + 1 < argc) {
      worker = argv[++i];
    } else if (a == "--repeat" && i + 1 < argc) {
      repeat = std::max(1, std::stoi(argv[++i]));
    } else if (a == "--json" && i + 1 < argc) {
      json_out = argv[++i];
    } else {
      models.push_back(a);
    }
  }
  if (worker.empty() || models.empty()) {
    std::cerr << "usage: axqc-bench-isolate --worker PATH [--repeat N] [--json OUT] MODEL...\n";
    return 2;
  }
  axqc::isolate::PoolOptions options;
  options.program = worker;
  options.size = 1;
  options.memory_limit = axqc::isolate::DefaultMemoryLimit(1);
  options.cpu_seconds = 300;
  axqc::isolate::WorkerPool pool(options);

  nlohmann::json results = nlohmann::json::array();
  std::cout << "| model | file MB | in-process ms (min / median) | isolated ms (min / median) | "
               "overhead (median) |\n|---|---:|---:|---:|---:|\n";
  for (const auto& path : models) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string bytes = ss.str();
    const std::string name = path.substr(path.find_last_of('/') + 1);
    axqc::StageTimings t_in;
    axqc::StageTimings t_iso;
    axqc::CheckOptions check_options;
    auto in_process = [&] {
      const auto t0 = Clock::now();
      axqc::CheckOptions o = check_options;
      o.timings = &t_in;
      const axqc::Report r = axqc::CheckBytes(bytes, name, o);
      axqc::v1::Report proto;
      axqc::service::ToProto(r, &proto);
      return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    };
    auto isolated = [&] {
      const auto t0 = Clock::now();
      axqc::isolate::CheckInput input;
      input.bytes = bytes;
      input.name = name;
      input.options = check_options;
      input.options.timings = &t_iso;
      const auto result = pool.Check(input);
      if (result.failure != axqc::isolate::Failure::kNone ||
          result.kind != axqc::isolate::ResultKind::kReport) {
        throw std::runtime_error(path + ": " + axqc::isolate::FailureMessage(result));
      }
      axqc::v1::Report parsed;
      parsed.ParseFromString(result.report);
      return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    };
    in_process();
    isolated();
    std::vector<double> a;
    std::vector<double> b;
    for (int i = 0; i < repeat; ++i) {
      a.push_back(in_process());
      b.push_back(isolated());
    }
    const double overhead = (Median(b) / Median(a) - 1) * 100;
    // The checker's own stages in the last run of each (where the time went).
    auto stages = [](const axqc::StageTimings& t) {
      return nlohmann::json{{"sha256_ms", t.sha256_s * 1e3},  {"parse_ms", t.parse_s * 1e3},
                            {"onnx_check_ms", t.onnx_check_s * 1e3},
                            {"rules_ms", t.rules_s * 1e3},   {"report_ms", t.report_s * 1e3}};
    };
    std::cerr << name << ": stages in-process " << stages(t_in).dump() << "\n"
              << name << ": stages isolated   " << stages(t_iso).dump() << "\n";
    std::cout << std::fixed << std::setprecision(2) << "| " << name << " | "
              << static_cast<double>(bytes.size()) / 1e6 << " | "
              << *std::min_element(a.begin(), a.end()) << " / " << Median(a) << " | "
              << *std::min_element(b.begin(), b.end()) << " / " << Median(b) << " | "
              << std::setprecision(1) << overhead << "% |\n";
    results.push_back({{"model", name},
                       {"bytes", bytes.size()},
                       {"repeat", repeat},
                       {"in_process_ms", a},
                       {"isolated_ms", b},
                       {"overhead_median_pct", overhead}});
  }
  if (!json_out.empty()) std::ofstream(json_out) << results.dump(1) << "\n";
  return 0;
}
