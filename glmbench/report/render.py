"""report.md from what the study predicted: a function per section, each taking the records,
decisions, ceilings or findings it formats and returning its lines. Formatting only: no number is
computed here, each comes from `records` (report.study.sweep), `decs` (decisions()), `ceils`
(ceilings()), `offload` (offload_rows()) or `finds` (report/findings.py).
"""
from __future__ import annotations

import datetime as _dt
import math
from typing import Sequence

from glmbench import __version__, vocab
from glmbench.predict import costmodel as cm
from glmbench.predict import runtime as rtm
from glmbench.report import labels
from glmbench.report.labels import rig_label, tokens_label
from glmbench.report.study import GIB, OFFLOAD_PROMPT, Study
from glmbench.results.compare import measured_predicted_pairs, test_label, tg_lengths_sentence


def render(records: Sequence[dict], study: Study, decs: Sequence[dict], charts: Sequence[str],
           ceils: Sequence[dict] | None = None, finds: dict | None = None,
           offload: Sequence[dict] | None = None) -> str:
    """report.md from the records, the decisions and the memory ceilings (pure: no files read or
    written, no number computed here: each comes from `records`, `decs` (decisions()) or `ceils`
    (ceilings()); without `ceils` the memory table is left out)."""
    pred = [r for r in records if r["evidence"] in ("predicted", "calibrated")]
    L = ["# glmbench report", ""]
    L += _summary(finds)
    L += _header(records, study, charts, ceils, finds, offload)
    L += _generation(pred, study, ceils)
    L += _prefill(pred, study)
    L += _prefill_at(pred, study, charts)
    L += _memory(pred, study, ceils)
    L += _offload(offload, study)
    L += _one_vs_two(pred, study)
    L += _throughput(pred, study)
    L += _decisions(decs, study)
    L += _findings(finds, study)
    L += _crossover(finds, study)
    L += _measured(records)
    L += _definitions()
    return "\n".join(L)


def _header(records, study: Study, charts, ceils=None, finds=None, offload=None) -> list:
    """What made the report: command, evidence, runtime, setup, files."""
    kinds = sorted({r["evidence"] for r in records})
    when = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    L = []
    L.append(f"Generated {when} by glmbench {__version__}: `{study.command()}`")
    L.append("")
    L.append(f"**Evidence:** {' + '.join(kinds)}. Predictions come from the cost model "
             f"(`glmbench.predict.costmodel`, runtime profile `{study.runtime}`), not from running the hardware they name; "
             "measured points, where present, come from `glmbench measure` on the machine they name.")
    rt = study.runtime_profile
    if rt.description:
        L.append("")
        if rt.kernels:
            # a runtime model: its kernel table replaces the per-class values where fitted
            eff = ", ".join(f"{k} {v:.3g}" for k, v in sorted(rt.kernels.items()) if k.endswith((":compute", ":memory")))
            cv = f"; {_bands_text(rt)}" if rt.cv_error else ""
            L.append(f"Runtime profile `{rt.name}`: {rt.description.rstrip('.')}. Kernel efficiencies (path:bound): "
                     f"{eff}{cv}; other ops at compute " + ", ".join(f"{k} {v:g}" for k, v in rt.compute_efficiency.items())
                     + ", memory " + ", ".join(f"{k} {v:g}" for k, v in rt.memory_efficiency.items()) + ".")
        else:
            L.append(f"Runtime profile `{rt.name}`: {rt.description.rstrip('.')}. Efficiencies: compute "
                     + ", ".join(f"{k} {v:g}" for k, v in rt.compute_efficiency.items()) + "; memory "
                     + ", ".join(f"{k} {v:g}" for k, v in rt.memory_efficiency.items()) + ".")
            if rt.name in rtm.PHYSICS and not rt.calibrated:
                L += ["", _physics_error(rt.name)]
    L.append("")
    L.append(f"**Setup:** {', '.join(study.configs)}; {_weights_said(study)}, KV cache `{study.kv}`; "
             f"{', '.join(_rig_name(study, n) for n in study.cards)}; "
             + (f"depths {_tok(study.depths[0])} to {_tok(study.depths[-1])}." if len(study.depths) > 1
                else f"one depth, {_tok(study.depths[0])}."))
    wf = vocab.weight_format(study.weights)
    if isinstance(wf, vocab.Mix) and not all(c.file_weights for c in study.configs.values()):
        L.append("")
        L.append(f"Weights `{wf.name}`: {wf.note}.")
    L.append("")
    # every file report.run writes beside report.md (the same conditions as there)
    files = ["`records.csv` and `records.json` (every number below)", "`decisions.json` (the decision table in full)"]
    if ceils is not None:
        files.append("`ceilings.json` (the memory table's rows)")
    if offload is not None:
        files.append("`offload.json` (the offload table's rows)")
    if finds is not None:
        files.append("`findings.json` (the study's findings, every combination searched)")
    L.append("Files: " + ", ".join(files) + ", and the charts: " + ", ".join(f"`{c}`" for c in charts) + ".")
    L.append("")
    return L


