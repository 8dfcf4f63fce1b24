"""Real timings of whole models on this machine's CPU (evidence="measured"). Definitions in docs/MEASURE.md.

    recs = measure("glm-4.7-flash", depths=(0, 4096), n_prompt=512, n_gen=16, weights="bf16", kv="bf16",
                   out="results/glm.json")

Tests (one record each, llama-bench field names where they overlap):
  tg   decode: n_gen tokens one at a time with n_depth tokens already cached (`tg@d`)
  pp   prefill: a chunk of n_prompt tokens on top of n_depth cached ones (`pp n @ d`); at depth 0
       the record also carries ttft_s, the time to first token for an n_prompt-token prompt
  mem  bytes held for weights and the KV cache (exact counts of the arrays / cache blocks), the
       peak workspace of the C kernels over one decode step and one n_prompt prefill at the
       depth (the core's ledger), next to the process's RSS

Full or sampled. A model whose weights and cache do not fit in this machine's memory is measured
by layer sampling: k distinct full-size layers of each kind (dense-FFN, MoE) are built and timed
(every layer of a kind that has k or fewer), each step's time is scaled to all layers:

    t_step = t_embed + t_head + sum over kinds of (layers of that kind) x (mean time of its sampled layers)

and the record says `sampled: true`, which layers were timed, and the spread between them.

Every tg/pp record carries its timed repeats as llama-bench does (`samples_ns`, `samples_ts`). With
`bandwidth_probe=True` the memory bandwidth (a triad, glmbench.bench.probe_bandwidth, ~10 ms; "read": a read-only
pass, machine.probe_read, which leaves no written lines for the next step to write back) is
measured right after every decode step of a timed repeat (after the prefill for pp), one pass, and
each repeat gets the mean of its probes, as its time is the sum of its steps (`bandwidth_gbs_samples`;
`bandwidth_gbs` is their median):
on a shared machine, whose bandwidth moves by tens of percent within seconds to minutes, a decode
time compared with a floor measured at another moment says more about the neighbours than about
the code (bench/bench_models.py pairs them). Probe time is not counted in the step times.
Stability: every tg/pp point also probes the DRAM read bandwidth (machine.probe_dram, best of 2
passes over a buffer several times the last-level cache; its own spread measured once per run,
machine.probe_noise) right before and right
after its timed repeats and adds up the process's CPU time and the wall time of its timed steps;
with the spread of its repeats these mark the record `stable: false` and say why in
`unstable_reason` when a neighbour took the machine meanwhile (protocol.stability, its thresholds;
`retries=n` times such a point again up to n times).
Decode and prefill at depth d fill the cache with synthetic entries (KVCache.fill_synthetic):
attention costs the same whatever the values; records say `kv_fill: "synthetic"`.
"""
from __future__ import annotations

import re
import time
from typing import Sequence

import numpy as np
from glmbench._progress import tqdm

from glmbench import vocab
from glmbench.measure import machine, protocol
from glmbench.measure.machine import available_bytes, cpu_name, probe_bandwidth, probe_read, rss_bytes  # noqa: F401
from glmbench.core import _core
from glmbench.core.ops import get_num_threads, reset_workspace_peak, set_num_threads, workspace_bytes
from glmbench.models import checkpoint, configs
from glmbench.results.records import routing_histogram  # noqa: F401  (measure's API)
from glmbench.models.model import STORED, Model, layer_kinds, stored_format

__all__ = ["measure", "attn_arithmetic", "gemm_arithmetic", "choose_layers", "layer_roles", "sample_layers", "scaled_seconds", "decode_bytes_per_token",
           "cpu_name", "rss_bytes"]

TESTS = vocab.MEASURED_TESTS
# The clocks of the stability check (tests replace them): process CPU time of every thread, and wall time.
_cpu_clock = time.process_time
_wall_clock = time.perf_counter


def _probe_gbs() -> float:
    """The stability check's bandwidth reading (DRAM read GB/s, best of 2 passes; tests replace it)."""
    return machine.probe_dram(2)


def _probe_noise() -> float:
    """The probe's own spread, five readings back to back when a run starts (tests replace it)."""
    return machine.probe_noise(5, 2)["spread"]

# The full model must leave this share of available memory free (activations, Python, the OS).
FIT_FRACTION = 0.7


