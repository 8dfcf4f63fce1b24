"""Record logic shared by `glmbench compare` and the report: which records are the same point,
and the value each test is compared on.

  compare(a, b, *more)              compare-llama-bench style: B/A, C/A... per point the files share
  measured_predicted_pairs(records) each measured tg/pp record with the predicted ones of its point
                                    (vocab.join_key), for the report's measured-vs-predicted table
"""
from __future__ import annotations

import json
import math
import re
from typing import Sequence

from glmbench import vocab
from glmbench.results import records as rec

__all__ = ["compare", "summarize", "repeated_points", "measured_predicted_pairs", "test_label", "file_letters", "POINT_FIELDS", "SETUP_FIELDS",
           "VALUE_FIELDS", "tg_lengths_sentence", "paired_tg_lengths"]


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


def tg_lengths_sentence(pairs, roles: Sequence[str] = ()) -> str:
    """The one sentence saying that tg records of different lengths were paired as one point, '' where
    none were. `pairs`: the n_gen of each pairing's records, in order (measured, predicted) for the
    report's table, the files' order for compare; `roles` names them ("measured", "predicted")."""
    seen = list(dict.fromkeys(tuple(p) for p in pairs if len(set(p)) > 1))
    if not seen:
        return ""
    roles = tuple(roles) + ("",) * max(len(p) for p in seen)
    shown = ", ".join(" with ".join(f"{(roles[i] + ' ') if roles[i] else ''}tg{n}" for i, n in enumerate(p))
                      for p in seen[:4]) + (", ..." if len(seen) > 4 else "")
    return (f"Decode rows of different lengths are paired as one point ({shown}): the tokens generated are not part "
            "of a point (its model, test, depth, prompt and streams), so each stands for the decode rate at its depth.")


def paired_tg_lengths(rows: Sequence[dict]) -> list[tuple[int, ...]]:
    """The n_gen of the tg records each row of compare() paired (its `test` label, "tg1@d8192 /
    tg128@d8192"), the files' order, for the rows that paired several lengths."""
    out = []
    for r in rows:
        labels = str(r.get("test", "")).split(" / ")
        gens = [re.fullmatch(r"tg(\d*)(?:@d\d+)?", x) for x in labels]
        if len(labels) > 1 and all(gens):
            out.append(tuple(int(g.group(1) or 1) for g in gens))
    return out


# ---- compare ------------------------------------------------------------------------------------
# What a point is: vocab.join_key, the rule the report's measured-vs-predicted table uses too (its
# fields are these). What is set up differently between (or within) files: the setup fields; one
# that varies within a file joins the key, one constant in each file but different between them
# is the comparison's subject (the header). What is measured at a point, per test: VALUE_FIELDS.
POINT_FIELDS = ("test", "model", "n_depth", "n_prompt", "n_gen", "n_streams", "concurrency")
SETUP_FIELDS = ("evidence", "tool", "device", "n_cards", "split", "link_gbps", "weights", "type_k", "type_v",
                "mla_strategy", "runtime", "n_threads", "n_batch", "n_ubatch", "flash_attn", "backend", "label")
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


def _gen_varies(files) -> bool:
    """True when some file holds tg records of several lengths at one point (llama-bench 2024's
    tg512, tg1024, ... from an empty cache): then tg<n> pairs only with tg<n>. Otherwise a tg
    record pairs with any tg record of its point (a tg1 prediction with a tg128 measurement)."""
    for fl in files:
        seen = {}
        for r in fl:
            if r.get("test") == "tg":
                seen.setdefault(vocab.join_key(r), set()).add(r.get("n_gen") or 1)
        if any(len(v) > 1 for v in seen.values()):
            return True
    return False


def _occurrences(records, key, keys=None) -> dict:
    """key -> the records of that point in file order (a file holding two runs has two). `keys`: each record's
    key where computed already (a record of a test in VALUE_FIELDS)."""
    m = {}
    for i, r in enumerate(records):
        if r.get("test") in VALUE_FIELDS and _value(r) is not None:
            m.setdefault(key(r) if keys is None else keys[i], []).append(r)
    return m


def repeated_points(records: Sequence[dict], key=None, keys=None) -> int:
    """How many points a file holds more than once (two runs appended to one file). `keys`: each record's
    key, computed already."""
    return sum(1 for v in _occurrences(records, key or _run_key, keys).values() if len(v) > 1)


def _run_key(r):
    """A record's point, its tg length and its setup: the same in two runs of one test."""
    return vocab.join_key(r) + ((r.get("n_gen") or 1) if r.get("test") == "tg" else None,) + \
        tuple(_h(r.get(f)) for f in SETUP_FIELDS)