def _generation(pred, study: Study, ceils=None) -> list:
    """Generation speed vs context: crossovers and the decode table."""
    tg = [r for r in pred if r["test"] == "tg"]
    mem = [r for r in pred if r["test"] == "mem"]
    fits = {(r["setup"], r["n_depth"]): r.get("fits") for r in mem if r.get("n_streams", 1) == 1}
    L = []
    if tg:
        L += ["## Generation speed vs context", "", "![generation speed](generation_vs_context.png)", ""]
        cx = labels.crossovers(tg)
        if cx:
            rows = []
            for c in cx:
                rows.append([c["rig"], " vs ".join(c["models"]), f"≈ {labels.approx_tokens(c['x'])}",
                             c["faster_before"], c["faster_after"]])
            L += ["**Crossovers found** (where one model's decode speed overtakes the other's):", "",
                  _md_table(rows, ["rig", "models", "context", "faster before", "faster after"]), ""]
        else:
            if len({r["model"] for r in tg}) > 1:
                if len(study.depths) > 1:
                    L.append(f"**No crossover** between {_tok(study.depths[0])} and {_tok(study.depths[-1])}: "
                             + _no_cross_sentence(tg))
                else:
                    # one depth ('between 4K and 4K ... faster at every depth'): a crossover needs two
                    L.append(f"**No crossover to find** at one depth ({_tok(study.depths[0])}; a crossover needs "
                             "two or more): " + _no_cross_sentence(tg, f"at {_tok(study.depths[0])}"))
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
                cells.append(_num(r["avg_ts"]) + mark + _past_native_mark(r) if r else "–")
            rows.append([r0["model"], _rig(r0)] + cells + _band_cells(tg, byd.values()))
        L += ["Decode tokens/s, one stream (`tg` at depth; *spills*: the weights and cache do not fit "
              "on the card(s), so the figure is what the speed would be if they did):", "",
              _md_table(rows, ["model", "rig"] + [f"@{_tok(d)}" for d in show] + _band_head(tg)), ""]
        L += _past_native_note(tg, show, "n_depth")
        said = set()
        for c in ceils or ():
            k = c.get("chunk_decode")
            if not k or (c["model"], k["chunk"]) in said:
                continue
            said.add((c["model"], k["chunk"]))
            L += [f"{c['model']} attends within chunks of {_tok(k['chunk'])} tokens on {k['chunked_layers']} of its "
                  f"{k['n_layers']} layers (Llama 4's chunked attention): a depth that is a multiple of "
                  f"{_tok(k['chunk'])} starts a new chunk, the fastest point of each. Half a chunk further it "
                  f"decodes slower: on {c['rig']}, "
                  f"{_num(k['tok_s'])} tok/s @{_tok(k['depth'])}, {_num(k['mid_tok_s'])} tok/s "
                  f"@{_tok(k['mid_depth'])} ({100 * (k['mid_tok_s'] / k['tok_s'] - 1):+.0f}%).", ""]
    return L


def _prefill(pred, study: Study) -> list:
    """Prefill speed and time to first token from an empty cache."""
    L = []
    pp = [r for r in pred if r["test"] == "pp" and not r.get("n_depth")]
    if pp:
        L += ["## Prefill speed and time to first token", "", "![prefill](prefill_vs_prompt.png)", ""]
        show = _pick_depths(study.prompt_lengths)
        rows = []
        for s in _setups_of(pp):
            byp = {r["n_prompt"]: r for r in pp if r["setup"] == s}
            r0 = next(iter(byp.values()))
            rows.append([r0["model"], _rig(r0)] + [
                f"{_num(byp[p]['avg_ts'], 0)} tok/s, {_secs(byp[p]['seconds'])}" + _past_native_mark(byp[p])
                if p in byp else "–" for p in show]
                + _band_cells(pp, byp.values()))
        L += ["Prefill speed and time to first token for a prompt of each length from an empty cache:", "",
              _md_table(rows, ["model", "rig"] + [f"{_tok(p)} prompt" for p in show] + _band_head(pp)), ""]
        L += _past_native_note(pp, show, "n_prompt")
    return L


