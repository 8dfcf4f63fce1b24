"""Charts from record lists (glmbench/records.py), drawn with matplotlib's object API.

Figures are built as `matplotlib.figure.Figure` objects, never through pyplot: no global state,
no backend switch, nothing left open when a sweep draws hundreds of them, and the same code works
in a script (PNG through Agg) and in a notebook (after `%matplotlib inline`, a figure that ends a
cell is shown).

Conventions every chart follows:
  - measured points are markers, predictions are lines, calibrated predictions are lines with
    a band (the record fields `avg_ts_lo` / `avg_ts_hi` when present); a measured point marked
    `stable: false` (the machine was busy while it was timed) is a cross, labelled as unstable;
  - colour names the model, line style the rig (one card solid, two cards dashed, ...);
  - context and prompt length sit on a log2 axis with ticks at 1K, 2K, ... 128K;
  - a footer names the evidence kind(s), hardware, weight format, KV format and runtime of
    what is drawn, so a PNG that travels alone still says what it is.

Fields read, beyond those every record has (records.py): tg: n_depth, avg_ts; pp: n_prompt,
avg_ts, ttft_s (else n_prompt / avg_ts for a prompt ingested from empty); mem: n_depth,
mem_bytes, capacity_bytes, fits; serve: concurrency, n_depth, aggregate_tok_s, per_stream_tok_s.
"""
from __future__ import annotations

import math
import os
from collections import defaultdict
from typing import Iterable, Sequence

from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.transforms import offset_copy
from matplotlib.ticker import AutoLocator, FixedLocator, FuncFormatter, Locator, LogLocator, NullFormatter, NullLocator

from glmbench.predict.replay import evidence_text  # a trace study's evidence line, as its section says it
from glmbench.results.records import EVIDENCE, atomic_write
# the chart-free helpers (report.md and the CLI's text use them without matplotlib), still plots.<name>
from glmbench.report.labels import (RIG_FIELDS, _as_records, _model_pairs, _rig_key, approx_tokens,  # noqa: F401
                                    crossovers, rig_label, tokens_label)

GIB = 1024 ** 3

# One colour per model (tab10 order, colour-blind friendlier than the default cycle), one line
# style per rig.
_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf", "#7f7f7f")
_STYLES = ("-", "--", ":", "-.")
_MARKERS = {"measured": "o", "unstable": "x", "calibrated": "s", "predicted": None}
# a line of one point is a mark: the first rig's is the dash (the square, calibrated), the others' these
# shapes, hollow; the rigs' marks stand _SINGLE_STEP points apart around their x
_SINGLE_MARKS = ("_", "^", "D", "p")
_SINGLE_STEP = 16.0
# the markers of one setup's series at several contexts (throughput_vs_concurrency), hollow
_CONTEXT_MARKS = ("o", "^", "D", "v", "p")
# the "does not fit" marks of throughput_vs_concurrency, one per rig (in _Styler's rig order, as the line styles)
_SPILL_MARKS = ("x", "+", "X", "P")



# ---- helpers ----------------------------------------------------------------------------------
def _log2_token_axis(ax, values: Iterable[float], label: str) -> None:
    vals = [float(v) for v in values if v is not None and float(v) > 0]
    if not vals:
        return
    lo = 2 ** math.floor(math.log2(min(vals)))
    hi = 2 ** math.ceil(math.log2(max(vals)))
    ticks = []
    t = lo
    while t <= hi:
        ticks.append(t)
        t *= 2
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: tokens_label(v)))
    if len(ticks) > 10:  # keep labels readable on a narrow panel
        for lab in ax.get_xticklabels():
            lab.set_rotation(45)
    ax.set_xlim(min(vals) / 1.15, max(vals) * 1.15)
    ax.set_xlabel(label)


def plain_number(v: float, unit: str = "") -> str:
    """A tick value as a reader writes it: 0.05, 0.5, 2, 10, 1,000, 20,000 (never 2x10^0 or 5e-02),
    with `unit` after it ('0.5 s')."""
    v = float(v)
    if v >= 1000:
        s = f"{v:,.0f}"
    else:
        s = f"{v:.3g}"
        if "e" in s:
            s = f"{float(s):.12f}".rstrip("0").rstrip(".")
    return s + unit


class _PlainLogLocator(Locator):
    """Major ticks of a base-10 log axis at the coarsest of every decade, 1-3, 1-2-5 or every
    whole step that puts enough ticks in view (decided when drawn, on the final limits): a log axis over
    less than a decade had one labelled tick or none, matplotlib then labelling its minor ticks."""

    _STEPS = (((1.0,), 4), ((1.0, 3.0), 4), ((1.0, 2.0, 5.0), 3), (tuple(float(k) for k in range(1, 10)), 2))

    def __call__(self):
        vmin, vmax = self.axis.get_view_interval()
        return self.tick_values(vmin, vmax)

    def tick_values(self, vmin, vmax):
        vmin, vmax = sorted((float(vmin), float(vmax)))
        if not (vmin > 0 and math.isfinite(vmax)):
            return LogLocator(base=10).tick_values(vmin, vmax)
        for subs, need in self._STEPS[:-1]:
            ticks = LogLocator(base=10, subs=subs, numticks=12).tick_values(vmin, vmax)
            if sum(1 for t in ticks if vmin <= t <= vmax) >= need:
                return ticks
        # under about half a decade: every whole step (0.06, 0.07, ... 0.1, then 0.2) or plain linear steps (0.06,
        # 0.08, ... 0.16), whichever leaves the shorter stretch of the axis without a label (whole steps on
        # $0.053-0.17 labelled nothing above 0.1, the upper half of the axis)
        subs, need = self._STEPS[-1]
        cands = [LogLocator(base=10, subs=subs, numticks=12).tick_values(vmin, vmax),
                 [t for t in AutoLocator().tick_values(vmin, vmax) if t > 0]]
        cands = [c for c in cands if sum(1 for t in c if vmin <= t <= vmax) >= need] or cands[-1:]
        return min(cands, key=lambda c: self._widest_gap(c, vmin, vmax))

    @staticmethod
    def _widest_gap(ticks, vmin, vmax) -> float:
        """The longest stretch of the axis (log) between labelled ticks or a tick and an end."""
        pts = [math.log(vmin)] + sorted(math.log(t) for t in ticks if vmin <= t <= vmax) + [math.log(vmax)]
        return max(b - a for a, b in zip(pts, pts[1:]))


def plain_log_axis(axis, unit: str = "") -> None:
    """Label a log axis (`ax.xaxis` / `ax.yaxis`, its scale already log) with plain numbers at readable
    steps (plain_number, _PlainLogLocator), its minor ticks unlabelled: matplotlib's own labels read
    '10^-1', '2x10^0', '6x10^-1'."""
    axis.set_major_locator(_PlainLogLocator())
    axis.set_major_formatter(FuncFormatter(lambda v, _pos: plain_number(v, unit)))
    axis.set_minor_formatter(NullFormatter())


def linear_number(v: float, unit: str = "") -> str:
    """A tick value of a linear axis with thousands separators, as report.md writes its figures: 12,000 (never
    12000, nor 1.2 under a '1e4' offset), 0.25, 137.5 (a tick a 2.5 step puts there, never rounded)."""
    v = float(v)
    if abs(v) >= 1000:
        s = f"{v:,.2f}".rstrip("0").rstrip(".")
    else:
        s = f"{v:.6g}"
        if "e" in s:
            s = f"{v:.12f}".rstrip("0").rstrip(".")
    return ("0" if s in ("-0", "") else s) + unit


def plain_linear_axis(axis, unit: str = "") -> None:
    """Label a linear value axis (`ax.yaxis`: tokens/s, tokens, GiB) with linear_number: matplotlib's own labels
    read 10000 and 12000 beside report.md's '12,711', and past a million put a '1e6' multiplier above the axis."""
    axis.set_major_formatter(FuncFormatter(lambda v, _pos: linear_number(v, unit)))


def _select(records, test: str) -> list[dict]:
    return [r for r in records if r.get("test") == test]


def _one_stream(records) -> list[dict]:
    """The records of one stream (`n_streams` absent or 1): a batched-bench row of B streams is
    an aggregate rate, not a point of a one-stream curve."""
    return [r for r in records if (r.get("n_streams") or 1) == 1]


def _own_fitted(r: dict) -> bool:
    """A crossover row's own MLA efficiency came from a fit (crossover rows before `own_fitted`: a
    calibrated profile's)."""
    return bool(r.get("own_fitted", r.get("evidence") == "calibrated"))


class _Styler:
    """Stable colour per model and line style per rig within one figure."""

    def __init__(self, records):
        self.models = sorted({str(r.get("model")) for r in records})
        rigs = sorted({_rig_key(r) for r in records}, key=lambda k: tuple(str(x) for x in k))
        self.rigs = {k: i for i, k in enumerate(rigs)}

    def colour(self, model) -> str:
        return _COLOURS[self.models.index(str(model)) % len(_COLOURS)]

    def style(self, r) -> str:
        return _STYLES[self.rigs[_rig_key(r)] % len(_STYLES)]


def _series(records, x_field: str) -> dict[tuple, list[dict]]:
    """Group records into lines: (model, rig..., evidence) -> records sorted by x."""
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in records:
        if r.get(x_field) is None:
            continue
        groups[(str(r.get("model")),) + _rig_key(r) + (r["evidence"],)].append(r)
    for k in groups:
        groups[k].sort(key=lambda r: float(r[x_field]))
    return dict(sorted(groups.items(), key=lambda kv: tuple(str(x) for x in kv[0])))


