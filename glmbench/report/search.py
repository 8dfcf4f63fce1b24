"""What `glmbench search` shows and writes: the short answer, the table, the Pareto chart with the
chosen point marked, the records of every candidate (CSV/JSON) and search.json; and the study's
decision tree replayed as three searches (`glmbench search --decision-tree`, tests/test_search.py).

Formatting only: every number comes from glmbench.predict.search's result (written beside it as
setups.json / setups.csv / search.json).
"""
from __future__ import annotations

import json
import math
import os
import random
from dataclasses import dataclass
from typing import Sequence

from glmbench.predict import hardware
from glmbench.predict import prices as prices_mod
from glmbench.predict import search as sr
from glmbench.predict import traces as traces_mod
from glmbench.report.workload import _finite  # floats JSON cannot hold -> null
from glmbench.results import records as rec

FILES = ("search.md", "search.json", "setups.csv", "setups.json", "pareto.png")
TABLE_ROWS = 15


# ---- formatting ----------------------------------------------------------------------------------
def _usd(v) -> str:
    if v is None or not isinstance(v, (int, float)) or not math.isfinite(v):
        return "n/a"
    return f"${v:,.2f}" if v >= 0.995 else f"${v:.3f}"


def _s(v) -> str:
    if v is None or not isinstance(v, (int, float)) or not math.isfinite(v):
        return "n/a"
    return f"{v:.3g} s"


def _pct(v) -> str:
    return "n/a" if v is None or not isinstance(v, (int, float)) or not math.isfinite(v) else f"{100 * v:.1f}%"


def _rate(r) -> str:
    b = r.get("max_rate_bound")
    if b is None:
        return ""
    if b == "none":
        return "none"
    x = f"x{r['max_rate_scale']:.3g}"
    return (">" if b == "above" else "") + x


def _miss(r: dict, obj: sr.Objective) -> tuple:
    """How far a setup is from meeting the targets, smaller is closer: the share of requests missing
    them, then (at equal attainment, such as 0% of all under targets none can reach) its p99 TTFT
    and TPOT over the targets, the worse of the two, then the label."""
    def share(v):
        return v if isinstance(v, (int, float)) and math.isfinite(v) else 0.0

    def over(v, slo):
        return v / slo if isinstance(v, (int, float)) and math.isfinite(v) else math.inf
    return (-share(r.get("slo_attainment")),
            max(over(r.get("ttft_p99_s"), obj.ttft_slo_s), over(r.get("tpot_p99_s"), obj.tpot_slo_s)), r["setup"])


def slo_text(obj: sr.Objective) -> str:
    return (f"TTFT <= {obj.ttft_slo_s:g} s and TPOT <= {obj.tpot_slo_s:g} s for >= {100 * obj.attainment:g}% "
            f"of requests")


def answer(res: sr.SearchResult) -> str:
    """The short answer, one paragraph."""
    t, obj = res.trace, res.objective
    at = (f"{t['trace']} ({t['requests']:,} request{'s' if t['requests'] != 1 else ''}, rate x{obj.rate_scale:g}"
          + (f" = {t['rate_req_s']:.3g} req/s" if math.isfinite(t.get("rate_req_s", math.nan)) else "") + ")")
    c = res.chosen
    if c is None:
        rows = res.evaluated
        if not rows:
            # why the evaluations failed (setups.csv has each one's): a trace-wide cause, such as a
            # --rate-scale past the replay's clock, fails them all alike
            why = next((r.get("why") for r in res.records if r.get("status") == "failed" and r.get("why")), None)
            return (f"No setup was evaluated (every evaluation failed) for {at}."
                    + (f" The first failure: {why}" if why else ""))
        best = min(rows, key=lambda r: _miss(r, obj))
        return (f"**No candidate meets {slo_text(obj)}** on {at}. The closest, {best['setup']}, reaches "
                f"{_pct(best['slo_attainment'])} (p99 TTFT {_s(best['ttft_p99_s'])}, p99 TPOT {_s(best['tpot_p99_s'])}). "
                f"Relax the targets, lower --rate-scale, or add larger cards.")
    more = ""
    if c.get("max_rate_bound") == "bisected":
        more = f" It sustains up to x{c['max_rate_scale']:.3g} the trace's rate ({c['max_rate_req_s']:.3g} req/s)."
    elif c.get("max_rate_bound") == "above":
        more = f" It still meets the targets at x{c['max_rate_scale']:.3g} the trace's rate (the search's upper bound)."
    return (f"**Cheapest setup meeting {slo_text(obj)}** on {at}: **{c['setup']}** -- "
            f"{_usd(c['usd_per_hour'])}/hour ({c['cost_basis']}: {c['cost_detail']}), {_usd(c['usd_per_mtok'])} per million "
            f"output tokens served within the targets; {_pct(c['slo_attainment'])} of requests meet them, p99 TTFT "
            f"{_s(c['ttft_p99_s'])}, p99 TPOT {_s(c['tpot_p99_s'])}.{more} Evidence: {c['evidence']} (cost model + "
            f"trace replay), not measured.")