def _prefill_at(pred, study: Study, charts) -> list:
    """Prefill of --n-prompt tokens at each depth."""
    L = []
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
                f"{_num(byd[d]['avg_ts'], 0)} tok/s, {_secs(byd[d]['seconds'])}" if d in byd else "–" for d in show]
                + _band_cells(pp_at, byd.values()))
        L += [f"Prefill speed and time of a {study.n_prompt}-token chunk with d tokens already in the cache "
              f"(sweep-bench's S_PP at N_KV, llama-bench's pp{study.n_prompt} @ d):", "",
              _md_table(rows, ["model", "rig"] + [f"@{_tok(d)}" for d in show] + _band_head(pp_at)), ""]
    return L


def _memory(pred, study: Study, ceils) -> list:
    """Memory ceilings: the longest context each setup holds."""
    mem = [r for r in pred if r["test"] == "mem"]
    L = []
    if mem:
        L += ["## Memory ceilings", "", "![memory](memory_vs_context.png)", ""]
        rows = []
        for c in ceils or ():
            ctx, native = c["max_context"], c["native_context"]
            limit = (f"{labels.approx_tokens(ctx)} tokens" if ctx < 2 ** 40 else "unlimited") if ctx else "does not fit"
            if ctx and native and ctx > native:
                if labels.approx_tokens(ctx) == _tok(native):   # 41,214 and 40,960 both round to 40K: exact figures
                    limit = f"{ctx:,.0f} tokens (beyond the model's {native:,.0f} positions)"
                else:
                    limit += f" (beyond the model's {_tok(native)} positions)"
            rows.append([c["model"], _row_rig(c, study),
                         f"{c['weights_bytes_fullest_card'] / GIB:.1f}", f"{c['kv_bytes_per_token'] / 1024:.1f}" + (
                             f" ({c['kv_bytes_per_token_past_window'] / 1024:.1f} past the {_tok(c['sliding_window'])} "
                             f"{'chunk' if c.get('window_chunked') else 'window'})"
                             if c.get("sliding_window") else "") + (
                             f" (+ {c['recurrent_state_bytes'] / 2 ** 20:.1f} MiB of state in its "
                             f"{c['linear_layers']} linear layers)" if c.get("recurrent_state_bytes") else ""),
                         f"{c['capacity_bytes'] / GIB:.1f}", limit])
        L += ["Longest context one stream can hold (weights, KV cache, workspace and runtime overhead "
              "on the fullest card, against its capacity):", "",
              _md_table(rows, ["model", "rig", "weights on fullest card (GiB)", f"KV per token, {study.kv} (KiB)",
                               "card (GiB)", "max context"]), ""]
    return L


def _weights_said(study: Study) -> str:
    """The study's weights as the report states them: `--weights`, but a model file (a GGUF, an HF folder) at its
    own stored types, as the cost model prices it (its main type named)."""
    files = {n: c.file_weights for n, c in study.configs.items() if c.file_weights is not None}
    if not files:
        return f"weights `{study.weights}`"
    if len(files) == len(study.configs):
        return "weights as stored (" + "; ".join(f"{n}: {fw.main_type}" for n, fw in files.items()) + ")"
    return f"weights `{study.weights}` (" + "; ".join(f"{n}: as stored, {fw.main_type}" for n, fw in files.items()) + ")"


