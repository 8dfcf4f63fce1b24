"""What every measurement backend (CPU: measure/cpu.py, CUDA: measure/cuda.py) shares, so that a
measured record from either is shaped like a predicted one and joins it on vocab.point_key:

  check_args   depths, n_prompt, n_gen, repeats, warmup, tests: one set of rules and messages
  base_record  the fields every measured record carries (evidence, model, formats, strategy, version)
  plan         the points of a run, in order: per depth a pp and a tg point, then one mem point at
               the deepest depth
  resume_key   the point plus how it was measured (device, threads, layer sampling, repeats)
  fingerprint  every record carries `fingerprint` (vocab.fingerprint of the resolved config, every
               field of the base record, the code version: glmbench's version + a hash of the
               compiled extension that ran it, and the backend's other settings) and `code_version`
  run          reuse a point a ResultStore holds only if its fingerprint is this run's and it is not
               marked unstable (an unstable stored point is retimed by the next run); time the rest
               through the backend's `time_point(point) -> record` (a changed point replaces its old
               record), store each as it finishes, return all in plan order (an unstable point is
               retimed up to `retries` times)
  stability    whether the machine stayed the same during a point (repeat spread, bandwidth before
               and after, CPU time vs wall): `stable`, `unstable_reason` and the evidence fields
"""
from __future__ import annotations

import datetime as _dt
import functools
import hashlib
import json as _json
import os
from typing import Callable, Iterable

import numpy as np

from glmbench import __version__, vocab
from glmbench.results import records as _records

TESTS = vocab.MEASURED_TESTS


