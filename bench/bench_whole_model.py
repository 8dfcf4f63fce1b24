"""Whole-model peer rows: glmbench against llama.cpp's own llama-bench (its defaults) on the same GGUF
files, same threads, at depths 0 / 4K / 16K, with the machine's triad bandwidth and peaks measured
in the same run.

    bash bench/build_llama_bench.sh                     # once: ../llama-build/bin/llama-bench, llama-quantize
    python bench/bench_whole_model.py --out bench/results/whole_model_<date>.md

The files (made once into --work-dir, reused by later runs; a file whose name says its layer count):
  glm-Q4_K_M    GLM-4.7-Flash-shaped, made the way users get one: an HF folder of seeded random bf16
                safetensors (the built-in config, `--glm-layers` of its 47 blocks, no MTP block) ->
                llama.cpp's convert_hf_to_gguf.py --outtype bf16 (llama-cpp-python's sdist; the
                vocabulary written as a plain token list, tests/llama_cpp_convert.py) -> llama-quantize
                Q4_K_M. The HF folder and the bf16 GGUF are deleted once the Q4_K_M file exists.
  qwen3-Q4_K_M  Qwen3-32B-shaped, the same way (`--qwen-layers` of its 64 blocks).
  glm-q4_0      GLM-4.7-Flash-shaped, every matrix q4_0 with seeded random blocks
                (bench/bench_llamacpp.py's writer; attn_k_b/attn_v_b bf16).
Reduced layer counts are reduced on both sides (same file), so the ratios are fair; the output head
is a larger share of a reduced model's decode bytes than of the full model's (the table says how
much). Defaults (GLM 2 blocks, Qwen 2, n_gen 32) keep a run under ~20 min on a quiet 2-core machine:
llama-bench's untimed prefill to 16K on the two GLM files (MLA) is most of it. Make the files once first (`--make-only`, ~5 min;
they are kept in --work-dir and reused).

For each file and depth, alternating which side goes first: llama-bench with its defaults and only
-m FILE -t THREADS -p N_PROMPT -n N_GEN -d DEPTH -o json (5 repetitions, n_batch 2048, n_ubatch 512,
f16 KV cache, flash attention auto, CPU_REPACK on: recorded from its JSON; --kv q8_0 adds -ctk/-ctv q8_0), then glmbench's
measure() on the same file (its stored types, the same KV cache, same threads, pp N_PROMPT and tg N_GEN at
the depth: synthetic cache fill, as measure does). The triad (glmbench.measure.machine
.probe_bandwidth, best of 3) is read right before each side; measure_ceilings() (triad, read-only,
FMA peak) at the start and end. --rounds N runs each (file, depth) N times, the order flipping every
round, and adds each point's median ratio over the rounds (a shared host's bandwidth can move for minutes
between one side's run and the other's: one round's ratio then says more about the host than the code).

Decode floor: bytes one decode step reads at least (from the file's own tensor bytes: every matrix,
the routed experts' k-of-E share, one embedding row; plus the KV cache at the depth,
cfg.kv_bytes_per_token(f16) x depth) over the triad measured right before glmbench's point.
With --paired-probe [read|triad] glmbench's measure() also runs one probe pass after each timed decode
step (measure(bandwidth_probe=...), not counted in the step times) and the table adds the floor at that
paired bandwidth (the median over the repeats of each repeat's mean probe): on a VM whose bandwidth
moves by tens of percent within minutes, the best-of-3 read before the point can catch a quiet moment
the steps never see. "read" (the default of the flag): a read-only pass, the access pattern of a decode
step. "triad" costs the steps something: a triad pass leaves its written lines dirty in the last-level
cache, written back while the next step streams its weights (on the Zen 3 VM of 2026-12-03
glm-Q4_K_M's decode at depth 0 ran 75.9 tok/s with triad probes against 82.9 in the runs without), so
the ratio column of a triad-probed run is glmbench slowed by its probes.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))  # tests/llama_cpp_convert.py: finds llama.cpp's converter

from tqdm.auto import tqdm  # noqa: E402

import glmbench  # noqa: E402
from glmbench.measure import cpu as mcpu  # noqa: E402
from glmbench.measure.machine import cpu_name, measure_ceilings, probe_bandwidth  # noqa: E402
from glmbench.models import checkpoint, configs, gguf_file  # noqa: E402
from glmbench.models.model import stored_format  # noqa: E402
from glmbench.core.attention import KVBSplit  # noqa: E402
from glmbench.results.records import atomic_write_text  # noqa: E402

FILES = ("glm-Q4_K_M", "qwen3-Q4_K_M", "glm-q4_0")
MODEL = {"glm": "glm-4.7-flash", "qwen3": "qwen3-32b"}


class BenchError(RuntimeError):
    """A setup problem stated in one line (missing tool, bad argument)."""


# ---- making the files ---------------------------------------------------------------------------
def hf_folder(model: str, layers: int, folder: str, seed: int = 0) -> str:
    """An HF folder (config.json + one safetensors shard per layer + index) of `model`'s built-in
    config cut to `layers` blocks, seeded random bf16 weights: matrices N(0, 1/K), norms 1, the
    router's score bias 0."""
    import torch
    from safetensors.torch import save_file
    cfg = configs.load(model)
    hf = {k: v for k, v in cfg.hf.items() if not k.startswith("_")}
    hf.update(num_hidden_layers=layers, torch_dtype="bfloat16")
    if "num_nextn_predict_layers" in hf:
        hf["num_nextn_predict_layers"] = 0  # no MTP block: llama-bench never runs it
    small = configs.load(dict(hf))
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(hf, f, indent=1)
    shards: dict = {}
    for name, shape in small.tensor_shapes().items():
        part = name.split(".")[2] if name.startswith("model.layers.") else name  # a shard per layer / per other tensor
        shards.setdefault(part, []).append((name, tuple(shape)))
    gen = torch.Generator().manual_seed(seed)
    index = {}
    for i, (part, items) in enumerate(shards.items()):
        fn = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
        ts = {}
        for name, shape in items:
            if len(shape) == 3:  # glmbench stacks routed experts [E, F, D]; HF files hold one matrix each
                for e in range(shape[0]):
                    ts[name.replace(".experts.", f".experts.{e}.") + ".weight"] = _randn(shape[1:], gen)
            elif len(shape) == 1:
                t = torch.zeros(shape) if name.endswith("e_score_correction_bias") else torch.ones(shape)
                ts[name] = t.to(torch.bfloat16)
            else:
                ts[name] = _randn(shape, gen)
        for name in ts:
            index[name] = fn
        save_file(ts, os.path.join(folder, fn), metadata={"format": "pt"})
        del ts
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {}, "weight_map": index}, f)
    return folder


