// axqc-bench-check: times every checker stage on models and measures their peak RSS.
//
//   axqc-bench-check [--repeat N] [--json OUT.json] [--machine TEXT] MODEL...
//
// Each model runs in a fresh child process (this binary re-executed with --child), so that
// getrusage's ru_maxrss is the peak of that model alone. The child checks the model N times
// (CheckFile with CheckOptions::timings, the CLI's default options) and renders the JSON report
// each time; it prints one JSON line with the min and median of every stage and its peak RSS.
// The parent prints a table and writes all results (plus --machine) to OUT.json.
//
// Stages: read, sha256, parse (protobuf + external-data validation), onnx_check (ONNX full check
// + strict shape inference), index, quant, units, rules, report (grouping, summaries), render
// (RenderJson). floor = read + sha256 + parse + onnx_check; project = index .. render.
// External data: MODEL.data next to MODEL is counted as the model's external bytes.
#include <sys/resource.h>
#include <sys/wait.h>
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
    {"read", &axqc::StageTimings::read_s},     {"sha256", &axqc::StageTimings::sha256_s},
    {"parse", &axqc::StageTimings::parse_s},   {"onnx_check", &axqc::StageTimings::onnx_check_s},
    {"index", &axqc::StageTimings::index_s},   {"quant", &axqc::StageTimings::quant_s},
    {"units", &axqc::StageTimings::units_s},   {"rules", &axqc::StageTimings::rules_s},
    {"report", &axqc::StageTimings::report_s}, {"render", nullptr},
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

// One model, in this process: prints one JSON line.
int Child(const std::string& path, int repeat) {
  const long rss_start = PeakRssKb();
  std::vector<std::vector<double>> samples(std::size(kStages));
  std::vector<double> totals, floors, projects;
  json out;
  for (int r = 0; r < repeat; ++r) {
    axqc::StageTimings t;
    axqc::CheckOptions options;
    options.timings = &t;
    const auto t0 = std::chrono::steady_clock::now();
    const axqc::Report report = axqc::CheckFile(path, options);
    const auto t1 = std::chrono::steady_clock::now();
    const std::string rendered = axqc::RenderJson(report);
    const auto t2 = std::chrono::steady_clock::now();
    const double render_s = std::chrono::duration<double>(t2 - t1).count();
    double floor = 0, project = 0;
    for (std::size_t i = 0; i < std::size(kStages); ++i) {
      const double v = kStages[i].field != nullptr ? t.*kStages[i].field : render_s;
      samples[i].push_back(v);
      (static_cast<int>(i) < kFloorStages ? floor : project) += v;
    }
    floors.push_back(floor);
    projects.push_back(project);
    totals.push_back(std::chrono::duration<double>(t2 - t0).count());
    if (r == 0) {
      std::size_t errors = 0;
      for (const auto& f : report.findings) errors += f.severity == axqc::Severity::kError ? 1 : 0;
      out["verdict"] = std::string(axqc::VerdictName(report.verdict));
      out["nodes"] = report.model.node_count;
      out["initializers"] = report.model.initializer_count;
      out["findings"] = report.findings.size();
      out["errors"] = errors;
      out["groups"] = report.groups.size();
      out["report_json_bytes"] = rendered.size();
    }
  }
  out["model"] = path;
  out["repeat"] = repeat;
  std::error_code ec;
  out["file_bytes"] = fs::file_size(path, ec);
  const auto data = fs::file_size(path + ".data", ec);
  out["external_bytes"] = ec ? 0 : data;
  json stages = json::object();
  for (std::size_t i = 0; i < std::size(kStages); ++i) {
    const auto& v = samples[i];
    stages[kStages[i].name] = {{"min", *std::min_element(v.begin(), v.end())},
                               {"median", Median(v)}};
  }
  out["stages_s"] = stages;
  out["floor_s"] = {{"min", *std::min_element(floors.begin(), floors.end())},
                    {"median", Median(floors)}};
  out["project_s"] = {{"min", *std::min_element(projects.begin(), projects.end())},
                      {"median", Median(projects)}};
  out["total_s"] = {{"min", *std::min_element(totals.begin(), totals.end())},
                    {"median", Median(totals)}};
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

void PrintTable(const json& results) {
  std::cout << std::left << std::setw(28) << "model" << std::right << std::setw(8) << "nodes"
            << std::setw(9) << "MB";
  for (const auto& s : kStages) std::cout << std::setw(11) << s.name;
  std::cout << std::setw(11) << "floor" << std::setw(11) << "project" << std::setw(8) << "proj%"
            << std::setw(10) << "rssMB" << std::setw(8) << "rss/f"
            << "\n";
  for (const auto& r : results) {
    const double mb = r["file_bytes"].get<double>() / 1e6;
    const double floor = r["floor_s"]["min"].get<double>();
    const double project = r["project_s"]["min"].get<double>();
    const double rss_mb = r["peak_rss_kb"].get<double>() * 1024 / 1e6;
    std::cout << std::left << std::setw(28)
              << fs::path(r["model"].get<std::string>()).filename().string() << std::right
              << std::setw(8) << r["nodes"].get<long>() << std::setw(9) << std::fixed
              << std::setprecision(1) << mb;
    for (const auto& s : kStages) std::cout << std::setw(11) << Ms(r["stages_s"][s.name]["min"]);
    std::cout << std::setw(11) << Ms(floor) << std::setw(11) << Ms(project) << std::setw(7)
              << std::setprecision(0) << 100 * project / floor << "%" << std::setw(10)
              << std::setprecision(1) << rss_mb << std::setw(8) << std::setprecision(2)
              << rss_mb / mb << "\n";
  }
  std::cout << "(times in ms, min of " << (results.empty() ? 0 : results[0]["repeat"].get<int>())
            << " runs; floor = read+sha256+parse+onnx_check; proj% = project / floor; rss/f = "
               "peak RSS / model file size)\n";
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
    PrintTable(results);
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