def check_args(depths, n_prompt, n_gen, repeats, warmup, tests) -> tuple[tuple, tuple]:
    depths = tuple(depths) if isinstance(depths, Iterable) and not isinstance(depths, str) else (depths,)
    if not depths:
        raise ValueError("`depths` must list at least one depth, got an empty sequence")
    for d in depths:
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 0:
            raise ValueError(f"`depths` must be integers >= 0, got {d!r}")
    for name, v, lo in (("n_prompt", n_prompt, 1), ("n_gen", n_gen, 1), ("repeats", repeats, 1),
                        ("warmup", warmup, 0)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
            raise ValueError(f"`{name}` must be an integer >= {lo}, got {v!r}")
    tests = (tests,) if isinstance(tests, str) else tuple(tests)
    bad = [t for t in tests if t not in TESTS]
    if bad or not tests:
        raise ValueError(f"`tests` must be a non-empty subset of {TESTS}, got {tests!r}")
    return tuple(int(d) for d in depths), tests


@functools.lru_cache(maxsize=None)
def _file_hash(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()[:12]


def code_version(module) -> str:
    """glmbench's version + a hash of the compiled extension `module` (its file's bytes): what
    ran a measurement. A rebuilt core after a C change is another version."""
    path = getattr(module, "__file__", None)
    return f"{__version__}+{_file_hash(os.path.abspath(path))}" if path else __version__


def base_record(cfg, *, device: str, weights: str, kv: str, mla_strategy: str, runtime: str,
                repeats: int, code: str = __version__, settings: dict | None = None, **extra) -> dict:
    """The fields every measured record of `cfg` carries, CPU or GPU, and its `fingerprint`: a hash
    of the resolved config, every one of these fields, the code version `code` and the backend's
    `settings` that are not record fields (seed, probes)."""
    vocab.weight_format(weights)
    vocab.kv_format(kv)
    vocab.mla_strategy(mla_strategy)
    d = dict(evidence="measured", model=cfg.name, model_type=cfg.model_type, device=device, n_cards=1,
             split="none", weights=weights, type_k=kv, type_v=kv,
             mla_strategy=mla_strategy if cfg.attention == "mla" else "", runtime=runtime,
             repetitions=int(repeats), n_layers=cfg.n_layers, glmbench_version=__version__, code_version=code,
             **extra)
    d["fingerprint"] = vocab.fingerprint("measured", cfg, d, settings or {})
    # the model's native positions (derived from cfg, which the fingerprint holds: not hashed again), as
    # the predicted records carry it; plan() flags each point past it (`beyond_native`)
    d["native_context"] = getattr(cfg, "max_position_embeddings", None) or None
    return d


def plan(base: dict, depths, tests, n_prompt: int, n_gen: int, **mem_extra) -> list[dict]:
    """The points of a measurement: pp and tg at each depth, one mem point at the deepest. Each says
    whether its context (depth + its prompt or its generated tokens; the depth for mem) is past the
    model's native positions (`beyond_native`, as predicted records do: the timing is real, the model
    was not trained that long)."""
    native = base.get("native_context")
    past = lambda context: bool(native) and context > native
    points = []
    for d in depths:
        if "pp" in tests:
            points.append(dict(base, test="pp", n_prompt=int(n_prompt), n_gen=0, n_depth=int(d),
                               beyond_native=past(int(d) + int(n_prompt))))
        if "tg" in tests:
            points.append(dict(base, test="tg", n_prompt=0, n_gen=int(n_gen), n_depth=int(d),
                               beyond_native=past(int(d) + int(n_gen))))
    if "mem" in tests:
        p = dict(base, test="mem", n_prompt=0, n_gen=0, n_depth=int(max(depths)), **mem_extra,
                 beyond_native=past(int(max(depths))))
        if mem_extra:  # a mem point's own settings (the prefill of its workspace peak) are inputs too
            p["fingerprint"] = vocab.fingerprint(base.get("fingerprint"), mem_extra)
        points.append(p)
    return points


# How a point was measured, beyond what it is: a point timed another way is another point.
HOW_FIELDS = ("device", "runtime", "n_threads", "layers_mode", "repetitions")


def resume_key(r: dict) -> tuple:
    return vocab.point_key(r) + tuple(r.get(f) for f in HOW_FIELDS)


def store_for(out) -> _records.ResultStore | None:
    return None if out is None else _records.ResultStore(out, resume_key)


def edited(stored: dict, point: dict) -> bool:
    """Whether a stored record of `point` (same fingerprint) was changed by hand since it was timed: a
    field of the point it states otherwise (its fingerprint covers them, so `model_type`, `n_layers` ...
    typed over are not what was measured), or an `avg_ts` that is not the mean of its own `samples_ts`.
    Such a record is timed again (resume_summary counts it as `edited`)."""
    try:   # as the file holds it (a tuple is a list there)
        point = _json.loads(_records.to_json([point]))[0]
    except (TypeError, ValueError):
        pass
    if any(stored.get(f) != v for f, v in point.items()):
        return True
    ts, avg = stored.get("samples_ts"), stored.get("avg_ts")
    if isinstance(ts, list) and ts and isinstance(avg, (int, float)) and not isinstance(avg, bool):
        try:
            mean = float(np.mean(np.asarray(ts, np.float64)))
        except (TypeError, ValueError):
            return True
        return not abs(mean - avg) <= 1e-6 * max(abs(mean), abs(avg))
    return False


def todo(points: list[dict], store) -> list[dict]:
    """The points `store` does not hold with this run's fingerprint, or holds marked unstable
    (`stable: false`: timed while another process took the machine; the next run times it again),
    or holds edited by hand (edited)."""
    out = []
    for p in points:
        k = resume_key(p)
        if store is None or not store.done(k, p.get("fingerprint")) or store.get(k).get("stable") is False \
                or edited(store.get(k), p):
            out.append(p)
    return out


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during a measurement, with how many points this run had finished (`measured`: 0 when it
    came while the model was built or before the first point was timed), for the CLI's last line."""

    def __init__(self, measured: int):
        super().__init__()
        self.measured = int(measured)


def run(points: list[dict], store, time_point: Callable[[dict], dict], on_point=None,
        retries: int = 0, on_retry=None) -> list[dict]:
    """Time the points `store` does not hold yet (or holds from other inputs: those records are
    replaced); return every point's record in plan order.
    A record marked `stable: false` is timed again, up to `retries` more times; the first stable
    attempt is kept (else the last), with `attempts` saying how many were made. `on_retry(point,
    attempt, record)` is called when a retry is decided, before it runs (a progress bar grows then).
    Ctrl-C raises Interrupted with the number of points this run finished."""
    results = {}
    try:
        for p in todo(points, store):
            _run_one(p, store, time_point, on_point, retries, on_retry, results)
    except Interrupted:
        raise
    except KeyboardInterrupt:
        raise Interrupted(len(results)) from None
    out = []
    for p in points:
        k = resume_key(p)
        out.append(results[k] if k in results else store.get(k))
    return out


def _run_one(p, store, time_point, on_point, retries, on_retry, results) -> None:
    if on_point is not None:
        on_point(p)
    r = None
    for attempt in range(1, int(retries) + 2):
        if r is not None and on_retry is not None:
            on_retry(p, attempt, r)   # r: the previous attempt, marked unstable
        r = time_point(p)
        if r.get("stable") is not False:
            break
    if "stable" in r:
        r["attempts"] = attempt
    r["test_time"] = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    results[resume_key(r)] = r
    if store is not None:
        store.add(r)


def stats(ts: list[float]) -> dict:
    a = np.asarray(ts, np.float64)
    return dict(avg_ts=float(a.mean()), stddev_ts=float(a.std(ddof=1)) if a.size > 1 else 0.0,
                median_ts=float(np.median(a)), min_ts=float(a.min()), max_ts=float(a.max()))


# ---- stability: was the machine the same machine for the whole point? ------------------------
# On a shared machine a neighbour can take the cores or the memory bandwidth for seconds at a
# time; a point timed then is not a property of the code. Three signals, each cheap:
#   spread     the slowest and fastest timed repeat (taken one after another, over seconds)
#   probe      the DRAM read bandwidth (machine.probe_dram: a buffer several times the last-level
#              cache, read as a decode step reads; best of 2 passes) right before and right after
#              the point's timed repeats, judged against the probe's own spread measured back to
#              back when the run starts (machine.probe_noise): a probe that swings by itself is
#              not evidence of a neighbour
#   cpu share  the process's CPU time over (threads x wall time) of the timed steps: well below 1
#              means the threads were waiting for a core, not computing
# A point any signal trips is kept, marked `stable: false` with `unstable_reason` saying which and
# by how much; measure(..., retries=n) times it again up to n times first (docs/MEASURE.md).
SPREAD_MAX = 1.5        # fastest / slowest repeat
PROBE_DRIFT_MAX = 1.3   # larger / smaller of the bandwidth before and after, for a steady probe
PROBE_NOISE_MARGIN = 1.25   # a drift is judged against the probe's own spread x this ...
PROBE_DRIFT_CAP = 2.0       # ... but never a looser limit than this
CPU_SHARE_MIN = 0.5     # CPU time / (threads x wall)


def probe_limit(probe_noise: float | None) -> float:
    """The drift (larger / smaller) the probe may show across a point and still count as the same
    machine: PROBE_DRIFT_MAX, or the probe's own spread measured back to back (x PROBE_NOISE_MARGIN)
    where that is larger, capped at PROBE_DRIFT_CAP."""
    if probe_noise is None or not np.isfinite(probe_noise):
        return PROBE_DRIFT_MAX if probe_noise is None else PROBE_DRIFT_CAP
    return float(min(max(PROBE_DRIFT_MAX, probe_noise * PROBE_NOISE_MARGIN), PROBE_DRIFT_CAP))


def stability(samples_ts=None, *, probe_before: float | None = None, probe_after: float | None = None,
              cpu_s: float | None = None, wall_s: float | None = None, threads: int | None = None,
              probe_noise: float | None = None) -> dict:
    """The stability fields of a measured record from what a backend saw during the point's timed
    repeats; any argument left None is a signal not measured (the CUDA backend: spread only).
    `probe_noise`: the probe's own spread (machine.probe_noise), which widens its drift limit."""
    reasons, out = [], {}
    ts = [float(x) for x in samples_ts or () if x is not None and np.isfinite(x) and x > 0]
    if len(ts) > 1:
        spread = max(ts) / min(ts)
        out["spread_ts"] = float(spread)
        if spread > SPREAD_MAX:
            reasons.append(f"repeats {min(ts):.3g}-{max(ts):.3g} tok/s ({spread:.1f}x apart)")
    if probe_before is not None and probe_after is not None:
        out["probe_gbs_before"], out["probe_gbs_after"] = float(probe_before), float(probe_after)
        lim = probe_limit(probe_noise)
        if probe_noise is not None:
            out["probe_noise"], out["probe_drift_limit"] = float(probe_noise), lim
        lo, hi = sorted((float(probe_before), float(probe_after)))
        if lo <= 0 or hi / lo > lim:
            reasons.append(f"bandwidth {probe_before:.3g} -> {probe_after:.3g} GB/s across the point"
                           + (f" (the probe alone varies {probe_noise:.2f}x)" if probe_noise is not None else ""))
    if cpu_s is not None and wall_s is not None and threads:
        share = float(cpu_s) / (int(threads) * float(wall_s)) if wall_s > 0 else 1.0
        out["cpu_share"] = share
        if share < CPU_SHARE_MIN:
            reasons.append(f"CPU time {share:.2f} of {int(threads)} threads x wall (cores taken)")
    out["stable"] = not reasons
    out["unstable_reason"] = "; ".join(reasons)
    return out


def unstable(records) -> list[dict]:
    """The records marked `stable: false` (a record without the field is taken as stable)."""
    return [r for r in records if r.get("stable") is False]


def label(r: dict) -> str:
    """A point as the user reads it: pp6@16, tg@16, mem@16."""
    return f"{r.get('test')}@{r.get('n_depth')}" if r.get("test") != "pp" else f"pp{r.get('n_prompt')}@{r.get('n_depth')}"


def warning_line(r: dict) -> str:
    """One line for the user about an unstable record."""
    label_ = label(r)
    tries = f" after {r['attempts']} attempts" if r.get("attempts", 1) > 1 else ""
    return (f"warning: {r.get('model')} {label_} is unstable{tries}: {r.get('unstable_reason')} "
            "(another process took the machine; rerun it on a quiet machine)")
