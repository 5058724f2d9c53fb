// The real llama.cpp as a test oracle: loads GGUF files with the CPU build that node-llama-cpp
// ships and prints, per load, the buffer sizes llama.cpp logs (model per buffer type, KV with
// the K/V split, compute per backend, output) and, when asked, the measured prefill and decode
// speed. Test-only: the Check suite `llama_oracle` and `make bench-cpu` run it.
//
//   node tests/llama/oracle.mjs JOBS.json       one JSON object per job on stdout
//
// A job: {"file", "n_ctx", "n_batch", "flash_attn", "type_k", "type_v", "use_mmap",
//         "swa_full", "threads", "bench": {"pp", "tg", "reps"}}
// The folder holding node_modules comes from RIGFIT_LLAMA_DIR (default build/llama). Without
// the package this exits 2 with a message: the suite fails, it never skips.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";

const dir = path.resolve(process.env.RIGFIT_LLAMA_DIR || "build/llama");
let nlc;
try {
  const req = createRequire(path.join(dir, "package.json"));
  nlc = await import(pathToFileURL(req.resolve("node-llama-cpp")).href);
} catch (e) {
  console.error(`oracle: node-llama-cpp is not installed under ${dir} (make deps): ${e.message}`);
  process.exit(2);
}
const info = JSON.parse(readFileSync(path.join(dir, "node_modules/node-llama-cpp/package.json")));
const cppInfo = JSON.parse(
  readFileSync(path.join(dir, "node_modules/node-llama-cpp/llama/llama.cpp.info.json")));

const jobs = JSON.parse(readFileSync(process.argv[2], "utf8"));
let log = "";
const llama = await nlc.getLlama({
  gpu: false,
  build: "never",
  usePrebuiltBinaries: true,
  skipDownload: true,
  progressLogs: false,
  logLevel: nlc.LlamaLogLevel.debug,
  logger: (_level, msg) => {
    log += msg.endsWith("\n") ? msg : msg + "\n";
    if (process.env.RIGFIT_ORACLE_LOG) process.stderr.write(msg.endsWith("\n") ? msg : msg + "\n");
  },
});
const MiB = 1024 * 1024;
const num = (s) => Math.round(parseFloat(s) * 100) / 100;

// Lines llama.cpp writes (src/llama-model.cpp, llama-kv-cache.cpp, llama-context.cpp).
function parse(text) {
  const r = { model: {}, kv: [], compute: {}, output: {}, repack: [], cpu_variant: null,
              ctx: {} };
  for (const line of text.split("\n")) {
    let m;
    if ((m = line.match(/^\S+:\s+(\S+) model buffer size =\s+([\d.]+) MiB/)))
      r.model[m[1]] = (r.model[m[1]] || 0) + num(m[2]);
    else if ((m = line.match(/size =\s+([\d.]+) MiB \(\s*(\d+) cells,\s*(\d+) layers,\s*(\d+)\/(\d+) seqs\), K \((\w+)\):\s+([\d.]+) MiB, V \((\w+)\):\s+([\d.]+) MiB/)))
      r.kv.push({ mib: num(m[1]), cells: +m[2], layers: +m[3], k_type: m[6], k_mib: num(m[7]),
                  v_type: m[8], v_mib: num(m[9]) });
    else if ((m = line.match(/^\S+:\s+(\S+) compute buffer size =\s+([\d.]+) MiB/)))
      r.compute[m[1]] = num(m[2]);
    else if ((m = line.match(/^\S+:\s+(\S+)\s+output buffer size =\s+([\d.]+) MiB/)))
      r.output[m[1]] = num(m[2]);
    else if ((m = line.match(/^llama_context: (n_ctx|n_batch|n_ubatch|n_seq_max)\s+= (\d+)/)))
      r.ctx[m[1]] = +m[2];
    else if ((m = line.match(/^llama_context: flash_attn\s+= (\w+)/)))
      r.ctx.flash_attn = m[1] === "enabled";
    else if ((m = line.match(/repack: repack tensor (\S+) with (\S+)/)))
      r.repack.push(m[1]);
    else if ((m = line.match(/load_backend: loaded CPU backend from .*libggml-cpu-(\w+)\.so/)))
      r.cpu_variant = m[1];
  }
  return r;
}

