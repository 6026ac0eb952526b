// Directory arguments of `axqc check`: every *.onnx file below the directory, minus --exclude.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <set>
#include <string>
#include <system_error>
#include <vector>

#include "axqc/gate.h"
#include "cli.h"

namespace axqc::cli {

namespace fs = std::filesystem;

namespace {

// Like ruff's exclude: a pattern without '/' matches the name of any file or directory on the
// way (so "old" leaves out every directory named old); a pattern with '/' matches the path
// relative to the directory argument ('*' also matches '/', so "old/*" is all of old/).
bool Excluded(const std::vector<std::string>& patterns, const std::string& rel,
              const std::string& name) {
  for (std::string p : patterns) {
    if (p.starts_with("./")) p.erase(0, 2);
    while (p.size() > 1 && p.back() == '/') p.pop_back();
    if (p.find('/') == std::string::npos ? GlobMatch(p, name) : GlobMatch(p, rel)) return true;
  }
  return false;
}

bool IsModelName(const std::string& name) { return name.size() > 5 && name.ends_with(".onnx"); }

bool IsWithin(const fs::path& path, const fs::path& root) {
  const auto [r, p] = std::mismatch(root.begin(), root.end(), path.begin(), path.end());
  return r == root.end();
}

struct Walk {
  const std::vector<std::string>& exclude;
  fs::path arg;                    // as given
  fs::path root;                   // its canonical path
  std::vector<std::string> found;  // paths relative to `arg`, generic form
  bool excluded = false;           // --exclude left something out
  std::string error;

  // Reads `dir` (`rel` below the argument); false with `error` set when it cannot be read.
  bool Dir(const fs::path& dir, const std::string& rel) {
    std::vector<fs::directory_entry> entries;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      entries.push_back(*it);
    }
    if (ec) {
      error =
          (arg / rel).lexically_normal().string() + ": cannot read the directory: " + ec.message();
      return false;
    }
    for (const auto& e : entries) {
      const std::string name = e.path().filename().string();
      const std::string child = rel.empty() ? name : rel + "/" + name;
      std::error_code ek;
      const bool link = e.is_symlink(ek);
      const bool directory = !link && e.is_directory(ek);
      if (Excluded(exclude, child, name)) {
        excluded = true;
        continue;
      }
      if (directory) {
        if (!Dir(e.path(), child)) return false;
      } else if (IsModelName(name)) {
        if (link) {
          // A link to a file is followed only when the file lies below the directory argument;
          // links to directories are never followed (no loops, no walk out of the folder).
          const fs::path target = fs::canonical(e.path(), ek);
          if (ek || !fs::is_regular_file(target, ek)) continue;
          if (!IsWithin(target, root)) {
            std::cerr << "axqc: note: " << (arg / child).lexically_normal().string()
                      << " is left out: a symbolic link out of " << arg.string() << "\n";
            continue;
          }
          found.push_back(child);
        } else if (e.is_regular_file(ek)) {
          found.push_back(child);
        }
      }
    }
    return true;
  }
};

}  // namespace

bool ExpandModelPaths(CheckArgs& args) {
  std::vector<std::string> models;
  std::set<std::string> seen;  // lexically normal paths
  const auto add = [&](const std::string& shown) {
    if (seen.insert(fs::path(shown).lexically_normal().string()).second) models.push_back(shown);
  };
  for (const auto& m : args.models) {
    std::error_code ec;
    if (!fs::is_directory(m, ec)) {
      add(m);
      continue;
    }
    Walk w{args.exclude, fs::path(m), fs::canonical(m, ec), {}, false, {}};
    if (ec) {
      std::cerr << "axqc: " << m << ": " << ec.message() << "\n";
      return false;
    }
    if (!w.Dir(m, "")) {
      std::cerr << "axqc: " << w.error << "\n";
      return false;
    }
    if (w.found.empty()) {
      std::cerr << "axqc: " << m << ": no *.onnx file below this directory";
      if (w.excluded) std::cerr << " that --exclude leaves in";
      std::cerr << "\n";
      return false;
    }
    std::sort(w.found.begin(), w.found.end());
    for (const auto& rel : w.found) add((fs::path(m) / rel).lexically_normal().string());
  }
  args.models = std::move(models);
  return true;
}

}  // namespace axqc::cli
