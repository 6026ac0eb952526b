// axqc-bench-check: times every checker stage on models and measures their peak RSS.
//
//   axqc-bench-check [--repeat N] [--json OUT.json] [--machine TEXT] MODEL...
//
// Each model runs in a fresh child process (this binary re-executed with --child), so that
// getrusage's ru_maxrss is the peak of that model alone. The child checks the model N times
// (CheckFile with CheckOptions::timings, the CLI's default options) and renders the JSON report
// each time, first timing wall-clock time, then N more runs timing the thread's CPU time (steadier
// on a loaded machine); it prints one JSON line with the min and median of every stage on both
// clocks and its peak RSS.
// The parent prints a table and writes all results (plus --machine) to OUT.json.
//
// Stages: read, sha256, parse (protobuf + external-data validation), onnx_check (ONNX full check
// + strict shape inference), index, quant, units, rules, report (grouping, summaries), render
// (RenderJson). floor = read + sha256 + parse + onnx_check; project = guards .. render.
// External data: MODEL.data next to MODEL is counted as the model's external bytes.
// AXQC_BENCH_SEQUENTIAL=1 checks with axqc::SetParallelChecks(false) (everything on one thread),
// for an A/B comparison under the same machine load; by default each child also repeats its
// wall-clock runs with the second thread off (wall_one_thread_s). After the tables it
// prints the checker targets of docs/performance.md, met or missed, with the measured values
// (--baseline: an earlier results file for the wall-time target); --parse-only MODEL (run for each
// model in its own process) prints the peak RSS of parsing the model alone.
#include <fcntl.h>
#include <google/protobuf/arena.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <onnx/onnx_pb.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "axqc/checker.h"
#include "axqc/render.h"
#include "axqc/threads.h"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

struct Stage {
  const char* name;
  double axqc::StageTimings::*field;  // null: measured here (render)
};
constexpr Stage kStages[] = {
    {"read", &axqc::StageTimings::read_s},
    {"sha256", &axqc::StageTimings::sha256_s},
    {"parse", &axqc::StageTimings::parse_s},
    {"onnx_check", &axqc::StageTimings::onnx_check_s},
    {"guards", &axqc::StageTimings::guards_s},
    {"index", &axqc::StageTimings::index_s},
    {"quant", &axqc::StageTimings::quant_s},
    {"units", &axqc::StageTimings::units_s},
    {"rules", &axqc::StageTimings::rules_s},
    {"report", &axqc::StageTimings::report_s},
    {"render", nullptr},
};
constexpr int kFloorStages = 4;  // read, sha256, parse, onnx_check

long PeakRssKb() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double ThreadCpuNow() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double WallNow() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

json MinMedian(const std::vector<double>& v) {
  return {{"min", *std::min_element(v.begin(), v.end())}, {"median", Median(v)}};
}

// `repeat` checks of `path` on one clock (wall or thread CPU): stage min/median, floor, project.
json Measure(const std::string& path, int repeat, bool cpu, json& facts) {
  std::vector<std::vector<double>> samples(std::size(kStages));
  std::vector<double> totals, floors, projects;
  for (int r = 0; r < repeat; ++r) {
    axqc::StageTimings t;
    t.thread_cpu = cpu;
    axqc::CheckOptions options;
    options.timings = &t;
    const double t0 = cpu ? ThreadCpuNow() : WallNow();
    const axqc::Report report = axqc::CheckFile(path, options);
    const double t1 = cpu ? ThreadCpuNow() : WallNow();
    const std::string rendered = axqc::RenderJson(report);
    const double t2 = cpu ? ThreadCpuNow() : WallNow();
    double floor = 0, project = 0;
    for (std::size_t i = 0; i < std::size(kStages); ++i) {
      const double v = kStages[i].field != nullptr ? t.*kStages[i].field : t2 - t1;
      samples[i].push_back(v);
      (static_cast<int>(i) < kFloorStages ? floor : project) += v;
    }
    floors.push_back(floor);
    projects.push_back(project);
    totals.push_back(t2 - t0);
    if (facts.empty()) {
      std::size_t errors = 0;
      for (const auto& f : report.findings) errors += f.severity == axqc::Severity::kError ? 1 : 0;
      facts["verdict"] = std::string(axqc::VerdictName(report.verdict));
      facts["nodes"] = report.model.node_count;
      facts["initializers"] = report.model.initializer_count;
      facts["findings"] = report.findings.size();
      facts["errors"] = errors;
      facts["groups"] = report.groups.size();
      facts["report_json_bytes"] = rendered.size();
    }
  }
  json stages = json::object();
  for (std::size_t i = 0; i < std::size(kStages); ++i) {
    stages[kStages[i].name] = MinMedian(samples[i]);
  }
  return {{"stages", stages},
          {"floor", MinMedian(floors)},
          {"project", MinMedian(projects)},
          {"total", MinMedian(totals)}};
}

