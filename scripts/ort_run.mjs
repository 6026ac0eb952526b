#!/usr/bin/env node
// Runs an ONNX model in onnxruntime (CPU) on deterministic random inputs and prints the inputs'
// shapes and every output as JSON: the runtime oracle for comparing a model with a rewritten copy
// of it (same --seed gives the same inputs; floats are printed exactly, as the shortest decimal
// that reads back to the same float64 value of the float32 output; NaN/Infinity as strings).
//
// onnxruntime-node is not a dependency of the project. The tests (tests/ort/ort_env.sh) install it
// themselves into a cache outside the repository; by hand, install it once outside the repository:
//   mkdir -p ~/ortnode && cd ~/ortnode && npm init -y && npm install onnxruntime-node --ignore-scripts
// (--ignore-scripts skips the optional CUDA download; the package ships the CPU binding and
// libonnxruntime.so for linux-x64.) Then point this script at it:
//   node scripts/ort_run.mjs --ort ~/ortnode/node_modules/onnxruntime-node MODEL.onnx
//   AXQC_ORT_NODE=~/ortnode/node_modules/onnxruntime-node node scripts/ort_run.mjs MODEL.onnx
//
// Options: --seed N (default 1), --dim NAME=VALUE for symbolic dimensions (default 1 each),
// --inputs (also print the input values), --ort PATH (module directory). Exit status: 0 on success,
// 2 usage error, 3 onnxruntime-node not found, 4 the model did not load or run.
import { createRequire } from 'node:module';
import path from 'node:path';

function usage(msg) {
  if (msg) process.stderr.write(`ort_run: ${msg}\n`);
  process.stderr.write(
      'usage: ort_run.mjs [--ort DIR] [--seed N] [--dim NAME=VALUE ...] [--inputs] MODEL.onnx\n');
  process.exit(2);
}

const args = process.argv.slice(2);
let ortDir = process.env.AXQC_ORT_NODE || '';
let seed = 1;
let printInputs = false;
const dims = {};
let model = '';
for (let i = 0; i < args.length; ++i) {
  const a = args[i];
  if (a === '--ort') ortDir = args[++i] ?? usage('--ort needs a directory');
  else if (a === '--seed') seed = Number(args[++i] ?? usage('--seed needs a number'));
  else if (a === '--inputs') printInputs = true;
  else if (a === '--dim') {
    const m = /^([^=]+)=(\d+)$/.exec(args[++i] ?? '');
    if (!m) usage('--dim needs NAME=VALUE');
    dims[m[1]] = Number(m[2]);
  } else if (a === '-h' || a === '--help') usage('');
  else if (a.startsWith('-')) usage(`unknown option ${a}`);
  else if (model) usage('one model only');
  else model = a;
}
if (!model) usage('no model given');
if (!Number.isInteger(seed)) usage('--seed must be an integer');

let ort;
try {
  const req = createRequire(import.meta.url);
  ort = req(ortDir ? path.resolve(ortDir) : 'onnxruntime-node');
} catch (e) {
  process.stderr.write(`ort_run: onnxruntime-node not found (${e.message.split('\n')[0]}); ` +
                       'install it with `npm install onnxruntime-node --ignore-scripts` and pass ' +
                       '--ort DIR/node_modules/onnxruntime-node or set AXQC_ORT_NODE\n');
  process.exit(3);
}

// mulberry32: a small deterministic PRNG; Box-Muller turns it into N(0, 1).
function rng(s) {
  let a = s >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const uniform = rng(seed);
const normal = () => {
  const u = Math.max(uniform(), 1e-12);
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * uniform());
};

const kTyped = {
  float32: Float32Array, float64: Float64Array, int8: Int8Array, uint8: Uint8Array,
  int16: Int16Array, uint16: Uint16Array, int32: Int32Array, int64: BigInt64Array,
  uint32: Uint32Array, uint64: BigUint64Array, bool: Uint8Array,
};

function randomTensor(meta) {
  const shape = meta.shape.map((d) => (typeof d === 'number' && d >= 0 ? d : (dims[d] ?? 1)));
  const n = shape.reduce((p, d) => p * d, 1);
  const T = kTyped[meta.type];
  if (!T) throw new Error(`input '${meta.name}': unsupported type ${meta.type}`);
  const data = new T(n);
  for (let i = 0; i < n; ++i) {
    if (meta.type === 'float32' || meta.type === 'float64') data[i] = normal();
    else if (meta.type === 'bool') data[i] = uniform() < 0.5 ? 0 : 1;
    else if (T === BigInt64Array || T === BigUint64Array) data[i] = BigInt(Math.floor(uniform() * 8));
    else data[i] = Math.floor(uniform() * 8);
  }
  return new ort.Tensor(meta.type, data, shape);
}

const num = (v) => (typeof v === 'bigint' ? v.toString()
                    : Number.isFinite(v) ? v : String(v));  // NaN, Infinity, -Infinity
const dump = (t) => ({type: t.type, dims: Array.from(t.dims), data: Array.from(t.data, num)});

try {
  const session = await ort.InferenceSession.create(model, {executionProviders: ['cpu'],
                                                           graphOptimizationLevel: 'disabled'});
  const feeds = {};
  for (const meta of session.inputMetadata) feeds[meta.name] = randomTensor(meta);
  const results = await session.run(feeds);
  const out = {
    model: path.basename(model),
    onnxruntime: ort.env.versions?.common ?? '',
    seed,
    inputs: Object.fromEntries(Object.entries(feeds).map(([k, t]) => [
      k, printInputs ? dump(t) : {type: t.type, dims: Array.from(t.dims)}])),
    outputs: Object.fromEntries(session.outputNames.map((k) => [k, dump(results[k])])),
  };
  process.stdout.write(JSON.stringify(out) + '\n');
} catch (e) {
  process.stderr.write(`ort_run: ${model}: ${e.message}\n`);
  process.exit(4);
}
