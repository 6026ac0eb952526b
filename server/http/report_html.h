// The HTML report of GET /v1/reports/{sha256}/html, rendered off the HTTP listener's threads
// (docs/report-html.md): one render thread, a bounded queue, and a cache of rendered documents
// keyed by the report's bytes. The layout itself runs where `render` puts it: with
// --isolation process in a sandboxed worker process under the limits of a check (Graphviz reads
// model-derived names; a layout that crashes or overruns its CPU time costs that worker, never the
// server), else in-process. Layouts are bounded by HtmlOptions' node/edge/time budget; when one
// fails all the same, the document is made without graph views (no Graphviz involved) and says
// why. A listener thread only enqueues, so a slow layout never holds up other requests.
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
#include "check_engine.h"

namespace axqc::server::http {

class HtmlReports {
 public:
  // `max_queued`: renders waiting beyond the running one; `cache_bytes`: rendered documents kept.
  HtmlReports(HtmlOptions options, std::size_t max_queued, std::size_t cache_bytes,
              HtmlRenderFn render = RenderHtmlInProcess);
  ~HtmlReports();  // finishes the running render; queued ones are answered "unavailable"
  HtmlReports(const HtmlReports&) = delete;
  HtmlReports& operator=(const HtmlReports&) = delete;

  // kWithoutGraph: the layout failed (the reason is in the document), the findings are shown
  // without graph views.
  enum class Outcome { kRendered, kCached, kWithoutGraph, kBusy, kFailed };
  // The document (from the cache, or rendered on the render thread); null with kBusy when the
  // queue is full or the renderer stops, with kFailed when rendering threw. `done` runs exactly
  // once, on the render thread or this one.
  using Done = std::function<void(std::shared_ptr<const std::string> html, Outcome outcome)>;
  void Render(const v1::Report& report, Done done);

  std::size_t renders() const;          // documents rendered so far (not from the cache)
  std::size_t layout_failures() const;  // of those, made without graph views

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
  const HtmlRenderFn render_;
  const std::size_t max_queued_;
  const std::size_t cache_bytes_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_;
  bool stop_ = false;
  std::size_t renders_ = 0;
  std::size_t layout_failures_ = 0;
  std::list<std::pair<std::string, std::shared_ptr<const std::string>>> lru_;  // front = newest
  std::unordered_map<std::string, decltype(lru_)::iterator> index_;
  std::size_t bytes_ = 0;
  std::thread thread_;
};

}  // namespace axqc::server::http
