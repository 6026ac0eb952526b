#!/usr/bin/env python3
"""The shape of the code base, for architecture reviews (docs/contributing.md).

    scripts/arch_report.py [--top N] [REPO]

Prints, for the C++ sources of the top-level folders (core, isolate, server, client, python,
proto, tools, bench, tests):

* include arrows between top-level folders: for each pair A -> B, how many #include lines in A
  name a file that lives in B (the lower layers must never point at the upper ones:
  core <- proto/wire <- isolate <- server, client);
* the longest source files (lines);
* the longest function bodies (lines from a definition's opening line at column 0 to its closing
  brace at column 0, the layout clang-format gives definitions in this project).

Run it on two checkouts (or `git worktree add` a past commit) to compare before and after.
"""
import argparse
import os
import re
import sys
from collections import Counter

FOLDERS = ["core", "proto", "isolate", "server", "client", "python", "tools", "bench", "tests"]
SOURCE = (".cc", ".h", ".cpp", ".hpp")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
DEFINITION = re.compile(r"^[A-Za-z_].*\)\s*(const\s*)?(noexcept\s*)?(override\s*)?(->\s*[^{]+)?\{\s*$")


def sources(root):
    for top in FOLDERS:
        base = os.path.join(root, top)
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = [d for d in dirnames if not d.startswith(".") and d != "build"]
            for f in filenames:
                if f.endswith(SOURCE):
                    path = os.path.join(dirpath, f)
                    yield top, os.path.relpath(path, root)


def index_by_name(root, files):
    """Maps every suffix of each file's path (a/b/c.h, b/c.h, c.h) to its top-level folder."""
    owners = {}
    for top, rel in files:
        parts = rel.split(os.sep)
        for i in range(len(parts)):
            owners.setdefault("/".join(parts[i:]), set()).add(top)
    return owners


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("repo", nargs="?", default=os.path.join(os.path.dirname(__file__), ".."))
    ap.add_argument("--top", type=int, default=10)
    args = ap.parse_args()
    root = os.path.abspath(args.repo)
    files = list(sources(root))
    owners = index_by_name(root, files)

    arrows = Counter()
    lengths = []
    functions = []
    for top, rel in files:
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as fh:
            lines = fh.read().split("\n")
        lengths.append((len(lines), rel))
        for line in lines:
            m = INCLUDE.match(line)
            if not m:
                continue
            target = m.group(1)
            # The include's own folder first (a file beside it), then any folder that has it.
            local = os.path.join(os.path.dirname(rel), target)
            if os.path.exists(os.path.join(root, local)):
                continue
            found = owners.get(target, set())
            if len(found) == 1:
                dest = next(iter(found))
                if dest != top:
                    arrows[(top, dest)] += 1
            elif top not in found and found:
                for dest in sorted(found):
                    arrows[(top, dest)] += 1
        if rel.endswith((".cc", ".cpp")):
            start = None
            for i, line in enumerate(lines):
                if start is None and DEFINITION.match(line) and not line.startswith(("namespace", "struct", "class", "enum", "extern")):
                    start = i
                elif start is not None and line.startswith("}"):
                    functions.append((i - start + 1, rel, start + 1, lines[start].strip()[:90]))
                    start = None

    print("include arrows between top-level folders (A -> B: #include lines in A naming a file of B)")
    for (a, b), n in sorted(arrows.items()):
        print(f"  {a} -> {b}: {n}")
    print(f"\nlongest files (lines), top {args.top}")
    for n, rel in sorted(lengths, reverse=True)[: args.top]:
        print(f"  {n:6d}  {rel}")
    print(f"\nlongest functions (lines), top {args.top}")
    for n, rel, line, head in sorted(functions, reverse=True)[: args.top]:
        print(f"  {n:6d}  {rel}:{line}  {head}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
