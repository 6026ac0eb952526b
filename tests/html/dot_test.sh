#!/usr/bin/env bash
# `axqc check --format dot` of a failing real export is valid DOT: Graphviz's dot lays it out, and
# the SVG has the offending weight DequantizeLinear outlined and the Q/DQ edges labelled.
#   tests/html/dot_test.sh AXQC_BINARY SOURCE_DIR
set -euo pipefail
axqc=$1
src=$2
command -v dot >/dev/null || { echo "skipped: Graphviz's dot is not installed"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rc=0
"$axqc" check --no-config --format dot -o "$work/model.dot" \
  "$src/tests/data/real_exports/defect_weight_u8_op17.onnx" || rc=$?
[ "$rc" = 1 ] || { echo "FAIL: exit code $rc, want 1 (non_conformant)"; exit 1; }
head -c 2 "$work/model.dot" | grep -q '//' || { echo "FAIL: no header comment"; exit 1; }
dot -Tsvg "$work/model.dot" -o "$work/model.svg" || { echo "FAIL: dot cannot read the output"; exit 1; }
grep -q 'id="node&#45;/conv_wq/DequantizeLinear" class="node unit&#45;qdq offending"' "$work/model.svg" ||
  { echo "FAIL: the weight DequantizeLinear is not outlined"; exit 1; }
grep -q 'U8 per&#45;channel' "$work/model.svg" ||
  { echo "FAIL: no Q/DQ edge label with the weight's U8 parameters"; exit 1; }
# One model per page.
if "$axqc" check --no-config --format dot "$src/tests/data/real_exports/spec_cnn_op17.onnx" \
  "$src/tests/data/real_exports/defect_weight_u8_op17.onnx" >/dev/null 2>&1; then
  echo "FAIL: --format dot with two models must be refused"; exit 1
fi
echo "ok: DOT output lays out with dot; offending node and Q/DQ labels present"
