#include "stdout_capture.h"

#include <deque>
#include <iostream>
#include <mutex>
#include <streambuf>

namespace axqc::detail {

namespace {

// The capture of the calling thread, or null.
thread_local std::string* t_capture = nullptr;

// Unbuffered (no put area): every write is a virtual call that looks at the calling thread's
// capture, so the buffer itself has no state that threads share. The buffer it forwards to is
// std::cout's previous one (libstdc++'s stdio_sync_filebuf, itself unbuffered and thread-safe).
class DispatchBuf final : public std::streambuf {
 public:
  explicit DispatchBuf(std::streambuf* next) : next_(next) {}

 protected:
  int_type overflow(int_type ch) override {
    if (traits_type::eq_int_type(ch, traits_type::eof())) return traits_type::not_eof(ch);
    if (t_capture != nullptr) {
      t_capture->push_back(traits_type::to_char_type(ch));
      return ch;
    }
    return next_ == nullptr ? ch : next_->sputc(traits_type::to_char_type(ch));
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    if (t_capture != nullptr) {
      t_capture->append(s, static_cast<std::size_t>(n));
      return n;
    }
    return next_ == nullptr ? n : next_->sputn(s, n);
  }
  int sync() override { return t_capture != nullptr || next_ == nullptr ? 0 : next_->pubsync(); }

 private:
  std::streambuf* next_;
};

std::mutex g_install_mu;
DispatchBuf* g_installed = nullptr;

// Installs the dispatching buffer on std::cout, once, and again if someone replaced std::cout's
// buffer since (std::ios::sync_with_stdio(false) does). The buffers are never freed: std::cout
// may write through them until the process exits.
void EnsureInstalled() {
  std::lock_guard<std::mutex> lock(g_install_mu);
  std::streambuf* current = std::cout.rdbuf();
  if (g_installed != nullptr && current == g_installed) return;
  // Leaked on purpose: static destructors run before std::cout's final flush at exit.
  static auto* const buffers = new std::deque<DispatchBuf>();
  g_installed = &buffers->emplace_back(current);
  std::cout.rdbuf(g_installed);
}

}  // namespace

StdoutCapture::StdoutCapture() : outer_(t_capture) {
  EnsureInstalled();
  t_capture = &text_;
}

StdoutCapture::~StdoutCapture() {
  t_capture = outer_;
  if (outer_ != nullptr) *outer_ += text_;  // nested captures: nothing is lost
}

std::vector<std::string> StdoutCapture::TakeLines() {
  std::vector<std::string> lines;
  std::size_t begin = 0;
  while (begin < text_.size()) {
    std::size_t end = text_.find('\n', begin);
    if (end == std::string::npos) end = text_.size();
    std::string line = text_.substr(begin, end - begin);
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r' || line.back() == '\t')) {
      line.pop_back();
    }
    if (!line.empty()) lines.push_back(std::move(line));
    begin = end + 1;
  }
  text_.clear();
  return lines;
}

}  // namespace axqc::detail