def _offload(offload, study: Study) -> list:
    """The partial-offload table (--offload)."""
    L = []
    if offload:
        r0 = offload[0]
        L += [f"### Partial offload on one {r0['rig']} ({r0['capacity_bytes'] / GIB:.0f} GiB)", "",
              f"The fastest llama.cpp offload setting whose card and host memory hold each context "
              f"({_weights_said(study)}, host `{r0['host']}`: offloaded work runs at its memory bandwidth and "
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
    return L


def _one_vs_two(pred, study: Study) -> list:
    """One card vs two: single stream short and long, batched."""
    tg = [r for r in pred if r["test"] == "tg"]
    mem = [r for r in pred if r["test"] == "mem"]
    fits = {(r["setup"], r["n_depth"]): r.get("fits") for r in mem if r.get("n_streams", 1) == 1}
    L = []
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
                cell_hi = (_num(t[hi]["avg_ts"]) + (" (spills)" if f_hi is False else "")) if hi in t else "–"
                # one depth (--depths 4K): one single-stream column, not the same column twice
                rows.append([name, n] + ([_num(t[lo]["avg_ts"]) if lo in t else "–"] if lo != hi else [])
                            + [cell_hi,
                               f"{_num(best['aggregate_tok_s'], 0)} at {best['concurrency']} streams" if best else "–"]
                            + _band_cells(tg + serve, list(t.values()) + sv))
        at = f"{_tok(lo)} and {_tok(hi)}" if lo != hi else f"{_tok(hi)} (the only depth)"
        L += [f"Decode tokens/s for one stream at {at}, and the best batched throughput "
              f"at {_tok(study.serve_context)} context per stream:", "",
              _md_table(rows, ["model", "cards"] + ([f"single stream @{_tok(lo)}"] if lo != hi else [])
                        + [f"single stream @{_tok(hi)}", "batched (all streams)"] + _band_head(tg + serve)), ""]
    return L


def _throughput(pred, study: Study) -> list:
    """Aggregate decode throughput vs concurrency."""
    serve = [r for r in pred if r["test"] == "serve"]
    L = []
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
                         str(full[0]["concurrency"]) if full else f"all up to {pts[-1]['concurrency']} fit"]
                        + _band_cells(serve, pts))
        L += [f"Aggregate decode throughput with every stream at {_tok(study.serve_context)} of context "
              "(prefill of arriving requests not included):", "",
              _md_table(rows, ["model", "rig", "best tok/s (at streams)", "per stream there (tok/s)",
                               "first concurrency that does not fit"] + _band_head(serve)), ""]
    return L


def _decisions(decs, study: Study) -> list:
    """The decision table (costmodel.decide per workload)."""
    L = []
    rp = study.runtime_profile
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
                ratio += f" {second['model']} on {_row_rig(second, study)}"
                # a calibrated profile's cross-validated band: the widest of the two setups' models'
                # decode and prefill bands (RuntimeProfile.cv_band), else none
                band = max((rp.cv_band(t, study.configs.get(r["model"])) or 0.0)
                           for t in ("tg", "pp") for r in (best, second)) if rp.calibrated else None
                if band and x - 1 <= band:
                    # within the calibrated prediction's error band: not a win
                    ratio = f"tie with {second['model']} on {_row_rig(second, study)} ({100 * (x - 1):.0f}% apart, inside the ±{100 * band:.0f}% band)"
            elif second:
                ratio = f"{second['setup'].split(',')[0]} on {_row_rig(second, study)} does not fit"
            others = []
            for r in ranking:
                if r["model"] != best["model"] and r["model"] not in [o["model"] for o in others]:
                    others.append(r)
            other = "; ".join(
                (f"{o['model']} on {_row_rig(o, study)}: {_figure(o, short=True)}" if o["fits"]
                 else f"{o['model']}: does not fit") + _beyond_native(study.configs.get(o["model"]), w) for o in others) or "–"
            note = "; ".join(best["reasons"][:2])
            note = _beyond_native(study.configs.get(best["model"]), w).strip(" ()") + ("; " if _beyond_native(study.configs.get(best["model"]), w) else "") + note
            rows.append([shape, f"{best['model']} on {_row_rig(best, study)}", fig, ratio, other, note])
        L += [_md_table(rows, ["workload", "best setup", "its figure", "vs runner-up",
                               "best of each other model", "why (cost-model terms)"]), ""]
    return L


def _summary(finds) -> list:
    """The report's first paragraph: which setup the study most likely measured, and what that
    means for choosing hardware (two sentences from report/findings.py)."""
    if not finds or not finds.get("summary"):
        return []
    return [" ".join(finds["summary"]), ""]