def _fits_index(records) -> dict:
    idx = {}
    for r in records:
        if r.get("test") == "mem" and r.get("fits") is not None and (r.get("n_streams") or 1) == 1 \
                and r.get("n_depth") is not None:
            idx[(str(r.get("model")),) + _rig_key(r) + (r["evidence"], int(r["n_depth"]))] = r["fits"]
    return idx


def _with_fits(recs, all_records, context) -> list[dict]:
    """Copies of `recs` that say whether their point fits in memory: a decode or prefill record
    has no `fits` of its own, so it takes the one of the memory record of the same setup at the
    same context (`context(r)` tokens), when the records have one."""
    idx = _fits_index(all_records)
    out = []
    for r in recs:
        if r.get("fits") is None:
            f = idx.get((str(r.get("model")),) + _rig_key(r) + (r["evidence"], int(context(r))))
            if f is not None:
                r = dict(r, fits=f)
        out.append(r)
    return out


def _distinct(records, field) -> list[str]:
    return sorted({str(r.get(field)) for r in records if r.get(field) not in (None, "")})


def provenance(records: Sequence[dict]) -> str:
    """One line naming what the records are: evidence, hardware, weights, KV, runtime."""
    ev = [e for e in EVIDENCE if any(r["evidence"] == e for r in records)]
    parts = ["evidence: " + " + ".join(ev) if ev else "evidence: none"]
    devs = sorted({rig_label(r) for r in records})
    if devs:
        parts.append("hardware: " + "; ".join(devs))
    parts.append("weights: " + _stated(records, "weights"))
    parts.append("KV: " + _stated(records, "type_k"))
    # the runtime of a measured record read from another tool's output is the tool that wrote it
    # (llama-bench, vllm bench serve, ...): one without a runtime field is named by its tool
    rt = _stated([dict(r, runtime=r.get("runtime") or r.get("tool")) for r in records], "runtime")
    parts.append("runtime: " + rt)
    return "  |  ".join(parts)


def _stated(records, field) -> str:
    """The values of `field` over the records, 'not stated' among them where a record has none."""
    vals = _distinct(records, field)
    if any(r.get(field) in (None, "") for r in records):
        vals.append("not stated")
    return ", ".join(vals)


def _new_figure(n_panels: int = 1, width: float = 8.0, height: float = 5.0) -> tuple[Figure, list]:
    fig = Figure(figsize=(width * n_panels if n_panels > 1 else width, height), dpi=110,
                 layout="constrained")
    axes = fig.subplots(1, n_panels, squeeze=False)[0]
    for ax in axes:
        ax.grid(True, which="major", alpha=0.3)
    return fig, list(axes)


def _footer(fig: Figure, records, note: str = "") -> None:
    _footer_text(fig, provenance(records) + (f"\n{note}" if note else ""))


def _footer_text(fig: Figure, text: str) -> None:
    fig.get_layout_engine().set(h_pad=0.1)
    fig.supxlabel(text, fontsize=7.5, color="0.3", wrap=True)


def _crossover_provenance(rows) -> str:
    """provenance() for crossover rows (glmbench.predict.crossover.mla_crossover_curves): evidence,
    the rigs (`rig`, `split`), formats (`weights`, `kv`) and the runtimes, one per panel row."""
    ev = [e for e in EVIDENCE if any(r.get("evidence") == e for r in rows)]
    rigs = list(dict.fromkeys(str(r["rig"]) + (f" ({r['split']} split)" if r.get("split") not in (None, "", "none") else "")
                              for r in rows if r.get("rig")))
    parts = ["evidence: " + (" + ".join(ev) if ev else "none")]
    if rigs:
        parts.append("hardware: " + "; ".join(rigs))
    parts.append("weights: " + (", ".join(_distinct(rows, "weights")) or "?"))
    parts.append("KV: " + (", ".join(_distinct(rows, "kv")) or "?"))
    rts = list(dict.fromkeys(str(r["runtime"]) for r in rows if r.get("runtime")))
    if rts:
        parts.append("runtime: " + (rts[0] if len(rts) == 1 else "each panel's title"))
    # two lines: the chart is narrow for its width in text
    return "  |  ".join(parts[:2]) + "\n" + "  |  ".join(parts[2:])


def _plot_series(ax, styler, recs, xf, yf, *, label, mark=None, dx=0.0):
    """One series: measured points as markers (`mark` in place of the circle, moved `dx` points aside),
    a prediction as a line (with `mark` at its points where given: series that share colour and line
    style, told apart)."""
    r0 = recs[0]
    ev = r0["evidence"]
    xs = [float(r[xf]) for r in recs]
    ys = [float(r[yf]) if r.get(yf) is not None else math.nan for r in recs]
    c = styler.colour(r0.get("model"))
    if ev == "measured":
        # points marked unstable (another process took the machine: glmbench.measure.protocol.stability)
        # are drawn apart, as crosses, so no one reads them as the code's speed
        for shaky in (False, True):
            sel = [i for i, r in enumerate(recs) if (r.get("stable") is False) == shaky]
            if not sel:
                continue
            yerr = None
            if all(recs[i].get("stddev_ts") is not None for i in sel) and yf == "avg_ts":
                yerr = [float(recs[i]["stddev_ts"]) for i in sel]
            bar = ax.errorbar([xs[i] for i in sel], [ys[i] for i in sel], yerr=yerr,
                              fmt=_MARKERS["unstable"] if shaky else (mark or _MARKERS["measured"]), color=c,
                              ms=7 if shaky else 6,
                              capsize=3, mfc="white", mew=1.6, zorder=3,
                              label=label + (" (measured, unstable: machine busy)" if shaky else " (measured)"))
            if dx:
                tr = offset_copy(ax.transData, fig=ax.figure, x=dx, units="points")
                for a in bar.get_children():
                    a.set_transform(tr)
        return
    # a line of one point (one depth, `--depths 4K`) draws nothing: it gets a mark of its own, a short
    # dash for a prediction (still no measured circle), the calibrated square larger. A mark shows no line
    # style, so the rigs' marks differ in shape (1 card the dash or square, the next rigs triangles,
    # diamonds, pentagons) and stand side by side: one card's and two cards' marks at nearly one speed lay
    # on each other, their legend entries alike
    single = sum(1 for y in ys if math.isfinite(y)) == 1
    marker, ms, mew, mfc = _MARKERS.get(ev), 4, None, None
    if mark:
        marker, ms, mfc = mark, 6, "white"
    tr = ax.transData
    if single:
        k = styler.rigs[_rig_key(r0)]
        if mark:
            ms, mew = 8, 2.0
        elif k % len(_SINGLE_MARKS):
            # hollow for a prediction, filled for a calibrated one (as the first rig's dash and square)
            marker, ms, mew = _SINGLE_MARKS[k % len(_SINGLE_MARKS)], 8, 2.0
            mfc = "white" if _MARKERS.get(ev) is None else None
        else:
            marker, ms, mew = (marker or "_"), (14 if marker is None else 7), 2.5
        if len(styler.rigs) > 1:
            tr = offset_copy(ax.transData, fig=ax.figure, x=_SINGLE_STEP * (k - (len(styler.rigs) - 1) / 2),
                             units="points")
    # drawn in data coordinates (so that the axes' limits take the point), then moved aside
    for a in ax.plot(xs, ys, styler.style(r0), color=c, lw=2, marker=marker, ms=ms, mew=mew, mfc=mfc,
                     label=label + ("" if ev == "predicted" else f" ({ev})")):
        a.set_transform(tr)
    lo, hi = yf + "_lo", yf + "_hi"
    if all(r.get(lo) is not None and r.get(hi) is not None for r in recs):
        if single:  # a band over one x has no width: an error bar
            i = next(i for i, y in enumerate(ys) if math.isfinite(y))
            bar = ax.errorbar([xs[i]], [ys[i]], yerr=[[ys[i] - float(recs[i][lo])], [float(recs[i][hi]) - ys[i]]],
                              fmt="none", ecolor=c, alpha=0.5, capsize=4, lw=1.5)
            for a in bar.get_children():
                a.set_transform(tr)
        else:
            ax.fill_between(xs, [float(r[lo]) for r in recs], [float(r[hi]) for r in recs],
                            color=c, alpha=0.15, lw=0)


# two lines closer than this (a share of the axes' height) at every x they share look like one line
_COINCIDE = 0.012
# the marks of a line drawn on another (hollow, so that two on one point both show; no circle, a measured point's)
_ON_MARKS = ("D", "v", "^", "p")