// One model, in this process: prints one JSON line. Wall-clock runs first, then thread CPU time.
int Child(const std::string& path, int repeat) {
  const long rss_start = PeakRssKb();
  json out = json::object();
  json facts = json::object();
  out["wall_s"] = Measure(path, repeat, false, facts);
  out["cpu_s"] = Measure(path, repeat, true, facts);
  // The same wall-clock runs with the second thread off (axqc::SetParallelChecks), for the
  // two-thread gain on this machine under its current load.
  if (axqc::ParallelChecks()) {
    axqc::SetParallelChecks(false);
    out["wall_one_thread_s"] = Measure(path, repeat, false, facts);
    axqc::SetParallelChecks(true);
  }
  out.update(facts);
  out["model"] = path;
  out["repeat"] = repeat;
  std::error_code ec;
  out["file_bytes"] = fs::file_size(path, ec);
  const auto data = fs::file_size(path + ".data", ec);
  out["external_bytes"] = ec ? 0 : data;
  out["rss_start_kb"] = rss_start;
  out["peak_rss_kb"] = PeakRssKb();
  std::cout << out.dump() << "\n";
  return 0;
}

// The floor of protobuf's object model: parses the model the way the checker's loader does (onto
// an arena, from the file descriptor) and nothing else; prints the peak RSS in KiB.
int ParseOnly(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("cannot open " + path);
  google::protobuf::Arena arena;
  auto* model = google::protobuf::Arena::CreateMessage<onnx::ModelProto>(&arena);
  bool ok = false;
  {
    google::protobuf::io::FileInputStream raw(fd, 1 << 20);
    google::protobuf::io::CodedInputStream in(&raw);
    in.SetTotalBytesLimit(INT_MAX);
    in.SetRecursionLimit(500);
    ok = model->ParseFromCodedStream(&in);
  }
  close(fd);
  if (!ok) throw std::runtime_error("cannot parse " + path);
  std::cout << PeakRssKb() << "\n";
  return 0;
}

// Runs `self --child MODEL --repeat N` (or `self --parse-only MODEL` when `repeat` is 0) and
// parses its JSON line.
json RunChild(const std::string& self, const std::string& model, int repeat) {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
  const std::string rep = std::to_string(repeat);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    std::vector<char*> argv{const_cast<char*>(self.c_str()),  const_cast<char*>("--child"),
                            const_cast<char*>(model.c_str()), const_cast<char*>("--repeat"),
                            const_cast<char*>(rep.c_str()),   nullptr};
    if (repeat == 0) argv = {argv[0], const_cast<char*>("--parse-only"), argv[2], nullptr};
    execv(self.c_str(), argv.data());
    _exit(127);
  }
  close(fds[1]);
  std::string text;
  char buf[4096];
  for (;;) {
    const ssize_t n = read(fds[0], buf, sizeof buf);
    if (n <= 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || text.empty()) {
    throw std::runtime_error(model + ": child failed (status " + std::to_string(status) + ")");
  }
  return json::parse(text);
}

