"""Published benchmark results shipped with glmbench as measured records (data/public/*.json).

Each file is a list of glmbench records (evidence "measured", the fields of results/records.py
and of an imported llama-bench run), every one carrying its attribution: `source` (the URL the
figures were published at), `via` (how they were copied) and `notes`; a `NAME.md` beside the
file says what it holds and what was left out. The cards are catalog keys (`hardware`), the
models built-in names, so a record predicts and calibrates as it is.

    from glmbench.results import public
    public.list_public()              # ["scoreboard"]
    recs = public.load_public("scoreboard")   # llama.cpp's CUDA scoreboard, Llama-2-7B Q4_0
"""
from __future__ import annotations

import os

from glmbench import vocab
from glmbench.results import records as rec

_DATA = os.path.join(vocab.DATA_DIR, "public")


def list_public() -> list[str]:
    """Names of the shipped published result sets."""
    if not os.path.isdir(_DATA):
        return []
    return sorted(f[:-5] for f in os.listdir(_DATA) if f.endswith(".json"))


def public_path(name: str) -> str:
    """The file of a shipped result set (a ValueError naming the known ones for another name)."""
    if not isinstance(name, str) or name.strip().lower().removesuffix(".json") not in list_public():
        raise ValueError(f"unknown published result set {name!r}; shipped: {', '.join(list_public()) or 'none'}")
    return os.path.join(_DATA, name.strip().lower().removesuffix(".json") + ".json")


def load_public(name: str) -> list[dict]:
    """The measured records of a shipped result set, each checked (evidence, and a speed > 0 with
    its test and depth for tg/pp records); a bad record -> a ValueError naming the file and record."""
    p = public_path(name)
    recs = rec.read_records(p)
    for i, r in enumerate(recs, 1):
        if r.get("evidence") != "measured":
            raise ValueError(f"{p}: record {i}: evidence must be 'measured', got {r.get('evidence')!r}")
        if r.get("test") in ("tg", "pp"):
            v = r.get("avg_ts")
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
                raise ValueError(f"{p}: record {i}: field `avg_ts` must be a speed > 0, got {v!r}")
            if not isinstance(r.get("n_depth"), int) or r["n_depth"] < 0:
                raise ValueError(f"{p}: record {i}: field `n_depth` must be a whole number >= 0, got {r.get('n_depth')!r}")
        if not r.get("source"):
            raise ValueError(f"{p}: record {i}: no `source` (every published figure keeps where it came from)")
    return recs


def describe(name: str) -> str:
    """The NAME.md beside a shipped result set: what it holds, its attribution, what was left out."""
    p = public_path(name)[:-5] + ".md"
    if not os.path.isfile(p):
        return ""
    with open(p) as f:
        return f.read()
