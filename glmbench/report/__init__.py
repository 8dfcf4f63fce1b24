"""The study as one call: predict a grid, draw every chart, write the records and `report.md`.

    from glmbench import report
    study = report.Study()                      # GLM-4.7-Flash vs Qwen3-32B, q4_K, 1 and 2 x RTX 3090
    result = report.run(study, "glmbench-report")

Every number in the report comes from the records it writes next to it (records.csv/.json) or
from the cost model's `decide` on the same setups (decisions.json); nothing is typed in by hand.
The defaults are the study of issue 5: ~4.5-bit weights (q4_K), f16 KV cache, one and two
RTX 3090 cards over the 1.4 GB/s link the study measured between them, depths 1K to 128K.
"""
from __future__ import annotations

import datetime as _dt
import functools
import json
import math
import os
from dataclasses import dataclass
from typing import Sequence

from glmbench import vocab
from glmbench import __version__
from glmbench.models.configs import load
from glmbench.predict import costmodel as cm
from glmbench.predict import hardware
from glmbench.predict import sweep as sw
from glmbench.report import findings as findings_mod
from glmbench.report import plots
from glmbench.report.plots import rig_label, tokens_label
from glmbench.results import records as rec
from glmbench.results.compare import compare, measured_predicted_pairs, test_label  # noqa: F401
from tqdm.auto import tqdm

GIB = 1024 ** 3


def _pow2_range(lo: int, hi: int) -> tuple:
    out, x = [], lo
    while x <= hi:
        out.append(x)
        x *= 2
    return tuple(out)


# The workload shapes the decision table ranks setups for. Lengths are round numbers chosen to
# span the study's range (a chat turn to a prompt near 128K), not taken from a trace.
Workload = vocab.Workload
WORKLOADS = (
    Workload(1024, 256, name="chat turn"),
    Workload(16384, 1024, name="coding agent step"),
    Workload(65536, 512, name="long document Q&A"),
    Workload(120 * 1024, 512, name="whole-book prompt"),
    Workload(2048, 256, 16, name="batch serving, short"),
    Workload(16384, 512, 8, name="batch serving, long"),
)


