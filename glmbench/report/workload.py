"""Real workloads: replay a trace on the study's setups and say which one serves it best, per
length bucket and overall (`glmbench trace`, `glmbench report --trace`, notebook 05).

The simulation lives in glmbench.predict.replay; this module builds the setups from a Study,
adds the study's batched point, writes the files and formats the markdown (formatting only:
every number comes from the replay's result, written next to it as trace.json / CSV).
"""
from __future__ import annotations

import json
import math
import os
from typing import Sequence

from glmbench.predict import costmodel as cm
from glmbench.predict import hardware
from glmbench.predict import replay as rp
from glmbench.results import records as rec

# The study's batched figure: GLM-4.7-Flash on two RTX 3090, about 500 tok/s in aggregate
# (concurrency not stated; docs/COSTMODEL.md, "~500 tok/s batched on two cards").
STUDY_BATCHED_TOK_S = 500.0
STUDY_POINT_STREAMS = (1, 8, 32)
STUDY_POINT_PROMPT = 4096
STUDY_POINT_OUTPUT = 256
# what write() puts in a report folder
FILES = ("trace.json", "trace_runs.csv", "trace_buckets.csv", "trace_requests.csv", "trace_winners.png",
         "trace_latency.png")


def study_setup(study) -> cm.Setup:
    """The study's own setup: GLM-4.7-Flash on the study's two RTX 3090 (its measured link),
    split and formats as the Study says."""
    return cm.Setup("glm-4.7-flash", hardware.study_rig(), split=study.split, weights=study.weights, kv=study.kv,
                    mla_strategy=study.mla_strategy, runtime=study.runtime_profile)


def study_point(study, config: rp.ServerConfig | None = None) -> dict:
    """Simulated aggregate throughput of the study's setup for a few streams of 4K prompts
    arriving together, beside the study's ~500 tok/s."""
    s = study_setup(study)
    rows = [rp.batched_throughput(s, n, STUDY_POINT_PROMPT, STUDY_POINT_OUTPUT) for n in STUDY_POINT_STREAMS]
    return {"setup": s.label, "reference_tok_s": STUDY_BATCHED_TOK_S, "points": rows}


def evidence(study) -> dict:
    """What the replay's numbers are, as the study's records say it (predict/sweep.py): `predicted`, or
    `calibrated` for a calibrated profile or runtime model, with the cross-validated band its step
    times carry per model (decode, prefill; RuntimeProfile.cv_band), where it has one."""
    rt = study.runtime_profile
    out = {"kind": "calibrated" if rt.calibrated else "predicted", "runtime": rt.name, "bands": {}}
    if rt.calibrated or rt.fitted_to_gpus:
        for name, cfg in study.configs.items():
            tg, pp = rt.cv_band("tg", cfg), rt.cv_band("pp", cfg)
            if tg is not None or pp is not None:
                out["bands"][name] = {"decode": tg, "prefill": pp}
    return out


