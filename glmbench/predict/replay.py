"""Replay a serving trace on a setup: a discrete-event simulation of a continuous-batching server
whose step times come from the cost model.

The server (vLLM's scheduler, in its simplest form):
- Each step runs every decoding request one token, plus prompt chunks (chunked prefill) in the
  rest of a token budget of `max_batched_tokens` per step: first the prompts already started,
  then new requests from the queue in arrival order (first come, first served; the queue's head
  blocks the rest). At most `max_num_seqs` requests run at once.
- KV memory is a pool of tokens: `kv_tokens`, by default what the memory model
  (costmodel.max_context) leaves for `max_num_seqs` streams next to the weights, the workspace
  and the runtime's overhead. A new request is admitted only when its whole (uncached) prompt
  fits: otherwise it waits. Decoding grows each request by one token per step; when the pool is
  full, cached prefix blocks nobody uses are evicted (least recently used first), then the
  request admitted last is preempted (its cache is dropped; it goes back to the queue's head and
  later recomputes its prompt and the tokens it had generated, as vLLM's recompute preemption).
  A request that could not fit even alone (prompt + output > pool, or > the model's context) is
  rejected and counts as missing every target.
- Prefix caching (traces with block hashes, e.g. Mooncake's 512-token blocks): the full blocks of
  a prompt are cached when its prefill completes; a new request reuses the longest leading run of
  its blocks found in the cache (at least one token is always computed); cached blocks in use are
  never evicted.

Step times (costmodel, the same functions as every other prediction):
- a step with decoders costs costmodel.decode(setup, mean depth, n decoders): the attention work
  of streams at different depths is the sum of their depths (read and scored tokens), which is
  that of the same number of streams all at the mean depth; a fractional mean is interpolated
  linearly between the two integer depths around it;
- each prompt chunk of n tokens on top of d cached costs costmodel.prefill(setup, n, d), run after
  the decode pass (llama.cpp's server order; a runtime fusing both into one pass would share the
  weight reads, so a mixed step is an upper bound for it).
- `step_costs="exact"` calls the cost model for every distinct step (memoized); the default
  `"interpolated"` samples it on a grid (depths every `DEPTH_GRID` tokens, batch sizes 1..16 then
  about +19% apart, chunk lengths inside the last of the runtime's ubatches on `_chunk_nodes`) and interpolates
  linearly, and advances runs of decode-only steps in one move, so a 12K-request trace replays in
  seconds (bench/bench_replay.py). tests/test_replay.py checks that the two agree.

Times: TTFT = first token (end of the step that completes the prefill) - arrival; TPOT = (finish -
first token) / (output - 1); end-to-end = finish - arrival; queueing = first admission - arrival.
The clock is whole seconds plus a fraction below REBASE_S, so a latency keeps its sub-microsecond
digits however late the simulated time (a single float second count keeps 1e-7 s at 1e9 s and
1e-4 s at 2**40 s); the result keeps the latencies, and the absolute times derive from them.

Counting: throughput is the output of the requests served (a rejected request generates nothing);
a request the trace logged with 0 output tokens failed in the traced system: it is counted
(`failed`), never replayed, and left out of every other figure. Statistics are numpy over the
per-request arrays, one sort per latency for all its percentiles (a million requests in seconds).
"""
from __future__ import annotations

import heapq
import math
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from glmbench.predict import costmodel as cm
from glmbench.predict import traces as traces_mod

# input-length buckets (prompt tokens): lower edge inclusive, upper edge exclusive
BUCKETS = (("<4K", 0, 4096), ("4-8K", 4096, 8192), ("8-16K", 8192, 16384), ("16-32K", 16384, 32768),
           ("32-64K", 32768, 65536), ("64-128K", 65536, 131072), (">=128K", 131072, math.inf))
DEPTH_GRID = 2048
CHUNK_TILE = 128        # a prompt chunk's step in time: costmodel.Q_TILE and kernels.MMQ_X_MAX
REBASE_S = 1024.0       # the replay clock's float part stays below this many seconds
MAX_CLOCK_S = float(2 ** 62)    # the whole seconds are kept as int64: arrivals past this are refused
DEFAULT_TTFT_SLO_S = 10.0
DEFAULT_TPOT_SLO_S = 0.1
# A setup "keeps up" with a trace when requests holding at least this share of its tokens meet
# both targets; below it the study names no setup (a server meeting them for 2% of tokens is no
# choice). Serving SLOs are commonly stated as 90-99% attainment; 90% is the lenient end.
KEEPS_UP_TOK = 0.9
STEP_COSTS = ("interpolated", "exact")


def bucket_of(prompt: int) -> int:
    for i, (_, lo, hi) in enumerate(BUCKETS):
        if lo <= prompt < hi:
            return i
    raise ValueError(f"prompt length {prompt} falls in no bucket")


