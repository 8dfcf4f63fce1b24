"""`glmbench search`: the cheapest setup that meets a workload's latency targets, over a catalog
of cards, models, formats, splits and runtimes.

1. Candidates: every combination of the models, GPUs (default: every card of the hardware
   catalog, glmbench/data/hardware/*.json, that has a price: the others are named once in the
   result, `run["unpriced_cards"]`), card counts, weight and KV formats, splits (one card runs
   unsplit) and runtime profiles asked for.
2. Pruning, in this order, each candidate recorded with the constraint that removed it:
   `invalid` (the setup cannot exist: a tensor split whose heads do not divide, more cards than
   layers, several cards without a link), `price` (the price table has no price for the card on
   its basis, predict/prices.py), `memory` (the weights, workspace and overhead leave no room for
   a KV cache: replay.kv_pool_tokens is 0), `context` (so many of the trace's requests cannot fit
   alone in the KV pool or the model's context that the attainment target is out of reach: the
   replay rejects such requests and a rejected request misses every target, so pruning here
   never drops a setup that could pass).
3. Evaluation of each remaining setup (replay.replay, the discrete-event simulation of a
   continuous-batching server): the trace at `rate_scale`; the setup meets the SLOs when at least
   `attainment` of the requests (default 90%, DistServe's goodput criterion) have TTFT <=
   `ttft_slo_s` and TPOT <= `tpot_slo_s` (replay.ReplayResult.meets). Then the highest rate it
   sustains: the largest rate scale that still meets the SLOs, found by doubling (or halving)
   from `rate_scale` to a bracket and bisecting it (geometric midpoints) until its ends are
   within `rate_tol` (5%) of each other; the lower end, a rate that was replayed and passed, is
   reported. Attainment is assumed to fall as the rate rises (the bisection finds one crossing).
   Bracketing stops at 1024 times (or 1/1024 of) `rate_scale`: `max_rate_bound` says "above"
   or "none" there.
4. Costs (after evaluation, so that a new price table reuses every replay): USD per hour of the
   setup's cards (predict/prices.py); USD per million output tokens = USD per hour / the output
   tokens per hour of requests that met both targets (goodput), at the trace's rate
   (`usd_per_mtok`) and at the highest sustained rate (`usd_per_mtok_at_max`).
5. Answers: the cheapest setup meeting the SLOs at the trace's rate (lowest `usd_per_mtok`, then
   lower token-weighted mean end-to-end latency, then the label); the Pareto fronts of cost
   per million output tokens vs goodput at the highest sustained rate, and vs p99 TTFT at the
   trace's rate.

Execution: the evaluations run in parallel, in worker processes on this machine by default
(`workers`, default: every CPU this process may use) or on a Ray cluster (`ray="auto"` or an
address; Ray is optional: `pip install "glmbench[ray]"`); each evaluation is deterministic, so
the records are the same either way. A worker that dies mid-task (killed, out of memory) has its task run again, up to
`MAX_RETRIES` times, by a fresh worker (here alone in a new process, so that a death is blamed
on the task that caused it; Ray's own task retries there).
With `store` (a .json path) the search resumes: a setup whose record there has the same
`fingerprint` (the setup's own, the trace's content, the targets, the server and the glmbench
version) is not replayed again; the file is rewritten atomically every few seconds and at the
end. Every number is a prediction of the cost model (evidence "predicted", or "calibrated"
with a calibrated runtime profile).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import socket
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Sequence

from glmbench import __version__, vocab
from glmbench.models import configs
from glmbench.predict import costmodel as cm
from glmbench.predict import hardware
from glmbench.predict import prices as prices_mod
from glmbench.predict import replay as rp
from glmbench.predict import sweep
from glmbench.predict import traces as traces_mod
from glmbench.results import records as rec

DEFAULT_ATTAINMENT = 0.9      # DistServe (Zhong et al., OSDI 2024): goodput at a 90% SLO attainment goal
DEFAULT_CARDS = (1, 2, 4, 8)
DEFAULT_WEIGHTS = ("q4_K", "q8_0")
DEFAULT_KV = ("f16", "q8_0")
DEFAULT_SPLITS = ("layer", "tensor")
DEFAULT_RUNTIMES = (vocab.DEFAULTS["runtime"],)
RATE_TOL = 0.05
RATE_RANGE = 1024             # bracketing stops at rate_scale * 1024 and rate_scale / 1024
MAX_RETRIES = 3               # runs of a task whose worker died, after the first
STAGES = ("invalid", "price", "memory", "context")
_FLUSH_S = 5.0


# ---- what is searched for --------------------------------------------------------------------------
@dataclass(frozen=True)
class Objective:
    """The targets and the server: TTFT and TPOT targets (seconds), the share of requests that
    must meet both, the rate scale the trace is served at, whether to find each setup's highest
    sustained rate (and to which tolerance), and the replay's server settings."""
    ttft_slo_s: float
    tpot_slo_s: float
    attainment: float = DEFAULT_ATTAINMENT
    rate_scale: float = 1.0
    max_rate: bool = True
    rate_tol: float = RATE_TOL
    max_num_seqs: int = rp.ServerConfig.max_num_seqs
    max_batched_tokens: int = rp.ServerConfig.max_batched_tokens
    prefix_cache: bool = True
    step_costs: str = "interpolated"

    def __post_init__(self):
        for nm in ("ttft_slo_s", "tpot_slo_s"):
            v = getattr(self, nm)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not v > 0:
                raise ValueError(f"`{nm}` (the {'TTFT' if nm.startswith('ttft') else 'TPOT'} target) must be a "
                                 f"positive number of seconds, got {v!r}")
        a = self.attainment
        if isinstance(a, bool) or not isinstance(a, (int, float)) or not 0 < a <= 1:
            raise ValueError(f"`attainment` must be a share in (0, 1], got {a!r}")
        vocab.check_positive("rate_scale", self.rate_scale)
        t = self.rate_tol
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 < t < 1:
            raise ValueError(f"`rate_tol` must be in (0, 1), got {t!r}")
        self.server()       # checks max_num_seqs, max_batched_tokens, step_costs

    def server(self) -> rp.ServerConfig:
        return rp.ServerConfig(self.max_num_seqs, self.max_batched_tokens, self.prefix_cache, None, self.step_costs)


