#!/usr/bin/env bash
# Regenerates the screenshots of docs/report-html.md (docs/images/*.png) with the browser test:
# the HTML report of failing real exports and the dashboard pages of a release axqc-server, in
# Debian's headless Chromium.
#   scripts/screenshots.sh [BUILD_DIR]   (default build/release; build axqc and axqc-server first)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build/release}
AXQC_SCREENSHOTS="$root/docs/images" python3 "$root/tests/html/browser_test.py" "$build"
ls -l "$root/docs/images"/*.png