std::string Ms(double s) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(s < 0.1 ? 2 : 1) << s * 1e3;
  return o.str();
}

void PrintTable(const json& results, const char* clock) {
  std::cout << "[" << clock << "]\n"
            << std::left << std::setw(26) << "model" << std::right << std::setw(8) << "nodes"
            << std::setw(8) << "MB";
  for (const auto& s : kStages) std::cout << std::setw(10) << s.name;
  std::cout << std::setw(10) << "floor" << std::setw(10) << "project" << std::setw(7) << "proj%"
            << std::setw(9) << "us/node" << std::setw(8) << "rssMB" << std::setw(7) << "rss/f"
            << "\n";
  for (const auto& r : results) {
    const json& m = r[clock];
    const double mb = r["file_bytes"].get<double>() / 1e6;
    const double floor = m["floor"]["min"].get<double>();
    const double project = m["project"]["min"].get<double>();
    const double rss_mb = r["peak_rss_kb"].get<double>() * 1024 / 1e6;
    double rules = 0;  // everything after the ONNX checker, per node
    for (int i = kFloorStages; i < static_cast<int>(std::size(kStages)); ++i) {
      rules += m["stages"][kStages[i].name]["min"].get<double>();
    }
    std::cout << std::left << std::setw(26)
              << fs::path(r["model"].get<std::string>()).filename().string() << std::right
              << std::setw(8) << r["nodes"].get<long>() << std::setw(8) << std::fixed
              << std::setprecision(1) << mb;
    for (const auto& s : kStages) std::cout << std::setw(10) << Ms(m["stages"][s.name]["min"]);
    std::cout << std::setw(10) << Ms(floor) << std::setw(10) << Ms(project) << std::setw(6)
              << std::setprecision(0) << 100 * project / floor << "%" << std::setw(9)
              << std::setprecision(2) << 1e6 * rules / r["nodes"].get<double>() << std::setw(8)
              << std::setprecision(1) << rss_mb << std::setw(7) << std::setprecision(2)
              << rss_mb / mb << "\n";
  }
}

