#include "process_metrics.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <limits>
#include <sstream>
#include <string>

namespace axqc::server {

namespace {

std::optional<std::string> ReadText(const char* path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

std::optional<double> Limit(int resource) {
  rlimit r{};
  if (::getrlimit(resource, &r) != 0) return std::nullopt;
  if (r.rlim_cur == RLIM_INFINITY) return std::numeric_limits<double>::infinity();
  return static_cast<double>(r.rlim_cur);
}

prometheus::MetricFamily Family(const char* name, const char* help, prometheus::MetricType type,
                                double value) {
  prometheus::MetricFamily f;
  f.name = name;
  f.help = help;
  f.type = type;
  prometheus::ClientMetric m;
  if (type == prometheus::MetricType::Counter) {
    m.counter.value = value;
  } else {
    m.gauge.value = value;
  }
  f.metric.push_back(m);
  return f;
}

}  // namespace

ProcessStats ReadProcessStats() {
  ProcessStats s;
  const long ticks = ::sysconf(_SC_CLK_TCK);
  const long page = ::sysconf(_SC_PAGESIZE);
  if (auto stat = ReadText("/proc/self/stat"); stat && ticks > 0 && page > 0) {
    // "pid (comm) state ppid ...": comm may contain spaces and parentheses; fields after the last
    // ')' start with field 3 (state).
    const auto close = stat->rfind(')');
    if (close != std::string::npos) {
      std::istringstream in(stat->substr(close + 2));
      std::vector<std::string> f;
      std::string tok;
      while (in >> tok) f.push_back(tok);
      // f[0] = field 3; utime 14, stime 15, starttime 22, vsize 23, rss 24.
      if (f.size() >= 22) {
        try {
          const double utime = std::stod(f[11]);
          const double stime = std::stod(f[12]);
          s.cpu_seconds = (utime + stime) / static_cast<double>(ticks);
          const double start_ticks = std::stod(f[19]);
          s.virtual_bytes = std::stoull(f[20]);
          s.resident_bytes = std::stoull(f[21]) * static_cast<std::uint64_t>(page);
          if (auto boot = ReadText("/proc/stat")) {
            const auto pos = boot->find("\nbtime ");
            if (pos != std::string::npos) {
              const double btime = std::stod(boot->substr(pos + 7));
              s.start_time_seconds = btime + start_ticks / static_cast<double>(ticks);
            }
          }
        } catch (const std::exception&) {
          // Unexpected format: leave the values out.
        }
      }
    }
  }
  if (DIR* d = ::opendir("/proc/self/fd"); d != nullptr) {
    std::uint64_t n = 0;
    while (const dirent* e = ::readdir(d)) {
      if (e->d_name[0] != '.') ++n;
    }
    ::closedir(d);
    s.open_fds = n > 0 ? n - 1 : 0;  // the directory stream's own descriptor
  }
  s.max_fds = Limit(RLIMIT_NOFILE);
  s.virtual_max_bytes = Limit(RLIMIT_AS);
  return s;
}

std::vector<prometheus::MetricFamily> ProcessCollector::Collect() const {
  using prometheus::MetricType;
  const ProcessStats s = ReadProcessStats();
  std::vector<prometheus::MetricFamily> out;
  if (s.cpu_seconds) {
    out.push_back(Family("process_cpu_seconds_total",
                         "Total user and system CPU time spent in seconds.", MetricType::Counter,
                         *s.cpu_seconds));
  }
  if (s.open_fds) {
    out.push_back(Family("process_open_fds", "Number of open file descriptors.", MetricType::Gauge,
                         static_cast<double>(*s.open_fds)));
  }
  if (s.max_fds) {
    out.push_back(Family("process_max_fds", "Maximum number of open file descriptors.",
                         MetricType::Gauge, *s.max_fds));
  }
  if (s.virtual_bytes) {
    out.push_back(Family("process_virtual_memory_bytes", "Virtual memory size in bytes.",
                         MetricType::Gauge, static_cast<double>(*s.virtual_bytes)));
  }
  if (s.virtual_max_bytes) {
    out.push_back(Family("process_virtual_memory_max_bytes",
                         "Maximum amount of virtual memory available in bytes.", MetricType::Gauge,
                         *s.virtual_max_bytes));
  }
  if (s.resident_bytes) {
    out.push_back(Family("process_resident_memory_bytes", "Resident memory size in bytes.",
                         MetricType::Gauge, static_cast<double>(*s.resident_bytes)));
  }
  if (s.start_time_seconds) {
    out.push_back(Family("process_start_time_seconds",
                         "Start time of the process since unix epoch in seconds.",
                         MetricType::Gauge, *s.start_time_seconds));
  }
  return out;
}

}  // namespace axqc::server
