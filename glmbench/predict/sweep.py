"""Predicted sweeps: models x setups x depths through the cost model, as tidy records
(glmbench/records.py) with evidence="predicted" ("calibrated" for a calibrated runtime profile,
with its leave-one-out error as `cv_error` and the band avg_ts_lo/avg_ts_hi), the profile names and every input, so a record
alone says what produced it. With `out` (.json) the sweep resumes: a finished point is reused
only when its record's `fingerprint` (vocab.fingerprint of the resolved config, the hardware
profile and rig, the runtime profile, formats, MLA strategy and the glmbench version) equals the
one this run computes and the record holds what those inputs give (each point is priced again to
check: a record edited by hand is replaced); a point whose inputs changed is recomputed and replaces
the old record, so the file holds one record per point. The file is rewritten atomically after a setup once
the setups priced since the last rewrite took as long as it did, and on an interrupt or error.

Every tg/pp/serve/mem record says whether its context fits in the rig's memory (`fits`) and
whether it is longer than the model's native positions (`beyond_native`, with `native_context`):
the cost model still prices such a point, and the record says it is one no real run could make."""
from __future__ import annotations

import os
import time
from typing import Iterable, Sequence

from glmbench import __version__, vocab
from glmbench.predict import costmodel as cm
from glmbench.results import records as rec

TESTS = ("tg", "pp", "mem", "serve")
# The deepest context a sweep prices: 2^32 tokens (4.3G). The longest native context of any
# released model is ~10M tokens and a 2^32-token KV cache of even a small model is hundreds of
# TB, so anything deeper is a typo (1e20), not a question.
MAX_DEPTH = vocab.MAX_TOKENS


def _setups(models, setups) -> list:
    if isinstance(setups, (cm.Setup, dict)):
        setups = [setups]
    if not setups:
        raise ValueError("`setups` is empty")
    out = []
    if models is None:
        for s in setups:
            if isinstance(s, dict):
                s = cm.Setup(**s)
            if not isinstance(s, cm.Setup):
                raise TypeError(f"each setup must be a costmodel.Setup or a dict of its fields, got {type(s).__name__}")
            out.append(s)
        return out
    if isinstance(models, (str, dict)) or not isinstance(models, Iterable):
        models = [models]
    for m in models:
        for s in setups:
            if isinstance(s, dict):
                s = cm.Setup(**{**s, "model": m})
            elif isinstance(s, cm.Setup):
                s = s.replace(model=m)
            else:
                raise TypeError(f"each setup must be a costmodel.Setup or a dict of its fields, got {type(s).__name__}")
            out.append(s)
    return out


def setup_fields(s: cm.Setup) -> dict:
    """The inputs of a setup as record fields."""
    rig, cfg = s.rig, s.model
    skew = s.expert_skew
    out = {
        "evidence": "calibrated" if s.runtime.calibrated else "predicted",
        "model": cfg.name,
        "model_type": cfg.model_type,
        "device": rig.gpu.name,
        "hardware": rig.gpu.key,
        "n_cards": rig.n_cards,
        "split": s.split,
        "link_gbps": rig.link_gbps if rig.n_cards > 1 else None,
        "link_latency_us": rig.link_latency_us if rig.n_cards > 1 else None,
        "weights": s.weights,
        "type_k": s.kv,
        "type_v": s.kv,
        "mla_strategy": s.mla_strategy if cfg.attention == "mla" else "",
        "runtime": s.runtime.name,
        "expert_skew": None if skew is None else (skew if isinstance(skew, float) else "histogram"),
        "setup": s.label,
        "native_context": cfg.max_position_embeddings or None,
        "fingerprint": setup_fingerprint(s),
    }
    if s.runtime.calibrated:
        # the calibrated profile's leave-one-out error: the band its predictions carry (a
        # tg / pp / serve record takes the band of its test and model class: _point)
        out["cv_error"] = s.runtime.cv_error
    if s.offload is not None:   # llama.cpp's partial offload to the host
        out.update(s.offload.fields())
        out["host"] = s.host.key or s.host.name
    if isinstance(s.weight_fmt, vocab.Mix):   # per-tensor types from llama.cpp's rules, no file
        out["weights_note"] = s.weight_fmt.note
    return out


