// The HTML report renderer of the HTTP API (report_html.h).
#include "http/report_html.h"

#include <exception>
#include <utility>

#include "axqc/sha256.h"
#include "axqc/wire/report_proto.h"

namespace axqc::server::http {

HtmlReports::HtmlReports(HtmlOptions options, std::size_t max_queued, std::size_t cache_bytes,
                         HtmlRenderFn render)
    : options_(std::move(options)),
      render_(std::move(render)),
      max_queued_(max_queued),
      cache_bytes_(cache_bytes) {
  thread_ = std::thread([this] { Run(); });
}

HtmlReports::~HtmlReports() {
  std::deque<Job> dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    dropped.swap(queue_);
  }
  cv_.notify_all();
  thread_.join();
  for (auto& job : dropped) job.done(nullptr, Outcome::kBusy);
}

std::size_t HtmlReports::renders() const {
  std::lock_guard<std::mutex> lock(mu_);
  return renders_;
}

std::size_t HtmlReports::layout_failures() const {
  std::lock_guard<std::mutex> lock(mu_);
  return layout_failures_;
}

std::shared_ptr<const std::string> HtmlReports::Cached(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find(key);
  if (it == index_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->second;
}

void HtmlReports::Store(const std::string& key, std::shared_ptr<const std::string> html) {
  const std::size_t cost = key.size() + html->size();
  std::lock_guard<std::mutex> lock(mu_);
  if (cost > cache_bytes_ || index_.contains(key)) return;
  lru_.emplace_front(key, std::move(html));
  index_[key] = lru_.begin();
  bytes_ += cost;
  while (bytes_ > cache_bytes_ && !lru_.empty()) {
    bytes_ -= lru_.back().first.size() + lru_.back().second->size();
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
}

void HtmlReports::Render(const v1::Report& report, Done done) {
  // The options are this renderer's; the report's bytes name the document.
  std::string key = axqc::Sha256Hex(report.SerializeAsString());
  if (auto html = Cached(key)) {
    done(std::move(html), Outcome::kCached);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stop_ && queue_.size() < max_queued_) {
      queue_.push_back({std::move(key), std::make_shared<v1::Report>(report), std::move(done)});
      cv_.notify_one();
      return;
    }
  }
  done(nullptr, Outcome::kBusy);
}

void HtmlReports::Run() {
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    // The same report may have been queued twice before the first render finished.
    if (auto html = Cached(job.key)) {
      job.done(std::move(html), Outcome::kCached);
      continue;
    }
    std::shared_ptr<const std::string> html;
    Outcome outcome = Outcome::kRendered;
    try {
      html = std::make_shared<const std::string>(render_(*job.report, options_));
    } catch (const std::exception& e) {
      // The layout failed (a worker crashed or ran out of CPU time on it, Graphviz gave up): the
      // same document without graph views, which involves no Graphviz, says why.
      HtmlOptions plain = options_;
      std::string reason = e.what();
      if (reason.size() > 300) reason.resize(300);
      plain.no_graph_note = "The graph views of this report could not be laid out (" + reason +
                            "), so the findings are shown without them.";
      job.report->clear_graph();
      try {
        html = std::make_shared<const std::string>(RenderHtmlInProcess(*job.report, plain));
        outcome = Outcome::kWithoutGraph;
      } catch (const std::exception&) {
        job.done(nullptr, Outcome::kFailed);
        continue;
      }
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++renders_;
      if (outcome == Outcome::kWithoutGraph) ++layout_failures_;
    }
    Store(job.key, html);
    job.done(std::move(html), outcome);
  }
}

}  // namespace axqc::server::http