def trace_fingerprint(trace: traces_mod.Trace) -> str:
    """A hash of what a replay reads from a trace: arrivals, lengths, block hashes and their size
    (not its name or file)."""
    h = hashlib.sha256()
    h.update(json.dumps([trace.block_tokens, trace.arrival_s, trace.prompt, trace.output,
                         [list(x) if x else None for x in trace.hash_ids]], separators=(",", ":")).encode())
    return h.hexdigest()[:16]


def task_fingerprint(setup: cm.Setup, trace_fp: str, objective: Objective) -> str:
    """What determines an evaluation's numbers: the setup (sweep.setup_fingerprint: config, rig,
    formats, runtime, version), the trace's content and the objective."""
    return vocab.fingerprint("search", __version__, sweep.setup_fingerprint(setup), trace_fp, objective)


# ---- candidates and pruning ----------------------------------------------------------------------
def candidates(models: Sequence, gpus: Sequence | None = None, cards: Sequence[int] = DEFAULT_CARDS,
               weights: Sequence[str] = DEFAULT_WEIGHTS, kv: Sequence[str] = DEFAULT_KV,
               splits: Sequence[str] = DEFAULT_SPLITS, runtimes: Sequence = DEFAULT_RUNTIMES, *,
               link_gbps: float | None = None, link_latency_us: float | None = None,
               mla_strategy: str = vocab.DEFAULTS["mla_strategy"]) -> tuple[list, list]:
    """Every combination as a costmodel.Setup: (setups, invalid), where `invalid` holds a pruned
    record for each combination that cannot exist. `gpus` None: every card of the catalog. A
    misspelled model, GPU, format, split or runtime raises ValueError before anything else."""
    models = _nonempty("models", models)
    gpus = [hardware.get_gpu(g) for g in (hardware.list_gpus() if gpus is None else _nonempty("gpus", gpus))]
    cfgs = [configs.load(m) for m in models]
    cards = _nonempty("cards", cards)
    for n in cards:
        vocab.check_int("cards", n, 1)
    weights = [vocab.weight_format(w).name for w in _nonempty("weights", weights)]
    kv = [vocab.kv_format(k).name for k in _nonempty("kv", kv)]
    splits = _nonempty("splits", splits)
    for s in splits:
        if s not in ("layer", "tensor"):
            raise ValueError(f"`splits` must hold 'layer' and/or 'tensor' (one card runs unsplit), got {s!r}")
    runtimes = [cm.load_runtime(r) for r in _nonempty("runtimes", runtimes)]
    vocab.mla_strategy(mla_strategy)
    setups, invalid, seen = [], [], set()
    for cfg in cfgs:
        for g in gpus:
            for n in sorted(set(cards)):
                for sp in (("none",) if n == 1 else tuple(dict.fromkeys(splits))):
                    for w in dict.fromkeys(weights):
                        for k in dict.fromkeys(kv):
                            for rt in runtimes:
                                spec = {"model": cfg.name, "hardware": g.key, "n_cards": n, "split": sp, "weights": w,
                                        "type_k": k, "runtime": rt.name}
                                try:
                                    rig = hardware.Rig(g, n, link_gbps=link_gbps if n > 1 else None,
                                                       link_latency_us=link_latency_us if n > 1 else None)
                                    s = cm.Setup(cfg, rig, split=sp, weights=w, kv=k, mla_strategy=mla_strategy,
                                                 runtime=rt)
                                except ValueError as e:
                                    invalid.append(_pruned(spec, "invalid", str(e)))
                                    continue
                                fp = sweep.setup_fingerprint(s)
                                if fp in seen:      # a model file fixes its own weights: one setup
                                    continue
                                seen.add(fp)
                                setups.append(s)
    return setups, invalid


def _nonempty(name, v) -> list:
    if isinstance(v, (str, int)) and not isinstance(v, bool):
        v = [v]
    v = list(v or [])
    if not v:
        raise ValueError(f"`{name}` is empty")
    return v


