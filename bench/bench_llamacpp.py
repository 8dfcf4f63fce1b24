"""Peer benchmark: glmbench's Model against llama.cpp (through llama-cpp-python) on the same GGUF file.

    pip install -e '.[bench]'      # llama-cpp-python, built from source (CMAKE_ARGS="-DGGML_NATIVE=ON")
    python bench/bench_llamacpp.py --layers 4 --fmt q4_0 --depths 0,4096,16384 --threads 2 \
        --out bench/results/llamacpp_<date>.md

The file is GLM-4.7-Flash-shaped (deepseek2 metadata as llama.cpp's converter writes it: MLA with
kv_b split into attn_k_b / attn_v_b, 64 routed experts top-4 with sigmoid scoring, 1 shared expert,
the first block dense, the real 154,880-token vocabulary), every matrix in `--fmt` (q4_0 or q8_0;
1-D tensors and the router f32, as llama.cpp's quantizer keeps them; attn_k_b/attn_v_b bf16, see
write_gguf), with seeded random block
bytes: uniform quants and a float16 scale sized so each row has ~unit-norm output. `--layers`
writes that many blocks (the full model has 47); both sides run the same file, so a reduced model
is reduced the same way on both.

For each depth d: llama.cpp prefills d random tokens (untimed), then pp = one batch of `--pp`
tokens (timed), then the batch is removed from the cache and tg = `--n-gen` single-token decodes
(each timed), as llama-bench's -d does. glmbench fills its cache to d synthetically (attention at
depth costs the same; the values do not matter for speed), then times prefill of `--pp` tokens
and `--n-gen` decodes. Both use `--threads` threads and compute the last token's logits. The
sides alternate within each repeat so load from other jobs hits them alike; the triad bandwidth
(glmbench.measure.machine.probe_bandwidth) is measured before every point and printed beside it.
Reported: median tok/s of the repeats, and the ratio glmbench / llama.cpp (> 1: glmbench faster).

`--write-only` writes the file and stops: bench/bench_llama_bench.sh runs llama.cpp's own
llama-bench (built by bench/build_llama_bench.sh, its default CPU_REPACK path) on it, which is the
stronger peer; this script's in-process path runs llama.cpp's plain kernels (see --extra-bufts).
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import gguf  # noqa: E402

import glmbench  # noqa: E402
from glmbench.measure.machine import cpu_name, probe_bandwidth  # noqa: E402
from glmbench.models import checkpoint, configs  # noqa: E402
from glmbench.results.records import atomic_write_text  # noqa: E402
from glmbench.vocab import to_bf16  # noqa: E402

from bench_gguf import add_glm_hparams  # noqa: E402  (bench/ is on sys.path when run as a script)

GT = gguf.GGMLQuantizationType
QTYPE = {"q4_0": GT.Q4_0, "q8_0": GT.Q8_0}


def _pad(n: int) -> int:
    return (n + 31) // 32 * 32


def write_gguf(path: str, n_layers: int, fmt: str, seed: int = 0) -> int:
    """GLM-4.7-Flash-shaped GGUF with `n_layers` blocks, matrices in `fmt` with random blocks.
    Streams tensor data to disk (nothing model-sized in memory). Returns the file size."""
    cfg = configs.load("glm-4.7-flash")
    L, H, V = n_layers, cfg.n_heads, cfg.vocab_size
    w = gguf.GGUFWriter(path, "deepseek2")
    w.add_name(f"GLM-4.7-Flash-shaped random {fmt} ({L} layers)")
    w.add_block_count(L)
    add_glm_hparams(w, cfg)
    w.add_file_type(2 if fmt == "q4_0" else 7)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list([f"tok{i:06d}" for i in range(V)])
    w.add_token_types([1] * V)
    w.add_token_merges([f"a{i} b{i}" for i in range(V // 2)])
    w.add_bos_token_id(0)
    w.add_eos_token_id(1)
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.DEEPSEEK2, L)
    shapes = {k: s for k, s in dict(cfg.tensor_shapes()).items() if not k.startswith("model.layers.") or int(k.split(".")[2]) < L}
    plan = []  # (gguf name, numpy shape, ggml type)
    Dn, Dv, R = cfg.qk_nope_head_dim, cfg.v_head_dim, cfg.kv_lora_rank
    for k, s in shapes.items():
        if k.endswith("e_score_correction_bias"):
            plan.append((k.split(".mlp.")[0].replace("model.layers.", "blk.") + ".exp_probs_b.bias", s, GT.F32))
            continue
        base, suf = (k[:-7], ".weight") if k.endswith(".weight") else (k, ".weight")
        g = names.get_name(base) + suf
        t = GT.F32 if len(s) < 2 or "ffn_gate_inp" in g else QTYPE[fmt]
        if t != GT.F32 and s[-1] % 32:
            t = GT.F16
        if k.endswith("kv_b_proj.weight"):  # llama.cpp's converter: attn_k_b [H, R, Dn], attn_v_b [H, Dv, R]
            # kept bf16: an AMX build of llama.cpp places f16 (and q4_0/q8_0) weights in its AMX
            # buffer at load but cannot run the permuted 3-D products these two feed, and no other
            # backend may read an AMX buffer, so with f16 here its scheduler aborts at context
            # creation (ggml-backend.cpp GGML_ASSERT(*cur_backend_id != -1), node
            # q_nope_absorbed-0). AMX refuses bf16 weights, which stay in the plain CPU buffer.
            t = GT.BF16
            plan.append((g.replace("attn_kv_b", "attn_k_b"), (H, R, Dn), t))
            plan.append((g.replace("attn_kv_b", "attn_v_b"), (H, Dv, R), t))
            continue
        plan.append((g, tuple(s), t))
    for g, s, t in plan:
        block, bb = gguf.GGML_QUANT_SIZES[t]
        n = int(np.prod(s)) // block * bb
        w.add_tensor_info(g, tuple(s[:-1]) + (s[-1] // block * bb,), np.dtype(np.uint8), n, raw_dtype=t)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    w.close()
    rng = np.random.default_rng(seed)
    with open(path, "r+b") as f:
        f.seek(_pad(os.path.getsize(path)))
        for g, s, t in plan:
            n_el = int(np.prod(s))
            K = s[-1]
            if t == GT.F32:
                if g.endswith("norm.weight"):
                    a = np.ones(n_el, np.float32)
                elif "exp_probs_b" in g:
                    a = np.zeros(n_el, np.float32)
                else:  # the router: small random scores
                    a = (rng.standard_normal(n_el, dtype=np.float32) / np.float32(np.sqrt(K)))
                buf = a.tobytes()
            elif t == GT.F16:
                buf = (rng.standard_normal(n_el, dtype=np.float32) / np.float32(np.sqrt(K))).astype(np.float16).tobytes()
            elif t == GT.BF16:
                buf = to_bf16(rng.standard_normal(n_el, dtype=np.float32) / np.float32(np.sqrt(K))).tobytes()
            else:
                block, bb = gguf.GGML_QUANT_SIZES[t]
                nblk = n_el // block
                # uniform quants (std 4.6 for q4_0 nibbles - 8, 73.6 for int8): d = 1 / (std sqrt(K))
                d = np.float16(1.0 / ((4.6 if t == GT.Q4_0 else 73.6) * np.sqrt(K)))
                if g == "token_embd.weight":
                    d = np.float16(1.0 / (4.6 if t == GT.Q4_0 else 73.6))
                step = 1 << 20  # blocks per chunk
                for b0 in range(0, nblk, step):
                    nb = min(step, nblk - b0)
                    q = rng.integers(0, 256, size=(nb, bb), dtype=np.uint8)
                    q[:, :2] = np.frombuffer(d.tobytes(), np.uint8)
                    if t == GT.Q8_0:
                        q[:, 2:][q[:, 2:] == 128] = 129  # -128 is outside ggml's q8_0 range [-127, 127]
                    f.write(q.tobytes())
                buf = b""
                pad = _pad(nblk * bb) - nblk * bb
                f.write(b"\0" * pad)
                continue
            f.write(buf)
            f.write(b"\0" * (_pad(len(buf)) - len(buf)))
    return os.path.getsize(path)


class LlamaCpp:
    """llama.cpp through llama-cpp-python's low-level C API."""

    def __init__(self, path: str, threads: int, n_ctx: int, n_batch: int, extra_bufts: bool = True):
        import llama_cpp as L
        self.L = L
        L.llama_backend_init()
        mp = L.llama_model_default_params()
        mp.n_gpu_layers = 0
        mp.use_extra_bufts = extra_bufts
        self.model = L.llama_model_load_from_file(path.encode(), mp)
        if not self.model:
            raise RuntimeError(f"llama.cpp could not load {path}")
        cp = L.llama_context_default_params()
        cp.n_ctx = n_ctx
        cp.n_batch = n_batch
        cp.n_ubatch = n_batch
        cp.n_threads = threads
        cp.n_threads_batch = threads
        self.ctx = L.llama_init_from_model(self.model, cp)
        if not self.ctx:
            raise RuntimeError("llama.cpp could not create a context")
        self.mem = L.llama_get_memory(self.ctx)
        self.n_batch = n_batch
        self.batch = L.llama_batch_init(n_batch, 0, 1)
        self.vocab = L.llama_vocab_n_tokens(L.llama_model_get_vocab(self.model))

    def system_info(self) -> str:
        return self.L.llama_print_system_info().decode()

    def _decode(self, tokens, pos0: int):
        b, n = self.batch, len(tokens)
        for i, t in enumerate(tokens):
            b.token[i] = int(t)
            b.pos[i] = pos0 + i
            b.n_seq_id[i] = 1
            b.seq_id[i][0] = 0
            b.logits[i] = 1 if i == n - 1 else 0
        b.n_tokens = n
        rc = self.L.llama_decode(self.ctx, b)
        if rc != 0:
            raise RuntimeError(f"llama_decode returned {rc}")
        self.L.llama_synchronize(self.ctx)

    def clear(self):
        self.L.llama_memory_clear(self.mem, True)

    def fill(self, tokens):
        self.clear()
        for i in range(0, len(tokens), self.n_batch):
            self._decode(tokens[i:i + self.n_batch], i)

    def truncate(self, n: int):
        self.L.llama_memory_seq_rm(self.mem, 0, n, -1)

    def pp(self, tokens, pos0: int) -> float:
        t0 = time.perf_counter()
        self._decode(tokens, pos0)
        return time.perf_counter() - t0

    def tg(self, token: int, pos: int) -> float:
        t0 = time.perf_counter()
        self._decode([token], pos)
        return time.perf_counter() - t0