# ---- what to build ------------------------------------------------------------------------
def choose_layers(cfg, weights: str, kv: str, capacity: int, available: int | None = None) -> str:
    """"full" when the whole model (weights + a cache of `capacity` tokens) fits in FIT_FRACTION of
    the available memory, else "sampled"."""
    need = cfg.weight_bytes(weights) + cfg.kv_bytes_per_token(kv) * int(capacity)
    avail = available_bytes() if available is None else int(available)
    return "full" if need <= FIT_FRACTION * avail else "sampled"


def cache_bytes(cfg, kv: str, capacity: int, layers=None) -> int:
    """The least memory the KV cache of `layers` (indices; None: all) takes holding `capacity` tokens: each
    caching layer's bytes per token times the tokens it keeps (a windowed layer at most its window)."""
    win = frozenset(cfg.windowed_layers)
    return sum(cfg.kv_layer_bytes(i, kv) * (min(capacity, cfg.sliding_window) if i in win else capacity)
               for i in (range(cfg.n_layers) if layers is None else layers))


def _check_cache_fits(cfg, kv, capacity, idx, deepest) -> None:
    """Refuse, before building anything, a cache the machine cannot hold even for the layers timed (a
    sampled model still caches every point's full depth): it ended in a MemoryError, or the OOM killer,
    while filling the cache."""
    need = cache_bytes(cfg, kv, capacity, idx)
    avail = available_bytes()
    if need > avail:
        n = cfg.n_layers if idx is None else len(idx)
        raise ValueError(f"{cfg.name}: a {kv} cache of {capacity:,} tokens (depth {deepest:,} plus one run's new "
                         f"tokens) on the {n} layer{'s' if n != 1 else ''} timed needs {need / 2**30:.1f} GiB, more than "
                         f"the {avail / 2**30:.1f} GiB this machine has available; measure shallower depths")


def layer_roles(cfg) -> list[str]:
    """Each layer's kind for sampling and scaling: layer_kinds' "dense" / "moe", and for a hybrid's
    linear layers (Gated DeltaNet, Mamba-2) the same with "+linear" (their token mixer costs
    differently from the attention layers' and does not grow with the depth); Nemotron-H's one-block
    layers by their block: "linear", "attention", "dense" (MLP) or "moe"."""
    lin = frozenset(cfg.linear_layers)
    if cfg.mixer_layers is not None:   # Nemotron-H: each layer one block, "linear", "attention", "dense" or "moe"
        return ["linear" if i in lin else "attention" if cfg.has_mixer(i) else k
                for i, k in enumerate(layer_kinds(cfg))]
    # windowed layers (their attention stops growing at the window) and Gemma 4's kv-shared layers (no k / v
    # projection, no cache write; a wider MLP in E2B) apart from the global, caching ones
    win = frozenset(cfg.windowed_layers)
    return [k + ("+linear" if i in lin else "") + ("+window" if i in win else "")
            + ("" if cfg.owns_kv(i) else "+shared") for i, k in enumerate(layer_kinds(cfg))]


def sample_layers(cfg, k: int) -> list[int]:
    """k layer indices of each kind (layer_roles), spread evenly over that kind's layers (all of them
    if <= k)."""
    kinds = layer_roles(cfg)
    out = []
    for kind in sorted(set(kinds)):
        idx = [i for i, t in enumerate(kinds) if t == kind]
        if len(idx) <= k:
            out += idx
        else:  # first, last and evenly between: early and late layers both get timed
            out += [idx[int(round(j * (len(idx) - 1) / (k - 1)))] for j in range(k)]
    return sorted(set(out))


def scaled_seconds(timing: dict, built_kinds: Sequence[str], layer_counts: dict) -> float:
    """One step's time for the whole model from a step of a sampled model: each kind's mean
    per-layer time times the number of layers of that kind, plus embedding and head."""
    t = timing["embed_s"] + timing["head_s"]
    per = {}
    for kind, s in zip(built_kinds, timing["layer_s"]):
        per.setdefault(kind, []).append(s)
    for kind, n in layer_counts.items():
        if n:
            if kind not in per:
                raise ValueError(f"no sampled layer of kind {kind!r} to scale {n} layers from")
            t += n * float(np.mean(per[kind]))
    return t


