// The HTML report of GET /v1/reports/{sha256}/html, rendered off the HTTP listener's threads
// (docs/report-html.md): one render thread (Graphviz lays out one graph at a time in a process
// anyway, render_html.cc), a bounded queue, and a cache of rendered documents keyed by the
// report's bytes. Layouts are bounded by HtmlOptions' node/edge/time budget; a listener thread
// only enqueues, so a slow layout never holds up other requests.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include "axqc/render_graph.h"
#include "axqc/v1/axqc.pb.h"

namespace axqc::server::http {

class HtmlReports {
 public:
  // `max_queued`: renders waiting beyond the running one; `cache_bytes`: rendered documents kept.
  HtmlReports(HtmlOptions options, std::size_t max_queued, std::size_t cache_bytes);
  ~HtmlReports();  // finishes the running render; queued ones are answered "unavailable"
  HtmlReports(const HtmlReports&) = delete;
  HtmlReports& operator=(const HtmlReports&) = delete;

  enum class Outcome { kRendered, kCached, kBusy, kFailed };
  // The document (from the cache, or rendered on the render thread); null with kBusy when the
  // queue is full or the renderer stops, with kFailed when rendering threw. `done` runs exactly
  // once, on the render thread or this one.
  using Done = std::function<void(std::shared_ptr<const std::string> html, Outcome outcome)>;
  void Render(const v1::Report& report, Done done);

  std::size_t renders() const;  // documents rendered so far (not from the cache)

 private:
  struct Job {
    std::string key;
    std::shared_ptr<v1::Report> report;
    Done done;
  };
  std::shared_ptr<const std::string> Cached(const std::string& key);
  void Store(const std::string& key, std::shared_ptr<const std::string> html);
  void Run();

  const HtmlOptions options_;
  const std::size_t max_queued_;
  const std::size_t cache_bytes_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_;
  bool stop_ = false;
  std::size_t renders_ = 0;
  std::list<std::pair<std::string, std::shared_ptr<const std::string>>> lru_;  // front = newest
  std::unordered_map<std::string, decltype(lru_)::iterator> index_;
  std::size_t bytes_ = 0;
  std::thread thread_;
};

}  // namespace axqc::server::http