// llama.cpp's log reaches JavaScript asynchronously: wait for the line that closes a step,
// then until the log stops growing.
async function settle(re) {
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  for (let i = 0; i < 500 && !re.test(log); i++) await sleep(5);
  for (let n = -1; n !== log.length;) { n = log.length; await sleep(20); }
}

const models = new Map();
let cpuVariant = parse(log).cpu_variant; // logged while the backends load
for (const job of jobs) {
  const out = { file: job.file, node_llama_cpp: info.version, llama_cpp: cppInfo.tag };
  try {
    const mkey = `${job.file}|${job.use_mmap !== false}`;
    let entry = models.get(mkey);
    if (!entry) {
      for (const [k, v] of models) { await v.model.dispose(); models.delete(k); }
      log = "";
      const model = await llama.loadModel({
        modelPath: job.file, gpuLayers: 0, useMmap: job.use_mmap !== false,
        ignoreMemorySafetyChecks: true,
      });
      await settle(/model buffer size =/);
      entry = { model, load: parse(log), size: model.size };
      cpuVariant = cpuVariant || entry.load.cpu_variant;
      models.set(mkey, entry);
    }
    log = "";
    const ctx = await entry.model.createContext({
      contextSize: job.n_ctx, batchSize: job.n_batch, sequences: 1,
      flashAttention: !!job.flash_attn, threads: job.threads || 0,
      experimentalKvCacheKeyType: job.type_k || "F16",
      experimentalKvCacheValueType: job.type_v || "F16",
      swaFullCache: !!job.swa_full, ignoreMemorySafetyChecks: true,
      performanceTracking: !!job.bench,
    });
    await settle(/compute buffer size =/);
    const c = parse(log);
    Object.assign(out, { model: entry.load.model, model_size_bytes: entry.size,
                         repack: entry.load.repack, kv: c.kv, compute: c.compute,
                         output: c.output, n_ctx: ctx.contextSize, context: c.ctx,
                         cpu_variant: cpuVariant });
    if (job.bench) out.speed = await bench(ctx, job.bench);
    await ctx.dispose();
  } catch (e) {
    out.error = String(e && e.message ? e.message : e);
  }
  console.log(JSON.stringify(out));
}
for (const [, v] of models) await v.model.dispose();
await llama.dispose();

// llama-bench's pp/tg: a prompt of pp tokens in one evaluation, then tg single tokens.
async function bench(ctx, b) {
  const seq = ctx.getSequence();
  const vocab = seq.model.tokens;
  const toks = (n, o) => Array.from({ length: n }, (_, i) => 300 + ((i * 7 + o) % 500));
  const res = { pp: [], tg: [] };
  for (let r = 0; r < (b.reps || 1); r++) {
    await seq.clearHistory();
    let t0 = process.hrtime.bigint();
    await seq.evaluateWithoutGeneratingNewTokens(toks(b.pp, r));
    res.pp.push(b.pp / (Number(process.hrtime.bigint() - t0) / 1e9));
    t0 = process.hrtime.bigint();
    for (let i = 0; i < b.tg; i++)
      await seq.evaluateWithoutGeneratingNewTokens(toks(1, i + 13));
    res.tg.push(b.tg / (Number(process.hrtime.bigint() - t0) / 1e9));
  }
  void vocab;
  const med = (a) => a.slice().sort((x, y) => x - y)[Math.floor(a.length / 2)];
  // The best of the repetitions too: on a shared host the others' load only slows a run down.
  return { pp_tokens_per_s: med(res.pp), tg_tokens_per_s: med(res.tg),
           pp_best: Math.max(...res.pp), tg_best: Math.max(...res.tg), pp: b.pp, tg: b.tg,
           reps: res.pp.length };
}
void MiB;