def decode_bytes_per_token(cfg, weights: str = vocab.DEFAULTS["measured_weights"], kv: str = vocab.DEFAULTS["kv"],
                           depth: int = 0) -> int:
    """Bytes one decode step must read at least: every weight it multiplies through (routed experts:
    only the n_experts_per_tok chosen ones; the embedding and Gemma 4's per-layer table: one row), the
    norms, and the KV cache at `depth` tokens (a windowed layer's: its last `sliding_window` tokens).
    The floor of decode time is this over the memory bandwidth."""
    fmt = vocab.weight_format(weights)
    total = 0
    for name, shape in cfg.tensor_shapes().items():
        b = vocab.tensor_nbytes(fmt, name, shape)
        if name in ("model.embed_tokens.weight", "model.embed_tokens_per_layer.weight"):
            whole = b
            b //= shape[0]  # one row looked up
            if cfg.tie_word_embeddings and name == "model.embed_tokens.weight":  # also the lm_head, read whole
                b += whole
        elif ".mlp.experts." in name:
            b = b * cfg.n_experts_per_tok // cfg.n_routed_experts
        total += b
    d = int(depth)
    kv_read = cfg.kv_bytes_per_token(kv, windowed=False) * d + \
        cfg.kv_bytes_per_token(kv, windowed=True) * min(d, cfg.sliding_window or d)
    # a hybrid's linear layers read and write each recurrent state once a step
    return total + kv_read + 2 * cfg.recurrent_state_bytes()


# ---- measuring ----------------------------------------------------------------------------
def _check_layers(layers, threads):
    if isinstance(layers, str) and layers.strip().isdigit():
        layers = int(layers)
    if isinstance(layers, (int, np.integer)) and not isinstance(layers, bool):
        if layers < 2:
            raise ValueError(f"`layers` as a number is k sampled layers of each kind and must be >= 2, got {layers}")
        layers = int(layers)
    elif layers not in ("auto", "full", "sampled"):
        raise ValueError(f"`layers` must be 'auto', 'full', 'sampled' or a number k >= 2, got {layers!r}")
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or threads < 1):
        raise ValueError(f"`threads` must be None or an integer >= 1, got {threads!r}")
    return layers


def measure(model, *, depths=(4096,), n_prompt: int = 512, n_gen: int = 16,
            weights: str | None = None, kv: str = vocab.DEFAULTS["kv"],
            mla_strategy: str = vocab.DEFAULTS["mla_strategy"], threads: int | None = None, repeats: int = 3,
            layers="auto", out=None, progress: bool = True, tests=TESTS, warmup: int = 1,
            seed: int = 0, bandwidth_probe: bool = False, routing_stats: bool = False,
            retries: int = 0) -> list[dict]:
    """Measure `model` (built-in name, config.json path, dict or ModelConfig) on this CPU with random
    seeded weights. One record per (test, depth) plus one "mem" record; see the module docstring.

    layers: "auto" (full if it fits in memory, else sampled with k=2), "full", "sampled" (k=2),
            or a number k >= 2 of layers of each kind to sample.
    out:    a .json path: finished points are stored as they complete and skipped on a rerun.
    warmup: untimed runs before the `repeats` timed ones, per point, at least; more (up to
            WARMUP_EXTRA) until two consecutive ones agree within WARMUP_TOL (record: `warmup_runs`).
    bandwidth_probe: measure the memory bandwidth after each timed decode step (see the module docstring):
            True or "triad" (a triad pass), "read" (a read-only pass: no written lines left for the next
            step to write back; the record says which in `bandwidth_kind`), False: none.
    weights: None -> the measured default (bf16) for random weights; a GGUF file or an HF
            safetensors folder (models/checkpoint.py) runs its real weights as stored.
    routing_stats: (real weights, MoE) each tg record gains `routing_counts` {layer: tokens per
            expert} over its timed decode steps (token ids drawn at random: no tokenizer), which
            `routing_histogram` sums for the cost model's Setup(expert_skew=...).
    retries: time a point marked unstable (`stable: false`) again, up to this many more times.
    """

    if not isinstance(bandwidth_probe, bool) and bandwidth_probe not in ("triad", "read"):
        raise ValueError(f"`bandwidth_probe` must be False, True, 'triad' or 'read', got {bandwidth_probe!r}")
    probe_kind = "read" if bandwidth_probe == "read" else "triad" if bandwidth_probe else None
    depths, tests = protocol.check_args(depths, n_prompt, n_gen, repeats, warmup, tests)
    layers = _check_layers(layers, threads)
    if isinstance(retries, bool) or not isinstance(retries, (int, np.integer)) or not 0 <= retries <= 10:
        raise ValueError(f"`retries` must be an integer in [0, 10], got {retries!r}")
    state = None
    if checkpoint.is_checkpoint(model):  # real weights: a GGUF file or an HF safetensors folder
        cfg, state = checkpoint.state_dict(model)
        if weights is None or weights == STORED:
            weights = STORED
    else:
        if routing_stats:
            raise ValueError("`routing_stats` needs real weights (a GGUF file or an HF safetensors folder): "
                             "random weights route uniformly by construction")
        cfg = configs.load(model)
        weights = weights or vocab.DEFAULTS["measured_weights"]
    if weights != STORED:
        weights = _canonical(weights, vocab.weight_format)
    kv = _canonical(kv, vocab.kv_format)
    if weights == STORED:
        pass
    elif weights not in vocab.EXECUTABLE_WEIGHT_FORMATS:
        vocab.weight_format(weights)  # named ValueError for an unknown format
        raise ValueError(f"weights {weights!r} have no CPU kernel; measured formats: "
                         f"{', '.join(vocab.EXECUTABLE_WEIGHT_FORMATS)}")
    vocab.kv_format(kv)
    threads_before = get_num_threads()
    if threads is not None:
        set_num_threads(int(threads))
    try:
        return _measure(cfg, depths, tests, layers, n_prompt, n_gen, weights, kv, mla_strategy, repeats, out,
                        progress, warmup, seed, probe_kind, state, bool(routing_stats), int(retries))
    finally:
        if threads is not None:
            set_num_threads(threads_before)