def _reveal_coinciding(ax, xfmt=tokens_label) -> None:
    """A prediction line that lies on an earlier one (within _COINCIDE of the axes' height at every x they share:
    one card's and two cards' decode, 138 and 137 tok/s) hid it: the pair read as one line, the legend naming two.
    Such a line gets hollow marks at its points (a shape none of the lines it lies on has: two calibrated lines
    both carry squares) and a legend line saying whose line it lies on and how close. Call once the axes'
    limits are final (what 'close' means is on the drawn scale)."""
    import numpy as np
    ax.get_xlim(), ax.get_ylim()   # the limits autoscaled now
    to_frac = ax.transScale + ax.transLimits
    cand = [ln for ln in ax.lines if not str(ln.get_label()).startswith("_") and ln.get_transform() == ax.transData
            and ln.get_linestyle() not in ("None", "", " ") and len(ln.get_xdata()) >= 2]
    mark = [ln.get_marker() if ln.get_marker() not in (None, "None", "", " ") else None for ln in cand]
    pts, labels = [], [str(ln.get_label()) for ln in cand]
    for ln in cand:
        xy = np.column_stack([np.asarray(ln.get_xdata(), float), np.asarray(ln.get_ydata(), float)])
        xy = xy[np.isfinite(xy).all(axis=1) & (xy[:, 0] > 0 if ax.get_xscale() == "log" else True)
                & (xy[:, 1] > 0 if ax.get_yscale() == "log" else True)]
        pts.append({float(x): (float(y), float(f)) for (x, y), f in zip(xy, to_frac.transform(xy)[:, 1])})
    for j in range(len(cand)):
        on = []
        for i in range(j):
            shared = sorted(set(pts[i]) & set(pts[j]))
            if len(shared) >= 2 and max(abs(pts[j][x][1] - pts[i][x][1]) for x in shared) < _COINCIDE:
                on.append((i, shared))
        # a line with marks of its own, other than those of the lines it lies on, is told apart already (two
        # calibrated lines both carry squares: not)
        if not on or (mark[j] is not None and all(mark[i2] != mark[j] for i2, _ in on)):
            continue
        i, shared = max(on, key=lambda t: (len(t[1]), -t[0]))
        taken = {mark[i2] for i2, _ in on}
        mark[j] = [m for m in _ON_MARKS if m not in taken][0]
        rel = max(abs(pts[j][x][0] - pts[i][x][0]) / max(abs(pts[i][x][0]), 1e-300) for x in shared)
        pct = max(1, math.ceil(100 * rel - 1e-9))
        a, b = labels[i].split(" · ", 1), labels[j].split(" · ", 1)
        other = a[1] if len(a) == 2 and len(b) == 2 and a[0] == b[0] else labels[i]
        span = "" if len(shared) == len(pts[j]) else f" from {xfmt(shared[0])} to {xfmt(shared[-1])}"
        ln = cand[j]
        ln.set_marker(mark[j])
        ln.set_markersize(6 if mark[j] == "D" else 7)
        ln.set_markerfacecolor("none")
        ln.set_markeredgewidth(1.5)
        ln.set_label(f"{labels[j]}\n    (marks: on the {other} line{span}, within {pct}%)")


def _from_zero(ax) -> None:
    """A y axis from 0 with room above the highest point: autoscaling pads the data's own range,
    so the top of nearly flat points (a measured series at one speed) sat on the frame, its
    marker cut in half."""
    top = ax.dataLim.y1 if ax.dataLim.height >= 0 and math.isfinite(ax.dataLim.y1) else None
    ax.set_ylim(bottom=0)
    if top is not None and top > 0:
        ax.set_ylim(top=max(ax.get_ylim()[1], top * 1.05))


# a y range wider than this (largest / smallest positive value drawn) goes on a log axis: on a linear one,
# 16M-token depths' 0.5 tok/s beside 140 tok/s at 1K (or 4 TiB of memory beside a 24 GiB ceiling) all sat on
# the floor, unreadable
LOG_Y_RATIO = 100.0


def _y_axis(ax, values, label: str) -> bool:
    """Label the y axis and scale it: from zero on a linear axis, or on a log axis (said in the label)
    where the positive `values` span more than LOG_Y_RATIO. Returns whether it is log."""
    vals = [float(v) for v in values if v is not None and math.isfinite(float(v)) and float(v) > 0]
    if vals and max(vals) / min(vals) > LOG_Y_RATIO:
        ax.set_yscale("log")
        plain_log_axis(ax.yaxis)
        ax.set_ylabel(label[:-1] + ", log scale)" if label.endswith(")") else label + " (log scale)")
        return True
    ax.set_ylabel(label)
    _from_zero(ax)
    plain_linear_axis(ax.yaxis)
    return False


def _finish_legend(ax, **kw):
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        ax.legend(fontsize=8, framealpha=0.9, **kw)


def _renderer(fig: Figure):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    rend = FigureCanvasAgg(fig).get_renderer()
    fig.draw(rend)
    return rend


def covers_data(ax, bbox) -> bool:
    """Whether a display-space box (a legend's, a label's) lies over anything the axes draw from data:
    a line's segments or markers, a band. Reference lines in axes coordinates (a ceiling, a crossover
    line) count too: a label on them hides them."""
    import numpy as np
    from matplotlib.transforms import Bbox
    box = Bbox(bbox.get_points())
    for line in ax.lines:
        xs = np.asarray(line.get_xdata(orig=False), float)
        if not len(xs):
            continue
        path = line.get_transform().transform_path(line.get_path())
        if line.get_linestyle() not in ("None", "", " ") and len(xs) > 1:
            # a NaN breaks a line (matplotlib draws no segment to it), but Path.intersects_bbox joins across it
            ok = np.isfinite(path.vertices).all(axis=1)
            runs = [path]
            if not ok.all():
                from matplotlib.path import Path
                parts = (r[np.isfinite(r).all(axis=1)] for r in np.split(path.vertices, np.flatnonzero(~ok)))
                runs = [Path(r) for r in parts if len(r) > 1]
            if any(p.intersects_bbox(box, filled=False) for p in runs):
                return True
        if line.get_marker() not in (None, "None", "", " ") and any(box.contains(*v) for v in path.vertices):
            return True
    from matplotlib.collections import PathCollection
    for coll in ax.collections:
        if isinstance(coll, PathCollection):
            # a scatter's dots: its paths are the marker shape at the origin, its points the offsets; a dot
            # counts where the box reaches its disc's bounding square (sizes in points squared)
            pts = coll.get_offset_transform().transform(np.asarray(coll.get_offsets(), float))
            sizes = np.resize(np.asarray(coll.get_sizes(), float), len(pts)) if len(coll.get_sizes()) else \
                np.zeros(len(pts))
            rad = np.sqrt(sizes) / 2 * ax.figure.dpi / 72
            (x0, y0), (x1, y1) = box.get_points()
            if np.any((pts[:, 0] + rad >= x0) & (pts[:, 0] - rad <= x1) & (pts[:, 1] + rad >= y0) &
                      (pts[:, 1] - rad <= y1)):
                return True
            continue
        tr = coll.get_transform()
        for p in coll.get_paths():
            if len(p.vertices) and tr.transform_path(p).intersects_bbox(box, filled=True):
                return True
    return False


def _legends_clear_of_data(fig: Figure, axes) -> None:
    """Move the axes' legends out of the way where they cover data: matplotlib's 'best' weighs points,
    not the segments between them nor the bands, and with seven or eight setups there is no empty corner
    (a legend lay over gpt-oss-20b's decode line, over a calibrated band). Then one legend goes right of
    the axes (for panels sharing their series, the first panel's), the figure widened by its width."""
    axes = [ax for ax in axes if ax.get_legend() is not None]
    if not axes:
        return
    rend = _renderer(fig)
    if not any(covers_data(ax, ax.get_legend().get_window_extent(rend)) for ax in axes):
        return
    first = axes[0]
    kw = dict(fontsize=8, framealpha=0.9)
    for ax in axes:
        ax.get_legend().remove()
    handles, labels = [], []
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    if len(axes) == 1:
        leg = first.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0, **kw)
    else:
        leg = fig.legend(handles, labels, loc="outside right upper", **kw)
    fig.set_figwidth(fig.get_figwidth() + leg.get_window_extent(_renderer(fig)).width / fig.dpi + 0.2)