def _band(r: dict) -> dict:
    """avg_ts_lo / avg_ts_hi for a calibrated speed: avg_ts x (1 -/+ cv_error)."""
    e = r.get("cv_error")
    v = r.get("avg_ts")
    if e is None or v is None:
        return r
    return {**r, "avg_ts_lo": v * max(0.0, 1 - e), "avg_ts_hi": v * (1 + e)}


def setup_fingerprint(s: cm.Setup) -> str:
    """What determines every number of a setup's points (vocab.fingerprint): the resolved model
    config (every ModelConfig field, the raw HF dict included), the rig (GPU profile: every
    field; cards; link), the split, formats, MLA strategy, runtime profile (every field), expert
    skew and the glmbench version (the cost model's code)."""
    return vocab.fingerprint("predicted", __version__, s.model, s.rig, s.split, s.weights, s.kv,
                             s.mla_strategy, s.runtime, s.expert_skew, s.offload, s.host)


def _key(r: dict) -> tuple:
    # (.get: a stored record without one of them, hand-edited, is a point no setup asks for, not a KeyError)
    return (r.get("test"), r.get("setup"), r.get("n_depth"), r.get("n_prompt"), r.get("n_gen"), r.get("n_streams"),
            r.get("concurrency"))


def predict(models, setups, depths: Sequence[int], tests: Sequence[str] = ("tg", "pp", "mem"), *,
            n_prompt: int = 512, n_gen: int = 1, n_streams: int = 1,
            concurrency: Sequence[int] = (1, 2, 4, 8, 16, 32, 64), out=None, progress: bool = False,
            on_setup=None) -> list[dict]:
    """Predict every (model, setup, depth) point.

    models: names/paths/configs, each combined with every setup (a Setup, whose model is
      replaced, or a dict of Setup fields); None to take the setups as they are.
    tests: "tg" (generate `n_gen` tokens from depth, `n_streams` streams: llama-bench's tg<n_gen> @ d,
      whose rate is the mean over the steps d .. d+n_gen-1), "pp" (prefill `n_prompt` tokens at
      depth), "mem" (memory at context = depth, `n_streams` streams), "serve" (continuous batching
      of each `concurrency` at context = depth).
    on_setup: called after each setup's points are priced (a progress bar's tick).
    """
    bad = [t for t in tests if t not in TESTS]
    if bad or not tests:
        raise ValueError(f"`tests` must be a non-empty subset of {TESTS}, got {tuple(tests)!r}")
    depths = [cm._check_int("depths", d, 0) for d in depths]
    n_prompt = cm._check_int("n_prompt", n_prompt, 1)
    n_gen = cm._check_int("n_gen", n_gen, 1)
    n_streams = cm._check_int("n_streams", n_streams, 1)
    concurrency = [cm._check_int("concurrency", c, 1) for c in concurrency]
    grid = _setups(models, setups)
    for d in depths:
        if d > MAX_DEPTH:
            raise ValueError(f"`depths` must be <= {MAX_DEPTH:,} tokens (no model has positions or memory for "
                             f"more), got {d:,}")
    done: dict = {}
    if out is not None:
        path = str(out)
        if not path.endswith(".json"):
            raise ValueError(f"`out` must end in .json (a resumable records file), got {path!r}")
        done = {_key(r): r for r in rec.read_existing(path)}
    it = grid
    if progress:
        from tqdm import tqdm   # (loaded where a bar is shown)
        it = tqdm(grid, desc="predict", unit="setup")
    recs: list[dict] = []
    seen: set = set()    # the points priced: one asked for twice (a model or a test named twice) is one record,
    # as the file holds it (two made "wrote 2 records ... the file holds 1 records (-1 of points outside this run)")
    saved = 0            # recs[:saved] are in the file
    since = cost = 0.0   # when the last save ended, and how long it took
    try:
        for s in it:
            base = setup_fields(s)
            for t in tests:
                for d in depths:
                    for r in _point(s, t, d, base, n_prompt, n_gen, n_streams, concurrency, done):
                        if _key(r) not in seen:
                            seen.add(_key(r))
                            recs.append(r)
            if on_setup is not None:
                on_setup()
            # an atomic rewrite of the whole file, under its lock and merged with what it holds now
            # (another sweep may be writing to it), once the setups priced since the last one took as
            # long as that rewrite did: writing costs at most as much time as pricing (one rewrite per
            # setup made a sweep quadratic in its size: 30 setups x 9 grids took 23 s, 6 s unwritten),
            # and a killed sweep loses at most that much pricing; an interrupt (Ctrl-C) or an error
            # saves every finished setup (below)
            if out is not None and time.monotonic() - since >= cost:
                saved, since, cost = _save(out, recs)
    finally:
        if out is not None and saved < len(recs):
            _save(out, recs)
    return recs