def _measure(cfg, depths, tests, layers, n_prompt, n_gen, weights, kv, mla_strategy, repeats, out, progress,
             warmup, seed, bandwidth_probe=False, state=None, routing_stats=False, retries=0):
    n_threads = get_num_threads()
    # every run refills the cache to its depth, so the deepest point plus one run's new tokens
    # ("mem" runs a decode step and an n_prompt prefill for the workspace peak)
    capacity = max(depths) + max(n_prompt if "pp" in tests or "mem" in tests else 0, n_gen if "tg" in tests else 0, 1)
    if layers == "auto" and state is not None:
        mode, k = "full", 0  # the checkpoint is memory-mapped: its real layers, all of them
    elif layers == "auto":
        mode = choose_layers(cfg, weights, kv, capacity)
        k = 2
    elif layers == "full":
        mode, k = "full", 0
        if state is None:   # random weights built in memory: refuse what cannot fit before building any
            need = cfg.weight_bytes(weights) + cfg.kv_bytes_per_token(kv) * int(capacity)
            avail = available_bytes()
            if need > avail:
                raise ValueError(f"layers='full': {cfg.name} at {weights} weights with a {kv} cache of {capacity:,} "
                                 f"tokens needs {need / 2**30:.1f} GiB, more than the {avail / 2**30:.1f} GiB this "
                                 "machine has available; use layers='auto' or 'sampled' (timed on a sample of its "
                                 "layers, docs/MEASURE.md)")
    else:
        mode, k = "sampled", (2 if layers == "sampled" else layers)
    idx = None if mode == "full" else sample_layers(cfg, k)
    if idx is not None and len(idx) == cfg.n_layers:
        mode, idx = "full", None  # k covers every layer: nothing is scaled
    _check_cache_fits(cfg, kv, capacity, idx, max(depths))

    kinds = layer_roles(cfg)
    counts = {kind: kinds.count(kind) for kind in sorted(set(kinds))}
    cpu = cpu_name()
    rec_weights = weights
    if weights == STORED:  # the record names the file's main type (the cost model's name for it)
        rec_weights = cfg.file_weights.weight_format if cfg.file_weights is not None else _main_stored(state)
    base = protocol.base_record(
        cfg, device=f"CPU: {cpu} ({n_threads} thread{'s' if n_threads != 1 else ''})", weights=rec_weights, kv=kv,
        mla_strategy=mla_strategy, runtime="glmbench", repeats=repeats,
        code=protocol.code_version(_core), settings={"seed": int(seed), "bandwidth_probe": "read" if bandwidth_probe == "read" else bool(bandwidth_probe)},
        cpu_info=cpu, n_threads=n_threads, warmup=int(warmup), attn_arithmetic=attn_arithmetic(kv),
        gemm_arithmetic=gemm_arithmetic(rec_weights),
        # how a layer runs (each point says it again from the built model, _layer_exec): one C call
        # (csrc/layer.c; sliding windows and Gemma's layers included) or op by op from Python
        layer_exec="c-layer",
        # pp: the rows the last layer's feed-forward part runs on (Model.prefill, logits="last"): the
        # last one when every layer is built (llama.cpp's inp_out_ids), all in a sampled model
        prefill_last_layer="last row" if mode == "full" else "all rows",
        layers_mode=mode, sampled=mode == "sampled",
        layers_timed=",".join(map(str, idx if idx is not None else range(cfg.n_layers))),
        model_size=_model_bytes(cfg, weights, state), model_n_params=cfg.total_params(),
        **({"weights_source": "checkpoint", "stored_weights": weights == STORED} if state is not None else {}),
        # what was assumed for a value the model file does not state (models/gguf_file.py, e.g. the router)
        **({"model_assumed": "; ".join(cfg.hf["gguf_assumed"])} if (cfg.hf or {}).get("gguf_assumed") else {}))

    points = protocol.plan(base, depths, tests, n_prompt, n_gen, workspace_n_prompt=int(n_prompt))
    store = protocol.store_for(out)
    todo = protocol.todo(points, store)
    if not todo:
        return protocol.run(points, store, None)
    # Building the model (seconds to a minute for a big one) has its own bar, of layers; the bar of
    # runs starts once the first point can be timed, so its rate and ETA are the runs' alone. Its
    # total is the runs each point takes at the least (_planned_runs); what is decided on the fly (a
    # warm-up run more while the times still differ, a retry of an unstable point) grows it then.
    build = _build_bar(progress, len(idx) if idx else cfg.n_layers, cfg.name)
    if build is not None:
        build.set_postfix_str("embeddings and output head first", refresh=True)
    bar = None
    # a model file's weights are the user's input: what they do wrong is an error naming the file
    src = cfg.file_weights.path if state is not None and cfg.file_weights is not None else None
    try:
        try:
            m = Model(cfg, state, weights=weights, kv=kv, max_context=capacity, seed=seed,
                      mla_strategy=mla_strategy, layers=idx,
                      progress=None if build is None else (lambda i, n: _built(build, i)))
        except ValueError as e:   # ("`state_dict` lacks 'model.norm.weight'": the file's)
            if src is None or src in str(e):
                raise
            raise ValueError(f"{src}: {e}") from None
        except KeyboardInterrupt:
            raise protocol.Interrupted(0) from None
        try:
            if build is not None:
                build.set_postfix_str("checking one step", refresh=True)
            built_kinds = [kinds[l.index] for l in m.layers]
            # Validate before timing: one step must give finite logits, or the numbers mean nothing.
            try:
                check = m.decode(0)
            except ValueError as e:   # (the kernels refuse a NaN / inf activation)
                if src is None or not _NON_FINITE.search(str(e)):
                    raise
                check = np.array([np.nan])
            if not np.all(np.isfinite(check)):
                if src is not None:
                    raise ValueError(f"{src}: one decode step on its weights gave non-finite values (weights holding "
                                     "NaN or inf, or overflowing float32); not timing it")
                raise RuntimeError(f"{cfg.name}: the validation step gave non-finite logits; not timing it")
            m.reset()
            rng = np.random.default_rng(seed)
            if build is not None:
                build.set_postfix_str("probing the memory bandwidth", refresh=True)
            noise = _probe_noise() if any(p["test"] != "mem" for p in todo) else None
        except KeyboardInterrupt:
            raise protocol.Interrupted(0) from None
        if build is not None:
            build.set_postfix_str("ready", refresh=False)
            build.close()
            build = None
        bar = _bar(progress, sum(_planned_runs(p, warmup, repeats) for p in todo), cfg.name)

        def on_retry(p, attempt, r):   # an unstable point timed again: its runs join the total now
            if bar is not None:
                bar.total += _planned_runs(p, warmup, repeats)
                bar.set_postfix_str(f"{_label(p)} retry {attempt - 1}/{retries} (unstable)", refresh=True)
        try:
            return protocol.run(
                points, store, lambda p: _run_point(m, p, built_kinds, counts, rng, warmup, repeats, bar,
                                                    bandwidth_probe, routing_stats, noise),
                on_point=None if bar is None else (lambda p: bar.set_postfix_str(_label(p))),
                retries=retries, on_retry=on_retry)
        except ValueError as e:   # (a NaN / inf met past the validation step: an expert it did not route to, say)
            if src is None or not _NON_FINITE.search(str(e)):
                raise
            raise ValueError(f"{src}: its weights gave a non-finite value while timing ({e}): weights holding NaN "
                             "or inf, or overflowing float32") from None
    finally:
        for b in (build, bar):
            if b is not None:
                b.close()


