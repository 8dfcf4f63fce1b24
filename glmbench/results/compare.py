"""Record logic shared by `glmbench compare` and the report: which records are the same point,
and the value each test is compared on.

  compare(a, b, *more)              compare-llama-bench style: B/A, C/A... per point the files share
  measured_predicted_pairs(records) each measured tg/pp record with the predicted ones of its point
                                    (vocab.join_key), for the report's measured-vs-predicted table
"""
from __future__ import annotations

import json
import math
from typing import Sequence

from glmbench import vocab
from glmbench.results import records as rec

__all__ = ["compare", "measured_predicted_pairs", "test_label", "file_letters", "POINT_FIELDS", "SETUP_FIELDS",
           "VALUE_FIELDS"]


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
# What a point is: vocab.join_key, the rule the report's measured-vs-predicted table uses too (its
# fields are these). What is set up differently between (or within) files: the setup fields; one
# that varies within a file joins the key, one constant in each file but different between them
# is the comparison's subject (the header). What is measured at a point, per test: VALUE_FIELDS.
POINT_FIELDS = ("test", "model", "n_depth", "n_prompt", "n_gen", "n_streams", "concurrency")
SETUP_FIELDS = ("evidence", "tool", "device", "n_cards", "split", "link_gbps", "weights", "type_k", "type_v",
                "mla_strategy", "runtime", "n_threads", "n_batch", "n_ubatch", "flash_attn")
VALUE_FIELDS = {"tg": ("avg_ts", "tok/s"), "pp": ("avg_ts", "tok/s"), "pg": ("avg_ts", "tok/s"),
                "serve": ("aggregate_tok_s", "tok/s"), "mem": ("mem_bytes", "bytes")}


def _mem_value(r):
    if r.get("mem_bytes") is not None:
        return r["mem_bytes"]
    if r.get("weight_bytes") is not None and r.get("kv_bytes") is not None:  # measured: exact arrays
        return r["weight_bytes"] + r["kv_bytes"]
    return None


def _value(r):
    t = r.get("test")
    if t == "mem":
        return _mem_value(r)
    v = r.get(VALUE_FIELDS[t][0])
    if v is None and t == "serve":
        v = r.get("avg_ts")
    return v


def test_label(r: dict) -> str:
    """llama-bench style: 'tg1@d4096', 'pp512', 'pp512@d4096', 'pp512+tg128', 'mem@d128K',
    'serve16@d4096'."""
    t = r.get("test")
    d = r.get("n_depth") or 0
    at = f"@d{d}" if d else ""
    if t == "tg":
        return f"tg{r.get('n_gen') or ''}{at}"
    if t == "pp":
        return f"pp{r.get('n_prompt') or ''}{at}"
    if t == "pg":
        return f"pp{r.get('n_prompt') or ''}+tg{r.get('n_gen') or ''}{at}"
    if t == "serve":
        return f"serve{r.get('concurrency') or ''}{at}"
    return f"{t}{at}"


def file_letters(n: int) -> list[str]:
    """'A', 'B', ... 'Z', 'AA', ...: the column of each file in a comparison."""
    out = []
    for i in range(n):
        s, i = "", i + 1
        while i:
            i, r = divmod(i - 1, 26)
            s = chr(65 + r) + s
        out.append(s)
    return out


def compare(a: Sequence[dict], b: Sequence[dict], *more: Sequence[dict]) -> tuple[list[dict], dict]:
    """Match the points of two or more record lists and give each one's value over the first's
    (compare-llama-bench style: B/A, C/A, ...). Points are matched by vocab.join_key (so a tg1
    prediction pairs with a tg128 measurement at the same depth) plus the setup fields that vary
    within a file.

    Returns (rows, differences): one row per point of the first file that at least one other file
    has, with the value in each file (None where a file lacks the point) and the ratios;
    differences: the setup fields that are constant within each file but differ between them
    (what the comparison is about, e.g. {"device": ("RTX 3090", "RTX 4090")})."""
    files = [[rec.validate(r) for r in f] for f in (a, b) + more]
    letters = file_letters(len(files))
    varying = [f for f in SETUP_FIELDS if any(len({_h(r.get(f)) for r in fl}) > 1 for fl in files)]
    header = {}
    for f in SETUP_FIELDS:
        if f in varying:
            continue
        vals = tuple(fl[0].get(f) if fl else None for fl in files)
        if len({_h(v) for v in vals}) > 1:
            header[f] = vals

    def key(r):
        return vocab.join_key(r) + tuple(_h(r.get(f)) for f in varying)

    maps = []
    for fl in files[1:]:
        m = {}
        for r in fl:
            if r.get("test") in VALUE_FIELDS and _value(r) is not None:
                m.setdefault(key(r), r)
        maps.append(m)
    rows = []
    for ra in files[0]:
        t = ra.get("test")
        if t not in VALUE_FIELDS or _value(ra) is None:
            continue
        k = key(ra)
        others = [m.get(k) for m in maps]
        if not any(o is not None for o in others):
            continue
        va = float(_value(ra))
        labels = list(dict.fromkeys(test_label(r) for r in [ra] + [o for o in others if o is not None]))
        row = {"model": ra.get("model"), "test": " / ".join(labels)}
        for f in varying:
            row[f] = ra.get(f)
        row["unit"] = VALUE_FIELDS[t][1]
        row[letters[0]] = va
        for L, o in zip(letters[1:], others):
            row[L] = float(_value(o)) if o is not None else None
        for L in letters[1:]:
            row[f"{L}/A"] = (row[L] / va if va else math.nan) if row[L] is not None else None
        rows.append(row)
    return rows, header


def _h(v):
    # CSV cannot tell an empty string from a missing value: both mean "not set" here
    if v == "":
        return None
    return json.dumps(v, sort_keys=True) if isinstance(v, (dict, list)) else v