// The checker targets of docs/performance.md, each with its measured value and met / missed:
// project CPU per node flat within 1.5x from the smallest to the largest `mixed-*` model, project
// <= 25% over the floor (CPU) on the largest, its wall time (whole check + render, min and
// median) <= 0.65x the same model's in `baseline` (an earlier results file; skipped when absent),
// and peak RSS <= 3x the file for the node-heavy models.
json Targets(const json& results, const json& baseline) {
  auto per_node = [](const json& r) {
    const json& m = r["cpu_s"];
    double project = 0;
    for (int i = kFloorStages; i < static_cast<int>(std::size(kStages)); ++i) {
      project += m["stages"][kStages[i].name]["min"].get<double>();
    }
    return 1e6 * project / r["nodes"].get<double>();
  };
  const json* small = nullptr;
  const json* large = nullptr;
  for (const auto& r : results) {
    if (fs::path(r["model"].get<std::string>()).filename().string().rfind("mixed-", 0) != 0) {
      continue;
    }
    if (small == nullptr || r["nodes"] < (*small)["nodes"]) small = &r;
    if (large == nullptr || r["nodes"] > (*large)["nodes"]) large = &r;
  }
  json out = json::array();
  auto add = [&](const std::string& target, const std::string& value, bool met) {
    out.push_back({{"target", target}, {"value", value}, {"met", met}});
  };
  auto fixed = [](double v, int digits) {
    std::ostringstream o;
    o << std::fixed << std::setprecision(digits) << v;
    return o.str();
  };
  if (small == nullptr || large == nullptr) return out;
  const std::string large_name = fs::path((*large)["model"].get<std::string>()).filename();
  if (small != large) {
    const double a = per_node(*small), b = per_node(*large);
    add("project CPU per node within 1.5x from " + std::to_string((*small)["nodes"].get<long>()) +
            " to " + std::to_string((*large)["nodes"].get<long>()) + " nodes",
        fixed(a, 2) + " -> " + fixed(b, 2) + " us/node: " + fixed(b / a, 2) + "x", b / a <= 1.5);
  }
  {
    const json& m = (*large)["cpu_s"];
    const double ratio = m["project"]["min"].get<double>() / m["floor"]["min"].get<double>();
    add("project <= 25% over the floor (CPU), " + large_name,
        fixed(100 * ratio, 0) + "% (project " + Ms(m["project"]["min"].get<double>()) +
            " ms, floor " + Ms(m["floor"]["min"].get<double>()) + " ms)",
        ratio <= 0.25);
  }
  if (baseline.is_object() && baseline.contains("results")) {
    for (const auto& b : baseline["results"]) {
      if (fs::path(b["model"].get<std::string>()).filename() != large_name) continue;
      const json& now = (*large)["wall_s"]["total"];
      const json& then = b["wall_s"]["total"];
      const double rmin = now["min"].get<double>() / then["min"].get<double>();
      const double rmed = now["median"].get<double>() / then["median"].get<double>();
      const std::string date =
          baseline["machine"].is_object() ? baseline["machine"].value("date", "") : "";
      add("wall time <= 0.65x the baseline (" + date.substr(0, 10) + "), " + large_name,
          Ms(now["min"].get<double>()) + " / " + Ms(now["median"].get<double>()) +
              " ms (min / median) vs " + Ms(then["min"].get<double>()) + " / " +
              Ms(then["median"].get<double>()) + " ms: " + fixed(rmin, 2) + "x / " +
              fixed(rmed, 2) + "x",
          rmed <= 0.65);
    }
  }
  if ((*large)["nodes"].get<long>() >= 100000) {
    // Issue #42: the whole check of the 100k-node model in a second on this 2-core machine. The
    // value names the part no project code can shorten: ONNX's parse, checker and strict shape
    // inference, one after the other on the calling thread (docs/performance.md).
    const json& w = (*large)["wall_s"];
    const double total = w["total"]["median"].get<double>();
    const double onnx =
        w["stages"]["parse"]["min"].get<double>() + w["stages"]["onnx_check"]["min"].get<double>();
    add("wall time <= 1.0 s on this machine, " + large_name,
        Ms(w["total"]["min"].get<double>()) + " / " + Ms(total) +
            " ms (min / median); of it protobuf's parse + ONNX's checker and strict inference " +
            Ms(onnx) + " ms (min), sequential",
        total <= 1.0);
  }
  if (large->contains("wall_one_thread_s")) {
    const json& two = (*large)["wall_s"]["total"];
    const json& one = (*large)["wall_one_thread_s"]["total"];
    const double r = two["median"].get<double>() / one["median"].get<double>();
    add("second thread: wall time <= 0.65x one thread (same binary, same load), " + large_name,
        Ms(two["min"].get<double>()) + " / " + Ms(two["median"].get<double>()) +
            " ms (min / median) vs " + Ms(one["min"].get<double>()) + " / " +
            Ms(one["median"].get<double>()) +
            " ms: " + fixed(two["min"].get<double>() / one["min"].get<double>(), 2) + "x / " +
            fixed(r, 2) + "x",
        r <= 0.65);
  }
  for (const auto& r : results) {
    const std::string name = fs::path(r["model"].get<std::string>()).filename();
    // Node-heavy: the graph, not weights, dominates the file (< 4 KB of file per node).
    if (r["file_bytes"].get<double>() / r["nodes"].get<double>() > 4096 ||
        r["nodes"].get<long>() < 10000 || r["external_bytes"].get<double>() > 0) {
      continue;
    }
    const double ratio = r["peak_rss_kb"].get<double>() * 1024 / r["file_bytes"].get<double>();
    add("peak RSS <= 3x the file (node-heavy), " + name,
        fixed(r["peak_rss_kb"].get<double>() * 1024 / 1e6, 1) + " MB for " +
            fixed(r["file_bytes"].get<double>() / 1e6, 1) + " MB: " + fixed(ratio, 2) + "x" +
            (r.contains("parse_only_rss_kb") ? " (protobuf's parsed model alone: " +
                                                   fixed(r["parse_only_rss_kb"].get<double>() *
                                                             1024 / r["file_bytes"].get<double>(),
                                                         2) +
                                                   "x)"
                                             : std::string()),
        ratio <= 3);
  }
  return out;
}