def trace_study(study, trace, *, rate_scale: float = 1.0, prefix_cache: Sequence[bool] = (True, False),
                ttft_slo_s: float = rp.DEFAULT_TTFT_SLO_S, tpot_slo_s: float = rp.DEFAULT_TPOT_SLO_S,
                config: rp.ServerConfig | None = None, progress: bool = True, keep_results: bool = True) -> dict:
    """replay.study on every setup of `study` (models x cards), plus the study's batched point and
    the aggregate throughput of the study's setup on this trace."""
    setups = study.setups()
    res = rp.study(trace, setups, config, rate_scale=rate_scale, prefix_cache=prefix_cache,
                   ttft_slo_s=ttft_slo_s, tpot_slo_s=tpot_slo_s, progress=progress, keep_results=keep_results)
    res["evidence_detail"] = evidence(study)     # res["evidence"]: the runs' kinds (replay.study)
    # the study's batched point belongs beside the study's rig only: left out when no setup ran on it
    rig = hardware.study_rig()
    if not any(s.rig.gpu.name == rig.gpu.name and s.rig.n_cards == rig.n_cards for s in setups):
        res["study_point"] = None
        return res
    sp = study_point(study, config)
    # the study's setup on this trace: one of the study's setups when it has it, else replayed
    mine = [r for r in res["runs"] if r["setup"] == sp["setup"] and r["prefix_cache"] == res["decision"]["prefix_cache"]]
    if not mine:
        from glmbench.predict import traces
        tr = traces.load(trace)
        tr = tr.scaled(rate_scale) if rate_scale != 1.0 else tr
        c = config or rp.ServerConfig()
        c = rp.ServerConfig(c.max_num_seqs, c.max_batched_tokens, res["decision"]["prefix_cache"], c.kv_tokens, c.step_costs)
        mine = [rp.replay(tr, study_setup(study), c, ttft_slo_s=ttft_slo_s, tpot_slo_s=tpot_slo_s).summary()]
    sp["on_trace"] = {k: mine[0][k] for k in ("throughput_tok_s", "decode_tok_s", "max_running", "slo_attainment_tok")}
    res["study_point"] = sp
    return res


def public(res: dict) -> dict:
    """The JSON-able part of a trace study (drops the per-request result objects)."""
    return {k: v for k, v in res.items() if not k.startswith("_")}