def attn_arithmetic(kv: str) -> str:
    """How attention multiplies on this build for a `kv` cache: "bf16-dot" (a bf16 cache on a CPU
    with AVX512_BF16: query and p rounded to bf16, pairs multiplied with float32 accumulation;
    absorbed/flash MLA and GQA decode with 8 query heads per KV head) or "f32" (float32 products of
    the stored values; every other case, and what _core._attn_set_bf16(False) forces)."""
    return "bf16-dot" if kv == "bf16" and _core._attn_bf16() else "f32"


def gemm_arithmetic(weights: str) -> str:
    """How the prefill GEMMs multiply for `weights` on this build (above the GEMV limit, 8 tokens
    where hgemm runs a SIMD kernel): "bf16-dot" (bf16 weights where csrc/hgemm.c's bf16dot kernel, or
    its portable twin, runs: activations rounded to bf16, bf16 pairs multiplied with float32
    accumulation, as ggml does) or "f32" (float32 products of the stored values)."""
    return "bf16-dot" if weights == "bf16" and _core._linear_hgemm("bf16") in ("bf16dot", "ref") else "f32"


def _bar(progress, total, name):
    if not progress:
        return None
    return tqdm(total=total, desc=f"measure {name}", unit="run", leave=True)


def _build_bar(progress, n_layers, name):
    """The bar of the build: one tick per layer built, then what runs before the first point."""
    if not progress:
        return None
    return tqdm(total=n_layers, desc=f"build {name}", unit="layer", leave=True)


