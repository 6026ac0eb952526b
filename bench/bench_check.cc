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
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
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

// Runs `self --child MODEL --repeat N` and parses its JSON line.
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

int Usage() {
  std::cerr << "usage: axqc-bench-check [--repeat N] [--json OUT.json] [--machine TEXT] MODEL...\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  int repeat = 5;
  std::string json_out, machine, child;
  std::vector<std::string> models;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--repeat" || a == "--json" || a == "--machine" || a == "--child") && i + 1 >= argc) {
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
    } else if (!a.empty() && a[0] == '-') {
      return Usage();
    } else {
      models.push_back(a);
    }
  }
  try {
    if (!child.empty()) return Child(child, repeat);
    if (models.empty()) return Usage();
    const std::string self = fs::read_symlink("/proc/self/exe").string();
    json results = json::array();
    for (const auto& m : models) {
      std::cerr << "axqc-bench-check: " << m << " (" << repeat << " runs)\n";
      results.push_back(RunChild(self, m, repeat));
    }
    PrintTable(results, "wall_s");
    PrintTable(results, "cpu_s");
    std::cout << "(ms, min of " << repeat
              << " runs; floor = read+sha256+parse+onnx_check; project = guards..render; proj% = "
                 "project / floor; us/node = project per node; rss/f = peak RSS / model file)\n";
    if (!json_out.empty()) {
      json doc = {{"schema", "axqc.bench.check/v1"},
                  {"tool_version", std::string(axqc::ToolVersion())},
                  {"machine", machine.empty() ? json(nullptr) : json::parse(machine)},
                  {"results", results}};
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