def pruning_line(res: sr.SearchResult) -> str:
    p = res.pruned
    n_eval = len(res.evaluated)
    failed = sum(1 for r in res.records if r.get("status") == "failed")
    feas = sum(1 for r in res.evaluated if r.get("feasible"))
    parts = [f"{p[s]} {s}" for s in sr.STAGES if p.get(s)]
    up = res.run.get("unpriced_cards") or []
    return (f"{res.n_candidates} candidate setups: {sum(p.values())} pruned ({', '.join(parts) or 'none'}), "
            f"{n_eval} evaluated ({res.reused} reused from an earlier run), {feas} meet the targets"
            + (f", {failed} failed" if failed else "")
            + (f"; {len(up)} card(s) of the catalog have no price and were left out ({', '.join(up[:6])}"
               f"{', ...' if len(up) > 6 else ''}; --prices FILE adds them)" if up else ""))


TABLE_COLS = (("setup", "setup"), ("$/hour", "usd_per_hour"), ("$/Mtok", "usd_per_mtok"),
              ("attainment", "slo_attainment"), ("p99 TTFT", "ttft_p99_s"), ("p99 TPOT", "tpot_p99_s"),
              ("max rate", "max_rate_scale"), ("goodput at max (tok/s)", "max_goodput_tok_s"),
              ("$/Mtok at max", "usd_per_mtok_at_max"), ("front", "front"))