def _finite(o):
    if isinstance(o, float):
        return o if math.isfinite(o) else None
    if isinstance(o, dict):
        return {str(k): _finite(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_finite(v) for v in o]
    return o


def write(res: dict, out: str | os.PathLike, *, charts: bool = True) -> list[str]:
    """trace.json (everything), trace_runs.csv, trace_buckets.csv, trace_requests.csv (one row per
    request and run) and the two charts into folder `out`; returns the written paths."""
    from glmbench.report import plots
    out = os.fspath(out)
    if os.path.exists(out) and not os.path.isdir(out):
        raise ValueError(f"`out` must be a folder, but {out!r} is a file")
    os.makedirs(out, exist_ok=True)
    paths = []
    p = os.path.join(out, "trace.json")
    rec.atomic_write_text(p, json.dumps(_finite(public(res)), indent=1) + "\n")
    paths.append(p)
    for name, rows in (("trace_runs.csv", res["runs"]), ("trace_buckets.csv", res["buckets"])):
        p = os.path.join(out, name)
        rec.atomic_write_text(p, _csv(rows))
        paths.append(p)
    results = res.get("_results", {})
    if results:
        p = os.path.join(out, "trace_requests.csv")
        rec.atomic_write(p, lambda f: _write_requests(f, results))
        paths.append(p)
    if charts:
        paths += plots.save_trace_charts(res, out)
    return paths


REQUEST_COLUMNS = ("setup", "prefix_cache", "request", "arrival_s", "prompt_tokens", "output_tokens", "bucket",
                   "cached_tokens", "preemptions", "rejected", "failed", "queueing_s", "ttft_s", "tpot_s", "e2e_s",
                   "meets_slo")


def _write_requests(f, results: dict, chunk: int = 65536) -> None:
    """trace_requests.csv, one row per request and run, streamed a slice of requests at a time
    from the results' arrays (a million-request trace on four setups never holds its rows in memory;
    times to 6 significant digits, empty for none; arrivals as read)."""
    import csv
    w = csv.writer(f, lineterminator="\n")
    w.writerow(REQUEST_COLUMNS)
    names = [b[0] for b in rp.BUCKETS]

    def g(v):
        return "" if v != v else f"{v:.6g}"
    for (label, pc), r in results.items():
        A = r._arrays()
        n = len(r)
        for lo in range(0, n, chunk):
            hi = min(n, lo + chunk)
            cols = [list(r.arrival[lo:hi]), list(r.prompt[lo:hi]), list(r.output[lo:hi]), A["bucket"][lo:hi].tolist(),
                    list(r.cached_tokens[lo:hi]), list(r.preemptions[lo:hi]), list(r.rejected[lo:hi]),
                    A["failed"][lo:hi].tolist(), A["queueing_s"][lo:hi].tolist(), A["ttft_s"][lo:hi].tolist(),
                    A["tpot_s"][lo:hi].tolist(), A["e2e_s"][lo:hi].tolist(), A["meets"][lo:hi].tolist()]
            w.writerows((label, pc, lo + k, repr(a), p, o, names[b], c, pre, rej, fl, g(q), g(t), g(tp), g(e), m)
                        for k, (a, p, o, b, c, pre, rej, fl, q, t, tp, e, m) in enumerate(zip(*cols)))


def _csv(rows: Sequence[dict]) -> str:
    import csv
    import io
    cols = list(dict.fromkeys(k for r in rows for k in r if not isinstance(r[k], (dict, list))))
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(cols)
    for r in rows:
        w.writerow(["" if r.get(c) is None or (isinstance(r.get(c), float) and math.isnan(r[c]))
                    else (f"{r[c]:.6g}" if isinstance(r.get(c), float) else r.get(c, "")) for c in cols])
    return buf.getvalue()


def _n(v, digits=1):
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "–"
    return f"{v:,.{digits}f}"


def _best_share(res: dict) -> float:
    dec = res["decision"]
    rows = [r for r in res["runs"] if r["setup"] == dec.get("best") and r["prefix_cache"] == dec["prefix_cache"]]
    return rows[0]["slo_attainment_tok"] if rows else math.nan


def _crossover_answer(res: dict) -> list[str]:
    """The study's question put plainly: for each pair of models on one rig, whether the cost model
    puts a generation crossover between them (where, and what kind of number) and whether the
    trace's per-bucket winners follow it. [] when the setups hold no such pair."""
    runs = {r["setup"]: r for r in res["runs"]}
    out = []
    for v in res.get("synthetic_crossovers") or ():
        ra, rb = runs.get(v["a"]), runs.get(v["b"])
        if not ra or not rb or ra.get("model") == rb.get("model"):
            continue
        name = {v["a"]: ra.get("model"), v["b"]: rb.get("model")}
        n = ra.get("n_cards") or 1
        rig = f"{n}× {ra.get('device') or ra.get('hardware')}"
        if n > 1:
            link = ra.get("link_gbps")
            rig += f", {ra.get('split')} split" + (f" over {link:g} GB/s" if isinstance(link, (int, float)) else "")
        head = (f"On {rig}, {ra.get('weights')} weights, {ra.get('type_k')} KV cache, runtime {ra.get('runtime')} "
                f"({ra.get('evidence') or 'predicted'} numbers), {name[v['a']]} vs {name[v['b']]}: ")
        ties = (f"; a tie in {', '.join(v['trace_ties'])}" if v.get("trace_ties") else "")
        if v["crossovers"]:
            x = ", ".join(f"~{c:,.0f}" for c in v["crossovers"])
            won = {}
            for w in v["trace_winners"]:
                won.setdefault(name.get(w["winner"], w["winner"]), []).append(w["bucket"])
            seen = "; ".join(f"{m} wins {', '.join(b)}" for m, b in won.items()) or "no bucket to judge"
            out.append(head + f"the cost model puts the crossover at {x} tokens ({name[v['faster_after']]} decodes "
                       f"one stream faster beyond); on this trace it {'holds' if v['holds'] else 'does not hold'} "
                       f"({seen}{ties}).")
        else:
            fast = name[v["faster_before"]]
            lost = [w["bucket"] for w in v["trace_winners"] if w["winner"] != v["faster_before"]]
            lo, hi = v["depths"]
            if not v["trace_winners"]:
                trace = "the trace has no bucket to judge it by" + ties
            elif not lost:
                trace = f"on this trace {fast} wins every length bucket{ties}"
            else:
                trace = f"on this trace {fast} loses {', '.join(lost)}{ties}"
            out.append(head + f"the cost model puts no crossover from {lo:,} to {hi:,} tokens, where both fit "
                       f"({fast} decodes one stream faster throughout), so there is none for the trace to confirm; "
                       + trace + ".")
    if not out:
        return []
    return (["**Does the study's ~64K generation crossover hold on this trace?** (one stream's decode speed vs "
             "context from the cost model, against the trace's per-length-bucket winner between the same two "
             "setups, judged at this rate as above; not measured)", ""] + [f"- {t}" for t in out] + [""])


def render(res: dict, charts: Sequence[str] = ()) -> str:
    """A markdown section: the trace, the per-bucket winners, the crossover, the decision, the
    study's batched point."""
    t, slo, dec = res["trace"], res["slo"], res["decision"]
    L = [f"## Real workload: {t['trace']}", ""]
    L.append(f"{t['requests']:,} requests over {t['duration_s']:,.0f} s (rate x{t['rate_scale']:g}), mean prompt "
             f"{t['mean_prompt']:,.0f} and output {t['mean_output']:,.0f} tokens, longest prompt {t['max_prompt']:,}"
             + (f". {t['attribution']}." if t.get("attribution") else "."))
    L.append(f"Not measured: replayed on the cost model "
             f"(glmbench.predict.replay) with continuous batching, "
             f"{res['server']['max_batched_tokens']}-token chunked-prefill steps, up to {res['server']['max_num_seqs']} "
             f"requests at once, the KV pool from the memory model. Targets: TTFT <= {slo['ttft_s']:g} s, "
             f"TPOT <= {slo['tpot_s']:g} s. A bucket's winner is the setup with the larger share of the bucket's "
             f"tokens in requests meeting both targets, then the smaller share in rejected requests (too long for the "
             f"setup's KV pool or the model's context), then the lower token-weighted mean end-to-end latency. "
             "E" + rp.evidence_text(res)[1:] + ".")
    L.append("")
    for n in t.get("notices") or ():
        L.append(f"Note: {n}.")
    if t.get("notices"):
        L.append("")
    if dec["setup"]:
        L.append(f"**Decision: {dec['setup']}**" + (" (with prefix caching)" if dec["prefix_cache"] else "") + ".")
    elif dec.get("best"):
        L.append(f"**No setup keeps up with this trace at this rate**: the best of them, {dec['best']}, meets both "
                 f"targets for requests holding only {_n(100 * _best_share(res))}% of the tokens (a setup keeps up "
                 f"at {100 * dec.get('keeps_up_tok', rp.KEEPS_UP_TOK):.0f}%).")
    else:
        L.append("**Decision: none of these setups can serve this trace.**")
    L.append("")
    L += _crossover_answer(res)
    for r in dec["reasons"]:
        L.append(f"- {r}")
    L.append("")
    if t.get("failed_requests"):
        L.append(f"{t['failed_requests']:,} requests failed in the trace itself (0 output tokens): counted in "
                 "'requests', not replayed, left out of every other figure.")
        L.append("")
    L.append("| setup | prefix cache | requests | rejected | SLO met (tokens) | mean e2e, token-weighted (s) | "
             "TTFT p50 / p90 / p99 (s) | TPOT p50 / p90 (s) | output tok/s | cached prompt share |")
    L.append("|---|---|---|---|---|---|---|---|---|---|")
    for r in res["runs"]:
        L.append(f"| {r['setup']} | {'on' if r['prefix_cache'] else 'off'} | {r['requests']:,} | {r['rejected']:,} | "
                 f"{_n(100 * r['slo_attainment_tok'])}% | {_n(r['e2e_s_mean_tok'])} | {_n(r['ttft_s_p50'], 2)} / "
                 f"{_n(r['ttft_s_p90'], 2)} / {_n(r['ttft_s_p99'], 2)} | {_n(r['tpot_s_p50'], 3)} / {_n(r['tpot_s_p90'], 3)} | "
                 f"{_n(r['throughput_tok_s'], 0)} | {_n(100 * r['cached_share'])}% |")
    L.append("")
    L.append("Per input-length bucket (winner token-weighted):")
    L.append("")
    modes = sorted({w["prefix_cache"] for w in res["winners"]}, reverse=True)
    L.append("| bucket | requests | tokens | " + " | ".join(f"winner ({'prefix cache' if p else 'no prefix cache'})"
                                                           for p in modes) + " |")
    L.append("|---|---|---|" + "---|" * len(modes))
    by = {(w["prefix_cache"], w["bucket"]): w for w in res["winners"]}
    for name, _, _ in rp.BUCKETS:
        w0 = by[(modes[0], name)]
        if not w0["requests"]:
            continue
        cells = [by[(p, name)]["winner"] + (" (tie)" if by[(p, name)]["tie"] else "") for p in modes]
        L.append(f"| {name} | {w0['requests']:,} | {w0['tokens']:,} | " + " | ".join(cells) + " |")
    L.append("")
    for p in modes:
        cr = res["crossovers"][str(p)]
        what = "with prefix caching" if p else "without prefix caching"
        if not cr:
            L.append(f"Crossover {what}: none on this trace (one setup wins every bucket that holds requests).")
        else:
            L.append(f"Crossover {what}: " + "; ".join(f"at {c['at_tokens']:,} tokens ({c['bucket']}) from "
                                                      f"{c['from']} to {c['to']}" for c in cr) + ".")
    syn = res.get("synthetic_crossovers") or []
    if syn:
        L.append("")
        L.append("Does the synthetic comparison hold on this trace? (one stream's decode speed vs context from the "
                 "cost model, against the trace's per-bucket winner between the same two setups)")
        L.append("")
        L.append("| setups | synthetic (one stream) | on this trace | holds |")
        L.append("|---|---|---|---|")
        for v in syn:
            synthetic = (f"crossover at {', '.join(f'~{x:,.0f}' for x in v['crossovers'])} tokens" if v["crossovers"]
                         else f"{v['faster_before']} faster from {v['depths'][0]:,} to {v['depths'][1]:,} tokens")
            won = {}
            for w in v["trace_winners"]:
                won.setdefault(w["winner"], []).append(w["bucket"])
            trace = "; ".join([f"{k} wins {', '.join(b)}" for k, b in won.items()] +
                              ([f"a tie in {', '.join(v['trace_ties'])}"] if v.get("trace_ties") else [])) or "–"
            L.append(f"| {v['a']} vs {v['b']} | {synthetic} | {trace} | {'yes' if v['holds'] else 'no'} |")
    sp = res.get("study_point")
    if sp:
        L.append("")
        L.append(f"The study's batched point ({sp['setup']}; the study reports about {sp['reference_tok_s']:.0f} tok/s "
                 f"in aggregate on two RTX 3090): simulated aggregate decode throughput for streams of "
                 f"{STUDY_POINT_PROMPT:,}-token prompts arriving together: " +
                 ", ".join(f"{p['streams']} stream{'' if p['streams'] == 1 else 's'} {p['decode_tok_s']:,.0f} tok/s" for p in sp["points"]) +
                 f"; on this trace it averages {_n(sp['on_trace']['throughput_tok_s'], 0)} output tok/s "
                 f"({_n(sp['on_trace']['decode_tok_s'], 0)} tok/s in decode-only steps, up to "
                 f"{sp['on_trace']['max_running']} requests at once).")
    if charts:
        L.append("")
        for c in charts:
            L.append(f"![{os.path.splitext(os.path.basename(c))[0]}]({os.path.basename(c)})")
    L.append("")
    return "\n".join(L)