def _findings(finds, study: Study) -> list:
    """The study, point by point: each finding's headline, criterion, why, and one sentence per
    combination searched (report/findings.py; every number from its records)."""
    if not finds:
        return []
    rts = [r["name"] for r in finds["runtimes"]]
    L = ["## The study, point by point", "",
         f"Each finding of the study searched over every dense built-in ({', '.join(finds['dense_models'])}) x every "
         f"shipped runtime profile ({', '.join(f'`{r}`' for r in rts)}) x {' and '.join(map(str, study.cards))} "
         f"card(s) of the study's rig ({_rig_name(study, study.cards[-1])}), GLM-4.7-Flash on the same runtime and "
         "cards as the dense model it is compared with. What the study's words mean (\"~x\": within "
         f"{100 * finds['criteria']['approx']:.0f}%, ...) is fixed in report/findings.py before any combination is "
         "evaluated; nothing is tuned. The records behind every figure are in `findings.json`.", ""]
    if finds.get("left_out"):
        L += ["Shipped profiles left out, as they cannot price this study's setups: "
              + "; ".join(f"`{r['name']}` ({r['why'].rstrip('.')})" for r in finds["left_out"]) + ".", ""]
    for i, f in enumerate(finds["rows"], 1):
        L += [f"{i}. **{f['finding']}** (study: {f['study']}). **{f['headline'][0].upper() + f['headline'][1:]}** "
              f"({f['n_reproduced']} of {f['n']} combinations).",
              f"   - criterion: {f['criterion']}.",
              f"   - why: {f['why']}.", ""]
        if f["results"]:
            L += ["<details><summary>every combination, one sentence each</summary>", ""]
            L += [f"- {r['sentence']}" for r in f["results"]]
            L += ["", "</details>", ""]
    return L


def _physics_error(name: str) -> str:
    """What a physics profile's numbers are worth: its MAPE on the published points shipped with
    glmbench, beside the leave-one-source-out MAPE of the runtime models fitted to them."""
    from glmbench.report import truth   # the public set, read only for a physics profile's report
    p = truth.physics_on_public(name)

    def pct(v):
        return "–" if v is None else f"{100 * v:.0f}%"
    per = p["per_runtime"]
    most = "llama.cpp" if "llama.cpp" in per else max(per, key=lambda r: per[r]["points"])   # mainline, the most used
    return (f"On the {p['points']} published points shipped with glmbench (glmbench/data/public/; docs/TRUTH_TABLE.md), "
            f"`{name}` misses decode by {pct(p['tg'])} and prefill by {pct(p['pp'])} (MAPE; on {most}'s "
            f"{per[most]['points']}: {pct(per[most]['tg'])} / {pct(per[most]['pp'])}), where the runtime models fitted "
            "to them miss by " + ", ".join(f"{pct(d['loso_tg'])} / {pct(d['loso_pp'])} (`{r}`)" for r, d in per.items())
            + " leave-one-source-out: `--runtime NAME` prices what that runtime runs, its records with their error band.")


def _bands_text(rt) -> str:
    """A runtime model's cross-validated bands in words: per test, and per model class where its
    public fit kept them (cv_bands), else its one error (rt.cv_label: leave-one-out or k-fold for a profile
    glmbench calibrate fitted)."""
    b = (rt.calibration or {}).get("cv_bands")
    if not b:
        return f"{rt.cv_label} error ±{100 * rt.cv_error:.0f}% (the band of its records)"
    def pct(v):
        return "–" if v is None else f"±{100 * v:.0f}%"
    parts = [f"{cls} models decode {pct(b['decode'].get(cls))} / prefill {pct(b['prefill'].get(cls))}"
             for cls in cm.BAND_CLASSES if b["decode"].get(cls) is not None or b["prefill"].get(cls) is not None]
    return ("leave-one-source-out error on its public sources (where larger, the error on its published points "
            "never fitted): " + ", ".join(parts)
            + " (the bands of its records; – : no source of that kind, the runtime's error for the test applies, or with"
            " no source of the test at all the widest band of the runtime models on it, unvalidated)")


def _band_cell(rt: dict) -> str:
    """The band column of the crossover table: decode band of GLM-4.7-Flash and of each dense model."""
    b = rt.get("cv_bands")
    if not b:
        return "–" if rt["cv_error"] is None else f"±{100 * rt['cv_error']:.0f}%"
    vals = {m: v for m, v in b["tg"].items() if v is not None}
    if not vals:
        return "–"
    uniq = sorted({round(100 * v) for v in vals.values()})
    if len(uniq) == 1:
        return f"decode ±{uniq[0]}%"
    # GLM-4.7-Flash (the first model) against the dense models' band(s)
    (glm, g), rest = next(iter(vals.items())), sorted({round(100 * v) for m, v in list(vals.items())[1:]})
    return f"decode {glm} ±{100 * g:.0f}%, dense " + " / ".join(f"±{x}%" for x in rest)


