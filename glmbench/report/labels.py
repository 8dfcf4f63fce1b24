"""The words and numbers the charts and report.md share, without matplotlib: token counts as labels
(`tokens_label`, `approx_tokens`), a rig in words (`rig_label`), the fields that make one line on a chart
(`RIG_FIELDS`) and where one model's decode line crosses another's (`crossovers`).

report/plots.py draws with them (and re-exports them: `plots.tokens_label` ...); report/render.py and
report/findings.py write with them. They live here so that what only writes or prints (`glmbench models`,
`runtimes`, `compare`, a sweep, report.md's text) never loads matplotlib, which only a chart needs
(tests/test_layout.py::test_light_commands_never_load_matplotlib).
"""
from __future__ import annotations

from collections import defaultdict
from typing import Sequence

from glmbench.predict.costmodel import crossover  # the cost model owns the interpolation rule
from glmbench.results.records import validate

# The fields that make one line on a chart: the same model on the same rig, formats and runtime.
RIG_FIELDS = ("device", "n_cards", "split", "link_gbps", "weights", "type_k", "runtime")


def tokens_label(n: float) -> str:
    """1024 -> '1K', 131072 -> '128K', 1048576 -> '1M', 512 -> '512'."""
    n = float(n)
    if n >= 1024 ** 2 and n % (1024 ** 2) == 0:
        return f"{int(n // 1024 ** 2)}M"
    if n >= 1024 and n % 1024 == 0:
        return f"{int(n // 1024)}K"
    if n >= 1000:
        return f"{n / 1024:.1f}K"
    return f"{n:g}"


def approx_tokens(x: float) -> str:
    """A context length read off an interpolated curve, to the precision it deserves:
    24612 -> '25K', 3310 -> '3.3K', 700 -> '700'."""
    x = float(x)
    if x >= 10 * 1024 ** 2:
        return f"{round(x / 1024 ** 2):.0f}M"
    if x >= 1024 ** 2:
        return f"{x / 1024 ** 2:.1f}M"
    if x >= 10 * 1024:
        return f"{round(x / 1024):.0f}K"
    if x >= 1024:
        return f"{x / 1024:.1f}K"
    return f"{round(x):.0f}"


def _as_records(records: Sequence[dict]) -> list[dict]:
    if isinstance(records, dict) or not hasattr(records, "__iter__"):
        raise TypeError(f"`records` must be a list of record dicts, got {type(records).__name__}")
    return [validate(r) for r in records]


def rig_label(r: dict) -> str:
    """'1× RTX 3090' or '2× RTX 3090 (layer split, 1.4 GB/s)'."""
    n = r.get("n_cards") or 1
    if not r.get("device"):
        # a result file that names no card (a bare llama-bench table): said in words, not as '1× ?'
        return "card not stated" if int(n) == 1 else f"{n} cards, not stated which"
    s = f"{n}× {r['device']}"
    if n and int(n) > 1:
        extra = [f"{r['split']} split"] if r.get("split") not in (None, "", "none") else []
        if r.get("link_gbps") not in (None, ""):
            extra.append(f"{float(r['link_gbps']):g} GB/s")
        if extra:
            s += " (" + ", ".join(extra) + ")"
    return s


def _rig_key(r: dict) -> tuple:
    return tuple(r.get(f) for f in RIG_FIELDS)


def crossovers(records: Sequence[dict], x_field: str = "n_depth", y_field: str = "avg_ts") -> list[dict]:
    """Every context where one model overtakes another on the same rig (predicted lines only).

    Returns dicts {rig label, models (a, b), x, faster_before, faster_after}; x interpolated by
    glmbench.predict.costmodel.crossover on the shared grid of the two lines.
    """
    labels = {}
    out = []
    for k, a, b, xs, ya, yb in _model_pairs(_as_records(records), x_field, y_field, labels):
        for x in crossover(xs, ya, yb):
            before = [j for j, xv in enumerate(xs) if xv < x]
            j = before[-1] if before else 0
            first = a if ya[j] > yb[j] else b
            out.append({"rig": labels[k], "models": (a, b), "x": float(x),
                        "faster_before": first, "faster_after": b if first == a else a,
                        "evidence": k[-1], "weights": k[4], "kv": k[5], "runtime": k[6]})
    return out


def _model_pairs(records, x_field, y_field, labels=None, x_zero=True):
    """(rig key, model a, model b, shared xs, a's ys, b's ys) for every two models' predicted lines on one rig
    (same evidence) with at least two x values in common, a before b by name; `labels` gets each rig key's
    label; x_zero False leaves out points at x = 0."""
    by_rig: dict[tuple, dict[str, dict[float, float]]] = defaultdict(lambda: defaultdict(dict))
    for r in records:
        x = r.get(x_field)
        if r["evidence"] == "measured" or x is None or r.get(y_field) is None or (not x_zero and not x):
            continue
        k = _rig_key(r) + (r["evidence"],)
        by_rig[k][str(r["model"])][float(x)] = float(r[y_field])
        if labels is not None:
            labels[k] = rig_label(r)
    for k, models in by_rig.items():
        names = sorted(models)
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                xs = sorted(set(models[a]) & set(models[b]))
                if len(xs) >= 2:
                    yield k, a, b, xs, [models[a][x] for x in xs], [models[b][x] for x in xs]