# ---- crossover ----------------------------------------------------------------------------------
# ---- charts -------------------------------------------------------------------------------------
def generation_vs_context(records: Sequence[dict], *, title: str | None = None) -> Figure:
    """Decode tokens/s vs context depth, every model and rig; crossovers marked and labelled."""
    every = _as_records(records)
    recs = _with_fits(_one_stream(_select(every, "tg")), every, lambda r: r["n_depth"])
    if not recs:
        raise ValueError("no decode (test='tg') records to plot")
    drawn = [r for r in recs if r["n_depth"]]
    if not drawn:
        # a log context axis has no place for an empty cache: a chart of nothing would be an empty frame
        raise ValueError(f"no decode (test='tg') records at a depth above 0 to plot: the {len(recs)} at depth 0 "
                         "have no place on a log context axis (they are in the records)")
    # the same overtaking at nearly the same depth (within 10%) on several rigs (one card and two, whose
    # decode differs little) is one line and one label naming the rigs: a label each piled them up
    cxs: list = []
    for c in crossovers(recs):
        same = next((m for m in cxs if (m["faster_before"], m["faster_after"]) == (c["faster_before"], c["faster_after"])
                     and abs(math.log(m["x"] / c["x"])) < math.log(1.1)), None)
        if same is not None:
            same["rigs"].append(c["rig"])
        else:
            cxs.append(dict(c, rigs=[c["rig"]]))
    styler = _Styler(recs)
    # crossover labels take the top of the axes: the legend goes beside the axes, on a wider figure
    fig, (ax,) = _new_figure(width=12.5 if cxs else 8.0)
    for key, s in _series(drawn, "n_depth").items():
        _plot_series(ax, styler, s, "n_depth", "avg_ts", label=f"{s[0]['model']} · {rig_label(s[0])}")
    _mark_spill(ax, drawn, "n_depth", "avg_ts")
    positive = [float(r["n_depth"]) for r in recs if r["n_depth"]]
    xlo, xhi = (math.log(min(positive)), math.log(max(positive))) if positive else (0.0, 1.0)
    for i, c in enumerate(cxs):
        ax.axvline(c["x"], color="0.35", lw=1, ls=(0, (4, 3)), zorder=1)
        # the label goes on whichever side of the line has more room, so it stays inside the axes
        right = (math.log(c["x"]) - xlo) / max(xhi - xlo, 1e-9) > 0.5
        # one label per crossover, stacked so that rigs crossing at nearly the same depth stay legible
        ax.annotate(f"crossover ≈ {approx_tokens(c['x'])} on {' and '.join(c['rigs'])}:\n"
                    f"{c['faster_after']} overtakes {c['faster_before']}",
                    xy=(c["x"], 0.98), xycoords=("data", "axes fraction"), va="top",
                    ha="right" if right else "left", fontsize=7.5,
                    xytext=(-4 if right else 4, -30 * i), textcoords="offset points",
                    bbox=dict(boxstyle="round,pad=0.25", fc="white", ec="0.6", alpha=0.9))
    _log2_token_axis(ax, [r["n_depth"] for r in recs], "context already in the cache (tokens, log scale)")
    _y_axis(ax, [r["avg_ts"] for r in drawn], "generation speed (tokens/s, one stream)")
    _reveal_coinciding(ax)
    ax.set_title((title or "Generation speed vs context") + ("" if cxs else _no_crossover_note(drawn)))
    if cxs:
        _finish_legend(ax, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    else:
        _finish_legend(ax, loc="best")
    # a log axis has no place for an empty cache: say so rather than drop the points silently
    zero = sum(1 for r in recs if not r["n_depth"])
    _footer(fig, recs, f"{zero} point(s) at depth 0 are not drawn (log axis); they are in the records" if zero else "")
    _legends_clear_of_data(fig, [ax])
    return fig


def _no_crossover_note(records, x_field: str = "n_depth", y_field: str = "avg_ts") -> str:
    """'\nno crossover from 1K to 128K: A faster than B throughout' where predicted lines of two models
    share a rig and never cross: the chart said nothing, and a missing crossover line read as an oversight."""
    said, span = [], []
    for _, a, b, xs, ya, yb in _model_pairs(records, x_field, y_field, x_zero=False):
        diff = [p - q for p, q in zip(ya, yb)]
        if all(d > 0 for d in diff) or all(d < 0 for d in diff):
            fast, slow = (a, b) if diff[0] > 0 else (b, a)
            if f"{fast} faster than {slow}" not in said:
                said.append(f"{fast} faster than {slow}")
            span += [xs[0], xs[-1]]
    if not said:
        return ""
    where = f"from {tokens_label(min(span))} to {tokens_label(max(span))}"
    return f"\nno crossover {where}: " + ("; ".join(said) + " throughout" if len(said) <= 2 else "between any two models")


def _mark_spill(ax, recs, xf, yf):
    """Points the model does not fit on the rig (fits=False) get a grey cross: the number
    assumes a spill the runtime may refuse, so it must not read as a normal point."""
    bad = [r for r in recs if r.get("fits") is False and r.get(yf) is not None]
    if bad:
        ax.plot([float(r[xf]) for r in bad], [float(r[yf]) for r in bad], "x", color="0.25",
                ms=7, mew=1.5, label="does not fit in memory", zorder=4)


def prefill_vs_prompt(records: Sequence[dict], *, title: str | None = None) -> Figure:
    """Two panels: prefill tokens/s vs prompt length, and time to first token vs prompt length."""
    every = _as_records(records)
    recs = _with_fits([r for r in _one_stream(_select(every, "pp")) if not r.get("n_depth")], every,
                      lambda r: r["n_prompt"])
    if not recs:
        raise ValueError("no prefill (test='pp', n_depth=0) records to plot")
    styler = _Styler(recs)
    fig, (ax1, ax2) = _new_figure(2, width=6.0, height=4.8)
    # a prompt ingested from an empty cache: TTFT is its prefill time (docs/SOURCES.md §7)
    tt = [dict(r, ttft_s=r["ttft_s"] if r.get("ttft_s") is not None else
               (float(r["n_prompt"]) / float(r["avg_ts"]) if r.get("avg_ts") else None)) for r in recs]
    # a TTFT taken from the speed takes its band too (a calibrated record's avg_ts_lo / _hi): the fast end
    # of the speed is the short end of the time; the TTFT panel drew the line without it
    for r in tt:
        if r.get("ttft_s_lo") is None and r.get("avg_ts_lo") and r.get("avg_ts_hi") and r.get("avg_ts") \
                and r.get("ttft_s") is not None:
            r["ttft_s_lo"] = float(r["ttft_s"]) * float(r["avg_ts"]) / float(r["avg_ts_hi"])
            r["ttft_s_hi"] = float(r["ttft_s"]) * float(r["avg_ts"]) / float(r["avg_ts_lo"])
    for key, s in _series(recs, "n_prompt").items():
        _plot_series(ax1, styler, s, "n_prompt", "avg_ts", label=f"{s[0]['model']} · {rig_label(s[0])}")
    for key, s in _series(tt, "n_prompt").items():
        _plot_series(ax2, styler, s, "n_prompt", "ttft_s", label=f"{s[0]['model']} · {rig_label(s[0])}")
    _mark_spill(ax1, recs, "n_prompt", "avg_ts")
    _mark_spill(ax2, tt, "n_prompt", "ttft_s")
    xs = [r["n_prompt"] for r in recs]
    _log2_token_axis(ax1, xs, "prompt length (tokens, log scale)")
    _log2_token_axis(ax2, xs, "prompt length (tokens, log scale)")
    _y_axis(ax1, [r["avg_ts"] for r in recs], "prefill speed (tokens/s)")
    ax1.set_title("Prefill speed vs prompt length")
    ax2.set_yscale("log")
    plain_log_axis(ax2.yaxis, " s")
    ax2.set_ylabel("time to first token (s, log scale)")
    ax2.set_title("Time to first token vs prompt length")
    _reveal_coinciding(ax1)
    _reveal_coinciding(ax2)
    _finish_legend(ax1, loc="best")
    _finish_legend(ax2, loc="upper left")
    if title:
        fig.suptitle(title)
    _footer(fig, recs)
    _legends_clear_of_data(fig, [ax1, ax2])
    return fig


def prefill_vs_context(records: Sequence[dict], *, title: str | None = None) -> Figure:
    """Prefill tokens/s of a prompt of n_prompt tokens vs the context already cached (sweep-bench's
    S_PP against N_KV; llama-bench's pp<n> @ d<depth>; `glmbench sweep --n-prompt N`), one line per
    model, rig and prompt length. Needs pp records at two or more depths of one prompt length."""
    every = _as_records(records)
    pp = _one_stream(_select(every, "pp"))
    by_prompt: dict = defaultdict(set)
    for r in pp:
        if r.get("n_depth") is not None and r.get("n_prompt"):
            by_prompt[(str(r.get("model")),) + _rig_key(r) + (r["evidence"], r["n_prompt"])].add(int(r["n_depth"]))
    keep = {k[-1] for k, ds in by_prompt.items() if len(ds) > 1 and any(ds)}
    recs = _with_fits([r for r in pp if r.get("n_prompt") in keep and r.get("n_depth") is not None], every,
                      lambda r: r["n_depth"] + r["n_prompt"])
    if not recs:
        raise ValueError("no prefill (test='pp') records at two or more depths of one prompt length to plot")
    styler = _Styler(recs)
    fig, (ax,) = _new_figure()
    drawn = [r for r in recs if r["n_depth"]]
    # one setup's lines at several prompt lengths share colour and line style: the prompt length takes the
    # marker (as the context does on the throughput chart)
    for i, n in enumerate(sorted(keep)):
        mark = _CONTEXT_MARKS[i % len(_CONTEXT_MARKS)] if len(keep) > 1 else None
        for key, s in _series([r for r in drawn if r["n_prompt"] == n], "n_depth").items():
            _plot_series(ax, styler, s, "n_depth", "avg_ts", label=f"{s[0]['model']} · {rig_label(s[0])} · pp{n}",
                         mark=mark if mark != _CONTEXT_MARKS[0] or s[0]["evidence"] == "measured" else None)
    _mark_spill(ax, drawn, "n_depth", "avg_ts")
    _log2_token_axis(ax, [r["n_depth"] for r in drawn], "context already in the cache (tokens, log scale)")
    _y_axis(ax, [r["avg_ts"] for r in drawn], "prefill speed (tokens/s)")
    _reveal_coinciding(ax)
    ax.set_title(title or "Prefill speed vs context")
    _finish_legend(ax, loc="best")
    zero = sum(1 for r in recs if not r["n_depth"])
    _footer(fig, recs, f"{zero} point(s) at depth 0 are not drawn (log axis); they are in the records" if zero else "")
    _legends_clear_of_data(fig, [ax])
    return fig


def memory_vs_context(records: Sequence[dict], *, title: str | None = None) -> Figure:
    """Memory per card vs context, each rig's per-card ceiling drawn, the spill point marked."""
    recs = [r for r in _select(_as_records(records), "mem") if r.get("mem_bytes") is not None]
    if not recs:
        raise ValueError("no memory (test='mem') records to plot")
    styler = _Styler(recs)
    fig, (ax,) = _new_figure()
    gib = [dict(r, mem_gib=float(r["mem_bytes"]) / GIB) for r in recs]
    spills = []
    for key, s in _series(gib, "n_depth").items():
        _plot_series(ax, styler, s, "n_depth", "mem_gib", label=f"{s[0]['model']} · {rig_label(s[0])}")
        # spill point: the first context that no longer fits, interpolated between grid points
        cap = s[0].get("capacity_bytes")
        if cap:
            cap_gib = float(cap) / GIB
            for a, b in zip(s, s[1:]):
                if a["mem_gib"] <= cap_gib < b["mem_gib"]:
                    # memory grows linearly with context (KV bytes per token), so interpolate in tokens
                    t = (cap_gib - a["mem_gib"]) / (b["mem_gib"] - a["mem_gib"])
                    x = a["n_depth"] + t * (b["n_depth"] - a["n_depth"])
                    ax.plot([x], [cap_gib], marker="v", color=styler.colour(s[0]["model"]), ms=10,
                            mec="black", zorder=5)
                    spills.append((x, cap_gib, styler.colour(s[0]["model"])))
                    break
    caps = {}
    for r in recs:
        if r.get("capacity_bytes"):
            caps[float(r["capacity_bytes"]) / GIB] = r.get("device") or "card"
    ceiling_labels = []
    for cap_gib, dev in sorted(caps.items()):
        ax.axhline(cap_gib, color="black", lw=1.2, ls="-", alpha=0.7)
        ceiling_labels.append(ax.annotate(f"{dev}: {cap_gib:.1f} GiB per card", xy=(0.01, cap_gib),
                                          xycoords=("axes fraction", "data"), xytext=(0, 3),
                                          textcoords="offset points", fontsize=8))
    _log2_token_axis(ax, [r["n_depth"] for r in recs], "context (tokens, log scale)")
    # room above the highest of the curves and the ceilings for the ceiling's label
    top = max([r["mem_gib"] for r in gib] + list(caps))
    values = [r["mem_gib"] for r in gib] + list(caps)
    if max(values) / max(min(v for v in values if v > 0), 1e-9) > LOG_Y_RATIO:
        ax.set_yscale("log")
        plain_log_axis(ax.yaxis)
        ax.set_ylabel("memory on the fullest card (GiB, log scale)")
        ax.set_ylim(min(v for v in values if v > 0) / 1.5, top * 1.5)
    else:
        ax.set_ylabel("memory on the fullest card (GiB)")
        plain_linear_axis(ax.yaxis)
        ax.set_ylim(0, top * 1.1)
    _reveal_coinciding(ax)
    ax.set_title(title or "Memory vs context")
    # where the curves leave room (the ceiling's label, at the left, is no curve: a legend in the upper
    # left covered it when the curves stay just under the ceiling)
    _finish_legend(ax, loc="best")
    _footer(fig, recs)
    _legends_clear_of_data(fig, [ax])
    _place_clear(fig, ax, ceiling_labels)
    # each spill label beside its own marker, where it covers no curve, legend or other label: stacked by a
    # running count (9 + 12 n points up) they drifted from their markers, onto other curves
    for x, cap_gib, colour in spills:
        _place_near(fig, ax, ax.annotate(f"spills ≈ {approx_tokens(x)}", xy=(x, cap_gib), xytext=(-8, 9),
                                         textcoords="offset points", fontsize=8, fontweight="bold", color=colour))
    return fig


# where a label goes around its point, in order: (dx, dy) points, ha, va; the first is the old fixed spot
_NEAR_SPOTS = tuple(((sx * 6 if d > 9 else sx * 8, sy * d), "right" if sx < 0 else "left", "bottom" if sy > 0 else "top")
                    for d in (9, 20, 32, 44) for sy in (1, -1) for sx in (-1, 1))


def _place_near(fig: Figure, ax, t, spots=_NEAR_SPOTS) -> None:
    """Put the annotation `t` at the first of `spots` around its point where it lies inside the axes and
    covers no line, marker, band, legend or other label; where none is clear, the first spot."""
    rend = _renderer(fig)
    for off, ha, va in spots + (spots[0],):
        t.set_position(off)
        t.set_ha(ha)
        t.set_va(va)
        if _text_clear(ax, t, rend):
            return


def _text_clear(ax, t, rend) -> bool:
    """Whether the text `t` lies inside the axes and covers no line, marker, band, legend or other text."""
    box = t.get_window_extent(rend)
    others = [o.get_window_extent(rend) for o in ax.texts if o is not t]
    leg = ax.get_legend()
    if leg is not None:
        others.append(leg.get_window_extent(rend))
    inside = ax.bbox.x0 <= box.x0 and box.x1 <= ax.bbox.x1 and ax.bbox.y0 <= box.y0 and box.y1 <= ax.bbox.y1
    return inside and not covers_data(ax, box) and not any(box.overlaps(o) for o in others)


def _place_clear(fig: Figure, ax, labels) -> None:
    """Put each ceiling label where it covers no curve, legend or other label: above its line at the
    left (where it was), else below it, else at the right, above then below. On a small card every curve
    runs just above the ceiling (2 x RTX 4060: 8.5 GiB over 8.0) and struck through the label."""
    if not labels:
        return
    rend = _renderer(fig)
    spots = (((0.01, "left"), (0, 3), "bottom"), ((0.01, "left"), (0, -3), "top"),
             ((0.99, "right"), (0, 3), "bottom"), ((0.99, "right"), (0, -3), "top"))
    for t in labels:
        y = t.xy[1]
        for (x, ha), off, va in spots:
            t.xy = (x, y)
            t.set_position(off)
            t.set_ha(ha)
            t.set_va(va)
            if _text_clear(ax, t, rend):
                break
        else:  # nowhere clear: where it was
            (x, ha), off, va = spots[0]
            t.xy = (x, y)
            t.set_position(off)
            t.set_ha(ha)
            t.set_va(va)


def throughput_vs_concurrency(records: Sequence[dict], *, title: str | None = None) -> Figure:
    """Aggregate generated tokens/s over all streams vs the number of concurrent streams."""
    every = _as_records(records)
    recs = [r for r in _select(every, "serve") if r.get("concurrency") is not None] + _batched_decode(every)
    if not recs:
        raise ValueError("no serving (test='serve') or batched decode (test='tg', n_streams > 1) records to plot")
    styler = _Styler(recs)
    fig, (ax,) = _new_figure()
    depths = sorted({r.get("n_depth") for r in recs if r.get("n_depth") is not None})
    recs = [_aggregate_band(r) for r in recs]
    drawn = 0
    # one line per context as well: a file of two prompt lengths (batched-bench's PP 128 and 512) made one
    # line zig-zagging between them
    series = [s for d in sorted({r.get("n_depth") for r in recs}, key=lambda d: (d is None, d or 0))
              for s in _series([r for r in recs if r.get("n_depth") == d], "concurrency").values()]
    # the series of one setup at two contexts share colour and line style: the context takes the marker (a
    # measured series at the first context keeps its circle, a predicted line no marker); batched-bench's
    # PP 128 and PP 512 series were the same circles in the same colour, their legend entries alike
    ctx_marks = {d: _CONTEXT_MARKS[i % len(_CONTEXT_MARKS)] for i, d in enumerate(depths)} if len(depths) > 1 else {}
    for s in series:
        ok = [r for r in s if r.get("fits") is not False]
        if ok:
            drawn += 1
            ctx = f" @ {tokens_label(s[0]['n_depth'])} ctx" if len(depths) > 1 and s[0].get("n_depth") else ""
            mark = ctx_marks.get(s[0].get("n_depth"))
            if mark == _CONTEXT_MARKS[0] and s[0]["evidence"] != "measured":
                mark = None
            # and measured points at several contexts stand side by side, at nearly one rate not one on another
            dx = 0.0
            if s[0]["evidence"] == "measured" and s[0].get("n_depth") in ctx_marks:
                dx = 7.0 * (depths.index(s[0].get("n_depth")) - (len(depths) - 1) / 2)
            _plot_series(ax, styler, ok, "concurrency", "aggregate_tok_s",
                         label=f"{s[0]['model']} · {rig_label(s[0])}{ctx}", mark=mark, dx=dx)
    bad = [r for r in recs if r.get("fits") is False]
    # one cross per setup (model and rig) and concurrency, in the colour of its model's line and the shape of its
    # rig (_SPILL_MARKS: the first rig's x, the next's +, as the first rig's line is solid, the next's dashed);
    # named in the legend with model and rig: one red cross per model at 8, 16 and 32 streams said nothing of
    # which rig (one card or two) ran out of memory there. The setups' crosses at one concurrency are stacked
    # upwards from zero in the legend's order, so that one does not hide another
    rows = list(dict.fromkeys((str(r.get("model")),) + _rig_key(r) for r in sorted(
        bad, key=lambda r: (str(r.get("model")), styler.rigs[_rig_key(r)]))))
    lined = {(str(s[0].get("model")),) + _rig_key(s[0]) for s in _series([r for r in recs if r.get("fits") is not False],
                                                                          "concurrency").values()}
    crosses = list(dict.fromkeys((float(r["concurrency"]), (str(r.get("model")),) + _rig_key(r)) for r in bad))
    first = {}
    for r in bad:
        first.setdefault((str(r.get("model")),) + _rig_key(r), r)
    for c in dict.fromkeys(c for c, _ in crosses):
        here = sorted((setup for c2, setup in crosses if c2 == c), key=rows.index)
        for k, setup in enumerate(here):
            # a concurrency whose streams do not all fit in memory: a cross at zero, since the throughput of
            # the streams that fit is not what was asked
            r0 = first[setup]
            ax.plot([c], [0], _spill_mark(styler, r0), color=styler.colour(r0.get("model")), ms=8, mew=2,
                    clip_on=False, zorder=4, transform=offset_copy(ax.transData, fig=fig, y=9 * k, units="points"))
    for setup in rows:
        r0 = first[setup]
        ax.plot([], [], _spill_mark(styler, r0), color=styler.colour(r0.get("model")), ms=8, mew=2,
                label=f"{r0.get('model')} · {rig_label(r0)}: "
                      + ("no concurrency fits" if setup not in lined else "not all streams fit in memory"))
    if bad:
        # the crosses' offset transform does not widen the x range: a cross past every fitting point
        # (one rig running out at 8 streams) fell right of the axes, off the figure
        ax.update_datalim([(c, 0.0) for c, _ in crosses], updatey=False)
        ax.autoscale_view(scaley=False)
    cs = sorted({float(r["concurrency"]) for r in recs})
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator(cs))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
    ax.set_xlabel("concurrent streams (log scale)")
    ax.set_ylabel("throughput (generated tokens/s, all streams)")
    if drawn:
        _from_zero(ax)
        plain_linear_axis(ax.yaxis)
    else:
        # every point spills: a frame of crosses on a 0-0.05 tokens/s scale read as a measured zero
        ax.set_ylim(0, 1)
        ax.set_yticks([])
        ax.text(0.5, 0.55, "no setup fits its streams in memory at any concurrency drawn\n(the crosses: "
                "where each setup was priced)", transform=ax.transAxes, ha="center", va="center", fontsize=9,
                color="0.3")
    _reveal_coinciding(ax, lambda v: f"{v:g}")
    ctx = f" at {tokens_label(depths[0])} context per stream" if len(depths) == 1 and depths[0] else ""
    ax.set_title(title or f"Throughput vs concurrency{ctx}")
    _finish_legend(ax, loc="upper left")
    _footer(fig, recs)
    _legends_clear_of_data(fig, [ax])
    return fig