def _save(out, recs) -> tuple[int, float, float]:
    t0 = time.monotonic()
    rec.merge_records(out, recs, _key)
    t1 = time.monotonic()
    return len(recs), t1, t1 - t0


def _point(s, t, d, base, n_prompt, n_gen, n_streams, concurrency, store):
    out = []
    if (s.runtime.calibrated or s.runtime.fitted_to_gpus) and t in ("tg", "pp", "serve"):
        # the band of this test and model class (RuntimeProfile.cv_band), not one for every record; a
        # runtime model fitted to no point (sglang) carries the widest band of the fitted ones
        base = {**base, "cv_error": s.runtime.cv_band(t, s.model)}
    if t == "serve":
        for c in concurrency:
            r = {**base, "test": "serve", "n_depth": d, "n_prompt": 0, "n_gen": 1, "n_streams": c, "concurrency": c}
            out.append(_cached(store, r, lambda r=r, c=c: _serve(s, d, c, r)))
        return out
    if t == "tg":
        r = {**base, "test": "tg", "n_depth": d, "n_prompt": 0, "n_gen": n_gen, "n_streams": n_streams}
        out.append(_cached(store, r, lambda: _flags(_generate(s, d, n_gen, n_streams, r), d + n_gen,
                                                    cm.memory(s, d + n_gen, n_streams).fits)))
    elif t == "pp":
        r = {**base, "test": "pp", "n_depth": d, "n_prompt": n_prompt, "n_gen": 0, "n_streams": 1}
        out.append(_cached(store, r, lambda: _step(cm.prefill(s, n_prompt, d), r, s, d + n_prompt, 1)))
    else:
        r = {**base, "test": "mem", "n_depth": d, "n_prompt": 0, "n_gen": 0, "n_streams": n_streams}
        out.append(_cached(store, r, lambda: _mem(s, d, n_streams, r)))
    return out


# Steps priced for a tg of n_gen tokens: all of them up to this many, else this many evenly spaced
# from the first to the last (a decode step's time is close to affine in the depth, whose mean
# over evenly spaced steps that include both ends is the mean over all of them).
_GEN_SAMPLES = 9


def _generate(s, d, n_gen, n_streams, r):
    """tg<n_gen> @ d: n_gen decode steps at depths d .. d+n_gen-1; tok/s is the tokens they make
    (n_gen per stream) over their summed time, as llama-bench and sweep-bench count it."""
    if n_gen == 1:
        return _step(cm.decode(s, d, n_streams), r)
    k = min(n_gen, _GEN_SAMPLES)
    depths = sorted({d + round(i * (n_gen - 1) / (k - 1)) for i in range(k)})
    steps = [cm.decode(s, x, n_streams) for x in depths]
    mean = sum(st.seconds for st in steps) / len(steps)
    first = steps[0]
    total = mean * n_gen
    return _band({**r, "avg_ts": first.tokens * n_gen / total, "stddev_ts": None, "seconds": total,
                  "dominant": first.dominant, "flops": sum(st.flops for st in steps) / len(steps) * n_gen,
                  "bytes": sum(st.bytes for st in steps) / len(steps) * n_gen})