@dataclass(frozen=True)
class Study:
    """Everything the report varies. Each model runs on `hardware` with every card count in
    `cards` (one card unsplit; more cards split by `split` over a `link_gbps` link)."""
    models: tuple = ("glm-4.7-flash", "qwen3-32b")
    hardware: str = "rtx-3090"
    cards: tuple = (1, 2)
    link_gbps: float = 1.4          # what the study measured between its two RTX 3090s (REFERENCE.md s.3)
    link_latency_us: float | None = None   # None: hardware.STUDY_LINK_LATENCY_US
    split: str = vocab.DEFAULTS["split"]
    weights: str = vocab.DEFAULTS["weights"]
    kv: str = vocab.DEFAULTS["kv"]
    depths: tuple = _pow2_range(1024, 131072)
    prompts: tuple | None = None    # prefill / TTFT prompt lengths; None: the depths
    n_prompt: int | None = None     # set: pp of n_prompt tokens at every depth (sweep-bench, llama-bench -d)
    n_gen: int = 1                  # tokens of each tg point (tg<n_gen> @ d, the mean over its steps)
    runtime: str = vocab.DEFAULTS["runtime"]
    mla_strategy: str = vocab.DEFAULTS["mla_strategy"]
    concurrency: tuple = (1, 2, 4, 8, 16, 32, 64)
    serve_context: int = 4096
    workloads: tuple = WORKLOADS
    # llama.cpp's partial offload on one-card setups (costmodel.Offload fields; None: none), the
    # host that holds what is offloaded (hardware.get_host; "host": this machine, measured), and
    # whether the report adds, for one card, the fastest offload setting that fits each context
    offload: dict | None = None
    host: str | None = None
    offload_table: bool = False
    # measured routing (records with `routing_counts`, from `glmbench measure FILE --routing-stats`):
    # the one model's experts are chosen with those frequencies (Setup.expert_skew); None: uniform
    routing: str | None = None

    def __post_init__(self):
        s = object.__setattr__
        models = (self.models,) if isinstance(self.models, str) else tuple(self.models)
        if not models:
            raise ValueError("`models` is empty: name at least one model")
        s(self, "models", models)
        for name in ("cards", "depths", "concurrency"):
            vals = getattr(self, name)
            vals = (vals,) if isinstance(vals, int) else tuple(vals)
            if not vals:
                raise ValueError(f"`{name}` is empty")
            for v in vals:
                if isinstance(v, bool) or not isinstance(v, int) or v < (0 if name == "depths" else 1):
                    raise ValueError(f"`{name}` must hold whole numbers >= {0 if name == 'depths' else 1}, got {v!r}")
            s(self, name, tuple(sorted(set(vals))))
        if self.prompts is not None:
            p = tuple(sorted(set(int(x) for x in self.prompts)))
            if not p or p[0] < 1:
                raise ValueError(f"`prompts` must hold whole numbers >= 1, got {self.prompts!r}")
            s(self, "prompts", p)
        for name, lo in (("n_prompt", 1), ("n_gen", 1)):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < lo):
                raise ValueError(f"`{name}` must be a whole number >= {lo}, got {v!r}")
        if self.n_gen is None:
            raise ValueError("`n_gen` must be a whole number >= 1, got None")
        if not (isinstance(self.link_gbps, (int, float)) and self.link_gbps > 0):
            raise ValueError(f"`link_gbps` must be > 0, got {self.link_gbps!r}")
        if isinstance(self.serve_context, bool) or not isinstance(self.serve_context, int) or self.serve_context < 0:
            raise ValueError(f"`serve_context` must be a whole number >= 0, got {self.serve_context!r}")
        if self.offload is not None:
            off = self.offload if isinstance(self.offload, cm.Offload) else cm.Offload(**dict(self.offload))
            s(self, "offload", off)

    @property
    def prompt_lengths(self) -> tuple:
        return self.prompts or tuple(d for d in self.depths if d > 0)

    @functools.cached_property
    def routing_histogram(self) -> list:
        """Tokens per expert from the `routing` file (results.records.routing_histogram)."""
        if len(self.models) != 1:
            raise ValueError(f"`routing` is one MoE model's measured expert histogram; the study has "
                             f"{len(self.models)} models: give one")
        h = rec.routing_histogram(rec.read_records(self.routing))
        if h is None:
            raise ValueError(f"{self.routing}: no record carries `routing_counts` "
                             "(measure a model file with `glmbench measure FILE --routing-stats`)")
        return h

    @functools.cached_property
    def _rigs(self) -> tuple:
        # built once: a "host" profile measures this machine's ceilings, which takes seconds
        lat = hardware.STUDY_LINK_LATENCY_US if self.link_latency_us is None else self.link_latency_us
        if hardware.is_host(self.hardware):  # this machine's CPU, measured now (needs the C core)
            # the measured side, imported only here: predictions for GPUs never load it
            from glmbench.measure.machine import host_profile
            gpu = host_profile()
        else:
            gpu = hardware.get_gpu(self.hardware)
        return tuple(hardware.Rig(gpu, n, link_gbps=self.link_gbps if n > 1 else None,
                                  link_latency_us=lat if n > 1 else None) for n in self.cards)

    def rigs(self) -> list:
        return list(self._rigs)

    @functools.cached_property
    def configs(self) -> dict:
        """Model name (as records carry it) -> ModelConfig, for every model of the study."""
        out = {}
        for m in self.models:
            cfg = load(m)
            out[cfg.name] = cfg
        return out

    @functools.cached_property
    def host_profile(self):
        """The host of offloaded setups (hardware.Host): resolved once; `host` measures this machine."""
        if hardware.is_host(self.host):
            from glmbench.measure.machine import host_profile   # the measured side, only for `host`
            return hardware.host_from_cpu(host_profile())
        return hardware.get_host(self.host)

    def setup_templates(self) -> list[dict]:
        """Setup fields without the model (sweep.predict combines them with every model); the
        offload, when the study has one, on its one-card setups."""
        out = []
        for r in self.rigs():
            t = dict(rig=r, split="none" if r.n_cards == 1 else self.split, weights=self.weights,
                     kv=self.kv, mla_strategy=self.mla_strategy, runtime=self.runtime)
            if self.offload is not None and r.n_cards == 1:
                t.update(offload=self.offload, host=self.host_profile)
            if self.routing is not None:
                t["expert_skew"] = self.routing_histogram
            out.append(t)
        return out

    def setups(self) -> list:
        return [cm.Setup(model=cfg, **t) for cfg in self.configs.values() for t in self.setup_templates()]

    def command(self) -> str:
        """The `glmbench report` command line that reproduces this study."""
        d = Study()
        parts = ["glmbench report"]
        if self.models != d.models:
            parts += [f"--model {m}" for m in self.models]
        for flag, name in (("--hardware", "hardware"), ("--link", "link_gbps"), ("--split", "split"),
                           ("--weights", "weights"), ("--kv", "kv"), ("--runtime", "runtime")):
            if getattr(self, name) != getattr(d, name):
                parts.append(f"{flag} {getattr(self, name)}")
        if self.cards != d.cards:
            parts.append("--cards " + ",".join(map(str, self.cards)))
        if self.depths != d.depths:
            parts.append("--depths " + ",".join(map(str, self.depths)))
        if self.concurrency != d.concurrency:
            parts.append("--concurrency " + ",".join(map(str, self.concurrency)))
        if self.serve_context != d.serve_context:
            parts.append(f"--serve-context {self.serve_context}")
        if self.n_prompt is not None:
            parts.append(f"--n-prompt {self.n_prompt}")
        if self.n_gen != d.n_gen:
            parts.append(f"--n-gen {self.n_gen}")
        if self.offload is not None:
            o = self.offload
            if o.n_gpu_layers is not None:
                parts.append(f"--n-gpu-layers {o.n_gpu_layers}")
            if o.n_cpu_moe:
                parts.append(f"--n-cpu-moe {o.n_cpu_moe}")
            parts += [f"--override-tensor '{p}=CPU'" for p in o.override_tensor]
        if self.host is not None:
            parts.append(f"--host {self.host}")
        if self.offload_table:
            parts.append("--offload")
        if self.routing is not None:
            parts.append(f"--routing {self.routing}")
        return " ".join(parts)