def _spill_mark(styler, r) -> str:
    return _SPILL_MARKS[styler.rigs[_rig_key(r)] % len(_SPILL_MARKS)]


def _batched_decode(records) -> list[dict]:
    """Decode records of B streams (llama-batched-bench's S_TG, SGLang's bench_one_batch, a sweep's
    n_streams) as points of the throughput chart: concurrency B, aggregate tok/s their avg_ts (the B
    streams' tokens per second), with the one-stream row of the same series (model, rig, depth, n_gen)
    as B = 1. No chart drew them: `plot` on a batched-bench file showed its 1-stream rows and dropped the
    rest, and `report --measured` set no measured point beside the predicted throughput."""
    tg = [r for r in _select(records, "tg") if r.get("avg_ts") is not None and r.get("n_depth") is not None]

    def key(r):
        return (str(r.get("model")),) + _rig_key(r) + (r["evidence"], r["n_depth"], r.get("n_gen"))

    multi = {key(r) for r in tg if (r.get("n_streams") or 1) > 1}
    return [dict(r, concurrency=int(r.get("n_streams") or 1), aggregate_tok_s=float(r["avg_ts"]),
                 aggregate_tok_s_lo=r.get("avg_ts_lo"), aggregate_tok_s_hi=r.get("avg_ts_hi"))
            for r in tg if key(r) in multi]