int Usage() {
  std::cerr << "usage: axqc-bench-check [--repeat N] [--json OUT.json] [--machine TEXT] "
               "[--baseline EARLIER.json] MODEL...\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  int repeat = 5;
  std::string json_out, machine, child, baseline_path, parse_only;
  std::vector<std::string> models;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--repeat" || a == "--json" || a == "--machine" || a == "--child" ||
         a == "--baseline" || a == "--parse-only") &&
        i + 1 >= argc) {
      return Usage();
    }
    if (a == "--repeat") {
      repeat = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--json") {
      json_out = argv[++i];
    } else if (a == "--machine") {
      machine = argv[++i];
    } else if (a == "--child") {
      child = argv[++i];
    } else if (a == "--baseline") {
      baseline_path = argv[++i];
    } else if (a == "--parse-only") {
      parse_only = argv[++i];
    } else if (!a.empty() && a[0] == '-') {
      return Usage();
    } else {
      models.push_back(a);
    }
  }
  axqc::SetParallelChecks(std::getenv("AXQC_BENCH_SEQUENTIAL") == nullptr);
  try {
    if (!parse_only.empty()) return ParseOnly(parse_only);
    if (!child.empty()) return Child(child, repeat);
    if (models.empty()) return Usage();
    const std::string self = fs::read_symlink("/proc/self/exe").string();
    json results = json::array();
    for (const auto& m : models) {
      std::cerr << "axqc-bench-check: " << m << " (" << repeat << " runs)\n";
      json r = RunChild(self, m, repeat);
      r["parse_only_rss_kb"] = RunChild(self, m, 0);
      results.push_back(std::move(r));
    }
    json baseline;
    if (!baseline_path.empty()) {
      std::ifstream f(baseline_path);
      if (!f) throw std::runtime_error("cannot read " + baseline_path);
      baseline = json::parse(f);
    }
    PrintTable(results, "wall_s");
    PrintTable(results, "cpu_s");
    std::cout << "(ms, min of " << repeat
              << " runs; floor = read+sha256+parse+onnx_check; project = guards..render; proj% = "
                 "project / floor; us/node = project per node; rss/f = peak RSS / model file)\n";
    const json targets = Targets(results, baseline);
    if (!targets.empty()) {
      std::cout << "checker targets (docs/performance.md):\n";
      for (const auto& t : targets) {
        std::cout << "  " << (t["met"].get<bool>() ? "met    " : "MISSED ")
                  << t["target"].get<std::string>() << ": " << t["value"].get<std::string>()
                  << "\n";
      }
    }
    if (!json_out.empty()) {
      json doc = {{"schema", "axqc.bench.check/v1"},
                  {"tool_version", std::string(axqc::ToolVersion())},
                  {"machine", machine.empty() ? json(nullptr) : json::parse(machine)},
                  {"results", results},
                  {"targets", Targets(results, baseline)}};
      std::ofstream f(json_out);
      f << doc.dump(2) << "\n";
      if (!f) throw std::runtime_error("cannot write " + json_out);
    }
  } catch (const std::exception& e) {
    std::cerr << "axqc-bench-check: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