# ---- predictions ------------------------------------------------------------------------------
def sweep(study: Study, tests: Sequence[str] = ("tg", "pp", "mem", "serve"), *, progress: bool = True,
          out=None) -> list[dict]:
    """Predicted records for the study: tg (of `n_gen` tokens) and mem at every depth; pp from
    an empty cache at every prompt length (its `seconds` is the TTFT), or, with `study.n_prompt`,
    pp of n_prompt tokens at every depth; serve at every concurrency.

    out: a .json path passed to sweep.predict: points already there are reused, and the file
    holds every finished point if the sweep is interrupted."""
    bad = [t for t in tests if t not in sw.TESTS]
    if bad or not tests:
        raise ValueError(f"`tests` must be a non-empty subset of {sw.TESTS}, got {tuple(tests)!r}")
    study.setups()  # every model, format and GPU checked before any work (and any progress bar)
    templates = study.setup_templates()
    calls = []
    per_depth = [t for t in tests if t in ("tg", "mem")]
    if per_depth:
        calls.append(dict(depths=study.depths, tests=tuple(per_depth), n_gen=study.n_gen))
    if "pp" in tests and study.n_prompt is not None:
        calls.append(dict(depths=study.depths, tests=("pp",), n_prompt=study.n_prompt))
    elif "pp" in tests:
        calls += [dict(depths=(0,), tests=("pp",), n_prompt=n) for n in study.prompt_lengths]
    if "serve" in tests:
        calls.append(dict(depths=(study.serve_context,), tests=("serve",), concurrency=study.concurrency))
    bar = None
    if progress:
        bar = tqdm(total=len(calls), desc="predict", unit="grid")
    recs: list[dict] = []
    try:
        for kw in calls:
            recs += sw.predict(list(study.models), templates, out=out, **kw)
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    return recs


def decisions(study: Study) -> list[dict]:
    """costmodel.decide for each workload of the study over all its setups: one dict per
    workload with the ranked rows."""
    setups = study.setups()
    out = []
    for w in study.workloads:
        rows = cm.decide(w, setups)
        out.append({"workload": {"name": w.name, "prompt": w.prompt, "output": w.output,
                                 "concurrency": w.concurrency}, "ranking": rows})
    return out


def ceilings(study: Study) -> list[dict]:
    """The memory ceiling of every setup of the study, as the cost model predicts it: the weights
    on the fullest card, the KV bytes per token, the card's capacity and the longest context one
    stream can hold (costmodel.max_context). The report's memory table is these rows
    (ceilings.json beside report.md)."""
    rows = []
    for s in study.setups():
        cfg = s.model
        rows.append({"evidence": "predicted", "model": cfg.name, "rig": s.rig.name, "n_cards": s.n_cards,
                     "split": s.split, "weights": s.weights, "kv": s.kv, "runtime": s.runtime.name,
                     "weights_bytes_fullest_card": max(c.weights for c in cm.memory(s, 0).cards),
                     "kv_bytes_per_token": cfg.kv_bytes_per_token(s.kv), "capacity_bytes": s.gpu.memory_bytes,
                     "max_context": cm.max_context(s), "native_context": cfg.max_position_embeddings})
    return rows


OFFLOAD_PROMPT = 512   # the prefill the offload table reports (tokens on top of the context)


def offload_settings(cfg) -> list:
    """The offload settings the offload table tries for a model, fastest-leaning first: for an MoE
    model --n-cpu-moe 0..n_layers (the experts of the first N layers in host memory), for a dense
    one -ngl from all layers (and the output) down to 0."""
    if cfg.n_routed_experts:
        return [cm.Offload(n_cpu_moe=n) for n in range(cfg.n_layers + 1)]
    return [cm.Offload(n_gpu_layers=n) for n in range(cfg.n_layers + 1, -1, -1)]


def offload_rows(study: Study) -> list[dict]:
    """For each model on one card of the study's hardware: at each depth, the offload setting with
    the fastest predicted decode whose card and host memory hold that context (None when nothing
    fits), with its card and host bytes, decode tok/s at the depth and prefill tok/s of
    OFFLOAD_PROMPT tokens on top of it. The report's offload table is these rows (offload.json)."""
    rig = study.rigs()[0] if study.rigs()[0].n_cards == 1 else hardware.Rig(study.rigs()[0].gpu, 1)
    host = study.host_profile
    rows = []
    for cfg in study.configs.values():
        setups = [cm.Setup(cfg, rig, "none", study.weights, study.kv, study.mla_strategy, study.runtime,
                           offload=o, host=host) for o in offload_settings(cfg)]
        for d in study.depths:
            best = None
            for s in setups:
                m = cm.memory(s, d)
                if not m.fits:
                    continue
                tg = cm.decode(s, d).tok_s
                if best is None or tg > best[1]:
                    best = (s, tg, m)
            row = {"evidence": "predicted", "model": cfg.name, "rig": rig.name, "host": host.key or host.name,
                   "weights": study.weights, "kv": study.kv, "n_depth": d,
                   "capacity_bytes": rig.gpu.memory_bytes, "host_capacity_bytes": host.memory_bytes}
            if best is None:
                row.update(setting=None, fits=False)
            else:
                s, tg, m = best
                row.update(setting=s.offload.label, fits=True, **s.offload.fields(), card_bytes=m.cards[0].total,
                           host_bytes=m.host.total, tg_tok_s=tg, n_prompt=OFFLOAD_PROMPT,
                           pp_tok_s=cm.prefill(s, OFFLOAD_PROMPT, d).tok_s)
            rows.append(row)
    return rows