def _aggregate_band(r: dict) -> dict:
    """A serve record's band on its aggregate rate: a calibrated one carries it as avg_ts_lo / _hi
    around avg_ts, which is its aggregate_tok_s (predict/sweep.py _serve)."""
    if r.get("aggregate_tok_s_lo") is None and r.get("avg_ts_lo") is not None and r.get("avg_ts_hi") is not None \
            and r.get("avg_ts") is not None and r.get("aggregate_tok_s") is not None \
            and math.isclose(float(r["avg_ts"]), float(r["aggregate_tok_s"]), rel_tol=1e-9):
        return dict(r, aggregate_tok_s_lo=r["avg_ts_lo"], aggregate_tok_s_hi=r["avg_ts_hi"])
    return r


def one_vs_two_cards(records: Sequence[dict], *, short_depth: int | None = None,
                     long_depth: int | None = None, title: str | None = None) -> Figure:
    """Three panels, one card vs two per model: a short single stream, a long-context single
    stream (decode tokens/s at the smallest and largest depth both rigs have) and batched
    throughput (the best aggregate tokens/s of the serve records). Where the short and the long
    depth are one (records at one depth), one single-stream panel says so: two panels."""
    recs = _as_records(records)
    tg = _with_fits([r for r in _select(recs, "tg") if r["evidence"] != "measured" and r.get("avg_ts") is not None],
                    recs, lambda r: r["n_depth"])
    all_serve = [_aggregate_band(r) for r in _select(recs, "serve") if r.get("aggregate_tok_s") is not None]
    serve = [r for r in all_serve if r.get("fits") is not False]
    if not tg:
        raise ValueError("no predicted decode (test='tg') records to compare one card with two")
    cards = sorted({int(r.get("n_cards") or 1) for r in tg})
    if len(cards) < 2:
        raise ValueError(f"one vs two cards needs records for at least two card counts, got n_cards={cards}")
    depths = sorted({int(r["n_depth"]) for r in tg})
    short_depth = depths[0] if short_depth is None else int(short_depth)
    long_depth = depths[-1] if long_depth is None else int(long_depth)
    models = sorted({str(r["model"]) for r in tg})
    styler = _Styler(tg)

    def pick(rs, model, n, **eq):
        m = [r for r in rs if str(r["model"]) == model and int(r.get("n_cards") or 1) == n
             and all(r.get(k) == v for k, v in eq.items())]
        return m

    panels = [(f"short single stream\n(decode at {tokens_label(short_depth)} context)", "tg", short_depth),
              (f"long context\n(decode at {tokens_label(long_depth)} context)", "tg", long_depth),
              ("batched throughput\n(best over concurrency)", "serve", None)]
    if short_depth == long_depth:
        # one depth (report --depths 4K): 'short' and 'long' were the same panel twice, read as two findings
        panels[:2] = [(f"single stream\n(decode at {tokens_label(short_depth)} context, the only depth)", "tg",
                       short_depth)]
    fig, axes = _new_figure(len(panels), width=4.2, height=4.6)
    width = 0.8 / len(cards)
    for ax, (name, test, depth) in zip(axes, panels):
        for j, n in enumerate(cards):
            for i, model in enumerate(models):
                if test == "tg":
                    m = pick(tg, model, n, n_depth=depth)
                    val = float(m[0]["avg_ts"]) if m else None
                    fits = m[0].get("fits") is not False if m else True
                    lo, hi = (m[0].get("avg_ts_lo"), m[0].get("avg_ts_hi")) if m else (None, None)
                else:
                    m = pick(serve, model, n)
                    best = max(m, key=lambda r: float(r["aggregate_tok_s"])) if m else None
                    val = float(best["aggregate_tok_s"]) if best else None
                    fits = True
                    lo, hi = (best.get("aggregate_tok_s_lo"), best.get("aggregate_tok_s_hi")) if best else (None, None)
                x = i + (j - (len(cards) - 1) / 2) * width
                if val is None:
                    # a setup whose every concurrency spills is not 'n/a': it is priced, and fits at none
                    spilled = test == "serve" and pick(all_serve, model, n)
                    ax.text(x, 0, "no fit" if spilled else "n/a", ha="center", va="bottom", fontsize=7, rotation=90)
                    continue
                # fewer cards darker, evenly graded so 1, 2 and 4 cards stay distinguishable
                alpha = 1.0 - 0.65 * j / max(len(cards) - 1, 1)
                # a calibrated figure carries its cross-validated band: an error bar, its label above it
                band = lo is not None and hi is not None
                ax.bar(x, val, width * 0.95, color=styler.colour(model), alpha=alpha,
                       hatch=None if fits else "xx", edgecolor="black", lw=0.6,
                       yerr=[[val - float(lo)], [float(hi) - val]] if band else None, capsize=3,
                       error_kw=dict(ecolor="0.2", lw=1))
                ax.annotate(f"{val:,.0f}" + (f"\n±{100 * (float(hi) - val) / val:.0f}%" if band and val else "")
                            + ("" if fits else "\nspills"), xy=(x, float(hi) if band else val), xytext=(0, 2),
                            textcoords="offset points", ha="center", va="bottom", fontsize=7)
        ax.set_xticks(range(len(models)), models, fontsize=8)
        # the models' slots, bars or not: a panel without a bar (no setup fits its streams) kept the
        # default x range, its 'n/a' labels and ticks off the axes, between the panels
        ax.set_xlim(-0.5, len(models) - 0.5)
        if not ax.patches:
            ax.text(0.5, 0.5, "no setup fits in memory" if test == "serve" and all_serve else "no data",
                    transform=ax.transAxes, ha="center", va="center", fontsize=9, color="0.3")
            ax.set_yticks([])
        ax.set_title(name, fontsize=10)
        ax.set_ylim(bottom=0, top=ax.get_ylim()[1] * 1.12)
        ax.grid(True, axis="y", alpha=0.3)
        ax.grid(False, axis="x")
    for ax, (_name, test, _depth) in zip(axes, panels):
        ax.set_ylabel("tokens/s (one stream)" if test == "tg" else "tokens/s (all streams)")
        plain_linear_axis(ax.yaxis)
    # the shades alone (grey, no hatch): handles taken from the first model's bars took its colour, a
    # spilling bar's hatch ('spills' read as '1 card'), and no entry where that model had no bar
    from matplotlib.patches import Patch
    handles = [Patch(facecolor="0.3", alpha=1.0 - 0.65 * j / max(len(cards) - 1, 1), edgecolor="black", lw=0.6,
                     label=f"{n} card{'s' if n > 1 else ''}") for j, n in enumerate(cards)]
    if any(ax.patches for ax in axes):
        axes[0].legend(handles=handles, fontsize=8, loc="upper right", title="darker = fewer cards", title_fontsize=7)
    else:
        handles = []
    fig.suptitle(title or ("One card vs two" if cards == [1, 2] else
                           "Cards: " + " vs ".join(str(n) for n in cards)))
    _footer(fig, tg + serve)
    if handles:
        _lift_under_legend(fig, axes[0])
    return fig