def _pruned(spec: dict, stage: str, why: str) -> dict:
    return {"evidence": "predicted", **spec, "status": "pruned", "pruned_by": stage, "why": why}


def prune(setups: Sequence[cm.Setup], trace: traces_mod.Trace, objective: Objective,
          price_table: prices_mod.PriceTable) -> tuple[list, list]:
    """(kept setups, pruned records) by the price and memory constraints of the module text."""
    keep, out = [], []
    # a request logged with 0 output tokens failed in the traced system: the replay does not run it
    lengths = sorted(p + o for p, o in zip(trace.prompt, trace.output) if o > 0)
    allowed = len(lengths) - math.ceil(objective.attainment * len(lengths) - 1e-9)   # misses the target allows
    for s in setups:
        spec = _spec(s)
        why = price_table.why_unpriced(s.gpu)
        if why is not None:
            out.append(_pruned(spec, "price", why))
            continue
        pool = rp.kv_pool_tokens(s, objective.max_num_seqs)
        if pool == 0:
            m = cm.memory(s, 0, objective.max_num_seqs)
            c = max(m.cards, key=lambda c: c.total)
            out.append(_pruned(spec, "memory", f"the weights do not fit: {c.weights / hardware.GIB:.1f} GiB of weights + "
                                               f"{(c.workspace + c.overhead) / hardware.GIB:.1f} GiB workspace and overhead "
                                               f"on a {c.capacity / hardware.GIB:.1f} GiB card"))
            continue
        ctx = s.model.max_position_embeddings or math.inf
        # replay.replay rejects a request of L + O tokens when L + O - 1 > pool or L + O > context
        limit = min(pool + 1, ctx)
        too_long = len(lengths) - _count_le(lengths, limit)
        if too_long > allowed:
            spec.update(kv_pool_tokens=pool, model_context=ctx if ctx != math.inf else None, too_long=too_long,
                        longest_request=lengths[-1])
            out.append(_pruned(spec, "context",
                               f"{too_long} of {len(lengths)} requests ({100 * too_long / len(lengths):.1f}%) cannot fit "
                               f"alone (KV pool {pool:,} tokens, model context {ctx:,}; longest request "
                               f"{lengths[-1]:,} tokens): at most {allowed} may miss"))
            continue
        keep.append(s)
    return keep, out


def _count_le(sorted_vals, x) -> int:
    import bisect
    return bisect.bisect_right(sorted_vals, x)


def _spec(s: cm.Setup) -> dict:
    f = sweep.setup_fields(s)
    keep = ("evidence", "model", "model_type", "device", "hardware", "n_cards", "split", "link_gbps", "weights",
            "type_k", "mla_strategy", "runtime", "setup", "cv_error")
    out = {k: f[k] for k in keep if k in f}
    out["setup_fingerprint"] = f["fingerprint"]
    return out


class EmptySearch(ValueError):
    """No candidate is left after pruning; the message says which constraint removed them."""


def explain_empty(n_candidates: int, pruned: Sequence[dict]) -> str:
    by = Counter(r["pruned_by"] for r in pruned)
    left = n_candidates
    last = None
    parts = []
    for st in STAGES:
        if by[st]:
            left -= by[st]
            rs = [r for r in pruned if r["pruned_by"] == st]
            parts.append(f"{st}: {by[st]} (e.g. {rs[0]['setup'] if 'setup' in rs[0] else _label(rs[0])}: {rs[0]['why']})")
            if left == 0:
                last = st
    what = {"invalid": "no combination asked for can exist", "price": "the price table prices none of the cards left",
            "memory": "no card holds the weights of the models left", "context":
            "no setup left can hold enough of the trace's requests to reach the attainment target"}
    return (f"no candidate setup is left after pruning ({n_candidates} candidates): the `{last}` constraint removed "
            f"the last ones ({what.get(last, '')}); removed by " + "; ".join(parts))


def _label(spec: dict) -> str:
    return (f"{spec['model']}, {spec['n_cards']} x {spec['hardware']}" + (f", {spec['split']} split" if spec["split"] != "none" else "")
            + f", {spec['weights']}/{spec['type_k']}, {spec['runtime']}")


# ---- one evaluation (runs in a worker) --------------------------------------------------------------
def _replay_metrics(res: rp.ReplayResult, scale: float, trace: traces_mod.Trace) -> dict:
    """SLO attainment and goodput of one replay as ReplayResult.summary() counts them (a request
    the trace logged as failed, when the replay marks it so, is left out), without the summary's
    percentiles: the bisection needs only these."""
    failed = getattr(res, "failed", None)
    n = len(res) - (int(sum(bool(x) for x in failed)) if failed is not None else 0)
    ok = [i for i in range(len(res)) if res.meets(i)]
    span = res.makespan_s
    return {"rate_scale": scale, "rate_req_s": _rate(trace, scale), "slo_attainment": len(ok) / n if n else math.nan,
            "goodput_req_s": len(ok) / span if span > 0 else math.nan,
            "goodput_tok_s": sum(res.output[i] for i in ok) / span if span > 0 else math.nan}