# ---- the report ---------------------------------------------------------------------------------
def run(study: Study | None = None, out: str | os.PathLike = "glmbench-report", *,
        extra_records: Sequence[dict] = (), progress: bool = True, trace=None,
        trace_options: dict | None = None) -> dict:
    """Predict, draw, write. Returns {"out", "report", "charts": [paths], "n_records"}.

    extra_records (e.g. measured ones from `glmbench measure`) are drawn with the predictions and
    written with them; they must say their evidence like every record.

    trace (a built-in trace name or a trace file): also replay it on the study's setups and add
    a "Real workload" section to report.md, its files (trace.json, trace_*.csv) and its two
    charts (report/workload.py; `trace_options` go to workload.trace_study). Without it the
    report is what it always was."""
    study = Study() if study is None else study
    if not isinstance(study, Study):
        raise TypeError(f"`study` must be a report.Study, got {type(study).__name__}")
    out = os.fspath(out)
    if os.path.exists(out) and not os.path.isdir(out):
        raise ValueError(f"`out` must be a folder, but {out!r} is a file")
    extra = [rec.validate(dict(r)) for r in extra_records]
    records = sweep(study, progress=progress) + extra
    decs = decisions(study)
    ceils = ceilings(study)
    os.makedirs(out, exist_ok=True)
    rec.write_records(os.path.join(out, "records.csv"), records)
    rec.write_records(os.path.join(out, "records.json"), records)
    rec.atomic_write_text(os.path.join(out, "decisions.json"),
                          json.dumps(_finite(decs), indent=1, default=_jsonable) + "\n")
    finds = findings_mod.findings(study)
    charts = plots.save_charts(records, out)
    for stale in ("mla_crossover.png", "findings.json"):
        if finds is None and os.path.exists(os.path.join(out, stale)):
            os.unlink(os.path.join(out, stale))
    if finds is not None:
        fig = plots.mla_crossover(finds["crossover"], title=(
            f"Crossover depth vs MLA attention efficiency: {findings_mod.MLA_MODEL} vs each dense model, "
            f"{study.weights}/{study.kv} (markers: each profile's own value)"))
        charts.append(plots.save_figure(fig, os.path.join(out, "mla_crossover.png")))
        rec.atomic_write_text(os.path.join(out, "findings.json"),
                              json.dumps(_finite(finds), indent=1, default=_jsonable) + "\n")
    # a chart this study has no data for must not survive from an earlier report in the folder
    plots.remove_stale_charts(out, charts)
    rec.atomic_write_text(os.path.join(out, "ceilings.json"), json.dumps(_finite(ceils), indent=1) + "\n")
    offl = None
    if study.offload_table:
        offl = offload_rows(study)
        rec.atomic_write_text(os.path.join(out, "offload.json"), json.dumps(_finite(offl), indent=1) + "\n")
    text = render(records, study, decs, [os.path.basename(p) for p in charts], ceils, finds, offl)
    from glmbench.report import workload
    trace_files = []
    if trace is not None:
        res = workload.trace_study(study, trace, progress=progress, **(trace_options or {}))
        trace_files = workload.write(res, out)
        tcharts = [p for p in trace_files if p.endswith(".png")]
        charts = charts + tcharts
        text = text.rstrip("\n") + "\n\n" + workload.render(res, tcharts)
    else:
        # a trace section's files must not survive from an earlier `--trace` report in the folder
        for name in workload.FILES:
            stale = os.path.join(out, name)
            if os.path.exists(stale):
                os.unlink(stale)
    path = os.path.join(out, "report.md")
    rec.atomic_write_text(path, text)
    return {"out": out, "report": path, "charts": charts, "n_records": len(records)}