def _randn(shape, gen):
    """N(0, 1/K) bf16 of `shape` (K = its last dimension), drawn 64 MiB of float32 at a time."""
    import torch
    t = torch.empty(shape, dtype=torch.bfloat16)
    rows = max(1, (16 << 20) // shape[-1])
    for i in range(0, shape[0], rows):
        c = t[i:i + rows]
        c.copy_(torch.randn(c.shape, generator=gen) / float(np.sqrt(shape[-1])))
    return t


def convert(folder: str, out: str) -> str:
    """llama.cpp's converter as users run it (tests/llama_cpp_convert.py: the vocabulary is a plain
    token list, a random model having no published tokenizer), with the BPE merges and bos/eos ids
    llama.cpp's loader requires."""
    import llama_cpp_convert as lc
    try:
        return lc.convert(folder, out, "bf16", timeout=None, loadable=True)
    except RuntimeError as e:
        raise BenchError(f"convert_hf_to_gguf.py on {folder}: {e}") from None


def quantize(lq: str, src: str, dst: str, kind: str, threads: int) -> str:
    tmp = dst + ".part"
    r = subprocess.run([lq, src, tmp, kind, str(threads)], capture_output=True, text=True)
    if r.returncode:
        raise BenchError(f"{lq} {src} {kind} failed ({r.returncode}): {(r.stderr or r.stdout)[-3000:]}")
    os.replace(tmp, dst)
    return r.stderr


def make_file(key: str, work: str, lq: str, layers: int, threads: int, seed: int, note) -> str:
    """The GGUF for `key` in `work` (made if absent; a finished file is only ever renamed into place)."""
    fam, kind = key.split("-", 1)
    path = os.path.join(work, f"glmbench-whole-{MODEL[fam]}-{kind}-L{layers}.gguf")
    if os.path.exists(path):
        return path
    if kind == "q4_0":
        from bench_llamacpp import write_gguf
        write_gguf(path + ".part", layers, "q4_0", seed)
        os.replace(path + ".part", path)
        return path
    folder = os.path.join(work, f"hf-{MODEL[fam]}-L{layers}")
    bf16 = os.path.join(work, f"glmbench-whole-{MODEL[fam]}-bf16-L{layers}.gguf")
    try:
        note(f"{key}: HF folder")
        hf_folder(MODEL[fam], layers, folder, seed)
        note(f"{key}: convert_hf_to_gguf.py")
        convert(folder, bf16)
        shutil.rmtree(folder)
        note(f"{key}: llama-quantize {kind}")
        log = quantize(lq, bf16, path, kind, threads)
        with open(path + ".quantize.log", "w") as f:
            f.write(log)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        if os.path.exists(bf16):
            os.remove(bf16)
    return path


# ---- what the file holds and what glmbench does with it ----------------------------------------
def file_types(path: str) -> dict:
    """{ggml type: (tensors, bytes)} of the file."""
    out: dict = {}
    for t in gguf_file.read(path).tensors.values():
        n, b = out.get(t.type_name, (0, 0))
        out[t.type_name] = (n + 1, b + t.n_bytes)
    return out


def stored_check(path: str) -> tuple[list[str], list[str]]:
    """(matrices run as stored, matrices not) as 'TYPE: n tensors' lines: each HF tensor glmbench
    builds from the file, its ggml type(s) in the file against the format it holds in memory."""
    g = gguf_file.read(path)
    with warnings.catch_warnings():  # its warning names the dequantized types: the check below finds each tensor
        warnings.simplefilter("ignore")
        cfg, sd = checkpoint.state_dict(path)
    where = gguf_file.expected_gguf_tensors(g, cfg.tensor_shapes(), cfg.n_layers)
    ok: dict = {}
    bad: dict = {}
    for hf, names in where.items():
        types = sorted({g.tensors[n].type_name for n in names})
        held = stored_format(sd[hf])
        if len(getattr(sd[hf], "shape", ())) < 2:
            continue
        key = "+".join(types)
        if isinstance(sd[hf], KVBSplit):   # attn_k_b / attn_v_b kept split, each as stored
            what = f"{key} (attn_k_b/attn_v_b split{'; q5_0 as its exact q8_0' if 'Q5_0' in types else ''})"
            ok[what] = ok.get(what, 0) + 1
            continue
        if len(names) == 1 and held.lower() == types[0].lower():
            ok[key] = ok.get(key, 0) + 1
        else:
            what = f"{key} -> {held}" + (" (attn_k_b/attn_v_b joined into kv_b_proj)" if len(names) == 2 else "")
            bad[what] = bad.get(what, 0) + 1
    return [f"{k}: {n}" for k, n in sorted(ok.items())], [f"{k}: {n}" for k, n in sorted(bad.items())]


def decode_bytes(path: str, depth: int, kv: str = "f16") -> tuple[int, int, int]:
    """(bytes a decode step reads at least, of which the output head, of which KV) at `depth`:
    the file's tensor bytes with the routed experts at k of E, one row of the embedding (whole when
    it is also the head), the KV cache at `depth` tokens."""
    g = gguf_file.read(path)
    cfg = configs.load_gguf(path)
    k, E = cfg.n_experts_per_tok, cfg.n_routed_experts
    total = head = 0
    for t in g.tensors.values():
        b = t.n_bytes
        if t.name == "token_embd.weight":
            b = b // t.shape[0] + (b if "output.weight" not in g.tensors else 0)
        elif "_exps." in t.name:
            b = b * k // E
        if t.name == "output.weight":
            head = b
        total += b
    kvb = cfg.kv_bytes_per_token(kv) * int(depth)
    return total + kvb, head, kvb


def decode_attention_flops(path: str, depth: int) -> float:
    """FLOPs of one decode step's attention over `depth` cached tokens, all layers: per layer and
    cached token 2 x heads x (key width + value width) multiply-adds counted as 2 - MLA absorbed
    (the form glmbench and llama.cpp run): one 576-wide latent key and 512-wide value for every
    query head; GQA: head_dim + v_head_dim per query head."""
    cfg = configs.load_gguf(path)
    if cfg.attention == "mla":
        per = cfg.n_heads * (cfg.kv_lora_rank + cfg.qk_rope_head_dim + cfg.kv_lora_rank)
    else:
        per = cfg.n_heads * (cfg.head_dim + cfg.v_head_dim)
    return 2.0 * per * int(depth) * cfg.n_layers


def roofline_floor(nbytes: float, kvb: float, attn_flops: float, bw_gbs: float, fma_gflops: float) -> float:
    """tok/s at the machine's ceilings: the weights at the bandwidth, the attention at the larger of
    its cache bytes at the bandwidth and its arithmetic at the f32 FMA peak (the attention of a deep
    MLA cache is compute-bound on a CPU: 20 query heads share each 576-wide latent row)."""
    t = (nbytes - kvb) / (bw_gbs * 1e9) + max(kvb / (bw_gbs * 1e9), attn_flops / (fma_gflops * 1e9))
    return 1.0 / t


# ---- the two sides --------------------------------------------------------------------------------
def llama_bench_cmd(lb, path, threads, n_prompt, n_gen, depth, kv="f16"):
    """llama-bench's command: its defaults, plus -ctk/-ctv when the cache is not its default f16 (both
    sides then run the same cache format)."""
    ckv = ["-ctk", kv, "-ctv", kv] if kv != "f16" else []
    return [lb, "-m", path, "-t", str(threads), "-p", str(n_prompt), "-n", str(n_gen), "-d", str(depth), *ckv,
            "-o", "json", "-oe", "md"]


def run_llama_bench(cmd) -> dict:
    """{"pp": record, "tg": record, "md": its own Markdown rows} from llama-bench's -o json (stdout)
    and -oe md (stderr)."""
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        raise BenchError(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr[-2000:]}")
    try:
        recs = json.loads(r.stdout)
    except json.JSONDecodeError as e:
        raise BenchError(f"{' '.join(cmd)}: output is not JSON ({e}): {r.stdout[:300]!r}") from None
    out = {}
    for x in recs:
        out["pp" if x.get("n_gen", 0) == 0 else "tg"] = x
    if set(out) != {"pp", "tg"}:
        raise BenchError(f"{' '.join(cmd)}: expected a pp and a tg record, got {len(recs)} record(s)")
    out["md"] = [ln for ln in r.stderr.splitlines() if ln.startswith("|")]
    return out


def run_glmbench(path, threads, n_prompt, n_gen, depth, repeats, kv, probe=None) -> dict:
    """measure()'s pp and tg records of the file; probe: None, "read" or "triad" (measure's bandwidth_probe)."""
    recs = mcpu.measure(path, depths=(depth,), n_prompt=n_prompt, n_gen=n_gen, threads=threads, repeats=repeats,
                        kv=kv, tests=("pp", "tg"), progress=False, bandwidth_probe=probe or False)
    return {r["test"]: r for r in recs}


def paired_floor(nbytes: float, tg: dict):
    """(paired triad GB/s, x floor at it) of a tg record measured with bandwidth_probe=True, else None:
    the floor tok/s at the bandwidth measured beside the steps over the record's tok/s."""
    bw = tg.get("bandwidth_gbs")
    if bw is None or not bw > 0 or not tg.get("avg_ts", 0) > 0:
        return None
    return float(bw), float(bw * 1e9 / nbytes / tg["avg_ts"])


def triad() -> float:
    return max(probe_bandwidth()[0] for _ in range(3))


# ---- the run ------------------------------------------------------------------------------------------
def _cpu_simd() -> str:
    """The widest x86 vector extension this CPU reports (the features build_llama_bench.sh switches on)."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = set(next((ln for ln in f if ln.startswith("flags")), "").split())
    except OSError:
        return "native"
    return "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "native"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--llama-build", default=os.path.join(os.path.dirname(ROOT), "llama-build"),
                    help="llama.cpp build with bin/llama-bench and bin/llama-quantize (bench/build_llama_bench.sh)")
    ap.add_argument("--files", default=",".join(FILES), help=f"comma-separated subset of {', '.join(FILES)}")
    ap.add_argument("--glm-layers", type=int, default=2, help="GLM-4.7-Flash blocks in its files (>= 2: block 0 is dense)")
    ap.add_argument("--qwen-layers", type=int, default=2,
                    help="Qwen3-32B blocks in its file (each block adds ~1-2 min to a run on a quiet 2-core machine)")
    ap.add_argument("--depths", default="0,4096,16384")
    ap.add_argument("--n-prompt", type=int, default=512)
    ap.add_argument("--n-gen", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=5, help="glmbench's timed repeats (llama-bench's default is 5)")
    ap.add_argument("--rounds", type=int, default=1,
                    help="rounds per (file, depth), each side once per round, the order flipping every round (ABBA "
                         "...): on a host whose bandwidth moves for minutes at a time a ratio is read per round and "
                         "the table adds each point's median ratio over the rounds")
    ap.add_argument("--kv", default="f16",
                    help="KV-cache format of both sides (f16: llama-bench's default; else llama-bench gets -ctk KV -ctv KV)")
    ap.add_argument("--work-dir", default=os.path.join(tempfile.gettempdir(), "glmbench-whole-model"),
                    help="where the GGUF files are made and kept")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--make-only", action="store_true",
                    help="make the files (and say what glmbench runs as stored), measure nothing")
    ap.add_argument("--smoke", action="store_true", help="mark the result as a smoke run (shared machine, short settings)")
    ap.add_argument("--paired-probe", nargs="?", const="read", default=None, choices=("read", "triad"),
                    help="glmbench's decode steps each followed by one probe pass (measure(bandwidth_probe=...)): "
                         "read-only (the default) or a triad; the table adds the floor at that paired bandwidth "
                         "(a triad slows glmbench's steps: see the module docstring)")
    ap.add_argument("--out", default=None, help="write the Markdown table here (atomically)")
    a = ap.parse_args(argv)
    try:
        return run(a, argv)
    except BenchError as e:
        print(f"bench_whole_model: {e}", file=sys.stderr)
        return 2


def run(a, argv) -> int:
    lb = os.path.join(a.llama_build, "bin", "llama-bench")
    lq = os.path.join(a.llama_build, "bin", "llama-quantize")
    for p in (lb, lq):
        if not os.access(p, os.X_OK):
            raise BenchError(f"no {os.path.basename(p)} at {p}: run bench/build_llama_bench.sh or give --llama-build")
    files = [f.strip() for f in a.files.split(",") if f.strip()]
    bad = [f for f in files if f not in FILES]
    if bad or not files:
        raise BenchError(f"--files: unknown {', '.join(bad) or '(none given)'}; choose from {', '.join(FILES)}")
    try:
        depths = [int(d) for d in a.depths.split(",")]
    except ValueError:
        raise BenchError(f"--depths must be comma-separated integers, got {a.depths!r}") from None
    if any(d < 0 for d in depths):
        raise BenchError(f"--depths must be >= 0, got {a.depths!r}")
    if a.glm_layers < 2 or a.qwen_layers < 1:
        raise BenchError("--glm-layers must be >= 2 (block 0 is dense) and --qwen-layers >= 1")
    for name in ("n_prompt", "n_gen", "threads", "repeats", "rounds"):
        if getattr(a, name) < 1:
            raise BenchError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(a, name)}")
    os.makedirs(a.work_dir, exist_ok=True)
    glmbench.set_num_threads(a.threads)
    t_start = time.perf_counter()
    uptime_start = _uptime()

    bar = tqdm(total=len(files) * (1 + 2 * len(depths) * a.rounds) + 2, desc="whole model", unit="step")
    note = (lambda s: bar.set_postfix_str(s, refresh=True))
    note("ceilings")
    ceil0 = measure_ceilings()
    bar.update(1)
    made = {}
    for key in files:
        layers = a.glm_layers if key.startswith("glm") else a.qwen_layers
        t0 = time.perf_counter()
        path = make_file(key, a.work_dir, lq, layers, a.threads, a.seed, lambda s: note(s))
        note(f"{key}: checking what runs as stored")
        made[key] = dict(path=path, layers=layers, make_s=time.perf_counter() - t0, types=file_types(path),
                         stored=stored_check(path), size=os.path.getsize(path))
        bar.update(1)
    if a.make_only:
        bar.close()
        for key, m in made.items():
            print(f"{key}: {m['path']} ({m['size'] / 1e9:.2f} GB, {m['make_s']:.0f} s); as stored: "
                  f"{'; '.join(m['stored'][0])}; not as stored: {'; '.join(m['stored'][1]) or 'none'}")
        return 0

    rows = []
    i = 0
    for key in files:
        path = made[key]["path"]
        for d in depths:
            cmd = llama_bench_cmd(lb, path, a.threads, a.n_prompt, a.n_gen, d, a.kv)
            for r in range(a.rounds):
                res = {}
                for side in (("llama-bench", "glmbench") if i % 2 == 0 else ("glmbench", "llama-bench")):
                    note(f"{key} d={d}{f' round {r + 1}' if a.rounds > 1 else ''}: {side}")
                    bw = triad()
                    t0 = time.perf_counter()
                    if side == "llama-bench":
                        res[side] = run_llama_bench(cmd)
                    else:
                        res[side] = run_glmbench(path, a.threads, a.n_prompt, a.n_gen, d, a.repeats, a.kv, a.paired_probe)
                    res[side + " triad"] = bw
                    res[side + " s"] = time.perf_counter() - t0
                    bar.update(1)
                i += 1
                rows.append((key, d, cmd, res, r))
    note("ceilings")
    ceil1 = measure_ceilings(quick=True)
    bar.update(1)
    bar.close()
    text = render(a, argv, made, rows, ceil0, ceil1, uptime_start, _uptime(), time.perf_counter() - t_start)
    print(text)
    if a.out:
        atomic_write_text(a.out, text)
    return 0


def _uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return "(uptime unavailable)"


def _warmups(rows) -> str:
    """The range of glmbench's warm-up runs over its points (measure's `warmup_runs`), e.g. '2-3'."""
    n = [r[3]["glmbench"][t].get("warmup_runs") for r in rows for t in ("pp", "tg")]
    n = [x for x in n if x is not None]
    if not n:
        return "?"
    return str(min(n)) if min(n) == max(n) else f"{min(n)}-{max(n)}"


def render(a, argv, made, rows, ceil0, ceil1, up0, up1, wall) -> str:
    first = rows[0][3]["llama-bench"]["pp"] if rows else {}
    rnd = a.rounds > 1
    lab = (lambda key, r: f"{key} (round {r + 1})" if rnd else key)
    lb_version = f"build {first.get('build_commit', '?')} ({first.get('build_number', '?')})"
    defaults = ", ".join(f"{k} {first.get(k)}" for k in ("n_batch", "n_ubatch", "type_k", "type_v", "flash_attn",
                                                          "repack", "n_threads", "poll", "split_mode") if k in first)
    reps = len(first.get("samples_ts", []))
    g0 = rows[0][3]["glmbench"]["tg"] if rows else {}
    args = " ".join(sys.argv[1:] if argv is None else argv)
    L = [f"# glmbench vs llama.cpp's llama-bench, whole model on the same GGUF files ({datetime.date.today().isoformat()})",
         ""]
    if a.smoke:
        L += ["**Smoke run** on a shared machine (other jobs running; short settings): the numbers show the script "
              "works, not the speeds. The full measurement is the command below on a quiet machine.", ""]
    L += [f"- machine: {cpu_name()}, {os.cpu_count()} CPUs, {platform.platform()}",
          f"- load: at start `{up0}`; at end `{up1}`",
          f"- ceilings (glmbench.measure.machine.measure_ceilings, {a.threads} threads), start: triad "
          f"{ceil0['bandwidth_gbs']:.1f} GB/s, read {ceil0['bandwidth_read_gbs']:.1f} GB/s, f32 FMA peak "
          f"{ceil0['fma_gflops']:.0f} GFLOP/s; end: triad {ceil1['bandwidth_gbs']:.1f} GB/s, read "
          f"{ceil1['bandwidth_read_gbs']:.1f} GB/s, FMA {ceil1['fma_gflops']:.0f} GFLOP/s",
          f"- llama-bench: llama.cpp {lb_version} as vendored by llama-cpp-python 0.3.36, built by "
          f"bench/build_llama_bench.sh ({_cpu_simd()} build for this CPU, AMX off); run with its defaults: only "
          f"`-m FILE -t {a.threads} -p {a.n_prompt} -n {a.n_gen} -d DEPTH"
          f"{'' if a.kv == 'f16' else f' -ctk {a.kv} -ctv {a.kv}'} -o json -oe md` (output formats "
          f"only{'' if a.kv == 'f16' else ', and the KV-cache format glmbench runs'}), one process per (file, depth); "
          f"from its JSON: {defaults}; {reps} repetitions (its default -r 5) after its warm-up. Its CPU_REPACK "
          "buffer holds the types ggml has a repacked layout for on this CPU (ggml-cpu/repack.cpp of that build, "
          "x86: q4_0, q4_K, iq4_nl, mxfp4 with AVX2, q2_K with AVX-512); q5_K, q6_K, q8_0, iq4_xs, bf16 run from the "
          "plain buffer",
          f"- glmbench: glmbench.measure.cpu.measure(FILE, depths=(DEPTH,), n_prompt={a.n_prompt}, n_gen={a.n_gen}, "
          f"threads={a.threads}, repeats={a.repeats}, kv={a.kv!r}, tests=('pp', 'tg')): weights as stored in the file, "
          f"KV cache {a.kv}, MLA strategy {g0.get('mla_strategy', '?') or 'n/a (no MLA layer)'}, warm-up runs {_warmups(rows)} (at least 1, "
          f"until two agree within 10%), attention arithmetic "
          f"{g0.get('attn_arithmetic', '?')}, cache filled to the depth synthetically (llama-bench prefills it)",
          "- order: the two sides alternate which goes first at each (file, depth)"
          + (f" and round ({a.rounds} rounds per point)" if a.rounds > 1 else "")
          + "; triad read right before each side (best of 3 probe_bandwidth passes)",
          "- tok/s: llama-bench avg_ts; glmbench avg_ts (mean of its repeats). Ratio = glmbench / llama-bench "
          "(> 1: glmbench faster)",
          "- floor: decode bytes per token (the file's matrices with routed experts at k of E, one embedding row, "
          f"the output head, the {a.kv} KV cache at the depth) / the triad read right before glmbench's point; "
          "'x floor' = floor tok/s / glmbench tok/s (1.00 = at the bandwidth floor); 'llama-bench x floor': the same "
          "bytes over the triad read right before llama-bench's run, over its tok/s (both sides near 1: both at the "
          "bandwidth, and no kernel can pass the other by much there)"
          + (f"; 'paired': the same bytes over the {'read-only' if a.paired_probe == 'read' else 'triad'} bandwidth "
             f"measured after each of glmbench's timed decode steps (measure(bandwidth_probe={a.paired_probe!r}): one "
             "pass per step, each repeat's mean, their median; probe time not in the steps)" if a.paired_probe else ""),
          "- roofline: the same bytes at that triad, except that the attention over the cache takes the larger of its "
          "bytes at the triad and its arithmetic (2 x heads x (key + value width) per cached token and layer, MLA "
          "absorbed) at the f32 FMA peak measured at the start; 'x roofline' = roofline tok/s / glmbench tok/s. Where "
          "the attention is compute-bound (a deep MLA cache: ~356M multiply-adds per GLM-4.7-Flash layer at 16K), the "
          "bandwidth floor is out of reach by arithmetic alone",
          f"- wall time of this run: {wall / 60:.1f} min",
          f"- command: python bench/bench_whole_model.py {args}", ""]
    L += ["## Files", ""]
    for key, m in made.items():
        fam = key.split("-")[0]
        types = ", ".join(f"{t} {n} ({b / 1e6:.0f} MB)" for t, (n, b) in sorted(m["types"].items(), key=lambda kv: -kv[1][1]))
        ok, bad = m["stored"]
        L += [f"- **{key}**: {MODEL[fam]}-shaped, {m['layers']} layers, {m['size'] / 1e9:.2f} GB "
              f"({os.path.basename(m['path'])}; made in {m['make_s']:.0f} s or reused)",
              f"  - tensor types: {types}",
              f"  - glmbench runs as stored: {'; '.join(ok) or 'none'}",
              f"  - not as stored: {'; '.join(bad) or 'none (every matrix runs in its file type)'}"]
    L += ["", "## Results", "",
          "| file | depth | llama-bench pp tok/s | glmbench pp tok/s | pp ratio | llama-bench tg tok/s | "
          "glmbench tg tok/s | tg ratio | decode MB/token (head, KV) | triad GB/s | floor tok/s | glmbench x floor | "
          "llama-bench x floor (its triad) | roofline tok/s | glmbench x roofline |" + (f" paired {a.paired_probe} GB/s | x floor (paired) |" if a.paired_probe else ""),
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|" + ("---|---|" if a.paired_probe else "")]
    for key, d, cmd, res, r in rows:
        lbp, lbt = res["llama-bench"]["pp"], res["llama-bench"]["tg"]
        gp, gt = res["glmbench"]["pp"], res["glmbench"]["tg"]
        nbytes, head, kvb = decode_bytes(made[key]["path"], d, a.kv)
        bw = res["glmbench triad"]
        floor = bw * 1e9 / nbytes
        roof = roofline_floor(nbytes, kvb, decode_attention_flops(made[key]["path"], d), bw, ceil0["fma_gflops"])
        flag = "" if gp.get("stable", True) and gt.get("stable", True) else " (unstable)"
        L.append(f"| {lab(key, r)} | {d} | {lbp['avg_ts']:.1f} ± {lbp['stddev_ts']:.1f} | {gp['avg_ts']:.1f} ± {gp['stddev_ts']:.1f} "
                 f"| {gp['avg_ts'] / lbp['avg_ts']:.2f}x | {lbt['avg_ts']:.2f} ± {lbt['stddev_ts']:.2f} | "
                 f"{gt['avg_ts']:.2f} ± {gt['stddev_ts']:.2f}{flag} | {gt['avg_ts'] / lbt['avg_ts']:.2f}x | "
                 f"{nbytes / 1e6:.0f} ({head / 1e6:.0f}, {kvb / 1e6:.0f}) | {bw:.1f} | {floor:.2f} | "
                 f"{floor / gt['avg_ts']:.2f} | {res['llama-bench triad'] * 1e9 / nbytes / lbt['avg_ts']:.2f} | "
                 f"{roof:.2f} | {roof / gt['avg_ts']:.2f} |"
                 + ((" {:.1f} | {:.2f} |".format(*pf) if (pf := paired_floor(nbytes, gt)) else " – | – |")
                    if a.paired_probe else ""))
    if rnd:
        L += ["", f"Median over the {a.rounds} rounds of each point's ratio (glmbench / llama-bench; each round's two sides "
              "ran back to back, the order flipping every round), with the rounds' range:", "",
              "| file | depth | pp ratio, median (range) | tg ratio, median (range) |", "|---|---|---|---|"]
        for key, d in dict.fromkeys((key, d) for key, d, *_ in rows):
            rr = [res for k2, d2, _, res, _ in rows if (k2, d2) == (key, d)]
            cells = []
            for t in ("pp", "tg"):
                q = sorted(x["glmbench"][t]["avg_ts"] / x["llama-bench"][t]["avg_ts"] for x in rr)
                cells.append(f"{statistics.median(q):.2f}x ({q[0]:.2f}-{q[-1]:.2f}x)")
            L.append(f"| {key} | {d} | {cells[0]} | {cells[1]} |")
    why = [f"{lab(key, r)} d={d} {t}: {res['glmbench'][t].get('unstable_reason')}" for key, d, cmd, res, r in rows
           for t in ("pp", "tg") if not res["glmbench"][t].get("stable", True)]
    if why:
        L += ["", "glmbench points its own stability check marked unstable (glmbench.measure.protocol.stability):", ""]
        L += [f"- {w}" for w in why]
    L += ["", "glmbench's decode step by part (tg record: median ms per step; the head is the final norm + output "
          "matrix):", "", "| file | depth | embed ms | layers ms (dense, moe: per layer) | head ms | head MB | head GB/s |",
          "|---|---|---|---|---|---|---|"]
    for key, d, cmd, res, r in rows:
        gt = res["glmbench"]["tg"]
        _, head, _ = decode_bytes(made[key]["path"], d, a.kv)
        per = ", ".join(f"{k} {gt[f'layer_ms_{k}']:.2f}" for k in ("dense", "moe") if f"layer_ms_{k}" in gt)
        L.append(f"| {lab(key, r)} | {d} | {gt['embed_ms']:.2f} | {per} | {gt['head_ms']:.2f} | {head / 1e6:.0f} | "
                 f"{head / gt['head_ms'] / 1e6:.1f} |")
    L += ["", "Seconds per side (llama-bench includes its depth prefill and model load; glmbench its model build):", "",
          "| file | depth | llama-bench s | glmbench s | llama-bench command |", "|---|---|---|---|---|"]
    for key, d, cmd, res, r in rows:
        L.append(f"| {lab(key, r)} | {d} | {res['llama-bench s']:.0f} | {res['glmbench s']:.0f} | `{' '.join(cmd)}` |")
    L += ["", "llama-bench's own table (-oe md), as printed:", ""]
    for j, (key, d, cmd, res, r) in enumerate(rows):
        md = res["llama-bench"]["md"]
        L += md if j == 0 else md[2:]
    return "\n".join(L) + "\n"


if __name__ == "__main__":
    sys.exit(main())
