#!/usr/bin/env bash
# Runtime check of tests/data/real_exports in onnxruntime (scripts/ort_run.mjs): every model loads
# and runs on random inputs with finite outputs of the expected shape, and models that differ only
# in how the exporter wrote the same network (qparams as buffers or Python numbers, opset 13 or 17)
# compute bit-identical outputs. This is the oracle `axqc fix` rewrites are held to.
# Needs node and onnxruntime-node: tests/ort/ort_env.sh finds it or installs it into a cache
# outside the repository; exit 77 (skipped) only when node/npm are missing or npm is unreachable.
set -euo pipefail
exec </dev/null  # nothing here reads stdin (a terminal would stop a background run)
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
data=$root/tests/data/real_exports
# shellcheck source=tests/ort/ort_env.sh
source "$root/tests/ort/ort_env.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

run() {  # run MODEL -> $tmp/MODEL.json; returns ort_run's status
  node "$root/scripts/ort_run.mjs" --seed 7 --dim batch=2 "$data/$1.onnx" >"$tmp/$1.json" 2>"$tmp/$1.err"
}

echo "onnxruntime-node: $AXQC_ORT_NODE"
fail=0
for f in "$data"/*.onnx; do
  m=$(basename "$f" .onnx)
  if ! run "$m"; then
    echo "FAIL $m: $(cat "$tmp/$m.err")"; fail=1; continue
  fi
  # One output 'y', batch 1 (CNN: [1, 6]; transformer: [1, 16, 16]) or 2 (dynamic-batch ViT),
  # every value a finite number.
  if ! node -e '
    const j = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    const y = j.outputs.y;
    const ok = Object.keys(j.outputs).length === 1 && y.type === "float32" &&
        y.data.length === y.dims.reduce((p, d) => p * d, 1) && y.data.length > 0 &&
        y.data.every((v) => typeof v === "number" && Number.isFinite(v)) &&
        [6, 16].includes(y.dims[y.dims.length - 1]);
    if (!ok) { console.error(JSON.stringify(y.dims)); process.exit(1); }' "$tmp/$m.json"; then
    echo "FAIL $m: unexpected output"; fail=1; continue
  fi
  echo "ok   $m"
done

same() {  # same A B...: identical outputs
  local a=$1; shift
  for b in "$@"; do
    if node -e '
      const fs = require("fs");
      const o = (p) => JSON.stringify(JSON.parse(fs.readFileSync(p, "utf8")).outputs);
      process.exit(o(process.argv[1]) === o(process.argv[2]) ? 0 : 1);' "$tmp/$a.json" "$tmp/$b.json"; then
      echo "ok   $b computes exactly what $a computes"
    else
      echo "FAIL $b and $a differ"; fail=1
    fi
  done
}
same manual_cnn_buffers_op17 manual_cnn_buffers_op13 manual_cnn_numbers_op13 manual_cnn_numbers_op17
same vit_manual_buffers_op17 vit_manual_numbers_op17 vit_manual_numbers_op13
# A deliberate defect changes the numbers (per-tensor or U8 weights quantize differently).
if node -e '
  const fs = require("fs");
  const o = (p) => JSON.stringify(JSON.parse(fs.readFileSync(p, "utf8")).outputs);
  process.exit(o(process.argv[1]) === o(process.argv[2]) ? 1 : 0);' \
  "$tmp/spec_cnn_op17.json" "$tmp/defect_weight_per_tensor_op17.json"; then
  echo "ok   defect_weight_per_tensor_op17 differs from spec_cnn_op17"
else
  echo "FAIL defect_weight_per_tensor_op17 computes exactly what spec_cnn_op17 computes"; fail=1
fi
exit $fail
