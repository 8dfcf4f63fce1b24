"""Record logic shared by `glmbench compare` and the report: which records are the same point,
and the value each test is compared on.

  compare(a, b)                     compare-llama-bench style: B/A per point two files share
  measured_predicted_pairs(records) each measured tg/pp record with the predicted ones of its point
                                    (vocab.join_key), for the report's measured-vs-predicted table
"""
from __future__ import annotations

import json
import math
from typing import Sequence

from glmbench import vocab
from glmbench.results import records as rec

__all__ = ["compare", "measured_predicted_pairs", "test_label", "POINT_FIELDS", "SETUP_FIELDS", "VALUE_FIELDS"]


def measured_predicted_pairs(records: Sequence[dict]) -> list[tuple[dict, dict]]:
    """(measured, predicted) for every measured tg/pp record with a value and every predicted one
    of the same point (vocab.join_key), in the measured records' order."""
    pred = {}
    for r in records:
        if r["evidence"] in ("predicted", "calibrated") and r.get("test") in ("tg", "pp") and r.get("avg_ts"):
            pred.setdefault(vocab.join_key(r), []).append(r)
    return [(m, p) for m in records
            if m["evidence"] == "measured" and m.get("test") in ("tg", "pp") and m.get("avg_ts")
            for p in pred.get(vocab.join_key(m), [])]


# ---- compare ------------------------------------------------------------------------------------
# What a point is (compare matches A and B on these) and what is measured at it, per test.
POINT_FIELDS = ("test", "model", "n_prompt", "n_gen", "n_depth", "n_batch", "concurrency")
SETUP_FIELDS = ("evidence", "device", "n_cards", "split", "link_gbps", "weights", "type_k", "type_v",
                "mla_strategy", "runtime", "n_threads")
VALUE_FIELDS = {"tg": ("avg_ts", "tok/s"), "pp": ("avg_ts", "tok/s"), "serve": ("aggregate_tok_s", "tok/s"),
                "mem": ("mem_bytes", "bytes")}


def _mem_value(r):
    if r.get("mem_bytes") is not None:
        return r["mem_bytes"]
    if r.get("weight_bytes") is not None and r.get("kv_bytes") is not None:  # measured: exact arrays
        return r["weight_bytes"] + r["kv_bytes"]
    return None


def test_label(r: dict) -> str:
    """llama-bench style: 'tg1@d4096', 'pp512', 'pp512@d4096', 'mem@d128K', 'serve16@d4096'."""
    t = r.get("test")
    d = r.get("n_depth") or 0
    at = f"@d{d}" if d else ""
    if t == "tg":
        return f"tg{r.get('n_gen') or ''}{at}"
    if t == "pp":
        return f"pp{r.get('n_prompt') or ''}{at}"
    if t == "serve":
        return f"serve{r.get('concurrency') or ''}{at}"
    return f"{t}{at}"


def compare(a: Sequence[dict], b: Sequence[dict]) -> tuple[list[dict], dict]:
    """Match the points of two record lists and give B/A for each (compare-llama-bench style).

    Returns (rows, differences): rows with the point, the value in A and B and their ratio;
    differences: the setup fields that are constant within each file but differ between them
    (what the comparison is about, e.g. {"device": ("RTX 3090", "RTX 4090")})."""
    a = [rec.validate(r) for r in a]
    b = [rec.validate(r) for r in b]
    varying = [f for f in SETUP_FIELDS
               if len({_h(r.get(f)) for r in a}) > 1 or len({_h(r.get(f)) for r in b}) > 1]
    header = {}
    for f in SETUP_FIELDS:
        if f in varying:
            continue
        va = a[0].get(f) if a else None
        vb = b[0].get(f) if b else None
        if _h(va) != _h(vb):
            header[f] = (va, vb)
    key_fields = [f for f in POINT_FIELDS if f != "test"] + varying

    def key(r):
        return (r.get("test"),) + tuple(_h(r.get(f)) for f in key_fields)

    bmap = {}
    for r in b:
        bmap.setdefault(key(r), r)
    rows = []
    for ra in a:
        rb = bmap.get(key(ra))
        t = ra.get("test")
        if rb is None or t not in VALUE_FIELDS:
            continue
        field, unit = VALUE_FIELDS[t]
        va = _mem_value(ra) if t == "mem" else ra.get(field)
        vb = _mem_value(rb) if t == "mem" else rb.get(field)
        if va is None or vb is None:
            continue
        row = {"model": ra.get("model"), "test": test_label(ra)}
        for f in varying:
            row[f] = ra.get(f)
        row["unit"] = unit
        row["A"] = float(va)
        row["B"] = float(vb)
        row["B/A"] = float(vb) / float(va) if float(va) else math.nan
        rows.append(row)
    return rows, header


def _h(v):
    # CSV cannot tell an empty string from a missing value: both mean "not set" here
    if v == "":
        return None
    return json.dumps(v, sort_keys=True) if isinstance(v, (dict, list)) else v