# ---- step costs ------------------------------------------------------------------------------------
class StepCosts:
    """Seconds of decode and prefill steps for one setup, from costmodel.decode / costmodel.prefill."""

    def __init__(self, setup: cm.Setup, mode: str = "interpolated"):
        if mode not in STEP_COSTS:
            raise ValueError(f"`step_costs` must be one of {STEP_COSTS}, got {mode!r}")
        self.setup, self.mode = setup, mode
        self._dec: dict = {}
        self._pf: dict = {}
        self._dline: dict = {}
        self._pline: dict = {}
        ub = setup.n_ubatch
        self._ub = ub
        self.calls = 0

    # the cost model at integer points, memoized
    def _decode_at(self, batch: int, depth: int) -> float:
        k = (batch, depth)
        t = self._dec.get(k)
        if t is None:
            t = self._dec[k] = cm.decode(self.setup, depth, batch).seconds
            self.calls += 1
        return t

    def _prefill_at(self, n: int, depth: int) -> float:
        k = (n, depth)
        t = self._pf.get(k)
        if t is None:
            t = self._pf[k] = cm.prefill(self.setup, n, depth).seconds
            self.calls += 1
        return t

    @staticmethod
    def _batch_nodes(b: int):
        if b <= 16:
            return b, b, 0.0
        lo = 16
        while True:
            hi = max(lo + 1, round(lo * 1.19))
            if hi >= b:
                return lo, hi, (b - lo) / (hi - lo)
            lo = hi

    @staticmethod
    def _chunk_nodes(r: int, ub: int):
        """(lo, hi, weight) of a last ubatch of r tokens (of at most ub) on the prefill's nodes:
        within the first CHUNK_TILE tokens 1, 2, 4, 8 and then about +41% apart (a MoE's expert reads
        saturate there, a GEMM fills its tile); past it the two ends of each tile, where the flash-
        attention query tile and MMQ's column tile (costmodel.Q_TILE, kernels.MMQ_X_MAX) step the
        time up (within 2-3% of the cost model, tests/test_replay.py)."""
        tile = CHUNK_TILE
        if r > tile:
            k = -(-r // tile)
            lo, hi = (k - 1) * tile + 1, min(k * tile, ub)
            return (r, r, 0.0) if hi == lo else (lo, hi, (r - lo) / (hi - lo))
        if r <= 8 and r & (r - 1) == 0:
            return r, r, 0.0
        lo = 1
        while True:
            hi = min(lo * 2 if lo < 8 else max(lo + 1, round(lo * 1.41)), tile, ub)
            if hi >= r:
                return lo, hi, (r - lo) / (hi - lo)
            lo = hi

    def decode(self, batch: int, mean_depth: float) -> float:
        """One decode step of `batch` streams whose depths average `mean_depth`."""
        if self.mode == "exact":
            f = math.floor(mean_depth)
            t0 = self._decode_at(batch, f)
            if mean_depth == f:
                return t0
            return t0 + (mean_depth - f) * (self._decode_at(batch, f + 1) - t0)
        g = DEPTH_GRID
        d0 = int(mean_depth // g) * g
        wd = (mean_depth - d0) / g
        # per (batch, grid cell): [t(b0, d0), slope to d0+g or None, t(b1, d0), slope or None, wb],
        # looked up once (the replay's hot path); a slope is priced when first needed
        c = self._dline.get((batch, d0))
        if c is None:
            b0, b1, wb = self._batch_nodes(batch)
            c = self._dline[(batch, d0)] = [self._decode_at(b0, d0), None,
                                            self._decode_at(b1, d0) if wb else 0.0, None, wb, b0, b1]
        return _cell_value(c, wd, self._decode_at, d0 + g)

    def decode_run(self, batch: int, mean_depth: float, k: int) -> float:
        """k decode steps in a row, the mean depth one token deeper each step."""
        if self.mode == "exact":
            return sum(self.decode(batch, mean_depth + j) for j in range(k))
        # piecewise linear in depth: exact within one grid cell, the midpoint rule across cells
        return k * self.decode(batch, mean_depth + (k - 1) / 2)

    def prefill(self, n: int, depth: int) -> float:
        """A prompt chunk of `n` tokens on top of `depth` cached."""
        if self.mode == "exact":
            return self._prefill_at(n, depth)
        ub, g = self._ub, DEPTH_GRID
        d0 = depth // g * g
        wd = (depth - d0) / g
        c = self._pline.get((n, d0))
        if c is None:
            # the time jumps at each ubatch edge, and inside the last ubatch it is far from linear
            # in its r tokens (a MoE's experts read saturate, a dense GEMM is bound by its weight
            # reads until it fills, the query and column tiles step at 129): r on _chunk_nodes
            u = -(-n // ub)
            base = (u - 1) * ub
            r0, r1, wn = self._chunk_nodes(n - base, ub)
            n0, n1 = base + r0, base + r1
            if wn == 1.0:
                n0, wn = n1, 0.0
            c = self._pline[(n, d0)] = [self._prefill_at(n0, d0), None,
                                        self._prefill_at(n1, d0) if wn else 0.0, None, wn, n0, n1]
        return _cell_value(c, wd, self._prefill_at, d0 + g)


def _cell_value(c: list, wd: float, at, d1: int) -> float:
    """The time inside one cached grid cell c = [t(x0, d0), slope to d1 or None, t(x1, d0), slope or
    None, wx, x0, x1] (x: batch or chunk nodes), linear in depth by wd and in x by wx; a slope is
    priced with at(x, d1) when first needed and kept in the cell."""
    if wd:
        if c[1] is None:
            c[1] = at(c[5], d1) - c[0]
        t = c[0] + wd * c[1]
    else:
        t = c[0]
    wx = c[4]
    if not wx:
        return t
    if wd:
        if c[3] is None:
            c[3] = at(c[6], d1) - c[2]
        return t + wx * ((c[2] + wd * c[3]) - t)
    return t + wx * (c[2] - t)


# ---- the server ------------------------------------------------------------------------------------
@dataclass
class ServerConfig:
    max_num_seqs: int = 64
    max_batched_tokens: int = 2048
    prefix_cache: bool = True
    kv_tokens: int | None = None        # None: from the memory model
    step_costs: str = "interpolated"

    def __post_init__(self):
        for f, lo in (("max_num_seqs", 1), ("max_batched_tokens", 1)):
            v = getattr(self, f)
            if isinstance(v, bool) or not isinstance(v, int) or v < lo:
                raise ValueError(f"`{f}` must be a whole number >= {lo}, got {v!r}")
        if self.kv_tokens is not None and (isinstance(self.kv_tokens, bool) or not isinstance(self.kv_tokens, int)
                                           or self.kv_tokens < 0):
            raise ValueError(f"`kv_tokens` must be a whole number >= 0 or None, got {self.kv_tokens!r}")
        if self.step_costs not in STEP_COSTS:
            raise ValueError(f"`step_costs` must be one of {STEP_COSTS}, got {self.step_costs!r}")


def kv_pool_tokens(setup: cm.Setup, max_num_seqs: int) -> int:
    """Tokens of KV cache the memory model leaves for `max_num_seqs` streams (0: the weights do
    not fit)."""
    n = cm.max_context(setup, max_num_seqs)
    return n * max_num_seqs if n < 2 ** 62 else 2 ** 62


def _trace_arrays(tr) -> dict:
    """The trace's prompt and output lengths as float arrays, made once per Trace object and
    shared by every replay of it (a million-request trace on four setups holds one copy)."""
    a = tr.__dict__.get("_np_lengths")
    if a is None or len(a["prompt"]) != len(tr):
        a = tr.__dict__["_np_lengths"] = {"prompt": np.asarray(tr.prompt, np.float64),
                                          "output": np.asarray(tr.output, np.float64)}
    return a


@dataclass
class ReplayResult:
    trace: str
    setup: str
    prefix_cache: bool
    kv_tokens: int
    arrival: list
    prompt: list
    output: list
    admitted_s: list | None     # first admission time (nan: rejected); None: from `latency`
    first_token_s: list | None
    finish_s: list | None
    cached_tokens: list     # prompt tokens found in the prefix cache at first admission
    preemptions: list
    rejected: list          # "" or why
    steps: int = 0
    busy_s: float = 0.0
    decode_only_s: float = 0.0
    decode_only_tokens: int = 0
    max_running: int = 0
    cost_model_calls: int = 0
    ttft_slo_s: float = DEFAULT_TTFT_SLO_S
    tpot_slo_s: float = DEFAULT_TPOT_SLO_S
    meta: dict = field(default_factory=dict)
    # requests the trace logged with 0 output tokens (failed there): counted, not replayed
    failed: list | None = None
    # the latencies from the replay's exact clock (integer nanoseconds, so that a microsecond
    # survives at any simulated time): {"queueing_s", "ttft_s", "decode_s" (finish - first token),
    # "e2e_s"} arrays; None: from the float times above
    latency: dict | None = field(default=None, repr=False)

    def __len__(self):
        return len(self.arrival)

    # the times (seconds, the trace's clock), as given or from the arrival and the latencies
    # (replay() keeps only the latencies: exact, and a million requests x 4 setups stay small)
    def _abs(self, given, key):
        if given is not None:
            return given
        lat = self.latency
        a = np.asarray(self.arrival, np.float64)
        return a + lat[key] if key != "finish" else a + lat["e2e_s"]

    @property
    def admitted(self):
        return self._abs(self.admitted_s, "queueing_s")

    @property
    def first_token(self):
        return self._abs(self.first_token_s, "ttft_s")

    @property
    def finish(self):
        return self._abs(self.finish_s, "finish")

    # ---- per-request arrays (numpy, computed once) ----
    def _arrays(self) -> dict:
        a = self.__dict__.get("_arr")
        if a is not None:
            return a
        n = len(self)
        shared = self.__dict__.get("_trace_arrays")
        out = shared["output"] if shared else np.asarray(self.output, np.float64)
        prompt = shared["prompt"] if shared else np.asarray(self.prompt, np.float64)
        rej = np.fromiter((bool(w) for w in self.rejected), bool, n)
        failed = np.zeros(n, bool) if self.failed is None else np.asarray(self.failed, bool)
        if self.latency is not None:
            lat = {k: np.asarray(v, np.float64) for k, v in self.latency.items()}
        else:
            arr, adm = np.asarray(self.arrival, np.float64), np.asarray(self.admitted, np.float64)
            fst, fin = np.asarray(self.first_token, np.float64), np.asarray(self.finish, np.float64)
            lat = {"queueing_s": adm - arr, "ttft_s": fst - arr, "decode_s": fin - fst, "e2e_s": fin - arr}
        with np.errstate(invalid="ignore", divide="ignore"):
            tpot = np.where(out > 1, lat["decode_s"] / np.maximum(out - 1, 1), np.nan)
        served = ~rej & ~failed
        ttft = lat["ttft_s"]
        with np.errstate(invalid="ignore"):
            meets = served & (ttft <= self.ttft_slo_s) & (np.isnan(tpot) | (tpot <= self.tpot_slo_s))
        a = {"prompt": prompt, "output": out, "rejected": rej, "failed": failed, "served": served,
             "queueing_s": lat["queueing_s"], "ttft_s": ttft, "tpot_s": tpot, "e2e_s": lat["e2e_s"],
             "meets": meets, "bucket": (np.searchsorted(_BUCKET_EDGES, prompt, side="right") - 1).astype(np.int8)}
        self.__dict__["_arr"] = a
        return a

    # per request
    def queueing(self, i):
        return float(self._arrays()["queueing_s"][i])

    def ttft(self, i):
        return float(self._arrays()["ttft_s"][i])

    def tpot(self, i):
        return float(self._arrays()["tpot_s"][i])

    def e2e(self, i):
        return float(self._arrays()["e2e_s"][i])

    def meets(self, i, ttft_slo=None, tpot_slo=None):
        if ttft_slo is None and tpot_slo is None:
            return bool(self._arrays()["meets"][i])
        if self.rejected[i] or (self.failed is not None and self.failed[i]):
            return False
        a = self.ttft_slo_s if ttft_slo is None else ttft_slo
        b = self.tpot_slo_s if tpot_slo is None else tpot_slo
        tp = self.tpot(i)
        return self.ttft(i) <= a and (math.isnan(tp) or tp <= b)

    def requests(self) -> list[dict]:
        A = self._arrays()
        names = [b[0] for b in BUCKETS]
        cols = {k: A[k].tolist() for k in ("queueing_s", "ttft_s", "tpot_s", "e2e_s", "meets", "failed")}
        bk = A["bucket"].tolist()
        cached, pre = np.asarray(self.cached_tokens).tolist(), np.asarray(self.preemptions).tolist()
        return [{"request": i, "arrival_s": self.arrival[i], "prompt_tokens": self.prompt[i],
                 "output_tokens": self.output[i], "bucket": names[bk[i]], "cached_tokens": cached[i],
                 "preemptions": pre[i], "rejected": self.rejected[i], "failed": cols["failed"][i],
                 "queueing_s": cols["queueing_s"][i], "ttft_s": cols["ttft_s"][i], "tpot_s": cols["tpot_s"][i],
                 "e2e_s": cols["e2e_s"][i], "meets_slo": cols["meets"][i]} for i in range(len(self))]

    def _stats(self, idx) -> dict:
        """Statistics of the requests `idx` (indices, or a boolean mask): counts, token shares,
        SLO attainment, goodput, and per latency its mean and p50/p90/p99, by request and
        token-weighted. Failed requests (0 output tokens in the trace) are counted apart and left
        out of every other figure."""
        A = self._arrays()
        sel = np.zeros(len(self), bool)
        sel[idx] = True
        failed = sel & A["failed"]
        sel &= ~A["failed"]
        n = int(sel.sum())
        w = A["prompt"] + A["output"]
        rej, served, ok = sel & A["rejected"], sel & A["served"], sel & A["meets"]
        tot_w = float(w[sel].sum())
        ptok = float(A["prompt"][sel].sum())
        span = self.makespan_s
        row = {"requests": int(sel.sum() + failed.sum()), "failed": int(failed.sum()), "tokens": int(tot_w),
               "prompt_tokens": int(ptok), "output_tokens": int(A["output"][sel].sum()),
               "served_output_tokens": int(A["output"][served].sum()), "rejected": int(rej.sum()),
               "rejected_tok": float(w[rej].sum()) / tot_w if tot_w else math.nan,
               "cached_share": float(np.asarray(self.cached_tokens, np.float64)[sel].sum()) / max(1.0, ptok),
               "preemptions": int(np.asarray(self.preemptions, np.int64)[sel].sum()),
               "slo_attainment": int(ok.sum()) / n if n else math.nan,
               "slo_attainment_tok": float(w[ok].sum()) / tot_w if tot_w else math.nan,
               "goodput_req_s": int(ok.sum()) / span if span > 0 else math.nan,
               "goodput_tok_s": float(A["output"][ok].sum()) / span if span > 0 else math.nan}
        for name in ("queueing_s", "ttft_s", "tpot_s", "e2e_s"):
            v = A[name][served]
            wt = w[served]
            keep = ~np.isnan(v)
            v, wt = v[keep], wt[keep]
            row[f"{name}_mean"] = float(v.mean()) if v.size else math.nan
            tw = float(wt.sum())
            row[f"{name}_mean_tok"] = float((v * wt).sum() / tw) if tw else math.nan
            qs = _quantiles(v, wt, (0.5, 0.9, 0.99))     # one sort for every percentile
            for q, (by_count, by_tok) in zip((50, 90, 99), qs):
                row[f"{name}_p{q}"] = by_count
                row[f"{name}_p{q}_tok"] = by_tok
        return row

    @property
    def makespan_s(self) -> float:
        m = self.__dict__.get("_span")
        if m is None:
            fin = np.asarray(self.finish, np.float64)
            done = fin[~self._arrays()["rejected"] & ~np.isnan(fin)]
            m = self.__dict__["_span"] = float(done.max() - min(self.arrival)) if done.size else 0.0
        return m

    def summary(self) -> dict:
        row = {"trace": self.trace, "setup": self.setup, "prefix_cache": self.prefix_cache,
               "kv_tokens": self.kv_tokens, "makespan_s": self.makespan_s, "steps": self.steps,
               "busy_s": self.busy_s, "max_running": self.max_running,
               "ttft_slo_s": self.ttft_slo_s, "tpot_slo_s": self.tpot_slo_s}
        row.update(self._stats(np.arange(len(self))))
        why: dict = {}
        for w in self.rejected:
            if w:
                why[w] = why.get(w, 0) + 1
        row["rejected_why"] = max(why, key=why.get) if why else ""
        span = self.makespan_s
        # the output of requests that were served: a rejected request generated nothing
        row["throughput_tok_s"] = row["served_output_tokens"] / span if span > 0 else math.nan
        row["decode_tok_s"] = self.decode_only_tokens / self.decode_only_s if self.decode_only_s > 0 else math.nan
        return row

    def buckets(self) -> list[dict]:
        bk = self._arrays()["bucket"]
        out = []
        for b, (name, lo, hi) in enumerate(BUCKETS):
            mask = bk == b
            row = {"trace": self.trace, "setup": self.setup, "prefix_cache": self.prefix_cache,
                   "bucket": name, "bucket_lo": lo}
            if mask.any():
                row.update(self._stats(mask))
            else:
                row.update(requests=0, tokens=0)
            out.append(row)
        return out


_BUCKET_EDGES = np.array([lo for _, lo, _ in BUCKETS], np.float64)


def _quantiles(v: np.ndarray, w: np.ndarray, qs) -> list[tuple[float, float]]:
    """(by count, by weight) nearest-rank quantiles of values `v` with weights `w`, for each q in
    `qs`, from one sort (weighted_quantile's rule)."""
    if v.size == 0:
        return [(math.nan, math.nan) for _ in qs]
    order = np.argsort(v, kind="stable")
    sv, cw = v[order], np.cumsum(w[order])
    tot = cw[-1]
    out = []
    for q in qs:
        k = max(0, math.ceil(q * sv.size) - 1)
        j = int(np.searchsorted(cw, q * tot - 1e-9 * tot, side="left")) if tot > 0 else sv.size - 1
        out.append((float(sv[k]), float(sv[min(j, sv.size - 1)])))
    return out


def weighted_quantile(pairs, q, weighted=True) -> float:
    """The q-quantile of (value, weight) pairs: the smallest value whose cumulative share (by
    weight, or by count when `weighted` is False) reaches q (nearest rank)."""
    if not pairs:
        return math.nan
    s = sorted(pairs)
    if not weighted:
        k = max(0, math.ceil(q * len(s)) - 1)
        return s[k][0]
    tot = sum(w for _, w in s)
    acc = 0.0
    for v, w in s:
        acc += w
        if acc >= q * tot - 1e-9 * tot:
            return v
    return s[-1][0]


class _Req:
    __slots__ = ("i", "L", "O", "H", "g", "target", "done", "priv", "hit_blocks", "held", "seq",
                 "j", "c", "state", "epoch")

    def __init__(self, i, L, O, H):
        self.i, self.L, self.O, self.H = i, L, O, H
        self.g = 0              # tokens generated so far
        self.state = "new"      # new | waiting | prefill | decode | done
        self.epoch = 0
        self.held = []


def replay(trace, setup: cm.Setup, config: ServerConfig | None = None, *,
           ttft_slo_s: float = DEFAULT_TTFT_SLO_S, tpot_slo_s: float = DEFAULT_TPOT_SLO_S,
           costs: StepCosts | None = None, progress: bool = False) -> ReplayResult:
    """Serve `trace` (a traces.Trace, a built-in name or a file) on `setup`; see the module text."""
    tr = traces_mod.load(trace)
    cm._setup(setup)
    cfg = config or ServerConfig()
    for nm, v in (("ttft_slo_s", ttft_slo_s), ("tpot_slo_s", tpot_slo_s)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
            raise ValueError(f"`{nm}` must be a positive number of seconds, got {v!r}")
    sc = costs or StepCosts(setup, cfg.step_costs)
    cap = cfg.kv_tokens if cfg.kv_tokens is not None else kv_pool_tokens(setup, cfg.max_num_seqs)
    bt = tr.block_tokens
    use_cache = cfg.prefix_cache and tr.has_prefixes
    N = len(tr)
    # the clock: whole seconds (`epoch`, an int) + a float offset `now` kept below REBASE_S, so a
    # time keeps its sub-microsecond digits however late it is (one float second count loses them
    # as it grows: 1e-7 s of resolution at 1e9 s, 1e-4 s at 1e12 s, and every latency with them).
    # A time is (int seconds, float fraction); arrivals are split the same way.
    arrs, P, O = tr.arrival_s, tr.prompt, tr.output
    ta = np.asarray(arrs, np.float64)
    if N > 1 and bool((ta[1:] < ta[:-1]).any()):
        raise ValueError(f"{tr.name}: arrivals must be in time order (traces.load sorts them)")
    if N and not ta[-1] <= MAX_CLOCK_S:
        raise ValueError(f"{tr.name}: the last request arrives {ta[-1]:.3g} s into the trace, beyond the "
                         f"replay clock's {MAX_CLOCK_S:.3g} s (a rate scale too small, or times not in "
                         "seconds?)")
    epoch = 0
    floor = math.floor

    def arr_at(j):      # arrival j on the current clock (seconds since `epoch`)
        a = arrs[j]
        e = floor(a)
        return (e - epoch) + (a - e)
    # per request (numpy: a million requests stay small): times as whole seconds + fraction
    adm_e, fst_e, fin_e = (np.zeros(N, np.int64) for _ in range(3))
    adm_o, fst_o, fin_o = (np.full(N, math.nan) for _ in range(3))
    cached_tok, preempts = np.zeros(N, np.int64), np.zeros(N, np.int64)
    rejected = [""] * N
    out_a = np.asarray(O, np.int64)
    failed = out_a == 0
    ctx_limit = setup.model.max_position_embeddings or math.inf
    need_a = np.asarray(P, np.int64) + out_a
    if cap == 0:
        why0 = ("the KV pool was set to 0 tokens" if cfg.kv_tokens is not None else
                "the weights, workspace and overhead leave no room for a KV cache")
        for i in np.flatnonzero(~failed).tolist():
            rejected[i] = why0
    else:
        for i in np.flatnonzero(~failed & ((need_a - 1 > cap) | (need_a > ctx_limit))).tolist():
            L, Oi = P[i], O[i]
            rejected[i] = (f"needs {L + Oi - 1} KV tokens, the pool holds {cap}" if L + Oi - 1 > cap else
                           f"{L + Oi} tokens exceed the model's context of {ctx_limit}")
    runs = (~failed).tolist()
    for i, w in enumerate(rejected):
        if w:
            runs[i] = False
    del need_a, out_a

    # prefix cache: id -> [refcount]; evictable (refcount 0) ids in LRU order
    cache: dict = {}
    lru: OrderedDict = OrderedDict()
    cache_tok = 0
    lru_tok = 0
    # memory: private tokens of prefilling requests; decoders' private tokens = P_dec + n_dec * D
    priv_pf = 0
    P_dec = 0
    S_dec = 0            # sum over decoders of (c - j): their depths sum to S_dec + n_dec * D
    n_dec = 0
    D = 0                # decode steps so far (every decoder advances one token per step)
    fin_heap: list = []  # (D at which it finishes, seq, epoch, req)
    prefilling: list = []
    order: list = []     # (seq, req) in admission order, for the preemption victim
    waiting: deque = deque()
    seq = 0
    now = 0.0
    nxt = 0
    remaining = sum(runs)
    steps = 0
    busy = dec_only_s = 0.0
    dec_only_tok = 0
    max_running = 0

    bar = None
    if progress:
        from glmbench._progress import tqdm
        bar = tqdm(total=remaining, desc=f"replay {tr.name}", unit="req", leave=False)

    def used():
        return priv_pf + P_dec + n_dec * D + cache_tok

    def evict(need):
        nonlocal cache_tok, lru_tok
        while cap - used() < need and lru:
            h, _ = lru.popitem(last=False)
            del cache[h]
            cache_tok -= bt
            lru_tok -= bt

    def release_blocks(r):
        nonlocal lru_tok
        # the tail block first, so that eviction takes a prompt's end before its shared start
        for h in reversed(r.held):
            e = cache[h]
            e[0] -= 1
            if e[0] == 0:
                lru[h] = True
                lru_tok += bt
        r.held = []

    def drop_from_decode(r):
        nonlocal P_dec, S_dec, n_dec
        P_dec -= r.priv - r.j
        S_dec -= r.c - r.j
        n_dec -= 1
        r.g += D - r.j
        r.epoch += 1

    def preempt_one():
        nonlocal priv_pf
        while order:
            s, r = order.pop()
            if r.seq != s or r.state not in ("prefill", "decode"):
                continue
            if r.state == "decode":
                drop_from_decode(r)
            else:
                priv_pf -= r.priv
                prefilling.remove(r)
            release_blocks(r)
            preempts[r.i] += 1
            r.state = "waiting"
            waiting.appendleft(r)
            return True
        return False

    def finish_req(r):
        nonlocal remaining
        fin_e[r.i], fin_o[r.i] = epoch, now
        r.state = "done"
        release_blocks(r)
        remaining -= 1
        if bar is not None:
            bar.update(1)

    max_tokens, max_seqs = cfg.max_batched_tokens, cfg.max_num_seqs
    hash_ids = tr.hash_ids
    while remaining:
        if now >= REBASE_S:
            shift = int(now)
            epoch += shift
            now -= shift        # exact: the whole seconds leave the float
        while nxt < N and arr_at(nxt) <= now:
            if runs[nxt]:
                waiting.append(nxt)     # an index: its _Req is made when it reaches the queue's head
            nxt += 1
        if not (prefilling or n_dec or waiting):
            now = max(now, arr_at(nxt))
            continue
        # 1. room for every decoder's next token: evict unused prefix blocks, then preempt
        while n_dec and cap - used() < n_dec:
            evict(n_dec)
            if cap - used() < n_dec:
                preempt_one()
        # 2. prompt chunks in the rest of the token budget
        budget = max_tokens - n_dec
        chunks = []
        for r in prefilling:
            if budget <= 0:
                break
            c = min(r.target - r.done, budget)
            chunks.append((r, c, r.done))
            budget -= c
        while waiting and budget > 0 and len(prefilling) + n_dec < max_seqs:
            r = waiting[0]
            if r.__class__ is int:
                r = waiting[0] = _Req(r, P[r], O[r], hash_ids[r] if use_cache else None)
            target = r.L + r.g
            hb = 0
            if r.H is not None:
                full = min(r.L // bt, (target - 1) // bt)
                while hb < full and r.H[hb] in cache:
                    hb += 1
            hit = hb * bt
            need = target - hit
            hit_lru = sum(bt for h in r.H[:hb] if h in lru) if hb else 0
            if cap - used() + lru_tok - hit_lru < need:
                break          # waits: the head of the queue does not fit yet
            waiting.popleft()
            for h in r.H[:hb] if hb else ():
                e = cache[h]
                if e[0] == 0:
                    del lru[h]
                    lru_tok -= bt
                e[0] += 1
            r.held = list(r.H[:hb]) if hb else []
            evict(need)
            r.target, r.done, r.hit_blocks, r.priv = target, hit, hb, need
            priv_pf += need
            seq += 1
            r.seq = seq
            if len(order) > 4 * max_seqs + 1024:
                # drop the finished (they never come back): the list stays as long as what runs
                order[:] = [(q, x) for q, x in order if x.seq == q and x.state in ("prefill", "decode")]
            order.append((seq, r))
            r.state = "prefill"
            prefilling.append(r)
            if adm_o[r.i] != adm_o[r.i]:        # nan: first admission
                adm_e[r.i], adm_o[r.i] = epoch, now
                cached_tok[r.i] = hit
            c = min(need, budget)
            chunks.append((r, c, r.done))
            budget -= c
        running = len(prefilling) + n_dec
        if running > max_running:
            max_running = running
        if not chunks and not n_dec:
            # nothing runs (the budget is all decoders' or the queue's head waits): next arrival
            if nxt >= N:
                raise RuntimeError("replay stalled: requests wait with nothing running")  # cannot happen
            now = max(now, arr_at(nxt))
            continue
        if chunks:
            t = sc.decode(n_dec, S_dec / n_dec + D) if n_dec else 0.0
            for r, c, d in chunks:
                t += sc.prefill(c, d)
            k = 1
        else:
            # decode-only: run until the next finish, the pool's end or the next arrival
            k = fin_heap[0][0] - D
            free = cap - used()
            k = min(k, free // n_dec) if n_dec else k
            k = max(k, 1)
            mean = S_dec / n_dec + D
            if nxt < N and not waiting:
                if sc.mode == "exact":
                    acc, kk = 0.0, 0
                    while kk < k and now + acc < arr_at(nxt):
                        acc += sc.decode(n_dec, mean + kk)
                        kk += 1
                    k = max(kk, 1)
                else:
                    t1 = sc.decode(n_dec, mean)
                    k = max(1, min(k, math.ceil((arr_at(nxt) - now) / t1)))
            t = sc.decode_run(n_dec, mean, k)
            dec_only_s += t
            dec_only_tok += k * n_dec
        now += t
        busy += t
        steps += k
        if n_dec:
            D += k
        # decoders that finished
        while fin_heap and fin_heap[0][0] <= D:
            _, _, ep, r = heapq.heappop(fin_heap)
            if r.epoch != ep or r.state != "decode":
                continue
            drop_from_decode(r)
            finish_req(r)
        # prompts that completed
        for r, c, d in chunks:
            r.done += c
            if r.done < r.target:
                continue
            prefilling.remove(r)
            priv_pf -= r.priv
            r.g += 1
            if fst_o[r.i] != fst_o[r.i]:
                fst_e[r.i], fst_o[r.i] = epoch, now
            if r.H is not None:
                for b in range(r.hit_blocks, r.L // bt):
                    h = r.H[b]
                    if h in cache:
                        continue        # computed by another request meanwhile: this copy stays private
                    cache[h] = [1]
                    cache_tok += bt
                    r.priv -= bt
                    r.held.append(h)
            if r.g >= r.O:
                # its private tokens go with it; its blocks stay cached
                finish_req(r)
                continue
            r.state = "decode"
            r.j, r.c = D, r.target
            P_dec += r.priv - r.j
            S_dec += r.c - r.j
            n_dec += 1
            r.epoch += 1
            heapq.heappush(fin_heap, (D + r.O - r.g, r.seq, r.epoch, r))
    if bar is not None:
        bar.close()
    # latencies: whole seconds and fractions subtracted apart, then added
    ae = np.floor(ta)
    ao = ta - ae
    del ta
    qe, qo, fe, fo, ee, eo = (x.astype(np.float64) if x.dtype != np.float64 else x
                              for x in (adm_e, adm_o, fst_e, fst_o, fin_e, fin_o))
    latency = {"queueing_s": (qe - ae) + (qo - ao), "ttft_s": (fe - ae) + (fo - ao),
               "decode_s": (ee - fe) + (eo - fo), "e2e_s": (ee - ae) + (eo - ao)}
    # arrival, prompt and output are the trace's own lists (not copied)
    res = ReplayResult(tr.name, setup.label, use_cache, cap, arrs, P, O,
                       None, None, None, cached_tok, preempts,
                       rejected, steps, busy, dec_only_s, dec_only_tok, max_running, sc.calls, ttft_slo_s, tpot_slo_s,
                       meta={"rate_scale": tr.meta.get("rate_scale", 1.0), "max_num_seqs": cfg.max_num_seqs,
                             "max_batched_tokens": cfg.max_batched_tokens, "step_costs": sc.mode,
                             "notices": list(tr.meta.get("notices", ()))},
                       failed=failed, latency=latency)
    del ae, ao, qe, qo, fe, fo, ee, eo
    res.__dict__["_trace_arrays"] = _trace_arrays(tr)
    return res


# ---- which setup serves a trace best ------------------------------------------------------------------
def _rank_key(row) -> tuple:
    """Higher is better: the share of tokens in requests that met both targets, then the smaller
    share of tokens in rejected requests (so that rejecting the long ones does not look fast),
    then the lower token-weighted mean end-to-end latency of the served ones."""
    att = row.get("slo_attainment_tok", math.nan)
    rej = row.get("rejected_tok", math.nan)
    e2e = row.get("e2e_s_mean_tok", math.nan)
    # shares compared to the percent: a difference below that falls through to the next criterion
    return (-1.0 if math.isnan(att) else round(att, 2), -(1.0 if math.isnan(rej) else round(rej, 2)),
            -(math.inf if math.isnan(e2e) else e2e))


def _winner(rows) -> dict:
    best = max(rows, key=_rank_key)
    others = [r for r in rows if r is not best]
    tie = any(_rank_key(r) == _rank_key(best) for r in others)
    by = "token-weighted mean end-to-end latency"
    for k, what in ((0, "SLO attainment (tokens)"), (1, "rejected tokens")):
        if others and all(_rank_key(r)[k] != _rank_key(best)[k] for r in others):
            by = what
            break
    return {"winner": best["setup"], "tie": tie, "by": by}


def crossovers(winners: Sequence[dict]) -> list[dict]:
    """Where the per-bucket winner changes, walking up the buckets that hold requests (a tied
    bucket, e.g. one every setup rejects whole, has no winner: it starts no crossover)."""
    out = []
    prev = None
    for w in winners:
        if w["requests"] == 0 or w.get("tie"):
            continue
        if prev is not None and w["winner"] != prev["winner"]:
            out.append({"at_tokens": w["bucket_lo"], "bucket": w["bucket"], "from": prev["winner"], "to": w["winner"]})
        prev = w
    return out


SYNTHETIC_DEPTHS = tuple(1024 * 2 ** k for k in range(8))     # 1K .. 128K, the study's grid


def synthetic_crossovers(setups: Sequence[cm.Setup], depths: Sequence[int] = SYNTHETIC_DEPTHS) -> list[dict]:
    """The study's kind of comparison for each pair of setups that differ in one thing (the same
    model on other cards, or another model on the same rig): one stream's decode speed
    (costmodel.decode, batch 1) over the depths where both fit (costmodel.max_context), and every
    context where one overtakes the other. Each: {a, b, depths, crossovers: [tokens],
    faster_before (at the shortest depth), faster_after (at the longest)}."""
    out = []
    fit = {s.label: cm.max_context(s, 1) for s in setups}
    speed = {s.label: {d: cm.decode(s, d, 1).tok_s for d in depths if d <= fit[s.label]} for s in setups}
    for i, sa in enumerate(setups):
        for sb in setups[i + 1:]:
            if sa.model.name != sb.model.name and sa.rig != sb.rig:
                continue
            a, b = sa.label, sb.label
            xs = sorted(set(speed[a]) & set(speed[b]))
            if len(xs) < 2:
                continue
            ya, yb = [speed[a][x] for x in xs], [speed[b][x] for x in xs]
            out.append({"a": a, "b": b, "depths": [xs[0], xs[-1]], "crossovers": cm.crossover(xs, ya, yb),
                        "faster_before": a if ya[0] >= yb[0] else b, "faster_after": a if ya[-1] >= yb[-1] else b})
    return out


def _pair_verdict(syn: dict, bucket_rows: Sequence[dict], prefix_cache: bool) -> dict:
    """Does the synthetic comparison of two setups hold on the trace? Judge the buckets with the
    two setups alone. With a synthetic crossover, it holds when the trace's winner switches the
    same way; without one, when the setup faster at every depth wins every bucket."""
    a, b = syn["faster_before"], syn["faster_after"]
    ws, tied = [], []
    for name, lo, _ in BUCKETS:
        rows = [r for r in bucket_rows if r["prefix_cache"] == prefix_cache and r["bucket"] == name
                and r["setup"] in (syn["a"], syn["b"]) and r.get("requests")]
        if len(rows) == 2:
            w = {"bucket": name, "bucket_lo": lo, "requests": rows[0]["requests"], **_winner(rows)}
            # a tie (both reject the whole bucket, say) is no win for either: left out of the judgement
            (tied if w["tie"] else ws).append(w if not w["tie"] else name)
    cr = crossovers(ws)
    lo_d, hi_d = syn["depths"]
    tie_note = (f" ({', '.join(tied)}: a tie, neither setup ahead)" if tied else "")
    if not ws:
        holds, verdict = False, ("cannot tell: no bucket of the trace holds requests" if not tied else
                                 "cannot tell: the two tie in every bucket of the trace" + tie_note)
    elif syn["crossovers"]:
        same = [c for c in cr if c["from"] == a and c["to"] == b]
        holds = bool(same)
        x = ", ".join(f"~{v:,.0f}" for v in syn["crossovers"])
        if same:
            verdict = (f"synthetic crossover at {x} tokens ({b} faster beyond) holds: on the trace {b} takes over "
                       f"from {same[0]['bucket']}")
        else:
            who = sorted({w["winner"] for w in ws})
            verdict = (f"synthetic crossover at {x} tokens ({b} faster beyond) does not hold: on the trace "
                       + (f"{who[0]} wins every bucket" if len(who) == 1 else
                          "; ".join(f"{c['to']} from {c['bucket']}" for c in cr)))
    else:
        lost = [w["bucket"] for w in ws if w["winner"] != a]
        holds = not lost
        verdict = (f"no synthetic crossover ({a} decodes one stream faster at every depth from {lo_d:,} to {hi_d:,} "
                   f"where both fit): " + ("holds, it wins every bucket of the trace" if holds else
                                           f"does not hold, the other wins {', '.join(lost)} on the trace"))
    if ws and tied:
        verdict += tie_note
    return {**syn, "holds": holds, "trace_winners": ws, "trace_crossovers": cr, "verdict": verdict,
            "trace_ties": tied}


# a study's run and bucket rows carry these fields of their setup (sweep.setup_fields)
SETUP_FIELDS = ("evidence", "model", "device", "hardware", "n_cards", "split", "link_gbps", "weights", "type_k",
                "mla_strategy", "runtime", "cv_error")


def evidence_text(res: dict) -> str:
    """What a trace study's numbers are: 'evidence: calibrated (runtime llama.cpp; its step times'
    cross-validated band: glm-4.7-flash decode ±21% / prefill ±25%, ...)' from its `evidence_detail`
    (report.workload.trace_study), else the kind replay.study gave its runs (`evidence`), else 'predicted'."""
    ev = res.get("evidence_detail")
    if not ev:
        return f"evidence: {res.get('evidence') or 'predicted'}"
    def pct(v):
        return "–" if v is None else f"±{100 * v:.0f}%"
    bands = "; ".join(f"{m} decode {pct(b['decode'])} / prefill {pct(b['prefill'])}" for m, b in ev["bands"].items())
    return (f"evidence: {ev['kind']} (runtime {ev['runtime']}" + (f"; its step times' cross-validated band: {bands}"
                                                                   if bands else "") + ")")


def study(trace, setups: Sequence[cm.Setup], config: ServerConfig | None = None, *, rate_scale: float = 1.0,
          prefix_cache: Sequence[bool] = (True, False), ttft_slo_s: float = DEFAULT_TTFT_SLO_S,
          tpot_slo_s: float = DEFAULT_TPOT_SLO_S, progress: bool = False,
          keeps_up_tok: float = KEEPS_UP_TOK, keep_results: bool = True) -> dict:
    """Replay `trace` on every setup, with and without prefix caching: per-run summaries, per-bucket
    rows, the per-bucket winner (token-weighted), where the winner changes, and one decision for
    the whole trace with its reason. The decision names a setup only when the best one meets
    both targets for at least `keeps_up_tok` of the tokens; below that, no setup keeps up and the
    decision says so (`setup` "", `keeps_up` False, `best` the top of the ranking).
    JSON-able (NaN where a figure does not exist) but for "_results", each run's ReplayResult
    (per request: what trace_requests.csv writes); `keep_results=False` leaves it empty, so
    that only one run's per-request arrays are held at a time (a million-request trace)."""
    tr = traces_mod.check_replayable(traces_mod.load(trace))
    if rate_scale != 1.0:
        tr = tr.scaled(rate_scale)
    if not setups:
        raise ValueError("`setups` is empty")
    cfg = config or ServerConfig()
    modes = [bool(p) for p in prefix_cache]
    if not tr.has_prefixes:
        modes = [False]          # no block hashes: caching changes nothing
    runs, bucket_rows, results = [], [], {}
    jobs = [(s, p) for p in modes for s in setups]
    it = jobs
    if progress:
        from glmbench._progress import tqdm
        it = tqdm(jobs, desc=f"replay {tr.name}", unit="run")
    from glmbench.predict import sweep
    for s, p in it:
        c = ServerConfig(cfg.max_num_seqs, cfg.max_batched_tokens, p, cfg.kv_tokens, cfg.step_costs)
        # progress: the run's own bar, per request, under the bar of runs (a single run of a
        # million-request trace ticks there, with its ETA, not only at its end)
        res = replay(tr, s, c, ttft_slo_s=ttft_slo_s, tpot_slo_s=tpot_slo_s, progress=progress)
        # what each row is (predicted, or calibrated) and of what, after its figures
        f = sweep.setup_fields(s)
        what = {k: f[k] for k in SETUP_FIELDS if k in f}
        runs.append({**res.summary(), **what})
        bucket_rows += [{**b, **what} for b in res.buckets()]
        if keep_results:
            results[(s.label, p)] = res
        del res
    winners = []
    for p in modes:
        for b, (name, lo, _) in enumerate(BUCKETS):
            rows = [r for r in bucket_rows if r["prefix_cache"] == (p and tr.has_prefixes) and r["bucket"] == name]
            n = rows[0]["requests"] if rows else 0
            w = {"prefix_cache": p, "bucket": name, "bucket_lo": lo, "requests": n,
                 "tokens": rows[0]["tokens"] if rows else 0}
            if n:
                w.update(_winner(rows))
                w["scores"] = {r["setup"]: {"slo_attainment_tok": r["slo_attainment_tok"], "rejected_tok": r["rejected_tok"],
                                            "e2e_s_mean_tok": r["e2e_s_mean_tok"]} for r in rows}
            else:
                w.update(winner="", tie=False, by="")
            winners.append(w)
    cross = {str(p): crossovers([w for w in winners if w["prefix_cache"] == p]) for p in modes}
    # the decision: the server a deployment would run (prefix caching on when the trace has hashes)
    main = modes[0]
    rows = [r for r in runs if r["prefix_cache"] == (main and tr.has_prefixes)]
    best = max(rows, key=_rank_key)
    ws = [w for w in winners if w["prefix_cache"] == main and w["requests"]]
    won_tok = sum(w["tokens"] for w in ws if w["winner"] == best["setup"])
    tot_tok = sum(w["tokens"] for w in ws) or 1
    reason = []
    none_served = all(r["rejected"] == r["requests"] - r["failed"] for r in rows)
    keeps_up = not none_served and best["slo_attainment_tok"] >= keeps_up_tok
    if none_served:
        reason.append("no setup serves any request of this trace")
    elif not keeps_up and any(r["slo_attainment_tok"] > 0 for r in rows):
        # (the first-ranked may have met nothing, ranked by rejected tokens over one that met a sliver)
        reason.append(f"no setup keeps up with this trace at this rate: the best, {best['setup']}, meets TTFT <= "
                      f"{ttft_slo_s:g} s and TPOT <= {tpot_slo_s:g} s for only {100 * best['slo_attainment_tok']:.1f}% "
                      f"of tokens (a setup keeps up at {100 * keeps_up_tok:.0f}%); ranked by that share, then "
                      "rejected tokens, then token-weighted mean end-to-end latency")
    elif all(r["slo_attainment_tok"] == 0 for r in rows):
        reason.append(f"no setup meets both TTFT <= {ttft_slo_s:g} s and TPOT <= {tpot_slo_s:g} s for any request at "
                      f"this rate (this one: median TTFT {best['ttft_s_p50']:.3g} s, median TPOT "
                      f"{best['tpot_s_p50']:.3g} s); ranked by rejected tokens, then token-weighted mean "
                      f"end-to-end latency")
    else:
        reason.append(f"meets TTFT <= {ttft_slo_s:g} s and TPOT <= {tpot_slo_s:g} s for "
                      f"{100 * best['slo_attainment_tok']:.1f}% of tokens")
    failed = rows[0]["failed"] if rows else 0
    if failed:
        reason.append(f"{failed} request{'s' if failed > 1 else ''} of the trace failed there (0 output tokens): "
                      "counted, not replayed")
    for r in sorted(rows, key=_rank_key, reverse=True):
        if r["rejected"] == r["requests"] - r["failed"]:
            reason.append(f"{r['setup']}: rejects every request ({r['rejected_why']})")
            continue
        reason.append(f"{r['setup']}: SLO {100 * r['slo_attainment_tok']:.1f}% of tokens, mean e2e "
                      f"{r['e2e_s_mean_tok']:.1f} s (token-weighted), p90 TTFT {r['ttft_s_p90']:.2f} s, "
                      f"{r['throughput_tok_s']:.0f} output tok/s, {r['rejected']} rejected"
                      + (f" ({r['rejected_why']}, ...)" if r["rejected"] else ""))
    cr = cross[str(main)]
    if not none_served:
        reason.append(f"{best['setup']} wins buckets holding {100 * won_tok / tot_tok:.0f}% of the trace's tokens")
        reason.append("the per-bucket winner never changes on this trace" if not cr else
                      "; ".join(f"from {c['bucket']} ({c['at_tokens']} tokens) {c['to']} wins over {c['from']}" for c in cr))
    synthetic = [_pair_verdict(c, bucket_rows, main and tr.has_prefixes) for c in synthetic_crossovers(setups)]
    for v in synthetic:
        reason.append(f"{v['a']} vs {v['b']}: {v['verdict']}")
    # `setup`: the decision, "" when no setup serves the trace or none keeps up; `best`: the top
    # of the ranking either way
    decision = {"setup": best["setup"] if keeps_up else "", "best": "" if none_served else best["setup"],
                "keeps_up": keeps_up, "keeps_up_tok": keeps_up_tok, "prefix_cache": main and tr.has_prefixes,
                "reasons": reason}
    return {"evidence": ", ".join(dict.fromkeys(r["evidence"] for r in runs)),
            "trace": {**tr.summary(), "attribution": tr.attribution, "rate_scale": tr.meta.get("rate_scale", 1.0),
                      "notices": list(tr.meta.get("notices", ()))},
            "server": {"max_num_seqs": cfg.max_num_seqs, "max_batched_tokens": cfg.max_batched_tokens,
                       "step_costs": cfg.step_costs, "kv_tokens": cfg.kv_tokens},
            "slo": {"ttft_s": ttft_slo_s, "tpot_s": tpot_slo_s}, "runs": runs, "buckets": bucket_rows,
            "winners": winners, "crossovers": cross, "synthetic_crossovers": synthetic, "decision": decision,
            "_results": results}


# A closed-loop client (vLLM's `bench serve` / benchmark_serving and SGLang's bench_serving with
# --max-concurrency B and every request queued at once): the next request is sent when one finishes.
# It reaches the engine this long after the finish (the response's last chunk reaching the client,
# the next POST, the server's HTTP handling and tokenization: milliseconds). The engine loop
# schedules its next step as soon as the last one ends (vLLM's EngineCore: take what is queued,
# schedule, execute), so a request sent on a finish never joins the step that starts at that
# finish: it waits for that step to end. Any gap above 0 and below one decode step gives the same
# schedule (the value only shifts the client's clock by itself).
CLIENT_GAP_S = 1e-3


def closed_loop(setup: cm.Setup, prompt: int, output: int, requests: int, concurrency: int,
                config: ServerConfig | None = None, *, client_gap_s: float = CLIENT_GAP_S) -> dict:
    """`requests` requests of `prompt` tokens in and `output` out, sent by a closed-loop client that
    keeps `concurrency` in flight: the first `concurrency` at t = 0, request concurrency + k when the
    k-th one finishes, each reaching the server `client_gap_s` after it is sent (CLIENT_GAP_S).
    `bench_serve` with every request queued at once (`rate` inf); see there."""
    return bench_serve(setup, prompt, output, requests, concurrency=concurrency, config=config,
                       client_gap_s=client_gap_s)


def bench_serve(setup: cm.Setup, prompt: int, output: int, requests: int, *, concurrency: int | None = None,
                rate: float = math.inf, burstiness: float = 1.0, seed: int = 0, config: ServerConfig | None = None,
                client_gap_s: float = CLIENT_GAP_S) -> dict:
    """A serving benchmark's client as vLLM's `bench serve` (and SGLang's bench_serving) runs it:
    `requests` requests of `prompt` tokens in and `output` out, generated at `rate` per second
    (inf: all at t = 0; else gaps drawn from a gamma distribution of shape `burstiness` and mean
    1 / rate, 1 a Poisson process, from numpy's generator seeded with `seed`: the run's own arrival
    times are not published, so its mean latencies are matched, not its draws), each sent when it
    is generated and, with `concurrency` B, once fewer than B are in flight (its semaphore: request
    k >= B waits for the (k - B + 1)-th finish). Each reaches the server `client_gap_s` after it is
    sent (CLIENT_GAP_S), so one sent on a finish joins the step after the one that starts then.
    Replayed on `config` (default: `concurrency` or `requests` seqs, the setup's prefill budget per
    step, no prefix cache; `server_config` gives a server's own defaults) until the send times stop
    changing: a request's finish depends on the sends before it and, where the server has room for
    more than B (vLLM's 1024 seqs), on those of its own round that join its decode steps, so a round
    of B requests can take two replays to settle (Qwen3-30B-A3B on an H100, 100 requests 10 at a
    time: 20 replays); at most 3 x rounds + 3 are run. Without a concurrency limit, one replay.

    Returns {"sent_s", "ttft_s", "tpot_s", "e2e_s"} (numpy arrays in send order, from when each
    request was sent: the client's clock, which includes the gap and any wait on the server),
    "result" (the last ReplayResult, its latencies from each request's arrival at the server)
    and "replays" (how many were run). A request the server rejects has nan latencies and frees
    its slot when it reaches the server."""
    for nm, v, lo in (("prompt", prompt, 1), ("output", output, 1), ("requests", requests, 1),
                      ("seed", seed, 0)) + ((("concurrency", concurrency, 1),) if concurrency is not None else ()):
        if isinstance(v, bool) or not isinstance(v, int) or v < lo:
            raise ValueError(f"`{nm}` must be a whole number >= {lo}, got {v!r}")
    for nm, v in (("rate", rate), ("burstiness", burstiness)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or math.isnan(v) or not v > 0 \
                or (nm == "burstiness" and math.isinf(v)):
            raise ValueError(f"`{nm}` must be a number > 0{' (inf: all at once)' if nm == 'rate' else ''}, got {v!r}")
    if isinstance(client_gap_s, bool) or not isinstance(client_gap_s, (int, float)) \
            or not math.isfinite(client_gap_s) or client_gap_s < 0:
        raise ValueError(f"`client_gap_s` must be a number of seconds >= 0, got {client_gap_s!r}")
    cm._setup(setup)
    N, gap = requests, float(client_gap_s)
    B = N if concurrency is None else min(concurrency, N)
    cfg = config or ServerConfig(max_num_seqs=B, max_batched_tokens=setup.n_ubatch, prefix_cache=False)
    if math.isinf(rate):
        gen = np.zeros(N)
    else:
        gaps = np.random.default_rng(seed).gamma(float(burstiness), 1.0 / (float(rate) * float(burstiness)), N - 1)
        gen = np.concatenate([[0.0], np.cumsum(gaps)])
    sent = gen.copy()
    limit = 3 * -(-N // B) + 3
    for k in range(1, limit + 1):
        arr = sent + gap
        res = replay(traces_mod.from_requests([(float(a), prompt, output) for a in arr],
                                              name=f"{N} x {prompt}+{output}"
                                                   + (f", {B} at a time" if B < N else "")
                                                   + ("" if math.isinf(rate) else f", {rate:g}/s")), setup, cfg)
        e2e = res.latency["e2e_s"]
        fin = np.sort(arr + np.where(np.isnan(e2e), 0.0, e2e))
        new = np.concatenate([gen[:B], np.maximum(gen[B:], fin[:N - B])])
        if np.array_equal(new, sent):
            break
        sent = new
    else:
        raise RuntimeError(f"the client's {N} requests did not settle in {limit} replays")
    lat = res.latency
    return {"sent_s": sent, "ttft_s": lat["ttft_s"] + gap, "tpot_s": lat["decode_s"] / max(output - 1, 1),
            "e2e_s": lat["e2e_s"] + gap, "result": res, "replays": k}


# Each server's own limits where its command line sets none (server_config): requests at once and
# prompt tokens per step. vLLM 0.10.1 (vllm/engine/arg_utils.py, EngineArgs._set_default_args_v1,
# the OpenAI server): 1024 sequences on a device of >= 70 GiB other than an A100, else 256, and the
# prefill budget of the runtime model (Setup.n_ubatch: 8192 / 2048 by the same rule); its in-process
# engine (the LLM class) the same sequences and 16384 / 8192 tokens. SGLang sizes its
# request pool from memory (2048-4096; sglang 0.5.9, model_runner_kv_cache_mixin.py) and its token pool
# before it: 4096, at most half the pool's tokens (server_config). llama-server:
# slots -np (default -1, auto: 4, with a unified KV cache; tools/server/server.cpp as vendored by
# llama-cpp-python 0.3.36; older builds and ik_llama.cpp's: 1) and -b 2048 tokens per step.
SERVER_SEQS = {"vllm": None, "sglang": 4096, "llama.cpp": 4, "ik_llama.cpp": 1}
SERVER_BATCH_TOKENS = {"llama.cpp": 2048, "ik_llama.cpp": 2048}


def server_config(setup: cm.Setup, server: str, *, max_num_seqs: int | None = None,
                  max_batched_tokens: int | None = None, offline: bool = False) -> ServerConfig:
    """The ServerConfig of `server` (vllm, sglang, llama.cpp's or ik_llama.cpp's llama-server) on `setup`:
    its defaults (SERVER_SEQS, SERVER_BATCH_TOKENS, else the setup's prefill budget) where the
    arguments (its command line's limits) do not set them; no prefix cache (random prompts).
    `offline`: vLLM's engine run in-process (the `LLM` class: bench latency / bench throughput), whose
    prefill budget is 16384 tokens on a device of >= 70 GiB other than an A100, else 8192."""
    if server not in SERVER_SEQS:
        raise ValueError(f"unknown server {server!r}: one of {', '.join(SERVER_SEQS)}")
    g = setup.gpu
    big = g.memory_gib >= 70 and "a100" not in g.key       # vLLM's rule for its larger defaults
    seqs = max_num_seqs if max_num_seqs is not None else SERVER_SEQS[server]
    if seqs is None:        # vLLM: by the device's memory
        seqs = 1024 if big else 256
    if max_batched_tokens is not None:
        toks = max_batched_tokens
    elif offline and server == "vllm":
        toks = 16384 if big else 8192
    else:
        toks = SERVER_BATCH_TOKENS.get(server, setup.n_ubatch)
    pool = None
    if server == "sglang":
        # SGLang sizes its token pool from memory first and then runs at most half its tokens' worth of
        # requests (model_runner.py: min(max_total_num_tokens // 2, the request pool)): the pool is the
        # memory model's for one stream, the requests capped by it
        pool = kv_pool_tokens(setup, 1)
        seqs = max(1, min(seqs, pool // 2))
    return ServerConfig(max_num_seqs=seqs, max_batched_tokens=toks, prefix_cache=False, kv_tokens=pool)


def batched_throughput(setup: cm.Setup, streams: int, prompt: int = 4096, output: int = 256,
                       config: ServerConfig | None = None) -> dict:
    """`streams` requests of `prompt` tokens arriving together, each generating `output`: the
    aggregate output tokens per second while they decode together (decode-only steps) and over
    the whole run. The study's batched figure (two RTX 3090s, about 500 tok/s in aggregate) is
    one such point."""
    tr = traces_mod.from_requests([(0.0, prompt, output)] * streams, name=f"{streams} x {prompt}+{output}")
    cfg = config or ServerConfig(max_num_seqs=max(streams, 1), prefix_cache=False)
    res = replay(tr, setup, cfg)
    s = res.summary()
    return {"setup": setup.label, "streams": streams, "prompt": prompt, "output": output,
            "decode_tok_s": s["decode_tok_s"], "throughput_tok_s": s["throughput_tok_s"],
            "max_running": s["max_running"], "rejected": s["rejected"]}
