// axqc._native: the checker and the report renderers of core/ for the Python package (python/axqc).
//
// Only serialized models cross this boundary (a path or the bytes of a ModelProto), never protobuf
// objects: the module carries its own ONNX and protobuf, linked statically with every symbol
// hidden (python/CMakeLists.txt), so it never shares the descriptor pool of another protobuf in
// the process (Python's onnx package registers onnx/onnx-ml.proto there too).
//
// The GIL is released while a model is checked and while a report is rendered.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "axqc/catalog.h"
#include "axqc/checker.h"
#include "axqc/fix.h"
#include "axqc/pulsar2.h"
#include "axqc/render.h"
#include "axqc/report.h"
#include "axqc/targets.h"

namespace py = pybind11;

namespace {

// A finished report; immutable, so several threads may render it at once.
class NativeReport {
 public:
  explicit NativeReport(axqc::Report report) : report_(std::move(report)) {}
  const axqc::Report& get() const { return report_; }

 private:
  axqc::Report report_;
};

using ReportPtr = std::shared_ptr<NativeReport>;

// ---- Test hook: the Python tests prove that checks from several threads run at the same time.
// With a rendezvous of n set, every check waits (GIL released) until n checks are inside the
// checker or the timeout passes, and counts whether it saw all n. If the GIL were held during a
// check, no second check could start and none would ever see n.
// `arrived` only grows: a check leaves only once all n arrived (or on its timeout, and then it is
// not counted), so n counted checks were all inside at the moment the last one arrived.
struct Rendezvous {
  std::mutex mu;
  std::condition_variable cv;
  int target = 0;
  double timeout_s = 0;
  int arrived = 0;
  int met = 0;
};
Rendezvous& TheRendezvous() {
  static Rendezvous r;
  return r;
}
std::atomic<bool> g_rendezvous_on{false};

void MaybeRendezvous() {
  if (!g_rendezvous_on.load(std::memory_order_acquire)) return;
  auto& r = TheRendezvous();
  std::unique_lock lock(r.mu);
  if (r.target <= 0) return;
  ++r.arrived;
  r.cv.notify_all();
  const int target = r.target;
  const bool all = r.cv.wait_for(lock, std::chrono::duration<double>(r.timeout_s),
                                 [&] { return r.arrived >= target; });
  if (all) ++r.met;
}

axqc::CheckOptions Options(bool check_value, std::size_t max_locations,
                           const std::vector<std::string>& targets,
                           const std::optional<std::string>& pulsar2_config) {
  axqc::CheckOptions o;
  o.check_value = check_value;
  o.max_locations = max_locations;
  // The text of a Pulsar2 build configuration (docs/pulsar2.md), judged beside the spec.
  o.pulsar2_config = pulsar2_config;
  // Chip targets (docs/targets.md): an unknown name is a ValueError before the check.
  if (!targets.empty()) {
    try {
      o.targets = axqc::ResolveTargets(targets);
    } catch (const std::invalid_argument& e) {
      throw py::value_error(e.what());
    }
  }
  return o;
}

ReportPtr CheckFile(const std::string& path, bool check_value, std::size_t max_locations,
                    const std::string& name, const std::vector<std::string>& targets,
                    const std::optional<std::string>& pulsar2_config) {
  const axqc::CheckOptions options = Options(check_value, max_locations, targets, pulsar2_config);
  py::gil_scoped_release release;
  MaybeRendezvous();
  axqc::Report report = axqc::CheckFile(path, options);
  if (!name.empty()) report.model.file = name;
  return std::make_shared<NativeReport>(std::move(report));
}

ReportPtr CheckBytes(const py::bytes& data, const std::string& name, bool check_value,
                     std::size_t max_locations, const std::vector<std::string>& targets,
                     const std::optional<std::string>& pulsar2_config) {
  const axqc::CheckOptions options = Options(check_value, max_locations, targets, pulsar2_config);
  char* buffer = nullptr;
  Py_ssize_t size = 0;
  if (PyBytes_AsStringAndSize(data.ptr(), &buffer, &size) != 0) throw py::error_already_set();
  // `data` is immutable and referenced by the caller for the whole call.
  const std::string_view view(buffer, static_cast<std::size_t>(size));
  py::gil_scoped_release release;
  MaybeRendezvous();
  return std::make_shared<NativeReport>(axqc::CheckBytes(view, name, options));
}

ReportPtr ReportFromJson(const std::string& text) {
  py::gil_scoped_release release;
  try {
    return std::make_shared<NativeReport>(axqc::ReportFromJson(nlohmann::json::parse(text)));
  } catch (const nlohmann::json::exception& e) {
    throw py::value_error(std::string("not an axqc.report/v1 JSON report: ") + e.what());
  }
}

std::vector<axqc::Report> Collect(const std::vector<ReportPtr>& reports) {
  std::vector<axqc::Report> out;
  out.reserve(reports.size());
  for (const auto& r : reports) {
    if (r == nullptr) throw py::type_error("None is not a report");
    out.push_back(r->get());
  }
  return out;
}

std::vector<axqc::ModelError> Errors(const std::vector<std::pair<std::string, std::string>>& in) {
  std::vector<axqc::ModelError> out;
  out.reserve(in.size());
  for (const auto& [file, message] : in) out.push_back({file, message});
  return out;
}

std::string Headline(const axqc::Report& r) {
  std::string text = axqc::RenderText(r, {});
  const auto nl = text.find('\n');
  if (nl != std::string::npos) text.resize(nl);
  return text;
}

// ---- axqc fix
axqc::FixOptions MakeFixOptions(const std::vector<std::string>& only,
                                const std::vector<std::string>& apply,
                                std::optional<std::int64_t> ir_version, bool check_value,
                                std::size_t max_locations) {
  axqc::FixOptions o;
  o.only = only;
  o.apply = apply;
  o.ir_version = ir_version;
  o.check_value = check_value;
  o.max_locations = max_locations;
  return o;
}

// The result as a dict (the Python side builds its dataclasses from it); the reports stay native.
py::dict FixResultDict(axqc::FixResult r) {
  py::list rewrites;
  for (auto& o : r.rewrites) {
    py::dict d;
    const auto* info = axqc::FindRewrite(o.id);
    d["id"] = o.id;
    d["summary"] = info != nullptr ? std::string(info->summary) : std::string();
    d["applied"] = o.applied;
    d["first"] = o.first;
    d["skipped"] = o.skipped;
    d["first_skips"] = o.first_skips;
    d["note"] = o.note;
    rewrites.append(d);
  }
  py::dict out;
  out["input"] = r.input;
  out["output"] = r.output;
  out["dry_run"] = r.dry_run;
  out["written"] = r.written;
  out["data_file"] = r.data_file;
  out["rewrites"] = rewrites;
  out["before"] = std::make_shared<NativeReport>(std::move(r.before));
  out["after"] = std::make_shared<NativeReport>(std::move(r.after));
  return out;
}

// FixRefused crosses as axqc._native.FixRefused(message, before report or None).
[[noreturn]] void RaiseRefused(PyObject* type, const axqc::FixRefused& e) {
  py::object before = py::none();
  if (e.before()) before = py::cast(std::make_shared<NativeReport>(*e.before()));
  PyErr_SetObject(type, py::make_tuple(std::string(e.what()), before).ptr());
  throw py::error_already_set();
}

}  // namespace