def run(a) -> str:
    glmbench.set_num_threads(a.threads)
    path = a.gguf or os.path.join(a.dir, f"glmbench-peer-glm47flash-{a.fmt}-L{a.layers}.gguf")
    if not a.gguf or not os.path.exists(path):
        t0 = time.perf_counter()
        size = write_gguf(path, a.layers, a.fmt, a.seed)
        print(f"wrote {path}: {size / 1e9:.2f} GB in {time.perf_counter() - t0:.0f} s", flush=True)
    depths = [int(d) for d in a.depths.split(",")]
    n_ctx = max(depths) + a.pp + a.n_gen + 16
    rng = np.random.default_rng(a.seed + 1)
    lc = LlamaCpp(path, a.threads, n_ctx, a.pp, extra_bufts=a.extra_bufts)
    V = lc.vocab
    print("llama.cpp:", lc.system_info(), flush=True)
    t0 = time.perf_counter()
    model = checkpoint.load_model(path, kv=a.kv, max_context=n_ctx)
    print(f"glmbench Model loaded in {time.perf_counter() - t0:.0f} s ({model.weight_bytes / 1e9:.2f} GB of weights)",
          flush=True)
    rows = []
    from tqdm import tqdm
    bar = tqdm(total=len(depths) * a.repeats, desc="points x repeats", unit="rep")
    for d in depths:
        res = {"llama.cpp": {"pp": [], "tg": []}, "glmbench": {"pp": [], "tg": []}, "bw": []}
        prompt = rng.integers(2, V, size=d).tolist()
        lc.fill(prompt)  # the depth, untimed
        for r in range(a.repeats):
            res["bw"].append(probe_bandwidth()[0])
            batch = rng.integers(2, V, size=a.pp).tolist()
            gen = rng.integers(2, V, size=a.n_gen).tolist()
            for side in (("llama.cpp", "glmbench") if r % 2 == 0 else ("glmbench", "llama.cpp")):
                if side == "llama.cpp":
                    lc.truncate(d)
                    tp = lc.pp(batch, d)
                    lc.truncate(d)
                    lc.tg(gen[0], d)  # warm
                    tt = [lc.tg(t, d + 1 + i) for i, t in enumerate(gen[1:])]
                    lc.truncate(d)
                else:
                    model.fill_synthetic(d)
                    t1 = time.perf_counter()
                    lg = model.prefill(np.array(batch), logits="last")
                    tp = time.perf_counter() - t1
                    if not np.all(np.isfinite(lg)):
                        raise RuntimeError(f"glmbench logits not finite at depth {d}")
                    model.fill_synthetic(d)
                    model.decode(gen[0])
                    tt = []
                    for t in gen[1:]:
                        t1 = time.perf_counter()
                        model.decode(t)
                        tt.append(time.perf_counter() - t1)
                res[side]["pp"].append(a.pp / tp)
                res[side]["tg"].append(1.0 / statistics.median(tt))
            bar.update(1)
        med = {s: {k: statistics.median(v) for k, v in res[s].items()} for s in ("llama.cpp", "glmbench")}
        rows.append((d, med, statistics.median(res["bw"]), min(res["bw"]), max(res["bw"])))
    bar.close()
    lines = [f"# glmbench vs llama.cpp on the same GGUF ({datetime.date.today().isoformat()})", "",
             f"- machine: {cpu_name()}, {os.cpu_count()} CPUs, {platform.platform()}; threads: {a.threads} on both sides",
             f"- file: GLM-4.7-Flash-shaped, {a.layers} of 47 layers, {a.fmt} matrices, seeded random blocks "
             f"({os.path.getsize(path) / 1e9:.2f} GB); glmbench KV cache {a.kv}",
             f"- llama.cpp: llama-cpp-python {_llama_version()}, use_extra_bufts={a.extra_bufts} "
             f"(AMX / CPU_REPACK buffers {'on' if a.extra_bufts else 'off: see --extra-bufts'}); {lc.system_info().strip()}",
             f"- pp = one batch of {a.pp} tokens after `depth` tokens in the cache; tg = single-token decode "
             f"(median of {a.n_gen - 1}); median of {a.repeats} alternating repeats",
             f"- command: python bench/bench_llamacpp.py {' '.join(sys.argv[1:])}", "",
             "| depth | triad GB/s (min-max) | llama.cpp pp tok/s | glmbench pp tok/s | pp ratio | "
             "llama.cpp tg tok/s | glmbench tg tok/s | tg ratio |",
             "|---|---|---|---|---|---|---|---|"]
    for d, med, bw, lo, hi in rows:
        l, g = med["llama.cpp"], med["glmbench"]
        lines.append(f"| {d} | {bw:.1f} ({lo:.1f}-{hi:.1f}) | {l['pp']:.1f} | {g['pp']:.1f} | {g['pp'] / l['pp']:.2f}x | "
                     f"{l['tg']:.2f} | {g['tg']:.2f} | {g['tg'] / l['tg']:.2f}x |")
    return "\n".join(lines) + "\n"