def _finite(o):
    """JSON has no Infinity: a setup that does not fit has ttft_s = inf in decide(); write null."""
    if isinstance(o, float) and not math.isfinite(o):
        return None
    if isinstance(o, dict):
        return {k: _finite(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_finite(v) for v in o]
    return o


def _jsonable(o):
    try:
        return o.item()
    except AttributeError:
        return str(o)


def _tok(n) -> str:
    return tokens_label(n)


def _rig(r) -> str:
    return rig_label(r)


def _md_table(rows: list[list], header: list[str]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _num(v, digits=1) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "–"
    return f"{v:,.{digits}f}"


def render(records: Sequence[dict], study: Study, decs: Sequence[dict], charts: Sequence[str],
           ceils: Sequence[dict] | None = None, finds: dict | None = None,
           offload: Sequence[dict] | None = None) -> str:
    """report.md from the records, the decisions and the memory ceilings (pure: no files read or
    written, no number computed here: each comes from `records`, `decs` (decisions()) or `ceils`
    (ceilings()); without `ceils` the memory table is left out)."""
    pred = [r for r in records if r["evidence"] in ("predicted", "calibrated")]
    kinds = sorted({r["evidence"] for r in records})
    when = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    L = ["# glmbench report", ""]
    L.append(f"Generated {when} by glmbench {__version__}: `{study.command()}`")
    L.append("")
    L.append(f"**Evidence:** {' + '.join(kinds)}. Predictions come from the cost model "
             f"(`glmbench.predict.costmodel`, runtime profile `{study.runtime}`), not from running the hardware they name; "
             "measured points, where present, come from `glmbench measure` on the machine they name.")
    rt = study.setups()[0].runtime
    if rt.description:
        L.append("")
        if rt.kernels:
            # a runtime model: its kernel table replaces the per-class values where fitted
            eff = ", ".join(f"{k} {v:.3g}" for k, v in sorted(rt.kernels.items()) if k.endswith((":compute", ":memory")))
            cv = f"; leave-one-source-out error ±{100 * rt.cv_error:.0f}% (the band of its records)" if rt.cv_error else ""
            L.append(f"Runtime profile `{rt.name}`: {rt.description.rstrip('.')}. Kernel efficiencies (path:bound): "
                     f"{eff}{cv}; other ops at compute " + ", ".join(f"{k} {v:g}" for k, v in rt.compute_efficiency.items())
                     + ", memory " + ", ".join(f"{k} {v:g}" for k, v in rt.memory_efficiency.items()) + ".")
        else:
            L.append(f"Runtime profile `{rt.name}`: {rt.description.rstrip('.')}. Efficiencies: compute "
                     + ", ".join(f"{k} {v:g}" for k, v in rt.compute_efficiency.items()) + "; memory "
                     + ", ".join(f"{k} {v:g}" for k, v in rt.memory_efficiency.items()) + ".")
    L.append("")
    L.append(f"**Setup:** {', '.join(study.configs)}; weights `{study.weights}`, KV cache `{study.kv}`; "
             f"{', '.join(_rig_name(study, n) for n in study.cards)}; "
             f"depths {_tok(study.depths[0])} to {_tok(study.depths[-1])}.")
    wf = vocab.weight_format(study.weights)
    if isinstance(wf, vocab.Mix):
        L.append("")
        L.append(f"Weights `{wf.name}`: {wf.note}.")
    L.append("")
    L.append("Files: `records.csv` and `records.json` (every number below), `decisions.json` "
             "(the decision table in full), and the charts: " + ", ".join(f"`{c}`" for c in charts) + ".")
    L.append("")

    # -- generation and crossovers
    tg = [r for r in pred if r["test"] == "tg"]
    mem = [r for r in pred if r["test"] == "mem"]
    fits = {(r["setup"], r["n_depth"]): r.get("fits") for r in mem if r.get("n_streams", 1) == 1}
    if tg:
        L += ["## Generation speed vs context", "", "![generation speed](generation_vs_context.png)", ""]
        cx = plots.crossovers(tg)
        if cx:
            rows = []
            for c in cx:
                rows.append([c["rig"], " vs ".join(c["models"]), f"≈ {plots.approx_tokens(c['x'])}",
                             c["faster_before"], c["faster_after"]])
            L += ["**Crossovers found** (where one model's decode speed overtakes the other's):", "",
                  _md_table(rows, ["rig", "models", "context", "faster before", "faster after"]), ""]
        else:
            if len({r["model"] for r in tg}) > 1:
                L.append(f"**No crossover** between {_tok(study.depths[0])} and {_tok(study.depths[-1])}: "
                         + _no_cross_sentence(tg))
                L.append("")
        show = _pick_depths(study.depths)
        rows = []
        for s in _setups_of(tg):
            byd = {r["n_depth"]: r for r in tg if r["setup"] == s}
            r0 = next(iter(byd.values()))
            cells = []
            for d in show:
                r = byd.get(d)
                mark = "" if fits.get((s, d)) is not False else " (spills)"
                cells.append(_num(r["avg_ts"]) + mark if r else "–")
            rows.append([r0["model"], _rig(r0)] + cells)
        L += ["Decode tokens/s, one stream (`tg` at depth; *spills*: the weights and cache do not fit "
              "on the card(s), so the figure is what the speed would be if they did):", "",
              _md_table(rows, ["model", "rig"] + [f"@{_tok(d)}" for d in show]), ""]

    # -- prefill
    pp = [r for r in pred if r["test"] == "pp" and not r.get("n_depth")]
    if pp:
        L += ["## Prefill speed and time to first token", "", "![prefill](prefill_vs_prompt.png)", ""]
        show = _pick_depths(study.prompt_lengths)
        rows = []
        for s in _setups_of(pp):
            byp = {r["n_prompt"]: r for r in pp if r["setup"] == s}
            r0 = next(iter(byp.values()))
            rows.append([r0["model"], _rig(r0)] + [
                f"{_num(byp[p]['avg_ts'], 0)} tok/s, {_secs(byp[p]['seconds'])}" if p in byp else "–" for p in show])
        L += ["Prefill speed and time to first token for a prompt of each length from an empty cache:", "",
              _md_table(rows, ["model", "rig"] + [f"{_tok(p)} prompt" for p in show]), ""]

    # -- prefill at depth (--n-prompt)
    pp_at = [r for r in pred if r["test"] == "pp" and study.n_prompt is not None and r.get("n_prompt") == study.n_prompt]
    if pp_at:
        L += [f"## Prefill of {study.n_prompt} tokens vs context", ""]
        if "prefill_vs_context.png" in charts:
            L += ["![prefill vs context](prefill_vs_context.png)", ""]
        show = _pick_depths(study.depths)
        rows = []
        for s in _setups_of(pp_at):
            byd = {r["n_depth"]: r for r in pp_at if r["setup"] == s}
            r0 = next(iter(byd.values()))
            rows.append([r0["model"], _rig(r0)] + [
                f"{_num(byd[d]['avg_ts'], 0)} tok/s, {_secs(byd[d]['seconds'])}" if d in byd else "–" for d in show])
        L += [f"Prefill speed and time of a {study.n_prompt}-token chunk with d tokens already in the cache "
              f"(sweep-bench's S_PP at N_KV, llama-bench's pp{study.n_prompt} @ d):", "",
              _md_table(rows, ["model", "rig"] + [f"@{_tok(d)}" for d in show]), ""]

    # -- memory
    if mem:
        L += ["## Memory ceilings", "", "![memory](memory_vs_context.png)", ""]
        rows = []
        for c in ceils or ():
            ctx, native = c["max_context"], c["native_context"]
            limit = (f"{plots.approx_tokens(ctx)} tokens" if ctx < 2 ** 40 else "unlimited") if ctx else "does not fit"
            if ctx and native and ctx > native:
                limit += f" (beyond the model's {_tok(native)} positions)"
            rows.append([c["model"], c["rig"] if c["n_cards"] == 1 else f"{c['rig']}, {c['split']} split",
                         f"{c['weights_bytes_fullest_card'] / GIB:.1f}", f"{c['kv_bytes_per_token'] / 1024:.1f}",
                         f"{c['capacity_bytes'] / GIB:.1f}", limit])
        L += ["Longest context one stream can hold (weights, KV cache, workspace and runtime overhead "
              "on the fullest card, against its capacity):", "",
              _md_table(rows, ["model", "rig", "weights on fullest card (GiB)", f"KV per token, {study.kv} (KiB)",
                               "card (GiB)", "max context"]), ""]
    if offload:
        r0 = offload[0]
        L += [f"### Partial offload on one {r0['rig']} ({r0['capacity_bytes'] / GIB:.0f} GiB)", "",
              f"The fastest llama.cpp offload setting whose card and host memory hold each context (weights "
              f"`{study.weights}`, host `{r0['host']}`: offloaded work runs at its memory bandwidth and "
              f"compute, activations cross PCIe; decode at the context, prefill of {r0.get('n_prompt') or OFFLOAD_PROMPT} "
              f"tokens on top of it):", ""]
        rows = []
        for r in offload:
            if not r["fits"]:
                rows.append([r["model"], _tok(r["n_depth"]), "does not fit", "–", "–", "–", "–"])
                continue
            rows.append([r["model"], _tok(r["n_depth"]), r["setting"], f"{r['card_bytes'] / GIB:.1f}",
                         f"{r['host_bytes'] / GIB:.1f}", _num(r["tg_tok_s"]), _num(r["pp_tok_s"], 0)])
        L += [_md_table(rows, ["model", "context", "setting", "card (GiB)", "host (GiB)", "decode (tok/s)",
                               "prefill (tok/s)"]), ""]

    # -- one vs two
    serve = [r for r in pred if r["test"] == "serve"]
    if len(study.cards) > 1 and tg:
        head = "One card vs two" if study.cards == (1, 2) else "Cards: " + " vs ".join(map(str, study.cards))
        L += [f"## {head}", "", "![one vs two cards](one_vs_two_cards.png)", ""]
        lo, hi = study.depths[0], study.depths[-1]
        rows = []
        for name in study.configs:
            for n in study.cards:
                t = {r["n_depth"]: r for r in tg if r["model"] == name and r["n_cards"] == n}
                sv = [r for r in serve if r["model"] == name and r["n_cards"] == n and r.get("fits") is not False]
                best = max(sv, key=lambda r: r["aggregate_tok_s"]) if sv else None
                f_hi = fits.get((t[hi]["setup"], hi)) if hi in t else None
                rows.append([name, n, _num(t[lo]["avg_ts"]) if lo in t else "–",
                             (_num(t[hi]["avg_ts"]) + (" (spills)" if f_hi is False else "")) if hi in t else "–",
                             f"{_num(best['aggregate_tok_s'], 0)} at {best['concurrency']} streams" if best else "–"])
        L += [f"Decode tokens/s for one stream at {_tok(lo)} and {_tok(hi)}, and the best batched throughput "
              f"at {_tok(study.serve_context)} context per stream:", "",
              _md_table(rows, ["model", "cards", f"single stream @{_tok(lo)}", f"single stream @{_tok(hi)}",
                               "batched (all streams)"]), ""]
    if serve:
        L += ["## Throughput vs concurrency", "", "![throughput](throughput_vs_concurrency.png)", ""]
        rows = []
        for s in _setups_of(serve):
            pts = sorted((r for r in serve if r["setup"] == s), key=lambda r: r["concurrency"])
            ok = [r for r in pts if r.get("fits") is not False]
            full = [r for r in pts if r.get("fits") is False]
            best = max(ok, key=lambda r: r["aggregate_tok_s"]) if ok else None
            rows.append([pts[0]["model"], _rig(pts[0]),
                         f"{_num(best['aggregate_tok_s'], 0)} at {best['concurrency']}" if best else "–",
                         f"{_num(best['per_stream_tok_s'], 1)}" if best and best.get("per_stream_tok_s") else "–",
                         str(full[0]["concurrency"]) if full else f"all up to {pts[-1]['concurrency']} fit"])
        L += [f"Aggregate decode throughput with every stream at {_tok(study.serve_context)} of context "
              "(prefill of arriving requests not included):", "",
              _md_table(rows, ["model", "rig", "best tok/s (at streams)", "per stream there (tok/s)",
                               "first concurrency that does not fit"]), ""]

    # -- decisions
    band = study.setups()[0].runtime.cv_error      # a calibrated profile's leave-one-out error, else None
    if decs:
        L += ["## Decision table", "",
              "The cost model's ranking (`costmodel.decide`) of every setup above for each shape of work: "
              "end-to-end latency for one request, throughput for several. Setups that do not fit rank last.", ""]
        rows = []
        for d in decs:
            w, ranking = d["workload"], d["ranking"]
            best = ranking[0]
            second = ranking[1] if len(ranking) > 1 else None
            shape = f"{w['name']}: {_tok(w['prompt'])} in, {w['output']} out" + (
                f", {w['concurrency']} requests" if w["concurrency"] > 1 else "")
            if not best["fits"]:
                rows.append([shape, "nothing fits", "–", "–", "–", best["reasons"][0]])
                continue
            fig = _figure(best)
            ratio = "–"
            if second and second["fits"]:
                x = (second["e2e_s"] / best["e2e_s"] if best["objective"] == "latency"
                     else best["throughput_tok_s"] / second["throughput_tok_s"])
                what = "faster than" if best["objective"] == "latency" else "more throughput than"
                ratio = (f"{100 * (x - 1):.0f}% {what}" if x < 1.995 else f"{x:.1f}× {'as fast as' if best['objective'] == 'latency' else 'the throughput of'}")
                ratio += f" {second['model']} on {_decision_rig(second)}"
                if band and x - 1 <= band:
                    # within the calibrated prediction's error band: not a win
                    ratio = f"tie with {second['model']} on {_decision_rig(second)} ({100 * (x - 1):.0f}% apart, inside the ±{100 * band:.0f}% band)"
            elif second:
                ratio = f"{second['setup'].split(',')[0]} on {_decision_rig(second)} does not fit"
            others = []
            for r in ranking:
                if r["model"] != best["model"] and r["model"] not in [o["model"] for o in others]:
                    others.append(r)
            other = "; ".join(
                (f"{o['model']} on {_decision_rig(o)}: {_figure(o, short=True)}" if o["fits"]
                 else f"{o['model']}: does not fit") + _beyond_native(study.configs.get(o["model"]), w) for o in others) or "–"
            note = "; ".join(best["reasons"][:2])
            note = _beyond_native(study.configs.get(best["model"]), w).strip(" ()") + ("; " if _beyond_native(study.configs.get(best["model"]), w) else "") + note
            rows.append([shape, f"{best['model']} on {_decision_rig(best)}", fig, ratio, other, note])
        L += [_md_table(rows, ["workload", "best setup", "its figure", "vs runner-up",
                               "best of each other model", "why (cost-model terms)"]), ""]

    # -- the study, point by point (report/findings.py; every number from its records)
    if finds:
        L += ["## The study, point by point", "",
              "Each finding of the study beside what glmbench predicts for it: the `typical` profile and every "
              "calibrated profile shipped with glmbench (fitted by `glmbench calibrate` to the published measurements "
              "of REFERENCE.md section 6; their leave-one-out error is their band, and a difference inside the band "
              "is a tie). The records behind every figure are in `findings.json`.", ""]
        for i, f in enumerate(finds["rows"], 1):
            L += [f"{i}. **{f['finding']}** (study: {f['study']}). **Agree: {f['agree']}.**",
                  f"   - typical: {f['typical']}.",
                  f"   - calibrated: {f['calibrated']}.",
                  f"   - why: {f['why']}.", ""]
        L += ["## Crossover depth vs MLA attention efficiency", "", "![crossover vs MLA efficiency](mla_crossover.png)", "",
              "Where the dense model's decode speed catches up with GLM-4.7-Flash's, as a function of the memory "
              "efficiency of the runtime's MLA attention kernel (the fraction of the card's bandwidth its cache reads "
              "reach) and of the MLA strategy; each profile's own value is a marker on its line:", ""]
        rows = []
        for rt in finds["runtimes"]:
            own = [r for r in finds["crossover"] if r["own"] and r["runtime"] == rt["name"]
                   and r["mla_strategy"] == study.mla_strategy]
            cells = []
            for n in study.cards:
                xs = [r for r in own if r["n_cards"] == n]
                cells.append("; ".join(f"{r['dense_model']}: {_cross(r)}" for r in xs) or "–")
            rows.append([f"`{rt['name']}`", rt["evidence"], _num(rt["mla_attention_efficiency"], 3),
                         "–" if rt["cv_error"] is None else f"±{100 * rt['cv_error']:.0f}%"] + cells)
        L += [_md_table(rows, ["runtime", "evidence", f"MLA efficiency ({study.mla_strategy})", "band"]
                        + [f"crossover, {n} card{'s' if n > 1 else ''}" for n in study.cards]), ""]
        if finds.get("study_era"):
            L += [finds["study_era"], ""]

    # -- measured against predicted
    rows = _measured_vs_predicted(records)
    if rows:
        L += ["## Measured vs predicted", "",
              "Every measured point that has a prediction for the same model, test, prompt and depth "
              "(predicted / measured > 1: the cost model is optimistic). The devices are shown: a "
              "prediction for a GPU next to a CPU measurement is not a check of the model.", "",
              _md_table(rows, ["model", "test", "measured on", "measured (tok/s)", "predicted for",
                               "predicted (tok/s)", "predicted / measured", "stable"]), ""]
        shaky = list({id(m): m for m, _ in measured_predicted_pairs(records) if m.get("stable") is False}.values())
        if shaky:
            L += [f"**{len(shaky)} measured point{'s' if len(shaky) != 1 else ''} marked unstable** (\\*): another "
                  "process took the machine while {} timed (the reason is in each row); their ratios say "
                  "more about the neighbours than about the cost model. Rerun them on a quiet machine "
                  "(`glmbench measure --retries N` retimes such points).".format("it was" if len(shaky) == 1 else "they were"),
                  ""]

    # -- definitions
    L += ["## What the numbers mean", "",
          "- **Decode (generation) speed at depth d**: tokens per second generating one token at a time with d "
          "tokens already in the cache (llama-bench's `tg@d`).",
          "- **Prefill speed**: tokens per second ingesting a prompt; **time to first token (TTFT)** for a prompt "
          "of length L: the time to ingest L tokens from an empty cache.",
          "- **Throughput**: generated tokens per second over all concurrent streams.",
          "- **Memory**: weights + KV cache + workspace + runtime overhead on the fullest card.",
          "- **predicted** = the cost model; **measured** = real kernels timed on the named machine; "
          "**calibrated** = a prediction fitted to measurements.", ""]
    return "\n".join(L)


def _cross(r) -> str:
    x = r["crossover_depth"]
    if x is None:
        return f"none up to {_tok(r['max_depth'])}"
    return "from the start" if x == 0.0 else f"≈ {plots.approx_tokens(x)}"


def _beyond_native(cfg, w: dict) -> str:
    """' (beyond its native 40K positions)' when the request is longer than the model's
    max_position_embeddings: the cost model would still price it, the model may not handle it."""
    native = getattr(cfg, "max_position_embeddings", None)
    if native and w["prompt"] + w["output"] > native:
        return f" (beyond its native {_tok(native)} positions)"
    return ""


def _rig_name(study: Study, n: int) -> str:
    g = study.rigs()[0].gpu.name
    return f"1× {g}" if n == 1 else f"{n}× {g} ({study.split} split, {study.link_gbps:g} GB/s link)"


def _decision_rig(row) -> str:
    return row["rig"] + (f" ({row['split']} split)" if row["split"] != "none" else "")


def _figure(row, short: bool = False) -> str:
    if row["objective"] == "latency":
        if short:
            return _secs(row["e2e_s"])
        return f"{_secs(row['e2e_s'])} end to end (TTFT {_secs(row['ttft_s'])}, {1 / row['tpot_s']:.0f} tok/s)"
    return f"{row['throughput_tok_s']:.0f} tok/s over all requests"


def _secs(x) -> str:
    """Seconds to three significant figures: 0.000412 s, 0.0823 s, 3.04 s, 288 s."""
    if x is None or not math.isfinite(x):
        return "–"
    return f"{x:.3g} s" if x < 1000 else f"{x:,.0f} s"


def _setups_of(recs) -> list[str]:
    seen = []
    for r in recs:
        if r["setup"] not in seen:
            seen.append(r["setup"])
    return seen


def _pick_depths(depths: Sequence[int]) -> list[int]:
    """At most five columns: the first, the last and three spread between."""
    ds = sorted(d for d in depths)
    if len(ds) <= 5:
        return ds
    idx = sorted({0, len(ds) - 1, len(ds) // 4, len(ds) // 2, (3 * len(ds)) // 4})
    return [ds[i] for i in idx]


def _measured_vs_predicted(records) -> list[list]:
    def stable(m):
        if m.get("stable") is False:
            return "no: " + str(m.get("unstable_reason") or "marked unstable")
        return "yes" if m.get("stable") is True else "not checked"

    def star(m):
        return "\\*" if m.get("stable") is False else ""

    return [[m["model"], test_label(m), m.get("device") or m.get("tool") or "?", _num(m["avg_ts"], 2) + star(m), _rig(p),
             _num(p["avg_ts"], 2), f"{p['avg_ts'] / m['avg_ts']:.2f}", stable(m)]
            for m, p in measured_predicted_pairs(records)]


def _no_cross_sentence(tg) -> str:
    by = {}
    for r in tg:
        by.setdefault(_rig(r), {}).setdefault(r["model"], []).append(r["avg_ts"])
    parts = []
    for rig, models in by.items():
        if len(models) < 2:
            continue
        order = sorted(models, key=lambda m: -min(models[m]))
        top = order[0]
        if all(min(models[top]) > max(models[m]) for m in order[1:]) or all(
                a > b for m in order[1:] for a, b in zip(models[top], models[m])):
            parts.append(f"{top} is faster at every depth on {rig}")
    return ("; ".join(parts) + ".") if parts else "the models keep their order at every depth."