def _built(build, i: int) -> None:
    """Layer `i` built. The clock restarts at the first: the layers' rate (and ETA) is not that of
    the embeddings and head built before them."""
    if i == 1:
        build.set_postfix_str("", refresh=False)
        build.reset(total=build.total)
    build.update(i - build.n)


def _label(p) -> str:
    return f"{p['test']}@{p['n_depth']}"


def _min_warmup(warmup: int) -> int:
    """The warm-up runs a point takes at the least: `warmup`, but two where it is 1 (a point warms up
    until two consecutive runs agree, _steady: one run has nothing to agree with)."""
    return max(int(warmup), 2) if warmup else 0


def _planned_runs(p, warmup: int, repeats: int) -> int:
    """The runs a point takes at the least (the bar's planned total): one for mem, else its fewest
    warm-up runs and its timed repeats. More warm-up runs (up to WARMUP_EXTRA) and retries are
    decided while it runs."""
    return 1 if p["test"] == "mem" else _min_warmup(warmup) + int(repeats)


def _advance(bar) -> None:
    """One run done; the total grows where runs are decided (an extra warm-up run, a retry); should
    a run still come beyond it, the total grows with it, so the bar never counts past its end."""
    if bar is None:
        return
    if bar.n >= bar.total:
        bar.total = bar.n + 1
    bar.update(1)


def _step_seconds(m, built_kinds, counts) -> float:
    return m.last_timing["total_s"] if not m.sampled else scaled_seconds(m.last_timing, built_kinds, counts)


def _collect(timing, per_layer, ends):
    for j, s in enumerate(timing["layer_s"]):
        per_layer.setdefault(j, []).append(s)
    for k in ends:
        ends[k].append(timing[k])


def _workspace_peak(m, d, n_prompt, rng) -> int:
    """The most workspace (bytes of C-kernel scratch, csrc/common.c's ledger) held at once during
    one decode step at depth d, and during one n_prompt-token prefill at depth d. Each step's
    scratch is freed before the next op, so this is the largest single op's need and a sampled
    model gives the full model's figure (up to how the router spreads tokens over experts)."""
    peak = 0
    for n in (1, n_prompt):
        m.fill_synthetic(d)  # before the reset: filling uses scratch of its own
        reset_workspace_peak()
        toks = rng.integers(0, m.config.vocab_size, n)
        if n == 1:
            m.decode(int(toks[0]))
        else:
            m.prefill(toks, logits="last")
        peak = max(peak, workspace_bytes()[1])
    return int(peak)


# the kernels' refusal of a non-finite activation ("`x` contains NaN at flat index 12")
_NON_FINITE = re.compile(r"contains (NaN|inf|-inf)\b")


def _model_bytes(cfg, weights, state) -> int:
    if cfg.file_weights is not None and weights == STORED:
        return int(cfg.file_weights.model_bytes)
    if weights == STORED:
        return int(sum(getattr(a, "nbytes", 0) for a in state.values()))
    return cfg.weight_bytes(weights)