def _llama_version() -> str:
    try:
        import llama_cpp
        return llama_cpp.__version__
    except Exception:  # noqa: BLE001
        return "?"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=4, help="blocks in the file (GLM-4.7-Flash has 47)")
    ap.add_argument("--fmt", choices=sorted(QTYPE), default="q4_0")
    ap.add_argument("--depths", default="0,4096,16384")
    ap.add_argument("--pp", type=int, default=512)
    ap.add_argument("--n-gen", type=int, default=9)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--kv", default="f16", help="glmbench KV-cache format (llama.cpp's default cache is f16)")
    ap.add_argument("--extra-bufts", action="store_true",
                    help="let llama.cpp use its extra buffer types (AMX, CPU_REPACK q4_0_8x8). Off by default: "
                         "llama-cpp-python's native build compiles llama.cpp's AMX kernels on this CPU, and they die "
                         "with SIGILL at the first tile load (this VM grants no AMX tile state); with f16 attn_k_b "
                         "its scheduler aborted even earlier (GGML_ASSERT(*cur_backend_id != -1)). Off, llama.cpp runs "
                         "its plain q4_0/q8_0 x q8_0 kernels; bench/bench_llama_bench.sh runs llama.cpp's own "
                         "llama-bench built with AMX off and its default CPU_REPACK path, the stronger peer")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dir", default=tempfile.gettempdir())
    ap.add_argument("--gguf", default=None, help="use (or write) this file")
    ap.add_argument("--out", default=None, help="also write the table (atomically) to this Markdown file")
    ap.add_argument("--write-only", action="store_true",
                    help="only write the GGUF (to --gguf, or the default path) and exit: for llama.cpp's own "
                         "llama-bench (bench/bench_llama_bench.sh)")
    a = ap.parse_args(argv)
    if a.write_only:
        path = a.gguf or os.path.join(a.dir, f"glmbench-peer-glm47flash-{a.fmt}-L{a.layers}.gguf")
        t0 = time.perf_counter()
        size = write_gguf(path, a.layers, a.fmt, a.seed)
        print(f"wrote {path}: {size / 1e9:.2f} GB in {time.perf_counter() - t0:.0f} s")
        return 0
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        print("bench_llamacpp: llama-cpp-python is not installed (pip install -e '.[bench]')", file=sys.stderr)
        return 2
    table = run(a)
    print(table)
    if a.out:
        atomic_write_text(a.out, table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
