#include "http/router.h"

#include <sstream>

namespace axqc::server::http {

namespace {

std::vector<std::string> Segments(const std::string& path) {
  std::vector<std::string> out;
  std::string cur;
  for (std::size_t i = 1; i <= path.size(); ++i) {
    if (i == path.size() || path[i] == '/') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(path[i]);
    }
  }
  return out;
}

bool MatchPattern(const std::string& pattern, const std::string& path,
                  std::map<std::string, std::string>* params) {
  if (path.empty() || path[0] != '/') return false;
  const auto want = Segments(pattern);
  const auto got = Segments(path);
  if (want.size() != got.size()) return false;
  std::map<std::string, std::string> found;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const std::string& w = want[i];
    if (w.size() > 2 && w.front() == '{' && w.back() == '}') {
      std::string value;
      if (got[i].empty() || !PercentDecode(got[i], false, &value)) return false;
      found[w.substr(1, w.size() - 2)] = value;
    } else if (w != got[i]) {
      return false;
    }
  }
  *params = std::move(found);
  return true;
}

int Hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

bool PercentDecode(const std::string& s, bool plus_is_space, std::string* out) {
  out->clear();
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '%') {
      if (i + 2 >= s.size()) return false;
      const int hi = Hex(s[i + 1]);
      const int lo = Hex(s[i + 2]);
      if (hi < 0 || lo < 0) return false;
      out->push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out->push_back(' ');
    } else {
      out->push_back(c);
    }
  }
  return true;
}

bool SplitTarget(const std::string& target, std::string* path,
                 std::vector<std::pair<std::string, std::string>>* query) {
  const auto q = target.find('?');
  *path = target.substr(0, q);
  query->clear();
  if (q == std::string::npos) return true;
  std::stringstream in(target.substr(q + 1));
  std::string part;
  while (std::getline(in, part, '&')) {
    if (part.empty()) continue;
    const auto eq = part.find('=');
    std::string k;
    std::string v;
    if (!PercentDecode(part.substr(0, eq), true, &k)) return false;
    if (eq != std::string::npos && !PercentDecode(part.substr(eq + 1), true, &v)) return false;
    query->emplace_back(std::move(k), std::move(v));
  }
  return true;
}

Router::Match Router::Find(Request& request) const {
  Match m;
  for (const auto& r : routes_) {
    std::map<std::string, std::string> params;
    if (!MatchPattern(r.pattern, request.path, &params)) continue;
    m.path_known = true;
    m.allowed.push_back(r.method);
    if (r.method == request.method && m.route == nullptr) {
      m.route = &r;
      request.path_params = std::move(params);
    }
  }
  return m;
}

std::vector<std::pair<std::string, std::string>> Router::Routes() const {
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(routes_.size());
  for (const auto& r : routes_) {
    if (!r.page) out.emplace_back(r.method, r.pattern);
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> Router::PageRoutes() const {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& r : routes_) {
    if (r.page) out.emplace_back(r.method, r.pattern);
  }
  return out;
}

}  // namespace axqc::server::http