def _main_stored(state) -> str:
    by: dict = {}
    for a in state.values():
        if getattr(a, "ndim", 0) >= 2:
            f = stored_format(a)
            by[f] = by.get(f, 0) + a.nbytes
    return max(by, key=by.get) if by else "f32"


WARMUP_TOL = 0.10   # two consecutive warm-up runs within 10% of each other: steady
WARMUP_EXTRA = 4    # at most this many warm-up runs beyond `warmup`


def _steady(times) -> bool:
    """The last two warm-up run times agree within WARMUP_TOL."""
    return len(times) >= 2 and abs(times[-1] - times[-2]) <= WARMUP_TOL * min(times[-2:])


def _probe(kind: str) -> float:
    """One paired bandwidth probe: read-only GB/s for "read", else the triad's."""
    return probe_read() if kind == "read" else probe_bandwidth()[0]


def _layer_exec(m, test: str) -> str:
    """How the built layers run a point's steps: "c-layer" (each layer one C call, csrc/layer.c),
    "python-ops" (Layer.forward_py: op by op from Python), or "mixed". Block-format (quantized)
    matrices run in C one token at a time only: a decode step, not a prefill ("mem" runs both)."""
    ns = {"tg": (1,), "pp": (2,)}.get(test, (1, 2))
    c = [l.runs_in_c(n, m.mla_strategy) for l in m.layers for n in ns]
    return "c-layer" if all(c) else "python-ops" if not any(c) else "mixed"