def _rate(trace, scale) -> float:
    """Requests per second at `scale`: the trace's n arrivals have n - 1 gaps between its first and
    last (a benchmark's --request-rate r spaces its arrivals 1/r apart on average)."""
    d = trace.duration_s
    return (len(trace) - 1) / d * scale if d > 0 else math.nan


def evaluate(setup: cm.Setup, trace: traces_mod.Trace, objective: Objective) -> dict:
    """Replay `trace` on `setup` at the objective's rate scale, and (objective.max_rate) find the
    highest rate scale that still meets the SLOs. Returns the record's replay fields."""
    t0 = time.perf_counter()
    cfg = objective.server()
    costs = rp.StepCosts(setup, cfg.step_costs)       # shared by every replay of this setup
    replays = 0
    memo = {}

    def run(scale):
        nonlocal replays
        tr = trace.scaled(scale) if scale != 1.0 else trace
        res = rp.replay(tr, setup, cfg, ttft_slo_s=objective.ttft_slo_s, tpot_slo_s=objective.tpot_slo_s, costs=costs)
        replays += 1
        memo[scale] = _replay_metrics(res, scale, trace)
        return res, memo[scale]

    s0 = objective.rate_scale
    res, m0 = run(s0)
    summ = res.summary()
    need = objective.attainment
    out = {"requests": len(res), "kv_pool_tokens": res.kv_tokens, "prefix_cache": res.prefix_cache,
           "rejected": summ["rejected"], "rejected_why": summ["rejected_why"],
           "rate_req_s": m0["rate_req_s"], "slo_attainment": summ["slo_attainment"],
           "feasible": summ["slo_attainment"] >= need,
           "ttft_p50_s": summ["ttft_s_p50"], "ttft_p99_s": summ["ttft_s_p99"],
           "tpot_p50_s": summ["tpot_s_p50"], "tpot_p99_s": summ["tpot_s_p99"],
           "e2e_mean_s": summ["e2e_s_mean"], "e2e_mean_tok_s": summ["e2e_s_mean_tok"],
           "queueing_p99_s": summ["queueing_s_p99"], "preemptions": summ["preemptions"],
           "goodput_req_s": summ["goodput_req_s"], "goodput_tok_s": summ["goodput_tok_s"],
           "throughput_tok_s": summ["throughput_tok_s"], "makespan_s": summ["makespan_s"],
           "busy_share": summ["busy_s"] / summ["makespan_s"] if summ["makespan_s"] > 0 else math.nan}
    if objective.max_rate:
        best, fail, bound = _max_rate(run, s0, m0, need, objective.rate_tol)
        mb = memo.get(best) if best else None
        out.update(max_rate_scale=best, max_rate_fail_scale=fail, max_rate_bound=bound,
                   max_rate_req_s=mb["rate_req_s"] if mb else 0.0,
                   max_goodput_tok_s=mb["goodput_tok_s"] if mb else 0.0,
                   max_goodput_req_s=mb["goodput_req_s"] if mb else 0.0,
                   max_rate_attainment=mb["slo_attainment"] if mb else math.nan)
    out.update(replays=replays, eval_s=time.perf_counter() - t0, cost_model_calls=costs.calls)
    return out


def _max_rate(run, s0: float, m0: dict, need: float, tol: float) -> tuple:
    """(the highest rate scale found to meet the SLOs, the lowest found to miss them (None: none
    missed), how it was bounded): "bisected" (the two within `tol` of each other), "above" (still
    passing at RATE_RANGE x s0), "none" (failing down to s0 / RATE_RANGE: 0 returned)."""
    ok = m0["slo_attainment"] >= need
    lo, hi = (s0, None) if ok else (None, s0)
    s = s0
    while True:
        s = s * 2 if ok else s / 2
        if s > s0 * RATE_RANGE:
            return lo, None, "above"
        if s < s0 / RATE_RANGE:
            return 0.0, hi, "none"
        passed = run(s)[1]["slo_attainment"] >= need
        if passed:
            lo = s
        else:
            hi = s
        if lo is not None and hi is not None:
            break
        if not ok and s == s0 / 2:
            # failing at half the rate too: try the floor once, so that a setup too slow even for
            # a lone request costs two more replays, not ten
            if run(s0 / RATE_RANGE)[1]["slo_attainment"] < need:
                return 0.0, s0 / RATE_RANGE, "none"
    while hi / lo > 1 + tol:
        mid = math.sqrt(lo * hi)
        if run(mid)[1]["slo_attainment"] >= need:
            lo = mid
        else:
            hi = mid
    return lo, hi, "bisected"


def _evaluate_record(key: str, setup: cm.Setup, trace, objective, hook) -> dict:
    if hook is not None:
        hook(key, setup)
    r = {**_spec(setup), "fingerprint": key, "status": "evaluated"}
    r.update(evaluate(setup, trace, objective))
    r["worker"] = f"{socket.gethostname()}:{os.getpid()}"
    return r


# ---- executors ---------------------------------------------------------------------------------------
_W: dict = {}


