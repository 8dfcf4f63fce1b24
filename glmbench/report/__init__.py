"""The study as one call: predict a grid, draw every chart, write the records and `report.md`.

    from glmbench import report
    study = report.Study()                      # GLM-4.7-Flash vs Qwen3-32B, q4_K, 1 and 2 x RTX 3090
    result = report.run(study, "glmbench-report")

Every number in the report comes from the records it writes next to it (records.csv/.json) or
from the cost model's `decide` on the same setups (decisions.json); nothing is typed in by hand.
The defaults are the study of issue 5: ~4.5-bit weights (q4_K), f16 KV cache, one and two
RTX 3090 cards over the 1.4 GB/s link the study measured between them, depths 1K to 128K.

The parts: report/study.py (the Study, its setups and predictions), report/findings.py (the
study's findings as a search over dense models, runtimes and card counts), report/render.py
(report.md, a function per section), report/plots.py (the charts; imported by `run` where it draws, so that
`import glmbench.report` loads no matplotlib); `run` joins them.
"""
from __future__ import annotations

import json
import math
import os
from typing import Sequence

from glmbench.report import findings as findings_mod
from glmbench.report.render import render
# the study's names stay importable from glmbench.report (report.Study, report.sweep, ...)
from glmbench.report.study import (GIB, OFFLOAD_PROMPT, WORKLOADS, Study, Workload, ceilings, decisions,  # noqa: F401
                                   offload_rows, offload_settings, split_for, sweep)
__all__ = ["run", "render", "Study", "Workload", "WORKLOADS", "sweep", "decisions", "ceilings", "offload_rows",
           "offload_settings", "split_for", "GIB", "OFFLOAD_PROMPT"]
from glmbench.results import records as rec
from glmbench.results.compare import compare, measured_predicted_pairs, test_label  # noqa: F401


# ---- the report ---------------------------------------------------------------------------------

def _remove_stale(out, names) -> None:
    """Each of `names` in `out` that an earlier report wrote and this one does not: removed."""
    for name in names:
        path = os.path.join(out, name)
        if os.path.exists(path):
            os.unlink(path)


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
    from glmbench.report import plots   # matplotlib: loaded by what draws, not by `import glmbench.report`
    charts = plots.save_charts(records, out)
    if finds is None:
        _remove_stale(out, ("mla_crossover.png", "findings.json"))
    if finds is not None:
        fig = plots.mla_crossover(finds["crossover"], title=(
            f"Crossover depth vs MLA attention efficiency: {findings_mod.MLA_MODEL} vs each dense built-in\n"
            f"(one line each), {study.weights}/{study.kv}, MLA {study.mla_strategy}; markers: each profile's own value\n"
            f"(runtime models: the MLA strategy they run, their MLA kernel's kernel-table entry swept)"))
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
    else:
        # as findings.json: an offload table from an earlier `--offload` report must not survive
        _remove_stale(out, ("offload.json",))
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
        _remove_stale(out, workload.FILES)
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