PYBIND11_MODULE(_native, m) {
  m.doc() = "Native part of axqc: the checker and the report renderers (private; use axqc).";

  py::register_exception<axqc::InputError>(m, "InputError", PyExc_ValueError);

  py::class_<NativeReport, ReportPtr>(m, "NativeReport",
                                      "A checker report held by the native module.")
      .def_property_readonly(
          "verdict",
          [](const NativeReport& r) { return std::string(axqc::VerdictName(r.get().verdict)); })
      .def_property_readonly("errors", [](const NativeReport& r) { return r.get().summary.errors; })
      .def_property_readonly("warnings",
                             [](const NativeReport& r) { return r.get().summary.warnings; })
      .def_property_readonly("infos", [](const NativeReport& r) { return r.get().summary.infos; })
      .def_property_readonly("file", [](const NativeReport& r) { return r.get().model.file; })
      .def(
          "to_json",
          [](const NativeReport& r, int indent) { return axqc::RenderJson(r.get(), indent); },
          py::arg("indent") = 2, py::call_guard<py::gil_scoped_release>(),
          "JSON text of the report (schema axqc.report/v1): an entry of `axqc check --format "
          "json`.")
      .def(
          "to_text",
          [](const NativeReport& r, bool explain, bool color) {
            axqc::TextOptions o;
            o.explain = explain;
            o.color = color;
            return axqc::RenderText(r.get(), o);
          },
          py::arg("explain") = false, py::arg("color") = false,
          py::call_guard<py::gil_scoped_release>(), "The text report of `axqc check`.")
      .def(
          "headline", [](const NativeReport& r) { return Headline(r.get()); },
          "First line of the text report.");

  m.def("check_file", &CheckFile, py::arg("path"), py::arg("check_value"), py::arg("max_locations"),
        py::arg("name") = std::string(), py::arg("targets") = std::vector<std::string>(),
        py::arg("pulsar2_config") = py::none(),
        "Checks the model file at `path` (external data is resolved next to it); `name`, when "
        "not empty, replaces the path in the report; `targets`: chip targets (docs/targets.md); "
        "`pulsar2_config`: the text of a Pulsar2 build configuration (docs/pulsar2.md). Raises "
        "InputError.");
  m.def("check_bytes", &CheckBytes, py::arg("data"), py::arg("name"), py::arg("check_value"),
        py::arg("max_locations"), py::arg("targets") = std::vector<std::string>(),
        py::arg("pulsar2_config") = py::none(),
        "Checks a serialized ModelProto held in memory; `targets`: chip targets "
        "(docs/targets.md); `pulsar2_config`: the text of a Pulsar2 build configuration "
        "(docs/pulsar2.md). Raises InputError.");
  m.def(
      "pulsar2_config",
      [](const std::string& path, const std::string& target) {
        try {
          return axqc::GeneratePulsar2Config(path, target);
        } catch (const std::invalid_argument& e) {
          throw py::value_error(e.what());
        }
      },
      py::arg("path"), py::arg("target"), py::call_guard<py::gil_scoped_release>(),
      "A Pulsar2 build configuration for the model file (axqc pulsar2-config, docs/pulsar2.md). "
      "Raises InputError and ValueError (unknown target).");
  m.def("report_from_json", &ReportFromJson, py::arg("text"),
        "Reads a report in the axqc.report/v1 JSON schema (e.g. from axqc-server).");

  using Errs = std::vector<std::pair<std::string, std::string>>;
  m.def(
      "render_junit",
      [](const std::vector<ReportPtr>& reports, const Errs& errors) {
        const auto all = Collect(reports);
        const auto errs = Errors(errors);
        py::gil_scoped_release release;
        return axqc::RenderJunit(all, errs);
      },
      py::arg("reports"), py::arg("errors") = Errs{}, "JUnit XML of several reports.");
  m.def(
      "render_sarif",
      [](const std::vector<ReportPtr>& reports, const Errs& errors) {
        const auto all = Collect(reports);
        const auto errs = Errors(errors);
        py::gil_scoped_release release;
        return axqc::RenderSarif(all, errs);
      },
      py::arg("reports"), py::arg("errors") = Errs{}, "SARIF 2.1.0 of several reports.");
  m.def(
      "render_github",
      [](const std::vector<ReportPtr>& reports, const Errs& errors) {
        const auto all = Collect(reports);
        const auto errs = Errors(errors);
        py::gil_scoped_release release;
        return axqc::RenderGithub(all, errs);
      },
      py::arg("reports"), py::arg("errors") = Errs{},
      "GitHub Actions workflow commands of several reports.");
  m.def(
      "render_gitlab",
      [](const std::vector<ReportPtr>& reports, const Errs& errors) {
        const auto all = Collect(reports);
        const auto errs = Errors(errors);
        py::gil_scoped_release release;
        return axqc::RenderGitlab(all, errs);
      },
      py::arg("reports"), py::arg("errors") = Errs{},
      "GitLab Code Quality JSON of several reports.");

  m.def(
      "rules",
      [] {
        py::list out;
        for (const auto& r : axqc::Rules()) {
          py::dict d;
          d["id"] = std::string(r.id);
          d["severity"] = std::string(axqc::SeverityName(r.severity));
          d["check_value"] = r.check_value;
          d["section"] = std::string(r.section);
          d["summary"] = std::string(r.summary);
          d["fix"] = std::string(r.fix);
          out.append(d);
        }
        return out;
      },
      "The rule catalog, in catalog order (dicts).");

  static py::exception<axqc::FixRefused> fix_refused(m, "FixRefused", PyExc_ValueError);
  m.def(
      "fix_file",
      [](const std::string& input, const std::string& output, const std::vector<std::string>& only,
         const std::vector<std::string>& apply, std::optional<std::int64_t> ir_version,
         bool check_value, std::size_t max_locations) {
        std::optional<axqc::FixResult> result;
        std::optional<axqc::FixRefused> refused;
        {
          py::gil_scoped_release release;
          try {
            result = axqc::FixFile(
                input, output, MakeFixOptions(only, apply, ir_version, check_value, max_locations));
          } catch (const axqc::FixRefused& e) {
            refused.emplace(e);
          }
        }
        if (refused) RaiseRefused(fix_refused.ptr(), *refused);
        return FixResultDict(std::move(*result));
      },
      py::arg("input"), py::arg("output"), py::arg("only"), py::arg("apply"), py::arg("ir_version"),
      py::arg("check_value"), py::arg("max_locations"),
      "Fixes the model file `input` into `output` (empty: dry run); `apply` names opt-in rewrites "
      "(as --apply). Raises InputError, "
      "FixRefused (args: message, before report or None) or RuntimeError (cannot write).");
  m.def(
      "fix_bytes",
      [](const py::bytes& data, const std::string& name, const std::vector<std::string>& only,
         const std::vector<std::string>& apply, std::optional<std::int64_t> ir_version,
         bool check_value, std::size_t max_locations) {
        char* buffer = nullptr;
        Py_ssize_t size = 0;
        if (PyBytes_AsStringAndSize(data.ptr(), &buffer, &size) != 0) {
          throw py::error_already_set();
        }
        const std::string_view view(buffer, static_cast<std::size_t>(size));
        std::optional<axqc::FixResult> result;
        std::optional<axqc::FixRefused> refused;
        std::string fixed;
        {
          py::gil_scoped_release release;
          try {
            result = axqc::FixBytes(
                view, name, MakeFixOptions(only, apply, ir_version, check_value, max_locations),
                &fixed);
          } catch (const axqc::FixRefused& e) {
            refused.emplace(e);
          }
        }
        if (refused) RaiseRefused(fix_refused.ptr(), *refused);
        py::dict out = FixResultDict(std::move(*result));
        out["model"] = py::bytes(fixed);
        return out;
      },
      py::arg("data"), py::arg("name"), py::arg("only"), py::arg("apply"), py::arg("ir_version"),
      py::arg("check_value"), py::arg("max_locations"),
      "Fixes a serialized ModelProto in memory; the result's 'model' holds the fixed bytes.");
  m.def(
      "rewrites",
      [] {
        py::list out;
        for (const auto& r : axqc::Rewrites()) {
          py::dict d;
          d["id"] = std::string(r.id);
          d["summary"] = std::string(r.summary);
          d["by_default"] = r.by_default;
          d["opt_in"] = r.opt_in;
          out.append(d);
        }
        return out;
      },
      "The rewrites of axqc fix, in run order (dicts).");

  m.attr("TOOL_VERSION") = std::string(axqc::ToolVersion());
  m.attr("RULE_SET_VERSION") = std::string(axqc::kRuleSetVersion);
  m.attr("ONNX_VERSION") = AXQC_ONNX_VERSION;

  m.def(
      "_debug_set_rendezvous",
      [](int n, double timeout_s) {
        auto& r = TheRendezvous();
        std::lock_guard lock(r.mu);
        r.target = n;
        r.timeout_s = timeout_s;
        r.arrived = 0;
        r.met = 0;
        g_rendezvous_on.store(n > 0, std::memory_order_release);
      },
      py::arg("n"), py::arg("timeout_s"),
      "Test hook: each check waits until n checks are running (or timeout_s passed); 0 turns it "
      "off.");
  m.def(
      "_debug_rendezvous_met",
      [] {
        auto& r = TheRendezvous();
        std::lock_guard lock(r.mu);
        return r.met;
      },
      "Test hook: how many checks saw all n checks running at once.");
}