def _die_with_parent(parent: int) -> None:
    """A pool worker ends when the command that forked it dies (kill -9, the OOM killer): otherwise the
    orphan waits on its task queue for ever (its siblings hold the queue's pipe open, so it never reads
    EOF). Linux's prctl(PR_SET_PDEATHSIG, SIGKILL): the worker has nothing of its own to save, its
    results go to the parent. Elsewhere (no prctl) nothing changes."""
    import sys
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes
        import signal
        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):     # no libc prctl: as before
        return
    if os.getppid() != parent:            # the parent died before the call: nothing will send the signal
        os._exit(1)


def _pool_init(trace, objective, hook, started, parent=None):
    if parent is not None:
        _die_with_parent(parent)
    _W.update(trace=trace, objective=objective, hook=hook, started=started)


def _pool_task(key, setup):
    _W["started"].put((key, os.getpid()))
    return _evaluate_record(key, setup, _W["trace"], _W["objective"], _W["hook"])


def _failed(key, setup, why) -> dict:
    return {**_spec(setup), "fingerprint": key, "status": "failed", "why": why}


def run_local(tasks: dict, trace, objective, *, workers: int, on_result: Callable, hook=None,
              max_retries: int = MAX_RETRIES) -> dict:
    """Evaluate `tasks` (key -> Setup) in `workers` processes (1: in this process). A worker that
    dies takes its pool down (concurrent.futures): the results already in are kept, the tasks
    that were running are suspects and each runs again alone in a one-worker pool (so that a
    death there is that task's own; one that dies more than `max_retries` times is recorded as
    failed), and the rest go to a fresh pool. Returns {"restarts": n, "deaths": {key: n}}."""
    deaths: Counter = Counter()
    if workers <= 1:
        for key, s in tasks.items():
            on_result(_safe_eval(key, s, trace, objective, hook))
        return {"restarts": 0, "deaths": {}}
    import multiprocessing as mp
    pending = dict(tasks)
    restarts = idle_deaths = 0
    ctx = mp.get_context()
    while pending:
        broken, suspects = _pool_round(pending, min(workers, len(pending)), ctx, trace, objective, hook, on_result)
        if not broken:
            continue
        restarts += 1
        if not suspects:
            idle_deaths += 1
            if idle_deaths > max_retries:
                raise RuntimeError(f"the search's worker processes died {idle_deaths} times with no task running "
                                   "(out of memory? killed?)")
        for k in suspects:
            deaths[k] += 1
            while True:
                if deaths[k] > max_retries:
                    on_result(_failed(k, pending.pop(k), f"its worker died {deaths[k]} times"))
                    break
                alone = {k: pending[k]}
                died = _pool_round(alone, 1, ctx, trace, objective, hook, on_result)[0]
                if not alone:           # finished (or raised): on_result has it
                    del pending[k]
                    break
                if died:
                    deaths[k] += 1
    return {"restarts": restarts, "deaths": dict(deaths)}


def _pool_round(pending: dict, workers: int, ctx, trace, objective, hook, on_result) -> tuple:
    """One process pool over `pending` (finished tasks are removed from it): (whether a worker
    died, the tasks that were running when it did)."""
    import concurrent.futures as cf
    from concurrent.futures.process import BrokenProcessPool
    started = ctx.SimpleQueue()     # put() writes to the pipe at once: a start survives a kill right after it
    ex = cf.ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_pool_init,
                                initargs=(trace, objective, hook, started, os.getpid()))
    broken = False
    try:
        futs = {ex.submit(_pool_task, k, s): k for k, s in pending.items()}
        for f in cf.as_completed(futs):
            k = futs[f]
            try:
                r = f.result()
            except BrokenProcessPool:
                broken = True
                break
            except Exception as e:          # the evaluation raised: deterministic, not retried
                r = _failed(k, pending[k], f"{type(e).__name__}: {e}")
            del pending[k]
            on_result(r)
    except BaseException:
        ex.shutdown(wait=False, cancel_futures=True)
        raise
    if broken:
        # results that arrived before the pool broke are kept, not recomputed
        for f, k in futs.items():
            if k in pending and f.done() and not f.cancelled() and f.exception() is None:
                del pending[k]
                on_result(f.result())
    ex.shutdown(wait=not broken, cancel_futures=True)
    in_flight = set()
    while broken and not started.empty():
        in_flight.add(started.get()[0])
    started.close()
    return broken, sorted(k for k in in_flight if k in pending)


def _safe_eval(key, setup, trace, objective, hook) -> dict:
    try:
        return _evaluate_record(key, setup, trace, objective, hook)
    except (ValueError, ArithmeticError, RuntimeError) as e:
        return _failed(key, setup, f"{type(e).__name__}: {e}")


def _ray_task(trace, objective, hook, key, setup):
    return _evaluate_record(key, setup, trace, objective, hook)