def _cached(done, r, compute):
    """The stored record of `r`'s point if it was made from the same inputs (same fingerprint) and
    holds what they give, else a new one. A point is priced in about a millisecond, so a stored
    record is checked against a fresh pricing: one whose fields were changed by hand (`avg_ts`,
    `n_cards`, ...) under an unchanged fingerprint is replaced, not carried on as a prediction
    (resume_summary counts it as `edited`)."""
    old = done.get(_key(r))
    new = compute()
    if old is not None and old.get("fingerprint") == r["fingerprint"] and same_record(old, new):
        return old
    return new


def same_record(a: dict, b: dict, rel: float = 1e-9) -> bool:
    """Whether two records hold the same fields and values (floats within `rel`: a record read back
    from JSON, or priced on another machine, may differ in the last bits; a list as a tuple)."""
    def same(x, y):
        if isinstance(x, bool) or isinstance(y, bool):
            return x is y
        if isinstance(x, (int, float)) and isinstance(y, (int, float)):
            if x == y or (x != x and y != y):
                return True
            return abs(x - y) <= rel * max(abs(x), abs(y))
        if isinstance(x, (list, tuple)) and isinstance(y, (list, tuple)):
            return len(x) == len(y) and all(same(u, v) for u, v in zip(x, y))
        if isinstance(x, dict) and isinstance(y, dict):
            return x.keys() == y.keys() and all(same(x[k], y[k]) for k in x)
        return x == y
    return same(a, b)


def _flags(r: dict, context: int, fits: bool) -> dict:
    """`fits` (the weights and `context` tokens of cache per stream fit the rig) and
    `beyond_native` (context longer than the model's max_position_embeddings)."""
    native = r.get("native_context")
    return {**r, "fits": bool(fits), "beyond_native": bool(native) and context > native}


def _step(st: cm.StepCost, r: dict, s=None, context: int = 0, batch: int = 1) -> dict:
    out = _band({**r, "avg_ts": st.tok_s, "stddev_ts": None, "seconds": st.seconds, "dominant": st.dominant,
                 "flops": st.flops, "bytes": st.bytes})
    return out if s is None else _flags(out, context, cm.memory(s, context, batch).fits)


def _mem(s, d, batch, r):
    m = cm.memory(s, d, batch)
    return {**r, "mem_bytes": max(c.total for c in m.cards), "mem_total_bytes": m.total,
            "weights_bytes": m.weights, "kv_bytes": m.kv, "workspace_bytes": m.workspace,
            "overhead_bytes": m.overhead, "capacity_bytes": s.gpu.memory_bytes, "fits": m.fits,
            "beyond_native": bool(r.get("native_context")) and d > r["native_context"],
            **({} if m.host is None else {"card_bytes": [c.total for c in m.cards], "host_bytes": m.host.total,
                                          "host_weights_bytes": m.host.weights, "host_kv_bytes": m.host.kv,
                                          "host_capacity_bytes": m.host.capacity})}


def _serve(s, d, c, r):
    x = cm.serve(s, c, d)
    return _band({**r, "avg_ts": x["aggregate_tok_s"], "stddev_ts": None, "aggregate_tok_s": x["aggregate_tok_s"],
                  "per_stream_tok_s": x["per_stream_tok_s"], "streams": x["streams"], "fits": x["fits"],
                  "limited_by": x["limited_by"],
                  "beyond_native": bool(r.get("native_context")) and d + 1 > r["native_context"]})