def table_rows(res: sr.SearchResult, n: int = TABLE_ROWS) -> list[dict]:
    """The rows worth reading: the chosen one, then the cheapest feasible ones, then the fronts."""
    ev = res.evaluated
    feas = sorted([r for r in ev if r.get("feasible")], key=lambda r: (r["usd_per_mtok"], r["setup"]))
    front = [r for r in ev if r.get("on_front_goodput") or r.get("on_front_ttft")]
    out, seen = [], set()
    rest = sorted(ev, key=lambda r: (-(r.get("slo_attainment") or 0.0), r.get("usd_per_mtok") or math.inf))
    for r in ([res.chosen] if res.chosen else []) + feas[:max(1, n // 2)] + sorted(front, key=lambda r: r["usd_per_mtok"]) \
            + feas + rest:
        if id(r) in seen:
            continue
        seen.add(id(r))
        out.append(r)
        if len(out) >= n:
            break
    return out


def _cell(r, k) -> str:
    v = r.get(k)
    if k == "setup":
        return ("**" + v + "**") if r.get("chosen") else v
    if k in ("usd_per_hour", "usd_per_mtok", "usd_per_mtok_at_max"):
        return _usd(v)
    if k == "slo_attainment":
        return _pct(v)
    if k in ("ttft_p99_s", "tpot_p99_s"):
        return _s(v)
    if k == "max_rate_scale":
        return _rate(r)
    if k == "max_goodput_tok_s":
        return "n/a" if v is None or not math.isfinite(v) else f"{v:,.0f}"
    if k == "front":
        return ", ".join(x for x, f in (("goodput", "on_front_goodput"), ("TTFT", "on_front_ttft")) if r.get(f))
    return str(v)


def table(rows: Sequence[dict], cols=TABLE_COLS) -> str:
    cols = [c for c in cols if c[1] in ("front",) or any(c[1] in r for r in rows)]
    lines = ["| " + " | ".join(h for h, _ in cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for r in rows:
        lines.append("| " + " | ".join(_cell(r, k) for _, k in cols) + " |")
    return "\n".join(lines)


def render(res: sr.SearchResult) -> str:
    """search.md: the answer, the pruning line, the table, how it was run, the prices used."""
    obj = res.objective
    t = res.trace
    lines = ["# glmbench search", "", answer(res), "", pruning_line(res) + ".", "",
             f"Trace: {t['trace']}" + (f" ({t['attribution']})" if t.get("attribution") else "")
             + f"; {t['requests']:,} requests over {t['duration_s']:,.0f} s, mean prompt {t['mean_prompt']:,.0f} and "
               f"output {t['mean_output']:,.0f} tokens. Server: {obj.max_num_seqs} sequences, "
               f"{obj.max_batched_tokens}-token steps, prefix caching "
               f"{('on' if t.get('prefix_blocks') else 'on, without effect: the trace has no block hashes') if obj.prefix_cache else 'off'}. "
               f"Max rate: the highest rate scale meeting the targets (bisection to {100 * obj.rate_tol:g}%), "
               "'>' at the search's upper bound, 'none' when even a lone request misses them.", "",
             *(f"Note: {n}." for n in t.get("notices") or ()), *([""] if t.get("notices") else []),
             table(table_rows(res)), "",
             "$/Mtok: USD per million output tokens of requests that met both targets, at the trace's rate; "
             "at max: at the highest sustained rate. Costs: the cards only (not host, power supply or link).", ""]
    fr = res.front_goodput
    if fr:
        lines += ["Pareto front, cost per million good output tokens vs goodput at the highest sustained rate: "
                  + "; ".join(f"{r['setup']} ({_usd(r.get('usd_per_mtok_at_max', r['usd_per_mtok']))}, "
                              f"{r.get('max_goodput_tok_s', r['goodput_tok_s']):,.0f} tok/s)" for r in fr) + ".", ""]
    ri = res.run
    lines += [f"Run: {ri.get('evaluated_now', 0)} evaluations on {ri.get('backend', '?')} in {ri.get('wall_s', 0):.1f} s"
              + (f", {ri['restarts']} worker pool restart(s)" if ri.get("restarts") else "") + ".", "",
              "Prices (" + ", ".join(res.prices.files) + f"; {res.prices.years:g} years, ${res.prices.kwh_usd:g}/kWh, "
              f"basis {res.prices.basis}):", ""]
    used = {r["hardware"] for r in res.records if r.get("status") == "evaluated"}
    for row in res.prices.rows():
        if any(prices_mod._norm(u) == row["card"] or prices_mod._norm(u) == prices_mod._norm(row["card"]) for u in used):
            lines.append(f"- {row['card']}: " + ", ".join(
                x for x in (f"${row['purchase_usd']:,.0f}" if row["purchase_usd"] is not None else "",
                            f"{row['power_w']:g} W" if row["power_w"] is not None else "",
                            f"${row['cloud_usd_per_hour']:g}/GPU-hour" if row["cloud_usd_per_hour"] is not None else "",
                            row["date"]) if x) + (f" ({row['source']})" if row["source"] else ""))
    return "\n".join(lines) + "\n"


# ---- chart -------------------------------------------------------------------------------------------
def pareto_chart(res: sr.SearchResult, *, title: str | None = None):
    """Two panels, every evaluated setup a dot (filled: meets the targets at the trace's rate):
    cost per million good output tokens vs goodput at the highest sustained rate, and vs p99 TTFT
    at the trace's rate; each front drawn as a line, the chosen setup as a star."""
    from matplotlib.transforms import offset_copy
    from glmbench.report.plots import _legends_clear_of_data, _new_figure, plain_log_axis
    obj = res.objective
    rows = res.evaluated
    mx = obj.max_rate
    gx, gy = ("max_goodput_tok_s", "usd_per_mtok_at_max") if mx else ("goodput_tok_s", "usd_per_mtok")
    fig, axes = _new_figure(2, width=6.5, height=5.0)
    panels = ((axes[0], gx, gy, res.front_goodput,
               "goodput at the highest sustained rate (output tok/s)" if mx else "goodput at the trace's rate (output tok/s)",
               "USD per million good output tokens" + (" (at that rate)" if mx else "")),
              (axes[1], "ttft_p99_s", "usd_per_mtok", res.front_ttft, "p99 time to first token at the trace's rate (s)",
               "USD per million good output tokens (trace's rate)"))
    for ax, xf, yf, front, xl, yl in panels:
        for feas, style in ((False, dict(facecolors="none", edgecolors="0.55")), (True, dict(color="tab:blue"))):
            pts = [r for r in rows if bool(r.get("feasible")) == feas and sr._finite(r.get(xf)) and sr._finite(r.get(yf))
                   and r[xf] > 0]
            if pts:
                ax.scatter([r[xf] for r in pts], [r[yf] for r in pts], s=14, lw=0.8, alpha=0.7, **style,
                           label="meets the targets" if feas else "misses them (at the trace's rate)")
        if front:
            f = [r for r in front if r[xf] > 0]
            # a staircase through the corners the front's setups reach, worse on both axes than the two
            # setups it joins (the lower x of goodput, the higher x of TTFT; the higher cost): drawn through the
            # other corners (steps-post on goodput, steps-pre on TTFT) it passed where no setup is, a cost of
            # $0.056 at 600 tok/s where the $0.056 setup sustains 564
            xs, ys = [], []
            for a, b in zip(f, f[1:] + [None]):
                xs.append(a[xf])
                ys.append(a[yf])
                if b is not None:
                    xs.append(a[xf] if xf != "ttft_p99_s" else b[xf])
                    ys.append(max(a[yf], b[yf]))
            ax.plot(xs, ys, "-", color="tab:orange", lw=1.8, marker="o", ms=4, markevery=list(range(0, len(xs), 2)),
                    label="Pareto front")
        c = res.chosen
        if c is not None and sr._finite(c.get(xf)) and sr._finite(c.get(yf)) and c[xf] > 0:
            # the setup named in its legend entry: as a label beside the star it lay on the blue dots of the
            # setups that also meet the targets (azure-conv-2023[:1000], H100 SXM), and on a crowded panel no
            # spot near the star is clear of dots, the front and the target line
            ax.scatter([c[xf]], [c[yf]], marker="*", s=260, color="tab:red", edgecolors="black", zorder=5,
                       label=f"chosen: cheapest meeting the targets\n({_short(c)})")
        if xf == "ttft_p99_s":
            ax.axvline(obj.ttft_slo_s, color="0.4", lw=1, ls="-.")
            # beside its line, not touching it
            ax.text(obj.ttft_slo_s, 0.02, f"TTFT target {obj.ttft_slo_s:g} s",
                    transform=offset_copy(ax.get_xaxis_transform(), fig=fig, x=-3, units="points"),
                    fontsize=7, color="0.3", rotation=90, va="bottom", ha="right")
        ax.set_xscale("log")
        ax.set_yscale("log")
        plain_log_axis(ax.xaxis)
        plain_log_axis(ax.yaxis)
        ax.set_xlabel(xl)
        ax.set_ylabel(yl)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, framealpha=0.9)
        else:
            ax.text(0.5, 0.5, "no setup meets the targets\n" + ("at any rate tried" if mx and xf != "ttft_p99_s"
                                                                  else "at the trace's rate"), transform=ax.transAxes,
                    ha="center", va="center", fontsize=9, color="0.4")
    t = res.trace
    fig.suptitle(title or f"Cost vs goodput and latency on {t['trace']} ({slo_text(obj)})", fontsize=10)
    fig.get_layout_engine().set(h_pad=0.1)
    fig.supxlabel(f"predicted (cost model + trace replay, {len(rows)} setups); costs from "
                  f"{', '.join(os.path.basename(f) for f in res.prices.files)}: cards only", fontsize=7.5, color="0.3")
    # a legend over dots or the front goes beside the panels
    _legends_clear_of_data(fig, axes)
    return fig


def _short(r) -> str:
    return r["setup"].split(", MLA")[0].replace(", typical", "")


# ---- files -------------------------------------------------------------------------------------------
def summary(res: sr.SearchResult) -> dict:
    """search.json: the question, the answer, the fronts, the pruning, the run and the prices."""
    import dataclasses
    key = ("setup", "fingerprint", "usd_per_hour", "usd_per_mtok", "usd_per_mtok_at_max", "slo_attainment",
           "ttft_p99_s", "tpot_p99_s", "goodput_tok_s", "max_rate_scale", "max_rate_bound", "max_rate_req_s",
           "max_goodput_tok_s")

    def brief(r):
        return {k: r.get(k) for k in key if k in r}
    return _finite({"trace": res.trace, "objective": dataclasses.asdict(res.objective), "answer": answer(res),
                    "chosen": brief(res.chosen) if res.chosen else None,
                    "front_goodput": [brief(r) for r in res.front_goodput],
                    "front_ttft": [brief(r) for r in res.front_ttft],
                    "candidates": res.n_candidates, "pruned": res.pruned, "evaluated": len(res.evaluated),
                    "feasible": sum(1 for r in res.evaluated if r.get("feasible")), "reused": res.reused,
                    "run": {k: v for k, v in res.run.items() if k != "deaths"},
                    "prices": {"files": list(res.prices.files), "years": res.prices.years, "kwh_usd": res.prices.kwh_usd,
                               "basis": res.prices.basis}})


def write(res: sr.SearchResult, out: str | os.PathLike, *, chart: bool = True) -> list[str]:
    """search.md, search.json, setups.csv and setups.json (every candidate: evaluated, pruned,
    failed), pareto.png into folder `out`, each atomically; returns the paths."""
    from glmbench.report.plots import save_figure
    out = os.fspath(out)
    if os.path.exists(out) and not os.path.isdir(out):
        raise ValueError(f"`out` must be a folder, but {out!r} is a file")
    os.makedirs(out, exist_ok=True)
    recs = [sr._finite_rec(r) for r in res.records]
    paths = []
    for name, text in (("setups.json", rec.to_json(recs)), ("setups.csv", rec.to_csv(recs)),
                       ("search.json", json.dumps(summary(res), indent=1) + "\n"), ("search.md", render(res))):
        p = os.path.join(out, name)
        rec.atomic_write_text(p, text)
        paths.append(p)
    if chart and res.evaluated:
        paths.append(save_figure(pareto_chart(res), os.path.join(out, "pareto.png")))
    return paths


# ---- the study's decision tree as three searches ------------------------------------------------------
@dataclass(frozen=True)
class Shape:
    """One of the study's workload shapes as a trace and targets: `requests` of `prompt` + `output`
    tokens; one user (`users` 1: each request arrives `gap_s` after the previous one, long after it
    finished) or many (Poisson arrivals at `rate` requests/s, seeded)."""
    name: str
    prompt: int
    output: int
    requests: int
    ttft_slo_s: float
    tpot_slo_s: float
    study_model: str            # "moe" | "dense"
    study_cards: int
    study_says: str
    gap_s: float = 0.0
    rate: float = 0.0
    seed: int = 0

    def trace(self) -> traces_mod.Trace:
        if self.rate:
            rng = random.Random(self.seed)
            t, reqs = 0.0, []
            for _ in range(self.requests):
                t += rng.expovariate(self.rate)
                reqs.append((t, self.prompt, self.output))
        else:
            reqs = [(i * self.gap_s, self.prompt, self.output) for i in range(self.requests)]
        return traces_mod.from_requests(reqs, name=self.name)


# The study's three shapes (its decision tree: short answers for one person -> MoE on one card;
# long single-user context -> dense on one card; real traffic -> MoE split over two cards). The
# lengths are the decision table's chat turn and long-document workloads (report.WORKLOADS); the
# targets are ours, stated here: a chat reply starts within a second and streams faster than
# reading (20 tok/s); a 64K document may take two minutes to read in, then streams at 10 tok/s;
# many users: 2 s to the first token and 10 tok/s each, 2 requests/s of 2K-token prompts (about
# 500 output tok/s in aggregate, the study's batched figure).
SHAPES = (
    Shape("short single-user chat", 1024, 256, 20, ttft_slo_s=1.0, tpot_slo_s=0.05, study_model="moe",
          study_cards=1, study_says="MoE on one card", gap_s=120.0),
    Shape("long single-user document", 65536, 512, 6, ttft_slo_s=120.0, tpot_slo_s=0.1, study_model="dense",
          study_cards=1, study_says="dense on one card", gap_s=1800.0),
    Shape("many concurrent users", 2048, 256, 600, ttft_slo_s=2.0, tpot_slo_s=0.1, study_model="moe",
          study_cards=2, study_says="MoE split over two cards", rate=2.0, seed=7),
)
STUDY_GPU = "rtx-3090"


def study_models() -> tuple:
    """GLM-4.7-Flash and the study's dense candidates (predict/crossover.study_dense)."""
    from glmbench.predict import crossover as cx
    return ("glm-4.7-flash", *cx.study_dense())


def _kind(r) -> str:
    from glmbench.models import configs
    return "moe" if configs.load(r["model"]).n_routed_experts else "dense"


def decision_tree(*, shapes: Sequence[Shape] = SHAPES, workers: int | None = 1, ray: str | None = None,
                  progress: bool = False, max_rate: bool = True, price_table=None) -> list[dict]:
    """For each shape: search over GLM-4.7-Flash and the dense built-ins on 1 or 2 RTX 3090 at the
    study's 1.4 GB/s (layer split, q4_K weights, f16 cache, typical runtime); the search's choice
    beside the study's, whether they agree (same kind of model, same card count) and why not."""
    out = []
    models = study_models()
    for sh in shapes:
        obj = sr.Objective(ttft_slo_s=sh.ttft_slo_s, tpot_slo_s=sh.tpot_slo_s, max_rate=max_rate)
        res = sr.search(sh.trace(), obj, models=models, gpus=[STUDY_GPU], cards=(1, 2), weights=("q4_K",),
                        kv=("f16",), splits=("layer",), link_gbps=hardware.STUDY_LINK_GBPS,
                        link_latency_us=hardware.STUDY_LINK_LATENCY_US, price_table=price_table, workers=workers,
                        ray=ray, progress=progress)
        out.append(_compare(sh, res))
    return out


def _compare(sh: Shape, res: sr.SearchResult) -> dict:
    c = res.chosen
    ev = res.evaluated
    study = [r for r in ev if _kind(r) == sh.study_model and r["n_cards"] == sh.study_cards]
    study_ok = [r for r in study if r.get("feasible")]
    best_study = min(study_ok, key=lambda r: (r["usd_per_mtok"], r["e2e_mean_tok_s"] or math.inf)) if study_ok else None
    pruned_study = [r for r in res.records if r.get("status") == "pruned" and r["n_cards"] == sh.study_cards
                    and _kind(r) == sh.study_model]
    agree = c is not None and _kind(c) == sh.study_model and c["n_cards"] == sh.study_cards
    why = []
    if c is None:
        why.append(f"no candidate meets the targets ({slo_text(res.objective)})")
    elif agree:
        why.append(f"the search picks {sh.study_says} too")
        others = [r for r in ev if r.get("feasible") and r is not c and r["usd_per_hour"] == c["usd_per_hour"]]
        if others:
            why.append(f"{len(others)} other setup(s) cost the same per hour; {c['model']} wins on latency "
                       f"(token-weighted mean end-to-end {_s(c['e2e_mean_tok_s'])})")
        cheaper = [r for r in ev if r["usd_per_hour"] < c["usd_per_hour"]]
        if cheaper:
            b = min(cheaper, key=lambda r: _miss(r, res.objective))
            why.append(f"every cheaper setup misses the targets: the closest, {b['setup']}, gets {_pct(b['slo_attainment'])} "
                       f"of requests within them (p99 TTFT {_s(b['ttft_p99_s'])}, p99 TPOT {_s(b['tpot_p99_s'])})"
                       + (f" and sustains only x{b['max_rate_scale']:.3g} this rate" if b.get("max_rate_bound") == "bisected"
                          else ""))
    else:
        if best_study is None:
            if study:
                b = max(study, key=lambda r: r.get("slo_attainment") or 0.0)
                why.append(f"no setup of the study's kind ({sh.study_says}) meets the targets: the best, {b['setup']}, gets "
                           f"{_pct(b['slo_attainment'])} of requests within them (p99 TTFT {_s(b['ttft_p99_s'])}, "
                           f"p99 TPOT {_s(b['tpot_p99_s'])})")
            ctx = [r for r in pruned_study if r["pruned_by"] == "context"]
            if ctx:
                why.append(f"no setup of the study's kind ({sh.study_says}) can hold a {ctx[0]['longest_request']:,}-token request: "
                           + ", ".join(f"{r['model']} " + (f"has a native context of {r['model_context']:,} tokens"
                                                          if r.get("model_context") and r["model_context"] <= r["kv_pool_tokens"]
                                                          else f"leaves a KV pool of {r['kv_pool_tokens']:,} tokens on "
                                                               f"{r['n_cards']} x {r['device']}") for r in ctx))
            other = [r for r in pruned_study if r["pruned_by"] != "context"]
            if other:
                why.append("; ".join(f"{r.get('setup') or sr._label(r)} was pruned ({r['pruned_by']}: {r['why']})"
                                     for r in other[:3]))
            why.append(f"{c['setup']} meets the targets ({_pct(c['slo_attainment'])} of requests; p99 TTFT {_s(c['ttft_p99_s'])}, "
                       f"p99 TPOT {_s(c['tpot_p99_s'])}; KV pool {c['kv_pool_tokens']:,} tokens)")
        else:
            if best_study["usd_per_hour"] > c["usd_per_hour"]:
                why.append(f"{best_study['setup']} meets the targets too, but costs {_usd(best_study['usd_per_hour'])}/hour "
                           f"against {_usd(c['usd_per_hour'])} ({_usd(best_study['usd_per_mtok'])} vs "
                           f"{_usd(c['usd_per_mtok'])} per million good tokens): the study ranks by speed, the search "
                           f"by cost once the targets are met")
                if c.get("max_rate_bound") in ("bisected", "above"):
                    why.append(f"{c['setup']} sustains up to x{c['max_rate_scale']:.3g} this rate "
                               f"({c['max_rate_req_s']:.3g} req/s) within the targets")
            else:
                why.append(f"{best_study['setup']} costs the same per hour; {c['setup']} has the lower token-weighted "
                           f"mean end-to-end latency ({_s(c['e2e_mean_tok_s'])} vs {_s(best_study['e2e_mean_tok_s'])})")
    return {"shape": sh.name, "trace": res.trace, "targets": slo_text(res.objective), "study": sh.study_says,
            "search": c["setup"] if c else "", "search_kind": _kind(c) if c else "", "search_cards": c["n_cards"] if c else 0,
            "agree": agree, "why": "; ".join(why), "result": res}


def render_tree(rows: Sequence[dict]) -> str:
    lines = ["# The study's decision tree, searched", "",
             "Candidates: GLM-4.7-Flash and the dense built-ins on 1 or 2 RTX 3090 (1.4 GB/s between them, "
             "layer split), q4_K weights, f16 cache, typical runtime. Predicted (cost model + trace replay).", "",
             "| workload | targets | the study | the search | agree |", "|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['shape']} | {r['targets']} | {r['study']} | {r['search'] or 'none'} | "
                     f"{'yes' if r['agree'] else 'no'} |")
    lines.append("")
    for r in rows:
        lines.append(f"- **{r['shape']}**: {r['why']}.")
    return "\n".join(lines) + "\n"