def ray_connect(address: str | None, num_cpus: int | None = None):
    """Connect to Ray: an address ("ray://host:10001", "host:6379"), or "auto": the cluster this
    machine belongs to (RAY_ADDRESS or a running `ray start`), else a local one started now with
    `num_cpus` CPUs. Returns (ray module, started_here)."""
    try:
        import ray
    except ImportError:
        raise ImportError('--ray needs Ray, an optional dependency: pip install "glmbench[ray]"') from None
    if ray.is_initialized():
        return ray, False
    kw = dict(include_dashboard=False, log_to_driver=False, configure_logging=True, logging_level="warning")
    if address in (None, "", "auto"):
        try:
            ray.init(address="auto", **kw)
            return ray, False
        except (ConnectionError, RuntimeError, ValueError):
            ray.init(num_cpus=num_cpus, **kw)
            return ray, True
    try:
        ray.init(address=address, **kw)
    except (ConnectionError, RuntimeError, ValueError) as e:
        raise ConnectionError(f"--ray {address}: cannot connect to a Ray cluster there ({e})") from None
    return ray, False


def run_ray(tasks: dict, trace, objective, *, on_result: Callable, hook=None, max_retries: int = MAX_RETRIES) -> dict:
    """Evaluate `tasks` on the Ray cluster this process is connected to (ray_connect): one task per
    setup, the trace put in the object store once. A task whose worker dies is run again by
    Ray, up to `max_retries` times (Ray's task retries on system failures); one that still fails,
    or raises, is recorded as failed."""
    import ray
    tref = ray.put(trace)
    fn = ray.remote(num_cpus=1, max_retries=max_retries, retry_exceptions=False)(_ray_task)
    refs = {fn.remote(tref, objective, hook, k, s): k for k, s in tasks.items()}
    try:
        while refs:
            done, _ = ray.wait(list(refs), num_returns=1, timeout=5.0)
            for ref in done:
                k = refs.pop(ref)
                try:
                    r = ray.get(ref)
                except ray.exceptions.RayError as e:
                    r = _failed(k, tasks[k], f"{type(e).__name__}: {str(e).splitlines()[0][:300]}")
                on_result(r)
    except BaseException:
        for ref in refs:
            ray.cancel(ref, force=True)
        raise
    return {"restarts": None, "deaths": {}}


# ---- the store (resume) -------------------------------------------------------------------------
class Store:
    """Evaluated setups by fingerprint, in a records file (.json) rewritten atomically at most every
    few seconds (`flush`), so a killed search loses at most those seconds."""

    def __init__(self, path: str | None):
        self.path = path
        self.by_key: dict = {}
        self._dirty = False
        self._t = time.monotonic()
        if path:
            for r in rec.read_existing(path):
                if r.get("status") == "evaluated" and r.get("fingerprint"):
                    self.by_key[r["fingerprint"]] = r

    def add(self, r: dict) -> None:
        self.by_key[r["fingerprint"]] = r
        self._dirty = True
        self.flush()

    def flush(self, force: bool = False, extra: Sequence[dict] = ()) -> None:
        if not self.path or not (self._dirty or force):
            return
        if not force and time.monotonic() - self._t < _FLUSH_S:
            return
        rec.write_records(self.path, [_finite_rec(r) for r in list(self.by_key.values()) + list(extra)])
        self._dirty = False
        self._t = time.monotonic()


def _finite_rec(r: dict) -> dict:
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in r.items()}


# ---- costs, fronts, the answer ------------------------------------------------------------------------
def add_costs(records: Sequence[dict], price_table: prices_mod.PriceTable) -> None:
    """USD per hour and per million good output tokens on each evaluated record (in place)."""
    for r in records:
        if r.get("status") != "evaluated":
            continue
        c = price_table.cost(hardware.get_gpu(r["hardware"]), r["n_cards"])
        r.update(usd_per_hour=c.usd_per_hour, cost_basis=c.basis, cost_detail=c.detail)
        r["usd_per_mtok"] = _per_mtok(c.usd_per_hour, r.get("goodput_tok_s"))
        if "max_goodput_tok_s" in r:
            r["usd_per_mtok_at_max"] = _per_mtok(c.usd_per_hour, r.get("max_goodput_tok_s"))


def _per_mtok(usd_h, tok_s) -> float:
    if tok_s is None or not isinstance(tok_s, (int, float)) or not tok_s > 0 or not math.isfinite(tok_s):
        return math.inf
    return usd_h / (tok_s * 3600) * 1e6


def pareto(rows: Sequence[dict], x: str, y: str, *, x_max: bool, y_max: bool = False) -> list[dict]:
    """The rows no other row beats on both `x` and `y` (each maximized or minimized as told);
    rows missing a finite x or y are left out. Sorted by x, best last when maximized."""
    pts = [r for r in rows if _finite(r.get(x)) and _finite(r.get(y))]
    sx = -1 if x_max else 1
    sy = -1 if y_max else 1
    # best x first; ties: best y first; keep a row when its y beats every row seen before
    pts.sort(key=lambda r: (sx * r[x], sy * r[y]))
    front, best = [], math.inf
    for r in pts:
        v = sy * r[y]
        if v < best:
            front.append(r)
            best = v
    return sorted(front, key=lambda r: r[x])