def _lift_under_legend(fig: Figure, ax) -> None:
    """Raise the axes' top until no bar label runs under its legend (a label above a tall bar's error
    bar, in the legend's corner, was hidden by it)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    rend = FigureCanvasAgg(fig).get_renderer()
    for _ in range(8):
        fig.draw(rend)
        box = ax.get_legend().get_window_extent(rend)
        if not any(t.get_window_extent(rend).overlaps(box) for t in ax.texts):
            return
        ax.set_ylim(top=ax.get_ylim()[1] * 1.15)


# ---- everything at once -------------------------------------------------------------------------
def mla_crossover(rows: Sequence[dict], *, title: str | None = None) -> Figure:
    """Crossover depth (GLM-4.7-Flash vs each dense model) against the memory efficiency of the
    runtime's MLA attention: one panel per runtime profile (rows) and card count (columns), one line
    per dense model (colour; line style: the MLA strategy), from
    glmbench.predict.crossover.mla_crossover_curves rows; each profile's own efficiency is a marker
    on each line. A crossover beyond the grid is drawn on the top edge (shaded: none up to that
    depth); one from the start on the bottom edge (shaded, its tick 'from start'), each band's label beyond
    the lines that run along its edge. Each panel's title names what the sweep sets (the
    rows' `knob`): a runtime model's kernel-table entry for the MLA kernel it runs, or a profile's
    per-strategy MLA efficiency."""
    rows = [r for r in rows if r.get("mla_attention_efficiency") is not None]
    if not rows:
        raise ValueError("no crossover rows to plot")
    cards = sorted({r["n_cards"] for r in rows})
    dense = list(dict.fromkeys(r["dense_model"] for r in rows))
    runtimes = list(dict.fromkeys(r["runtime"] for r in rows))
    top = max(r["max_depth"] for r in rows)
    fig = Figure(figsize=(4.6 * len(cards) + 0.4, 2.7 * len(runtimes) + 1.2), layout="constrained")
    axes = fig.subplots(len(runtimes), len(cards), squeeze=False, sharex=True, sharey=True)
    colour = {m: _COLOURS[i % len(_COLOURS)] for i, m in enumerate(dense)}
    style = {"flash": "-", "absorbed": "--", "naive": ":"}
    # one strategy: line style tells apart the dense models that share a colour (more models than colours)
    one_strategy = len({r["mla_strategy"] for r in rows}) == 1
    dash = {m: _STYLES[(i // len(_COLOURS)) % len(_STYLES)] for i, m in enumerate(dense)}
    # a crossover beyond the grid is drawn at hi_y, one from the start (crossover_depth 0.0: the dense model
    # as fast at the first depth) at lo_y; each edge row gets a shaded band with room beyond it for its label,
    # clear of the lines that run along the edge (the label sat on the capped lines, struck through)
    lo_y, hi_y, edge = 512, top * 1.5, 4.0
    ticks = [top]
    while ticks[-1] / 4 >= lo_y * 3:
        ticks.append(ticks[-1] / 4)
    ticks = [lo_y] + sorted(ticks)
    for i, rt in enumerate(runtimes):
        for j, n in enumerate(cards):
            ax = axes[i][j]
            pts = [r for r in rows if r["n_cards"] == n and r["runtime"] == rt]
            for dm in dense:
                for st in ("flash", "absorbed", "naive"):
                    line = sorted((r for r in pts if r["dense_model"] == dm and r["mla_strategy"] == st),
                                  key=lambda r: r["mla_attention_efficiency"])
                    if not line:
                        continue
                    ys = [hi_y if r["crossover_depth"] is None else max(r["crossover_depth"], lo_y) for r in line]
                    xs = [r["mla_attention_efficiency"] for r in line]
                    ax.plot(xs, ys, dash[dm] if one_strategy else style.get(st, "-"), color=colour[dm], lw=1.6,
                            label=dm if st == "flash" or one_strategy else f"{dm} · {st}")
                    for r, y in zip(line, ys):
                        if r["own"]:
                            ax.plot([r["mla_attention_efficiency"]], [y], "o" if _own_fitted(r) else "D",
                                    color=colour[dm], ms=6, mfc="white", mew=1.8, zorder=4)
            ax.axhspan(top * 1.15, hi_y * edge, color="0.9", zorder=0)
            ax.axhspan(lo_y / edge, lo_y * 1.3, color="0.9", zorder=0)
            ax.axhline(65536, color="0.4", lw=0.8, ls=(0, (2, 2)))
            ax.annotate("study: ~64K", xy=(0.012, 65536), xycoords=("data", "data"), xytext=(0, 1.5),
                        textcoords="offset points", va="bottom", fontsize=7, color="0.3")
            ax.text(0.012, 0.98, f"no crossover up to {tokens_label(top)}", fontsize=7, color="0.3", va="top",
                    transform=ax.get_xaxis_transform())
            ax.text(0.012, 0.02, "crossover from the start: the dense model as fast at the first depth",
                    fontsize=7, color="0.3", va="bottom", transform=ax.get_xaxis_transform())
            ax.set_xscale("log")
            plain_log_axis(ax.xaxis)
            ax.set_yscale("log", base=2)
            ax.yaxis.set_major_locator(FixedLocator(ticks))
            ax.yaxis.set_minor_locator(NullLocator())
            # the bottom row is no depth of 512 tokens: the crossover is there from the first depth
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: "from start" if v == lo_y else tokens_label(v)))
            ax.set_ylim(lo_y / edge, hi_y * edge)
            ax.set_xlim(0.01, 1.05)
            knob = next((r.get("knob") for r in pts if r.get("knob")), None)
            ev = " + ".join(e for e in EVIDENCE if any(r["evidence"] == e for r in pts))
            ax.set_title(f"{rt} ({ev}), {n} card{'s' if n > 1 else ''}" + (f"\nswept: {knob}" if knob else ""),
                         fontsize=8.5)
            if j == 0:
                ax.set_ylabel("crossover depth\n(tokens, log)", fontsize=8)
    # on the bottom axes, not as a figure label: the legend below takes the figure's lower edge
    for ax in axes[-1]:
        ax.set_xlabel("MLA attention memory efficiency\n(share of the card's bandwidth, log scale)", fontsize=8)
    handles, labels = [], []
    for ax in axes.flat:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    for mk, lab in (("o", "own value, fitted (runtime model / calibrated)"),
                    ("D", "own value, not fitted (physics value: a physics profile, or a start the fit kept)")):
        if any(r["own"] and _own_fitted(r) == (mk == "o") for r in rows):
            handles.append(Line2D([], [], ls="", marker=mk, color="0.3", mfc="white", mew=1.8, ms=6))
            labels.append(lab)
    if handles:
        fig.legend(handles, labels, fontsize=7, loc="outside lower center", ncol=min(4, len(handles)))
    # what the chart is (evidence, hardware, formats) under the title: the legend takes the lower edge,
    # where the other charts' footer goes
    fig.suptitle((title or "Where each dense model catches up: crossover depth vs MLA attention efficiency\n"
                  "(markers: each profile's own value; runtime models: their MLA kernel's kernel-table entry swept)")
                 + "\n" + _crossover_provenance(rows), fontsize=10)
    return fig


CHARTS = {
    "generation_vs_context": generation_vs_context,
    "prefill_vs_prompt": prefill_vs_prompt,
    "prefill_vs_context": prefill_vs_context,
    "memory_vs_context": memory_vs_context,
    "one_vs_two_cards": one_vs_two_cards,
    "throughput_vs_concurrency": throughput_vs_concurrency,
}


def all_charts(records: Sequence[dict]) -> dict[str, Figure]:
    """Every chart the records have data for, by name (a chart without data is left out)."""
    recs = _as_records(records)
    out = {}
    for name, fn in CHARTS.items():
        try:
            out[name] = fn(recs)
        except ValueError as e:
            if not str(e).startswith(("no ", "one vs two cards needs")):
                raise
    return out


def save_charts(records: Sequence[dict], folder: str | os.PathLike) -> list[str]:
    """Write every chart the records support as `<folder>/<name>.png`; returns the paths."""
    paths = []
    for name, fig in all_charts(records).items():
        paths.append(save_figure(fig, os.path.join(os.fspath(folder), name + ".png")))
    return paths


def remove_stale_charts(folder: str | os.PathLike, keep: Sequence[str]) -> list[str]:
    """Delete `<folder>/<chart>.png` for every chart name glmbench draws (CHARTS) that is not in
    `keep` (paths just written): a folder of charts holds only the current ones. Other files are
    left alone. Returns the paths removed."""
    keep = {os.path.abspath(p) for p in keep}
    gone = []
    for name in CHARTS:
        p = os.path.join(os.fspath(folder), name + ".png")
        if os.path.abspath(p) not in keep and os.path.isfile(p):
            os.unlink(p)
            gone.append(p)
    return gone


def save_figure(fig: Figure, path: str | os.PathLike) -> str:
    """Save a figure as PNG atomically (temp file + rename), like every result file, with an
    ordinary file's mode (0644 under umask 022)."""
    return atomic_write(path, lambda f: fig.savefig(f, format="png"), binary=True)


