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
  run          reuse a point a ResultStore holds only if its fingerprint is this run's; time the rest
               through the backend's `time_point(point) -> record` (a changed point replaces its old
               record), store each as it finishes, return all in plan order
"""
from __future__ import annotations

import datetime as _dt
import functools
import hashlib
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
    return d


def plan(base: dict, depths, tests, n_prompt: int, n_gen: int, **mem_extra) -> list[dict]:
    points = []
    for d in depths:
        if "pp" in tests:
            points.append(dict(base, test="pp", n_prompt=int(n_prompt), n_gen=0, n_depth=int(d)))
        if "tg" in tests:
            points.append(dict(base, test="tg", n_prompt=0, n_gen=int(n_gen), n_depth=int(d)))
    if "mem" in tests:
        p = dict(base, test="mem", n_prompt=0, n_gen=0, n_depth=int(max(depths)), **mem_extra)
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


def todo(points: list[dict], store) -> list[dict]:
    """The points `store` does not hold with this run's fingerprint."""
    return [p for p in points if store is None or not store.done(resume_key(p), p.get("fingerprint"))]


def run(points: list[dict], store, time_point: Callable[[dict], dict], on_point=None) -> list[dict]:
    """Time the points `store` does not hold yet (or holds from other inputs: those records are
    replaced); return every point's record in plan order."""
    results = {}
    for p in todo(points, store):
        if on_point is not None:
            on_point(p)
        r = time_point(p)
        r["test_time"] = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        results[resume_key(r)] = r
        if store is not None:
            store.add(r)
    out = []
    for p in points:
        k = resume_key(p)
        out.append(results[k] if k in results else store.get(k))
    return out


def stats(ts: list[float]) -> dict:
    a = np.asarray(ts, np.float64)
    return dict(avg_ts=float(a.mean()), stddev_ts=float(a.std(ddof=1)) if a.size > 1 else 0.0,
                median_ts=float(np.median(a)), min_ts=float(a.min()), max_ts=float(a.max()))
