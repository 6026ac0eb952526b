// The standard process_* metrics of Prometheus client libraries (names, types and units as the
// official Go and Python clients export them), read from /proc/self at every scrape:
//   process_cpu_seconds_total, process_resident_memory_bytes, process_virtual_memory_bytes,
//   process_virtual_memory_max_bytes, process_open_fds, process_max_fds,
//   process_start_time_seconds.
// Linux only; a file that cannot be read leaves its metric out of the scrape.
#pragma once

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <cstdint>
#include <optional>
#include <vector>

namespace axqc::server {

// What /proc/self says about this process (nullopt: not readable).
struct ProcessStats {
  std::optional<double> cpu_seconds;         // utime + stime
  std::optional<double> start_time_seconds;  // Unix time
  std::optional<std::uint64_t> resident_bytes;
  std::optional<std::uint64_t> virtual_bytes;
  std::optional<double> virtual_max_bytes;  // RLIMIT_AS; +Inf when unlimited
  std::optional<std::uint64_t> open_fds;
  std::optional<double> max_fds;  // RLIMIT_NOFILE (soft)
};

ProcessStats ReadProcessStats();

class ProcessCollector final : public prometheus::Collectable {
 public:
  std::vector<prometheus::MetricFamily> Collect() const override;
};

}  // namespace axqc::server