def _crossover(finds, study: Study) -> list:
    """Crossover depth of GLM-4.7-Flash vs each dense built-in, per runtime and card count, and the
    chart of the crossover against the MLA attention efficiency."""
    if not finds:
        return []
    L = ["## Crossover depth vs MLA attention efficiency", "", "![crossover vs MLA efficiency](mla_crossover.png)", "",
         "Where each dense built-in's decode speed catches up with GLM-4.7-Flash's, for every runtime profile "
         f"(its own MLA efficiency, `{study.mla_strategy}`) and card count; the chart sweeps the efficiency of the "
         "runtime's MLA attention kernel (the fraction of the card's bandwidth its cache reads reach), one line per "
         "dense model, each profile's own value a marker. For a runtime model (`llama.cpp`, `ik_llama.cpp`, `vllm`, "
         "...) the sweep sets the kernel-table entry of the MLA kernel that runtime runs (e.g. `kernels.mla_flash:memory`, "
         "its fitted value where the public data identified one), whatever strategy the study names; each panel's "
         "title says what it sets. A flat line means the crossover does not depend on the MLA kernel's memory "
         "efficiency in that setup (the dense model is already as fast from the start, or the MLA model stays ahead everywhere):", ""]
    dense = finds["dense_models"]
    by = {(r["runtime"], r["dense_model"], r["n_cards"]): r for r in finds["crossover_depths"]}
    rows = []
    for rt in finds["runtimes"]:
        cells = []
        for m in dense:
            got = [(n, _cross(by[(rt["name"], m, n)])) for n in study.cards if (rt["name"], m, n) in by]
            same = len({t for _, t in got}) == 1
            cells.append((got[0][1] + (" (" + ", ".join(str(n) for n, _ in got) + ")" if len(got) > 1 else "")) if same
                         else " · ".join(f"{n}: {t}" for n, t in got) if got else "–")
        rows.append([f"`{rt['name']}`", rt["evidence"], _num(rt["mla_attention_efficiency"], 3),
                     _band_cell(rt)] + cells)
    L += [_md_table(rows, ["runtime", "evidence", f"MLA efficiency ({study.mla_strategy})", "band"]
                    + [f"vs {m}" for m in dense]), "",
          "(n): the same on n cards; 1: ... · 2: ...: on one card and on two.", ""]
    return L

def _measured(records) -> list:
    """Measured points beside their predictions."""
    L = []
    rows = _measured_vs_predicted(records)
    if rows:
        # a measured tg2 (tg128) beside the tg1 prediction of its point: said, as the test column shows the measured one only
        lengths = tg_lengths_sentence([(m.get("n_gen") or 1, p.get("n_gen") or 1) for m, p in
                                       measured_predicted_pairs(records) if m.get("test") == "tg"], ("measured", "predicted"))
        L += ["## Measured vs predicted", "",
              "Every measured point that has a prediction for the same model, test, prompt and depth "
              "(predicted / measured > 1: the cost model is optimistic). The devices are shown: a "
              "prediction for a GPU next to a CPU measurement is not a check of the model." + (" " + lengths if lengths else ""),
              "",
              _md_table(rows, ["model", "test", "measured on", "measured (tok/s)", "predicted for",
                               "predicted (tok/s)", "predicted / measured", "stable"]), ""]
        shaky = list({id(m): m for m, _ in measured_predicted_pairs(records) if m.get("stable") is False}.values())
        if shaky:
            L += [f"**{len(shaky)} measured point{'s' if len(shaky) != 1 else ''} marked unstable** (\\*): another "
                  "process took the machine while {} timed (the reason is in each row); their ratios say "
                  "more about the neighbours than about the cost model. Rerun them on a quiet machine "
                  "(`glmbench measure --retries N` retimes such points).".format("it was" if len(shaky) == 1 else "they were"),
                  ""]
    return L