def compare(a: Sequence[dict], b: Sequence[dict], *more: Sequence[dict]) -> tuple[list[dict], dict]:
    """Match the points of two or more record lists and give each one's value over the first's
    (compare-llama-bench style: B/A, C/A, ...). Points are matched by vocab.join_key (so a tg1
    prediction pairs with a tg128 measurement at the same depth; tg<n> with tg<n> only when a
    file holds several tg lengths at one point) plus the setup fields that vary within a file.

    Every record is kept: a file that holds a point twice (two runs appended to one file) gives
    one row per run, `run` 1, 2, ... (the i-th run of a file against the i-th of the others; a
    file with fewer runs repeats its last).

    Returns (rows, differences): rows for the points of the first file that at least one other
    file has, with the value in each file (None where a file lacks the point) and the ratios;
    differences: the setup fields that are constant within each file but differ between them
    (what the comparison is about, e.g. {"device": ("RTX 3090", "RTX 4090")})."""
    files = [[rec.validate(r) for r in f] for f in (a, b) + more]
    letters = file_letters(len(files))
    # a field unset on some records (the link of a one-card rig) varies only in the values it has
    varying = [f for f in SETUP_FIELDS if any(len({_h(r.get(f)) for r in fl} - {None}) > 1 for fl in files)]
    header = {}
    for f in SETUP_FIELDS:
        if f in varying:
            continue
        vals = tuple(next((r.get(f) for r in fl if _h(r.get(f)) is not None), None) for fl in files)
        if len({_h(v) for v in vals}) > 1:
            header[f] = vals
    by_gen = _gen_varies(files)

    def key(r):
        g = (r.get("n_gen") or 1) if by_gen and r.get("test") == "tg" else None
        return vocab.join_key(r) + (g,) + tuple(_h(r.get(f)) for f in varying)

    occ = [_occurrences(fl, key) for fl in files]
    runs = any(len(v) > 1 for m in occ for v in m.values())
    # a calibrated file's cross-validated band (cv_error) beside each of its values: a column per such file
    banded = [any(r.get("cv_error") is not None for r in fl) for fl in files]
    rows = []
    done = set()
    for ra in files[0]:
        t = ra.get("test")
        if t not in VALUE_FIELDS or _value(ra) is None:
            continue
        k = key(ra)
        if k in done:
            continue
        done.add(k)
        if not any(occ[i].get(k) for i in range(1, len(files))):
            continue
        n_runs = max(len(m.get(k, ())) for m in occ)
        for i in range(n_runs):
            recs = [(m[k][min(i, len(m[k]) - 1)] if m.get(k) else None) for m in occ]
            base = recs[0]
            others = recs[1:]
            va = float(_value(base))
            labels = list(dict.fromkeys(test_label(r) for r in recs if r is not None))
            row = {"model": base.get("model"), "test": " / ".join(labels)}
            if runs:
                row["run"] = i + 1
            for f in varying:
                row[f] = base.get(f)
            row["unit"] = VALUE_FIELDS[t][1]
            for j, (L, o) in enumerate(zip(letters, recs)):
                row[L] = (va if j == 0 else float(_value(o))) if o is not None else None
                if banded[j]:
                    row[f"{L} band"] = None if o is None or o.get("cv_error") is None else float(o["cv_error"])
            for L in letters[1:]:
                row[f"{L}/A"] = (row[L] / va if va else math.nan) if row[L] is not None else None
            rows.append(row)
    return rows, header


SHOW_FIELDS = ("device", "n_cards", "hardware", "backend", "weights", "flash_attn", "type_k", "n_ubatch", "label",
               "tool")


def summarize(records: Sequence[dict]) -> tuple[list[dict], list[str]]:
    """What one file holds, as `glmbench compare FILE` shows it: one row per record (its point, the
    setup fields that vary within the file, its value, where it was read), and one line per field
    the import inferred, with how ("model: glm-4.7-flash (from 'deepseek2 30B.A3B' + 29.94 B
    params)"), each distinct one once."""
    recs = [rec.validate(r) for r in records]
    varying = [f for f in SHOW_FIELDS if len({_h(r.get(f)) for r in recs}) > 1]

    key = _run_key
    seen: dict = {}
    # (each record's key once: repeated_points's, with its own key, and the rows' each computed it again)
    keys = [key(r) if r.get("test") in VALUE_FIELDS else None for r in recs]
    runs = repeated_points(recs, keys=keys) > 0
    banded = any(x.get("cv_error") is not None for x in recs)   # (once: per record made a file quadratic)
    rows = []
    for r, k in zip(recs, keys):
        t = r.get("test")
        if t not in VALUE_FIELDS:
            continue
        v = _value(r)
        row = {"model": r.get("model") or "?", "test": test_label(r)}
        if runs:   # a point the file holds more than once: which time this is
            seen[k] = seen.get(k, 0) + 1
            row["run"] = seen[k]
        for f in varying:
            row[f] = r.get(f)
        row["value"] = None if v is None else float(v)
        if banded:   # a calibrated value's cross-validated band
            row["band"] = None if r.get("cv_error") is None else float(r["cv_error"])
        row["unit"] = VALUE_FIELDS[t][1]
        row["evidence"] = r.get("evidence")
        row["source"] = r.get("source") or ""
        rows.append(row)
    lines: dict = {}   # (ordered; a set's lookup: a list's made a file of many distinct lines quadratic)
    for r in recs:
        inf = r.get("inferred")
        if isinstance(inf, str):
            try:
                inf = json.loads(inf)
            except ValueError:
                inf = {"": inf}
        for f, how in (inf or {}).items():
            val = r.get({"card": "device"}.get(f, f))
            if f == "card":
                line = f"card: {how}"
            else:
                line = f"{f}: {val if val is not None else '?'} ({how})" if not str(how).startswith(str(val)) \
                    else f"{f}: {how}"
            lines.setdefault(line)
    lines = list(lines)
    # what the numbers are for: the card(s) and split, the formats, and the runtime a prediction priced
    for f in ("device", "n_cards", "split", "weights", "type_k", "backend", "runtime"):
        vals = list(dict.fromkeys(_h(r.get(f)) for r in recs))
        if f not in varying and len(vals) == 1 and vals[0] not in (None, "none") and not any(x.startswith(
                {"device": "card", "n_cards": "card"}.get(f, f) + ":") for x in lines):
            lines.append(f"{f}: {vals[0]} (as the file says)")
    return rows, lines


def _h(v):
    # CSV cannot tell an empty string from a missing value: both mean "not set" here
    if v is None:
        return None     # (the commonest value of a setup field, told without a comparison)
    if v == "":
        return None
    return json.dumps(v, sort_keys=True) if isinstance(v, (dict, list)) else v