def _finite(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def choose(rows: Sequence[dict]) -> dict | None:
    """The cheapest setup meeting the SLOs at the trace's rate: lowest USD per million good output
    tokens; equal cost: lower token-weighted mean end-to-end latency, then the label."""
    ok = [r for r in rows if r.get("status") == "evaluated" and r.get("feasible") and _finite(r.get("usd_per_mtok"))]
    if not ok:
        return None
    return min(ok, key=lambda r: (r["usd_per_mtok"], r["e2e_mean_tok_s"] if _finite(r.get("e2e_mean_tok_s")) else math.inf,
                                  r["setup"]))


# ---- the whole search ------------------------------------------------------------------------------
@dataclass
class SearchResult:
    trace: dict
    objective: Objective
    records: list                  # every candidate: evaluated, pruned or failed
    chosen: dict | None
    front_goodput: list
    front_ttft: list
    prices: prices_mod.PriceTable
    n_candidates: int
    pruned: dict                   # stage -> count
    reused: int
    run: dict = field(default_factory=dict)

    @property
    def evaluated(self) -> list:
        return [r for r in self.records if r.get("status") == "evaluated"]


def search(trace, objective: Objective, *, models: Sequence = (), gpus: Sequence | None = None,
           cards: Sequence[int] = DEFAULT_CARDS, weights: Sequence[str] = DEFAULT_WEIGHTS,
           kv: Sequence[str] = DEFAULT_KV, splits: Sequence[str] = DEFAULT_SPLITS,
           runtimes: Sequence = DEFAULT_RUNTIMES, link_gbps: float | None = None,
           link_latency_us: float | None = None, price_table: prices_mod.PriceTable | None = None,
           requests: int | None = None, workers: int | None = None, ray: str | None = None,
           store: str | None = None, progress: bool = False, hook: Callable | None = None,
           on_result: Callable | None = None, max_retries: int = MAX_RETRIES,
           setups: Sequence[cm.Setup] | None = None) -> SearchResult:
    """Enumerate, prune, evaluate (in parallel, resumable) and answer; see the module text.
    `trace`: a traces.Trace, a built-in name or a file; `requests`: only its first N (by arrival).
    `setups`: these candidates instead of the grid of models x gpus x ... `hook(key, setup)` runs
    in the worker before each evaluation (fault injection in tests)."""
    if not isinstance(objective, Objective):
        raise TypeError(f"`objective` must be a search.Objective, got {type(objective).__name__}")
    tr = traces_mod.load(trace)
    if requests is not None:
        vocab.check_int("requests", requests, 1)
        tr = _first(tr, requests)
    traces_mod.check_replayable(tr)
    if objective.max_rate and tr.duration_s == 0:
        # every request arrives at once (or there is one): scaling the arrivals changes nothing, so a
        # "highest sustained rate" would be the bracketing's bound (x1024), not a rate
        objective = dataclasses.replace(objective, max_rate=False)
        tr = dataclasses.replace(tr, meta={**tr.meta, "notices": [*tr.meta.get("notices", ()), (
            f"{tr.source}: {'its one request has' if len(tr) == 1 else f'all {len(tr):,} requests arrive at once:'} "
            "no arrival rate to scale; no highest sustained rate is searched (as --no-max-rate)")]})
    pt = price_table or prices_mod.load(gpus=[g for g in (gpus or ()) if _is_path(g)])
    unpriced = []
    if gpus is None and setups is None:
        # the whole catalog: the cards without a price are named once, not pruned one by one
        cat = [hardware.get_gpu(g) for g in hardware.list_gpus()]
        gpus = [g.key for g in cat if pt.why_unpriced(g) is None]
        unpriced = [g.key for g in cat if pt.why_unpriced(g) is not None]
        if not gpus:
            raise EmptySearch(f"no candidate setup: the `price` constraint removed every card of the hardware catalog "
                              f"(none of its {len(cat)} cards has a price on basis {pt.basis!r} in "
                              f"{', '.join(pt.files)}); give one with --prices FILE")
    if setups is None:
        setups, invalid = candidates(models, gpus, cards, weights, kv, splits, runtimes, link_gbps=link_gbps,
                                     link_latency_us=link_latency_us)
    else:
        setups, invalid = [cm._setup(s) for s in _nonempty("setups", setups)], []
    n_cand = len(setups) + len(invalid)
    kept, pruned = prune(setups, tr, objective, pt)
    pruned = invalid + pruned
    if not kept:
        raise EmptySearch(explain_empty(n_cand, pruned))
    tfp = trace_fingerprint(tr)
    tasks = {}
    for s in kept:
        tasks.setdefault(task_fingerprint(s, tfp, objective), s)
    st = Store(store)
    results = {k: st.by_key[k] for k in tasks if k in st.by_key}
    reused = len(results)
    todo = {k: s for k, s in tasks.items() if k not in results}
    calls: Counter = Counter()
    bar = None
    if progress and todo:
        from glmbench._progress import tqdm
        bar = tqdm(total=len(todo), desc=f"search {tr.name}", unit="setup", smoothing=0.05)

    def got(r):
        k = r["fingerprint"]
        calls[k] += 1
        if calls[k] > 1:
            return                          # a second result for one setup: never counted twice
        results[k] = r
        if r.get("status") == "evaluated":
            st.add(r)
        if bar is not None:
            bar.update(1)
        if on_result is not None:
            on_result(r)

    nw = workers if workers is not None else _cpus()
    vocab.check_int("workers", nw, 1)
    t0 = time.perf_counter()
    try:
        if not todo:
            info = {"restarts": 0, "deaths": {}}
        elif ray is not None:
            rmod, own = ray_connect(ray, num_cpus=workers)
            try:
                info = run_ray(todo, tr, objective, on_result=got, hook=hook, max_retries=max_retries)
                info["backend"] = f"ray ({int(rmod.cluster_resources().get('CPU', 0))} CPUs)"
            finally:
                if own:
                    rmod.shutdown()
        else:
            info = run_local(todo, tr, objective, workers=nw, on_result=got, hook=hook, max_retries=max_retries)
            info["backend"] = f"{nw} local process{'es' if nw > 1 else ''}" if nw > 1 else "this process"
    finally:
        if bar is not None:
            bar.close()
        st.flush(force=True)
    info.update(wall_s=time.perf_counter() - t0, evaluated_now=len(todo), duplicates=sum(v - 1 for v in calls.values()),
                unpriced_cards=unpriced)
    evaluated = [results[k] for k in tasks]
    add_costs(evaluated, pt)
    rows = [r for r in evaluated if r.get("status") == "evaluated"]
    if objective.max_rate:
        fg = pareto(rows, "max_goodput_tok_s", "usd_per_mtok_at_max", x_max=True)
    else:
        fg = pareto(rows, "goodput_tok_s", "usd_per_mtok", x_max=True)
    ft = pareto(rows, "ttft_p99_s", "usd_per_mtok", x_max=False)
    on_g = {id(r) for r in fg}
    on_t = {id(r) for r in ft}
    for r in evaluated:
        r["on_front_goodput"] = id(r) in on_g
        r["on_front_ttft"] = id(r) in on_t
    chosen = choose(rows)
    for r in evaluated:
        r["chosen"] = r is chosen
    by = Counter(r["pruned_by"] for r in pruned)
    summ = {**tr.summary(), "attribution": tr.attribution, "notices": list(tr.meta.get("notices", ())), "fingerprint": tfp,
            "rate_req_s": _rate(tr, objective.rate_scale), "rate_scale": objective.rate_scale}
    return SearchResult(summ, objective, evaluated + pruned, chosen, fg, ft, pt, n_cand,
                        {s: by.get(s, 0) for s in STAGES}, reused, info)


def _cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _is_path(g) -> bool:
    return isinstance(g, (str, os.PathLike)) and os.fspath(g).endswith((".json", ".toml"))


def _first(tr: traces_mod.Trace, n: int) -> traces_mod.Trace:
    if n > len(tr):
        # more asked for than the trace holds: all of it, said (the answer's count alone did not say why)
        meta = {**tr.meta, "notices": [*tr.meta.get("notices", ()), f"{tr.source}: --requests {n:,} asks for more "
                                        f"than the trace's {len(tr):,} requests: all {len(tr):,} are replayed"]}
        return traces_mod.Trace(tr.name, tr.source, tr.arrival_s, tr.prompt, tr.output, tr.hash_ids, tr.block_tokens,
                                tr.attribution, meta)
    if n == len(tr):
        return tr
    # the notices of the trace's first n: its failed requests counted among them
    meta = dict(tr.meta)
    whole, part = meta.get("zero_output_requests", 0), tr.output[:n].count(0)
    notices = [x for x in meta.get("notices", ()) if not whole or x != traces_mod.failed_notice(tr.source, whole)]
    meta.update(zero_output_requests=part, notices=notices + ([traces_mod.failed_notice(tr.source, part)] if part else []))
    return traces_mod.Trace(f"{tr.name}[:{n}]", tr.source, tr.arrival_s[:n], tr.prompt[:n], tr.output[:n],
                            tr.hash_ids[:n], tr.block_tokens, tr.attribution, meta)


def brute_force(trace, objective: Objective, setups: Sequence[cm.Setup], price_table: prices_mod.PriceTable) -> dict | None:
    """The cheapest setup meeting the SLOs by the plainest route: every setup replayed at the
    trace's rate (no pruning, no pool, no store), costed and ranked with `choose` (tests)."""
    tr = traces_mod.load(trace)
    rows = []
    for s in setups:
        if price_table.why_unpriced(s.gpu) is not None:
            continue
        res = rp.replay(tr.scaled(objective.rate_scale) if objective.rate_scale != 1 else tr, s, objective.server(),
                        ttft_slo_s=objective.ttft_slo_s, tpot_slo_s=objective.tpot_slo_s)
        sm = res.summary()
        c = price_table.cost(s.gpu, s.n_cards)
        rows.append({"status": "evaluated", "setup": s.label, "feasible": sm["slo_attainment"] >= objective.attainment,
                     "usd_per_mtok": _per_mtok(c.usd_per_hour, sm["goodput_tok_s"]),
                     "e2e_mean_tok_s": sm["e2e_s_mean_tok"]})
    return choose(rows)