def _definitions() -> list:
    """What the numbers mean."""
    L = []
    L += ["## What the numbers mean", "",
          "- **Decode (generation) speed at depth d**: tokens per second generating one token at a time with d "
          "tokens already in the cache (llama-bench's `tg@d`).",
          "- **Prefill speed**: tokens per second ingesting a prompt; **time to first token (TTFT)** for a prompt "
          "of length L: the time to ingest L tokens from an empty cache.",
          "- **Throughput**: generated tokens per second over all concurrent streams.",
          "- **Memory**: weights + KV cache + workspace + runtime overhead on the fullest card.",
          "- **predicted** = the cost model; **measured** = real kernels timed on the named machine; "
          "**calibrated** = a prediction fitted to measurements.", ""]
    return L


def _past_native_mark(r: dict) -> str:
    """' †' on a table cell whose context is past the model's native positions (the record's
    `beyond_native`): the speed is priced, but the model was not trained that long."""
    return " †" if r.get("beyond_native") else ""


def _past_native_note(table, shown, key: str) -> list:
    """The footnote to the † cells of a table: each marked model's native positions."""
    native = {}
    for r in table:
        if r.get("beyond_native") and r.get(key) in shown and r.get("native_context"):
            native[r["model"]] = r["native_context"]
    if not native:
        return []
    each = "; ".join(f"{m}: {_tok(n)}" for m, n in native.items())
    return [f"† past the model's native positions ({each}): the figure prices the context as asked; the model "
            "was not trained that long and needs RoPE scaling such as YaRN there, where its answers may degrade.", ""]


def _tok(n) -> str:
    return tokens_label(n)


def _rig(r) -> str:
    return rig_label(r)


def _band_head(table) -> list:
    """The band column's header, where the table's records carry a calibrated band (cv_error: a
    runtime model or calibrated profile's cross-validated error), else no column."""
    return ["band (cross-validated)"] if any(r.get("cv_error") is not None for r in table) else []


def _band_cells(table, recs) -> list:
    """One row's band cell (see _band_head): ±x% of its records' cv_error, '–' where they have none."""
    if not _band_head(table):
        return []
    vals = sorted({round(100 * float(r["cv_error"])) for r in recs if r.get("cv_error") is not None})
    return ["–" if not vals else " / ".join(f"±{v}%" for v in vals)]


def _md_table(rows: list[list], header: list[str]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _num(v, digits=1) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "–"
    return f"{v:,.{digits}f}"




def _cross(r) -> str:
    x = r["crossover_depth"]
    if x is None:
        return f"none up to {_tok(r['max_depth'])}"
    return "from the start" if x == 0.0 else f"≈ {labels.approx_tokens(x)}"


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


def _row_rig(row, study: Study | None = None) -> str:
    """A decision or memory row's rig, named by the cost model (`rig` '2 x RTX 3090 @ 1.4 GB/s', `split`), as
    the charts and the other tables name it (rig_label: '2× RTX 3090 (layer split, 1.4 GB/s)'), so a row
    reads as its chart's line."""
    name, split = row["rig"], row["split"]
    for rig in (study.rigs() if study is not None else ()):
        if rig.name == name:
            return rig_label({"device": rig.gpu.name, "n_cards": rig.n_cards, "split": split,
                              "link_gbps": rig.link_gbps if rig.n_cards > 1 else None})
    return name + (f" ({split} split)" if split not in (None, "", "none") else "")


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

    def where(m):
        # the measured rig as the predicted one is named: 2 cards are not 1 (the rows pair by point, any rig)
        n = m.get("n_cards") or 1
        if m.get("device"):
            return f"{n}× {m['device']}" if int(n) > 1 else m["device"]
        # the file names no card: said, with the tool that wrote it (a tool is not a machine)
        return "card not stated" + (f" ({m['tool']})" if m.get("tool") else "")

    def band(p):
        # a calibrated prediction's cross-validated band beside it
        return "" if p.get("cv_error") is None else f" ±{100 * float(p['cv_error']):.0f}%"

    return [[m["model"], test_label(m), where(m), _num(m["avg_ts"], 2) + star(m), _rig(p),
             _num(p["avg_ts"], 2) + band(p), f"{p['avg_ts'] / m['avg_ts']:.2f}", stable(m)]
            for m, p in measured_predicted_pairs(records)]


def _no_cross_sentence(tg, where="at every depth") -> str:
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
            parts.append(f"{top} is faster {where} on {rig}")
    return ("; ".join(parts) + ".") if parts else f"the models keep their order {where}."

