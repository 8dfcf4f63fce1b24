"""Predicted sweeps: models x setups x depths through the cost model, as tidy records
(glmbench/records.py) with evidence="predicted", the profile names and every input, so a record
alone says what produced it. With `out` (.json) the sweep resumes: finished points are kept and
skipped; the file is rewritten atomically after each setup."""
from __future__ import annotations

import os
from typing import Iterable, Sequence

from tqdm import tqdm

from glmbench import vocab
from glmbench.predict import costmodel as cm
from glmbench.results import records as rec

TESTS = ("tg", "pp", "mem", "serve")


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
        "evidence": "predicted",
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
    }
    if s.offload is not None:   # llama.cpp's partial offload to the host
        out.update(s.offload.fields())
        out["host"] = s.host.key or s.host.name
    if isinstance(s.weight_fmt, vocab.Mix):   # per-tensor types from llama.cpp's rules, no file
        out["weights_note"] = s.weight_fmt.note
    return out


def _key(r: dict) -> tuple:
    return (r["test"], r["setup"], r["n_depth"], r.get("n_prompt"), r.get("n_batch"), r.get("concurrency"))


def predict(models, setups, depths: Sequence[int], tests: Sequence[str] = ("tg", "pp", "mem"), *,
            n_prompt: int = 512, batch: int = 1, concurrency: Sequence[int] = (1, 2, 4, 8, 16, 32, 64),
            out=None, progress: bool = False) -> list[dict]:
    """Predict every (model, setup, depth) point.

    models: names/paths/configs, each combined with every setup (a Setup, whose model is
      replaced, or a dict of Setup fields); None to take the setups as they are.
    tests: "tg" (decode one token at depth, `batch` streams), "pp" (prefill `n_prompt` tokens at
      depth), "mem" (memory at context = depth, `batch` streams), "serve" (continuous batching of
      each `concurrency` at context = depth).
    """
    bad = [t for t in tests if t not in TESTS]
    if bad or not tests:
        raise ValueError(f"`tests` must be a non-empty subset of {TESTS}, got {tuple(tests)!r}")
    depths = [cm._check_int("depths", d, 0) for d in depths]
    n_prompt = cm._check_int("n_prompt", n_prompt, 1)
    batch = cm._check_int("batch", batch, 1)
    concurrency = [cm._check_int("concurrency", c, 1) for c in concurrency]
    grid = _setups(models, setups)
    done: dict = {}
    if out is not None:
        path = str(out)
        if not path.endswith(".json"):
            raise ValueError(f"`out` must end in .json (a resumable records file), got {path!r}")
        if os.path.exists(path):
            done = {_key(r): r for r in rec.read_records(path)}
    it = grid
    if progress:
        it = tqdm(grid, desc="predict", unit="setup")
    recs: list[dict] = []
    for s in it:
        base = setup_fields(s)
        for t in tests:
            for d in depths:
                recs.extend(_point(s, t, d, base, n_prompt, batch, concurrency, done))
        if out is not None:
            # one atomic rewrite per setup: an interrupted sweep keeps every finished setup
            keys = {_key(r) for r in recs}
            rec.write_records(out, [r for k, r in done.items() if k not in keys] + recs)
    return recs


def _point(s, t, d, base, n_prompt, batch, concurrency, store):
    out = []
    if t == "serve":
        for c in concurrency:
            r = {**base, "test": "serve", "n_depth": d, "n_prompt": 0, "n_gen": 1, "n_batch": c, "concurrency": c}
            out.append(_cached(store, r, lambda r=r, c=c: _serve(s, d, c, r)))
        return out
    if t == "tg":
        r = {**base, "test": "tg", "n_depth": d, "n_prompt": 0, "n_gen": 1, "n_batch": batch}
        out.append(_cached(store, r, lambda: _step(cm.decode(s, d, batch), r)))
    elif t == "pp":
        r = {**base, "test": "pp", "n_depth": d, "n_prompt": n_prompt, "n_gen": 0, "n_batch": 1}
        out.append(_cached(store, r, lambda: _step(cm.prefill(s, n_prompt, d), r)))
    else:
        r = {**base, "test": "mem", "n_depth": d, "n_prompt": 0, "n_gen": 0, "n_batch": batch}
        out.append(_cached(store, r, lambda: _mem(s, d, batch, r)))
    return out


def _cached(done, r, compute):
    k = _key(r)
    if k in done:
        return done[k]
    return compute()


def _step(st: cm.StepCost, r: dict) -> dict:
    return {**r, "avg_ts": st.tok_s, "stddev_ts": None, "seconds": st.seconds, "dominant": st.dominant,
            "flops": st.flops, "bytes": st.bytes}


def _mem(s, d, batch, r):
    m = cm.memory(s, d, batch)
    return {**r, "mem_bytes": max(c.total for c in m.cards), "mem_total_bytes": m.total,
            "weights_bytes": m.weights, "kv_bytes": m.kv, "workspace_bytes": m.workspace,
            "overhead_bytes": m.overhead, "capacity_bytes": s.gpu.memory_bytes, "fits": m.fits,
            **({} if m.host is None else {"card_bytes": [c.total for c in m.cards], "host_bytes": m.host.total,
                                          "host_weights_bytes": m.host.weights, "host_kv_bytes": m.host.kv,
                                          "host_capacity_bytes": m.host.capacity})}


def _serve(s, d, c, r):
    x = cm.serve(s, c, d)
    return {**r, "avg_ts": x["aggregate_tok_s"], "stddev_ts": None, "aggregate_tok_s": x["aggregate_tok_s"],
            "per_stream_tok_s": x["per_stream_tok_s"], "streams": x["streams"], "fits": x["fits"],
            "limited_by": x["limited_by"]}