# ---- trace replays (glmbench.predict.replay.study results; not records, not in CHARTS) ---------------
TRACE_CHARTS = ("trace_winners", "trace_latency")


def _trace_footer(fig: Figure, res: dict) -> None:
    t = res["trace"]
    s = res["slo"]
    note = (f"{evidence_text(res)}\n"
            f"replay of {t['trace']} ({t['requests']:,} requests, rate x{t.get('rate_scale', 1.0):g}) on the cost model; "
            f"targets TTFT <= {s['ttft_s']:g} s, TPOT <= {s['tpot_s']:g} s; "
            f"server: {res['server']['max_num_seqs']} seqs, {res['server']['max_batched_tokens']}-token steps")
    fig.get_layout_engine().set(h_pad=0.1)
    fig.supxlabel(note, fontsize=7.5, color="0.3", wrap=True)


def trace_winners(res: dict, *, title: str | None = None) -> Figure:
    """Per input-length bucket: the trace's tokens in it (bar height) and the setup that wins it,
    token-weighted (bar colour); one panel per prefix-cache mode."""
    from glmbench.predict.replay import BUCKETS
    modes = sorted({w["prefix_cache"] for w in res["winners"]}, reverse=True)
    setups = [r["setup"] for r in res["runs"] if r["prefix_cache"] == res["runs"][0]["prefix_cache"]]
    colour = {s: _COLOURS[i % len(_COLOURS)] for i, s in enumerate(setups)}
    # one panel 8.5 inches wide: the legend right of it takes about 2.6, and the seven bucket names under a
    # narrower one ran into each other
    fig, axes = _new_figure(len(modes), width=7.0 if len(modes) > 1 else 8.5, height=5.0)
    names = [b[0] for b in BUCKETS]
    for ax, p in zip(axes, modes):
        ws = {w["bucket"]: w for w in res["winners"] if w["prefix_cache"] == p}
        for i, n in enumerate(names):
            w = ws.get(n)
            if not w or not w["requests"]:
                # said in the bucket: an empty slot read as a missing bar (16-32K to >=128K on azure-conv-2023)
                ax.text(i, 0.0, "no\nrequests", transform=offset_copy(ax.transData, fig=fig, y=3, units="points"),
                        ha="center", va="bottom", fontsize=7, color="0.4", style="italic")
                continue
            ax.bar(i, w["tokens"] / 1e6, color=colour.get(w["winner"], "0.6"), edgecolor="black", lw=0.6,
                   hatch="//" if w.get("tie") else None)
            ax.text(i, w["tokens"] / 1e6, f"{w['requests']:,} req", ha="center", va="bottom", fontsize=7)
        ax.set_xticks(range(len(names)), names)
        # every bucket's slot whole: from the bars alone an empty last bucket sat on the right spine
        ax.set_xlim(-0.6, len(names) - 0.4)
        ax.set_xlabel("prompt length bucket (tokens)")
        ax.set_ylabel("tokens in the bucket (millions, prompt + output)")
        plain_linear_axis(ax.yaxis)
        ax.set_title("with prefix caching" if p else "without prefix caching", fontsize=10)
    from matplotlib.patches import Patch
    import textwrap
    handles = [Patch(facecolor=colour[s], edgecolor="black", label=textwrap.fill(s, 36)) for s in setups]
    if any(w.get("tie") and w["requests"] for w in res["winners"]):
        # a tied bucket's bar is hatched in the colour of the setup listed first: the hatching was not explained
        handles.append(Patch(facecolor="white", edgecolor="black", hatch="//",
                             label=textwrap.fill("hatched: a tie, no setup ahead (colour: the first listed)", 36)))
    # right of the panels, labels wrapped: setup labels are long, and above the panels they ran
    # into the title (below, into the footer)
    fig.legend(handles=handles, fontsize=7.5, title="wins the bucket\n(token-weighted)", title_fontsize=8,
               loc="outside right center", ncols=1)
    fig.suptitle(title or f"Which setup wins each length bucket on {res['trace']['trace']}")
    _trace_footer(fig, res)
    return fig


def trace_latency(res: dict, *, prefix_cache: bool | None = None, title: str | None = None) -> Figure:
    """TTFT and TPOT percentiles (p50, p90, p99; request-weighted) per length bucket and setup."""
    from glmbench.predict.replay import BUCKETS
    if prefix_cache is None:
        prefix_cache = res["decision"]["prefix_cache"]
    rows = [b for b in res["buckets"] if b["prefix_cache"] == prefix_cache]
    if not rows:
        raise ValueError("no bucket rows for that prefix-cache mode")
    setups = list(dict.fromkeys(r["setup"] for r in rows))
    names = [b[0] for b in BUCKETS]
    fig, axes = _new_figure(2, width=7.0, height=5.0)
    styles = {50: "-", 90: "--", 99: ":"}
    empty, targets = [], []
    for ax, metric, label in ((axes[0], "ttft_s", "time to first token (s)"),
                              (axes[1], "tpot_s", "time per output token (s)")):
        for k, s in enumerate(setups):
            by = {r["bucket"]: r for r in rows if r["setup"] == s}
            for q, ls in styles.items():
                # a bucket without a value breaks the line (it ran across an empty bucket as if it held one)
                ys = []
                for n in names:
                    v = by.get(n, {}).get(f"{metric}_p{q}")
                    ys.append(v if v is not None and not math.isnan(v) and v > 0 else math.nan)
                if any(not math.isnan(v) for v in ys):
                    ax.plot(range(len(names)), ys, ls, color=_COLOURS[k % len(_COLOURS)], marker="o", ms=3, lw=1.6)
        ax.set_yscale("log")
        plain_log_axis(ax.yaxis, " s")
        ax.set_xticks(range(len(names)), names)
        # as trace_winners': every bucket's slot whole (the <4K points sat on the left spine, half hidden), and
        # a bucket without requests says so (no line there read as missing data)
        ax.set_xlim(-0.6, len(names) - 0.4)
        for i, n in enumerate(names):
            if not any(r["bucket"] == n and r.get("requests") for r in rows):
                empty.append((ax, ax.text(i, 0.5, "no\nrequests", transform=ax.get_xaxis_transform(), ha="center",
                                          va="center", fontsize=7, color="0.4", style="italic")))
        ax.set_xlabel("prompt length bucket (tokens)")
        ax.set_ylabel(label)
        tgt = res["slo"]["ttft_s" if metric == "ttft_s" else "tpot_s"]
        ax.axhline(tgt, color="0.4", lw=1, ls="-.")
        targets.append((ax, ax.annotate(f"target {tgt:g} s", xy=(0.01, tgt), xycoords=("axes fraction", "data"),
                                        xytext=(0, 3), textcoords="offset points", fontsize=7, color="0.3")))
    # right of the panels, as trace_winners': above them the setups' long labels ran into the title.
    # A colour per setup (labels wrapped) and a line style per percentile, not every pair
    from matplotlib.lines import Line2D
    import textwrap
    handles = [Line2D([], [], color=_COLOURS[k % len(_COLOURS)], lw=1.6, marker="o", ms=3,
                      label=textwrap.fill(s, 36)) for k, s in enumerate(setups)]
    handles += [Line2D([], [], color="0.3", ls=ls, lw=1.6, label=f"p{q}") for q, ls in styles.items()]
    fig.legend(handles=handles, fontsize=7.5, title="setup; percentile", title_fontsize=8,
               loc="outside right center", ncols=1)
    fig.suptitle(title or (f"Latency percentiles on {res['trace']['trace']} "
                           f"({'with' if prefix_cache else 'without'} prefix caching)"))
    _trace_footer(fig, res)
    # each target's label where it covers no line or marker (at the left, on the <4K bucket's points, it lay
    # on a setup's p50 TPOT on mooncake-synthetic), then each "no requests" off the target line and the labels:
    # mid-height, else above or below
    for ax, t in targets:
        _place_clear(fig, ax, [t])
    if empty:
        rend = _renderer(fig)
        for ax, t in empty:
            for y in (0.5, 0.7, 0.3, 0.85, 0.15, 0.5):
                t.set_y(y)
                if _text_clear(ax, t, rend):
                    break
    return fig


def save_trace_charts(res: dict, folder: str | os.PathLike) -> list[str]:
    folder = os.fspath(folder)
    return [save_figure(trace_winners(res), os.path.join(folder, "trace_winners.png")),
            save_figure(trace_latency(res), os.path.join(folder, "trace_latency.png"))]