def _run_point(m, p, built_kinds, counts, rng, warmup, repeats, bar, bandwidth_probe=False,
               routing_stats=False, probe_noise=None) -> dict:
    cfg, d = m.config, p["n_depth"]
    r = dict(p)
    r["layer_exec"] = _layer_exec(m, p["test"])
    routed = {l.index: np.zeros(cfg.n_routed_experts, np.int64) for l in m.layers if l.kind == "moe"} \
        if routing_stats and p["test"] == "tg" else {}
    if p["test"] == "mem":
        m.fill_synthetic(d)
        rss, peak = rss_bytes()
        r.update(weight_bytes=m.weight_bytes, kv_bytes=m.cache.bytes_used,
                 kv_bytes_allocated=m.cache.bytes_allocated, kv_bytes_per_token=m.cache.bytes_per_token,
                 weight_bytes_model=_model_bytes(cfg, m.weights, None) if m.weights == STORED and
                 cfg.file_weights is not None else cfg.weight_bytes(p["weights"]),
                 kv_bytes_model=cfg.kv_bytes_per_token(p["type_k"]) * d,
                 rss_bytes=rss, rss_peak_bytes=peak,
                 # What RSS holds beyond the weights and the cache, as one figure: NumPy activations,
                 # Python, OpenBLAS buffers, the allocator's retained pages, and the C core's kept
                 # scratch blocks (>= 1 MiB, reused by the next op: at most 256 MiB, csrc/common.c).
                 # Its live scratch is 0 at this reading; the peak is workspace_bytes_peak, from the
                 # core's ledger.
                 # (less the stability probe's DRAM buffer, reported apart)
                 other_rss_bytes=max(0, rss - m.weight_bytes - m.cache.bytes_allocated - machine.probe_buffer_bytes()),
                 probe_buffer_bytes=machine.probe_buffer_bytes(),
                 kv_fill="synthetic" if d else "none",
                 avg_ts=None, stddev_ts=None)
        # after the readings above: these runs grow the cache past d
        r["workspace_bytes_peak"] = _workspace_peak(m, d, p["workspace_n_prompt"], rng)
        m.reset()
        _advance(bar)
        return r
    tok_s, secs, per_layer, ends, bws = [], [], {}, {"embed_s": [], "head_s": []}, []
    cpu_s = wall_s = 0.0
    probe_before = None
    # Warm-up until steady (WARMUP_TOL, at most WARMUP_EXTRA more than `warmup`): the first runs
    # after a model is built fault in pages and fill caches; the timed runs start once two
    # consecutive warm-up runs agree. The record says how many ran (`warmup_runs`).
    warm_t: list = []
    n_warm = warmup
    rep = 0
    while rep < n_warm + repeats:
        if rep == n_warm and warmup and n_warm < warmup + WARMUP_EXTRA and not _steady(warm_t):
            n_warm += 1   # not steady yet (or one run: nothing to compare with): one more untimed run
            if bar is not None and n_warm > _min_warmup(warmup):   # beyond the fewest the bar planned
                bar.total += 1
                bar.set_postfix_str(f"{_label(p)} warm-up run {n_warm} (times not steady yet)", refresh=True)
        if rep == n_warm:
            probe_before = _probe_gbs()
        if d:
            m.fill_synthetic(d)
        else:
            m.reset()
        if p["test"] == "tg":
            toks = rng.integers(0, cfg.vocab_size, p["n_gen"])
            t, probes = 0.0, []
            for tok in toks:
                c0, w0 = _cpu_clock(), _wall_clock()
                m.decode(int(tok))
                if rep >= n_warm:
                    cpu_s, wall_s = cpu_s + _cpu_clock() - c0, wall_s + _wall_clock() - w0
                t += _step_seconds(m, built_kinds, counts)
                if rep >= n_warm and routed:
                    for l in m.layers:
                        if l.index in routed and l.last_counts is not None:
                            routed[l.index] += np.asarray(l.last_counts, dtype=np.int64)
                if rep >= n_warm:
                    _collect(m.last_timing, per_layer, ends)
                    if bandwidth_probe:
                        probes.append(_probe(bandwidth_probe))
            n = p["n_gen"]
        else:
            toks = rng.integers(0, cfg.vocab_size, p["n_prompt"])
            c0, w0 = _cpu_clock(), _wall_clock()
            m.prefill(toks, logits="last")
            if rep >= n_warm:
                cpu_s, wall_s = cpu_s + _cpu_clock() - c0, wall_s + _wall_clock() - w0
            t = _step_seconds(m, built_kinds, counts)
            probes = []
            if rep >= n_warm:
                _collect(m.last_timing, per_layer, ends)
                if bandwidth_probe:
                    probes.append(_probe(bandwidth_probe))
            n = p["n_prompt"]
        if rep >= n_warm:
            tok_s.append(n / t)
            secs.append(t)
            if bandwidth_probe:  # the mean, as the repeat's time is the sum over its steps
                bws.append(float(np.mean(probes)))
        else:
            warm_t.append(t)
        _advance(bar)
        rep += 1
    probe_after = _probe_gbs()
    m.reset()
    r.update(protocol.stats(tok_s))
    r.update(protocol.stability(tok_s, probe_before=probe_before, probe_after=probe_after, cpu_s=cpu_s,
                                wall_s=wall_s, threads=p["n_threads"], probe_noise=probe_noise))
    r["avg_ns"] = float(np.mean(secs) * 1e9)
    r["stddev_ns"] = float(np.std(secs, ddof=1) * 1e9) if len(secs) > 1 else 0.0
    r["samples_ns"] = [float(x * 1e9) for x in secs]  # llama-bench's per-repeat fields
    r["samples_ts"] = [float(x) for x in tok_s]
    if bandwidth_probe:
        r["bandwidth_gbs_samples"] = [float(b) for b in bws]
        r["bandwidth_gbs"] = float(np.median(bws))
        r["bandwidth_kind"] = bandwidth_probe   # "triad" or "read"
    r["kv_fill"] = "synthetic" if d else "none"
    r["warmup_runs"] = int(n_warm)   # untimed runs done (>= warmup: until two agreed within WARMUP_TOL)
    if routed:
        r["routing_counts"] = {str(i): [int(x) for x in c] for i, c in routed.items()}
        r["routing_tokens"] = "random token ids"
    if p["test"] == "pp" and d == 0:
        r["ttft_s"] = float(np.median(secs))
    # Embedding lookup and final norm + lm_head, timed apart from the layers (median per step).
    r["embed_ms"] = 1e3 * float(np.median(ends["embed_s"]))
    r["head_ms"] = 1e3 * float(np.median(ends["head_s"]))
    # Per-layer times by kind: median over steps for each built layer, then across layers.
    for kind in ("dense", "moe"):
        med = [float(np.median(per_layer[j])) for j, kd in enumerate(built_kinds) if kd == kind and j in per_layer]
        if med:
            c = float(np.median(med))
            r[f"layer_ms_{kind}"] = 1e3 * c
            r[f"layer_spread_{kind}"] = (max(med) - min(med)) / c if c > 0 else 0.0
            r[f"layers_timed_{kind}"] = len(med)
    return r


def _canonical(name, resolve):
    """A format name in its canonical spelling ("Q8_0" -> "q8_0"; names are case-insensitive), or as
    given when it is not one (the caller's check names it)."""
    try:
        return resolve(name).name
    except (ValueError, TypeError):
        return name
