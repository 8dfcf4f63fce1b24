"""Held-out check of the runtime models on published results the fit never saw: llama.cpp's
llama-batched-bench tables for gpt-oss-20b and gpt-oss-120b on a GB10 (DGX Spark), GLM-4.7-Flash's on
the same card (llama.cpp's newer page, kept in bench/checks/gb10-glm-4.7-flash/), and the time
to first token of the one vLLM serving result (Qwen3-30B-A3B BF16 on an H100).

    python bench/bench_public_batched.py DIR_WITH_THE_PUBLISHED_FILES   # import, predict, write
    python bench/bench_public_batched.py --records bench/results/public_batched_<date>.json  # re-predict

Nothing is fitted here: every prediction is a built-in runtime profile as shipped
(glmbench/data/runtime/*.json), with the options the run states (-fa 1, -ub 2048), beside
`typical` and `ideal` (physics only) for reference. The batched-bench rows are left out of the
public fit (bench/public_records.py keeps single-stream benches only); the same card, models and
runtime are in it through the single-stream llama-bench tables of the same files, so this checks
what batching adds, not a new card. The vLLM TPOT is in the fit (its only point): it is shown,
marked in-sample; its TTFT is not.

What is predicted (glmbench.predict.costmodel):
- batched-bench PP (B prompts of PP tokens, each from an empty cache): `prefill_batch(setup, PP, B)`:
  the prompts laid one after the other and cut into ubatches of n_ubatch, each ubatch reading
  the weights once for all its tokens, each sequence attending to its own cache;
- batched-bench TG (B streams generating TG tokens from depth PP): B / the mean `decode(setup, d, B)`
  step over d = PP .. PP + TG - 1 (weights read once per step, every stream's KV read);
- vLLM TTFT (mean, 2042-token prompts, 10 concurrent requests): the prompt's prefill alone
  (`ttft`), and under load: one decode pass of the 9 other streams at their mean depth (prompt +
  half the mean output) followed by the prompt's prefill, as glmbench's replay prices a mixed step
  (glmbench/predict/replay.py); and `replayed`: the benchmark's closed loop (100 requests, 10 in
  flight, the next sent when one finishes) on glmbench's continuous-batching replay with its
  closed-loop client (replay.closed_loop), TTFT counted from when the request is sent (the k-th
  finish sends request B + k, which reaches the server replay.CLIENT_GAP_S later, after the engine
  has scheduled the step that starts at that finish), as the client counts it: the server's wait
  for its prefill budget (vLLM's max_num_batched_tokens, 8192 on the H100) included.

Each pasted file is read by glmbench's importer (glmbench.results.importers.read, as `glmbench
compare FILE` reads it: one record per point, `inferred` says how each field was told). The
attribution (URL, date, command) comes from the files' sidecars, copied into SOURCES below. Writes
bench/results/public_batched_<date>.md (MAPE per source and test, per profile) and .json (every
held-out record with its predictions), atomically.
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import hashlib
import json
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from glmbench.measure import machine  # noqa: E402
from glmbench.predict import costmodel as cm  # noqa: E402
from glmbench.predict import hardware as hw  # noqa: E402
from glmbench.predict import kernels as kn  # noqa: E402
from glmbench.predict import replay  # noqa: E402
from glmbench.predict import runtime as rtm  # noqa: E402
from glmbench.results import importers  # noqa: E402
from glmbench.results import records as rec  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
GB10 = "https://github.com/ggml-org/llama.cpp/blob/4c7e9893c4ca8eec35d032726d14b74fae76cff8/benches/dgx-spark.md"
GB10_CMD = ("llama-batched-bench (not printed verbatim; its header line: n_kv_max = 270336, n_batch = 2048, n_ubatch = "
            "2048, flash_attn = 1, is_pp_shared = 0, n_gpu_layers = -1, n_threads = 20), -npp 512,4096,8192 -ntg 32 "
            "-npl 1,2,4,8,16,32 (from the table)")
GB10_NEW = "https://github.com/ggml-org/llama.cpp/blob/master/benches/dgx-spark/dgx-spark.md"
VLLM_URL = "https://github.com/vllm-project/vllm/pull/23151"
# source id -> the pasted file and its sidecar's attribution; `runtime`: the runtime model it ran on
SOURCES = {
    "gpt-oss-20b_gb10_batched": dict(
        file="gpt-oss-20b_GB10-DGX-Spark_llama.cpp-benches.md", runtime="llama.cpp", url=GB10, date="2025-11-02",
        command=GB10_CMD, note="llama.cpp's own DGX Spark benchmark page, build 2f68ce7cf (6918); batched-bench table"),
    "gpt-oss-120b_gb10_batched": dict(
        file="gpt-oss-120b_GB10-DGX-Spark_llama.cpp-benches.md", runtime="llama.cpp", url=GB10, date="2025-11-02",
        command=GB10_CMD, note="llama.cpp's own DGX Spark benchmark page, build 2f68ce7cf (6918); batched-bench table"),
    # not in ../shared/public-results: llama.cpp's newer DGX Spark page as vendored by llama-cpp-python 0.3.36,
    # kept in this repo (bench/checks/, path relative to the repository: found whatever folder is given)
    "glm-4.7-flash_gb10_batched": dict(
        file=os.path.join(HERE, "checks", "gb10-glm-4.7-flash", "glm-4.7-flash-q8_0_gb10_batched.md"),
        runtime="llama.cpp", url=GB10_NEW, date="2026-02-05", command=GB10_CMD,
        note="llama.cpp's own DGX Spark benchmark page, build 11fb327bf (7941); GLM-4.7-Flash Q8_0 "
             "(ggml-org/GLM-4.7-Flash-GGUF); batched-bench table; its llama-bench table is checked by "
             "bench_public_fit.py --check bench/checks/gb10-glm-4.7-flash"),
    "qwen3-30b-a3b-bf16_h100_vllm_ttft": dict(
        file="qwen3-30b-a3b-bf16_h100_vllm-pr23151.log", runtime="vllm", url=VLLM_URL, date="2025-08-19",
        command="VLLM_USE_DEEP_GEMM=1 vllm serve Qwen/Qwen3-30B-A3B; benchmarks/benchmark_serving.py --dataset-name "
                "random --random-input 2048 --random-output 1024 --max-concurrency 10 --num-prompt 100",
        note="vLLM PR 23151, the 'WO tuned configs (TP=1, EP=1, on H100)' block; H100 SXM or PCIe not stated (the "
             "importer takes the SXM); KV cache in the weights' bf16 (vLLM's default 'auto')"),
}
PHYSICS = ("typical", "ideal")
KEEP = ("model", "device", "hardware", "n_cards", "split", "weights", "flash_attn", "n_ubatch", "n_batch", "backend",
        "tool", "test", "n_prompt", "n_gen", "n_depth", "n_streams", "pl", "avg_ts", "seconds", "ttft_s", "tpot_s",
        "max_concurrency", "completed", "inferred")


def held_out(src_dir) -> list[dict]:
    """The held-out records: every batched-bench row of the GB10 files, and the vLLM block's TTFT and
    TPOT, each with its source's attribution."""
    out = []
    for sid, meta in SOURCES.items():
        path = os.path.join(src_dir, meta["file"])      # an absolute file (bench/checks/) stays as it is
        meta = {**meta, "file": os.path.basename(meta["file"])}
        try:
            recs = importers.read(path)
        except importers.FormatError as e:
            raise SystemExit(str(e)) from None
        for r in recs:
            line = f"{meta['file']}:{str(r['source']).rsplit(':', 1)[1]}"
            if meta["runtime"] == "vllm":
                if r.get("test") != "serve" or not r.get("ttft_s") or not r.get("max_concurrency"):
                    raise SystemExit(f"{line}: not a vLLM serving block with a mean TTFT and a maximum concurrency")
            elif r.get("tool") != "llama-batched-bench":
                continue                          # the single-stream llama-bench table: in the public fit
            if rtm.from_record(r) != meta["runtime"]:
                raise SystemExit(f"{line}: the import implies runtime {rtm.from_record(r)!r}, the sidecar says "
                                 f"{meta['runtime']!r}")
            if r.get("hardware") is None or r.get("model") is None or r.get("weights") is None:
                raise SystemExit(f"{line}: the import did not find the card, model or weights")
            o = {"evidence": "measured", "public_source": sid, "runtime": meta["runtime"]}
            o.update((k, r[k]) for k in KEEP if r.get(k) is not None)
            o.update(source=meta["url"], date=meta["date"], command=meta["command"], note=meta["note"], line=line)
            out.append(o)
        if not any(o["public_source"] == sid for o in out):
            raise SystemExit(f"{path}: no batched-bench table or vLLM serving block found")
    return out


def _profile(name, r):
    """The profile a record is predicted with: a runtime model with the options the record states
    (-fa, -ub), or a physics profile with the same schedule only: the record's ubatch, else its
    runtime model's on the record's card (runtime.ubatch_for: vLLM's prefill budget, 8192 on an H100)."""
    p = cm.load_runtime(name)
    if name in PHYSICS:
        ub = r.get("n_ubatch") or rtm.ubatch_for(cm.load_runtime(r["runtime"]), hw.get_gpu(r["hardware"]))
        return dataclasses.replace(p, n_ubatch=int(ub))
    return p.with_options(**rtm.options_from_record(p, r))


def _setup(r, prof):
    rig = hw.Rig(hw.get_gpu(r["hardware"]), int(r.get("n_cards") or 1))
    kv = r["weights"] if r["runtime"] == "vllm" else "f16"       # vLLM's KV 'auto' = the weights' dtype
    return cm.Setup(r["model"], rig, split=r.get("split") or "none", weights=r["weights"], kv=kv, runtime=prof)


def predict(r, name) -> dict:
    """{quantity: predicted value} of a held-out record under a profile."""
    s = _setup(r, _profile(name, r))
    if r["test"] == "pp":
        return {"avg_ts": cm.prefill_batch(s, int(r["n_prompt"]), int(r.get("pl") or r.get("n_streams") or 1)).tok_s}
    if r["test"] == "tg":
        B = int(r.get("n_streams") or 1)
        return {"avg_ts": B / cm._mean_decode(s, int(r["n_depth"]), int(r["n_gen"]), B)[0]}
    # a serving block: TTFT of the mean prompt, alone and behind one decode pass of the other streams,
    # and in a replay of the benchmark's closed loop
    B, P, G = int(r["max_concurrency"]), int(r["n_prompt"]), int(r["n_gen"])
    alone = cm.ttft(s, P)
    loaded = cm.decode(s, P + G // 2, B - 1).seconds + alone if B > 1 else alone
    tpot = cm.closed_loop_tpot(s, P, G, B)      # the decode steps with the other requests' prefills beside them
    return {"ttft_s": alone, "ttft_loaded_s": loaded, "ttft_replay_s": _closed_loop_ttft(s, r), "tpot_s": tpot}


def _closed_loop_ttft(s, r) -> float:
    """Mean TTFT as benchmark_serving measures it with --max-concurrency B and every request sent at
    once (--request-rate inf, its default): at most B requests in flight, the next sent when one
    finishes (vllm/benchmarks/serve.py: the request goes out inside an asyncio.Semaphore(B); its
    TTFT clock starts when it is sent, lib/endpoint_request_func.py). Replayed on glmbench's
    continuous-batching server with its closed-loop client (glmbench.predict.replay.closed_loop: B
    seqs, the runtime's prefill budget per step, no prefix cache; all `completed` requests of the
    block's mean prompt and output): request B + k is sent when the k-th request finishes and
    reaches the server replay.CLIENT_GAP_S later, after the engine has scheduled the step that
    starts at that finish, so it joins the one after. The server's own wait for the prefill budget
    (the replay's queueing after a request arrives) is part of the TTFT, as the client sees it."""
    B, P, G, N = int(r["max_concurrency"]), int(r["n_prompt"]), int(r["n_gen"]), int(r.get("completed") or 100)
    cl = replay.closed_loop(s, P, G, N, B)
    return float(np.nanmean(cl["ttft_s"]))      # a rejected request has no first token


def _measured(r, q):
    return r["ttft_s"] if q.startswith("ttft") else r[q]


def _rows(recs, profiles):
    """One row per (source, quantity, profile): points, MAPE, median signed error, worst point."""
    quantities = []
    for r in recs:
        if r["test"] in ("pp", "tg"):
            quantities.append((r["public_source"], r["test"], "avg_ts"))
        else:
            for q in ("ttft_s", "ttft_loaded_s", "ttft_replay_s", "tpot_s"):
                quantities.append((r["public_source"], "serve", q))
    out = []
    for key in dict.fromkeys(quantities):
        sid, test, q = key
        pts = [r for r in recs if r["public_source"] == sid and (r["test"] == test)]
        for p in profiles:
            errs = []
            for r in pts:
                pred = r["predicted"][p][q]
                meas = _measured(r, q)
                # tok/s: predicted / measured - 1; seconds: the same on the rate (1/t), so that + means too fast
                e = pred / meas - 1 if q == "avg_ts" else meas / pred - 1
                errs.append(e)
            out.append({"source": sid, "test": test, "quantity": q, "profile": p, "points": len(pts),
                        "mape": statistics.fmean(abs(e) for e in errs), "median": statistics.median(errs),
                        "worst": max(errs, key=abs)})
    return out


def _eff(path, runtime="llama.cpp", fam="mxfp4") -> str:
    """A runtime model's memory efficiency of a kernel path for a weight family, as its table gives it."""
    rt = cm.load_runtime(runtime)
    return f"{kn.efficiency(rt.kernels, path, fam, 'memory', rt.memory_efficiency['matmul']):.2f}"


QUANTITY = {"avg_ts": "tok/s (all streams)", "ttft_s": "mean TTFT, prefill alone", "ttft_loaded_s":
            "mean TTFT, behind the other streams' decode", "ttft_replay_s": "mean TTFT, replay of the benchmark's closed loop",
            "tpot_s": "mean TPOT (in-sample for `vllm`)"}


def _pct(x):
    return f"{100 * x:+.1f}%" if x is not None else "–"


def profile_hashes(names) -> dict:
    """{profile: the first 12 hex digits of the sha256 of its shipped JSON}: which fit the numbers are of."""
    out = {}
    for n in names:
        path = os.path.join(os.path.dirname(cm.__file__), "..", "data", "runtime", n + ".json")
        with open(path, "rb") as f:
            out[n] = hashlib.sha256(f.read()).hexdigest()[:12]
    return out


def _before_after(rows, before, profiles, label) -> list:
    """Lines: MAPE per source, test and quantity of an earlier run (`before`: its records with their
    predictions) beside this one's."""
    old = {(r["source"], r["test"], r["quantity"], r["profile"]): r for r in _rows(before, profiles)}
    L = [f"## Before / after ({label} -> this run)", "",
         "| source | test | quantity | " + " | ".join(f"`{p}` MAPE before -> after" for p in profiles) + " |",
         "|---|---|---|" + "---|" * len(profiles)]
    for k in dict.fromkeys((r["source"], r["test"], r["quantity"]) for r in rows):
        cells = []
        for p in profiles:
            now = next(r for r in rows if (r["source"], r["test"], r["quantity"], r["profile"]) == k + (p,))
            was = old.get(k + (p,))
            cells.append((f"{100 * was['mape']:.1f}%" if was else "–") + f" -> {100 * now['mape']:.1f}%")
        L.append(f"| {k[0]} | {k[1]} | {QUANTITY[k[2]]} | " + " | ".join(cells) + " |")
    return L + [""]


def render(recs, profiles, seconds, hashes=None, before=None, before_label="", note="") -> str:
    load = os.getloadavg()
    cpu = machine.cpu_name()
    today = datetime.date.today().isoformat()
    rows = _rows(recs, profiles)
    L = [f"# Held-out check: batched-bench and vLLM TTFT ({today})", "",
         f"bench/bench_public_batched.py; {len(recs)} published records the runtime models were not fitted to; "
         f"imported and predicted in {seconds:.1f} s on {cpu} (load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; "
         "a shared 2-core machine, which does not change a prediction).", "",
         "Nothing here is fitted: every profile is the one shipped (glmbench/data/runtime/), the runtime model with "
         "the options the run states (llama.cpp: -fa 1, -ub 2048; vLLM: its defaults). The batched-bench rows are "
         "not in the public fit (bench/public_records.py keeps single-stream benches), but the same card, models and "
         "runtime are, through the llama-bench tables of the same files: this checks what batching adds. The vLLM "
         "TPOT is the vLLM model's only fitted point (in-sample, shown for completeness); its TTFT is held out."
         + (" Profiles (sha256 of their JSON, first 12 digits): " + ", ".join(f"`{k}` {v}" for k, v in hashes.items())
            + "." if hashes else ""), ""] + ([note, ""] if note else []) + [
         "Predicted as: PP = `costmodel.prefill_batch(setup, PP, B)` (the B prompts one after the other in ubatches "
         "of n_ubatch, weights read once per ubatch, attention per sequence); TG = B / mean `costmodel.decode(setup, "
         "d, B)` over d = PP .. PP+TG-1 (weights once per step, KV per stream); TTFT = the prompt's prefill alone, "
         "`loaded`: after one decode pass of the other 9 streams at their mean depth, and `replayed`: the "
         "benchmark's closed loop (all requests sent at once, 10 in flight) on glmbench's continuous-batching replay "
         "(glmbench/predict/replay.py; the runtime's prefill budget per step on the card, `runtime.ubatch_for`: vLLM's 8192 on an H100), TTFT from when the client sends each request (`replay.closed_loop`: the k-th finish sends request 10 + k, which reaches the server `replay.CLIENT_GAP_S` later, after the engine has scheduled the step that starts at that finish, so it joins the one after), the server's wait for the budget included. Error = predicted / measured - 1 on the rate (tok/s, or 1 / seconds): + is too fast; "
         "MAPE = mean |error|.", "",
         "`runtime model` is the runtime each source ran on: " + ", ".join(
             f"{sid}: `{next(r['predicted']['runtime model']['profile'] for r in recs if r['public_source'] == sid)}`"
             for sid in dict.fromkeys(r["public_source"] for r in recs)) + ".", "",
         "## MAPE per source", "",
         "| source | test | quantity | points | " + " | ".join(f"`{p}` MAPE (median error)" for p in profiles) + " |",
         "|---|---|---|---|" + "---|" * len(profiles)]
    keys = list(dict.fromkeys((r["source"], r["test"], r["quantity"]) for r in rows))
    for k in keys:
        cells = {r["profile"]: r for r in rows if (r["source"], r["test"], r["quantity"]) == k}
        first = next(iter(cells.values()))
        q = QUANTITY[k[2]]
        L.append(f"| {k[0]} | {k[1]} | {q} | {first['points']} | " + " | ".join(
            f"{100 * cells[p]['mape']:.1f}% ({_pct(cells[p]['median'])})" for p in profiles) + " |")
    # ideal must never be slower than a measurement
    slow = []
    for r in recs:
        for q in (["avg_ts"] if r["test"] in ("pp", "tg") else ["ttft_s"]):
            pred, meas = r["predicted"]["ideal"][q], _measured(r, q)
            if (pred < meas) if q == "avg_ts" else (pred > meas):
                slow.append(f"{r['line']} ({r['test']}, B={r.get('n_streams')})")
    # where the runtime model's aggregate decode falls as B grows while the measurement rises
    drops = []
    tg = [r for r in recs if r["test"] == "tg"]
    for key in dict.fromkeys((r["public_source"], r["n_depth"]) for r in tg):
        line = sorted((r for r in tg if (r["public_source"], r["n_depth"]) == key), key=lambda r: r["n_streams"])
        for a, b in zip(line, line[1:]):
            pa, pb = a["predicted"]["runtime model"]["avg_ts"], b["predicted"]["runtime model"]["avg_ts"]
            if pb < pa and b["avg_ts"] > a["avg_ts"]:
                drops.append(f"{key[0]} at depth {key[1]}: B {a['n_streams']} -> {b['n_streams']} predicted "
                             f"{pa:.0f} -> {pb:.0f} tok/s, measured {a['avg_ts']:.0f} -> {b['avg_ts']:.0f}")
    # where the runtime model's aggregate decode falls as B grows, whatever the measurement
    falls = []
    for key in dict.fromkeys((r["public_source"], r["n_depth"]) for r in tg):
        line = sorted((r for r in tg if (r["public_source"], r["n_depth"]) == key), key=lambda r: r["n_streams"])
        falls += [f"{key[0]} at depth {key[1]}: B {a['n_streams']} -> {b['n_streams']}" for a, b in zip(line, line[1:])
                  if b["predicted"]["runtime model"]["avg_ts"] < a["predicted"]["runtime model"]["avg_ts"]]
    L += ["", f"`ideal` slower than the measurement: {len(slow)} of {len(recs)} records"
          + (": " + ", ".join(slow) if slow else "") + ".", "",
          f"Runtime model's aggregate decode falling as B grows while the measurement rises: {len(drops)} cases"
          + (" (" + "; ".join(drops) + ")" if drops else "") + "; falling at all: " + str(len(falls)) + " cases"
          + (" (" + "; ".join(falls) + ")" if falls else "") + ".", "",
          "Reading (not fitted, nothing changed on account of these points): above "
          f"{kn.MMV_MAX_BATCH} streams the cost model moves MoE decode from the GEMV path (mul_mat_id through MMVQ, "
          "`kernels.MMV_MAX_BATCH`) to the batched one (mul_mat_id through MMQ). `llama.cpp`'s kernel table streams "
          f"the experts at {_eff('mmid_vec')} of the bandwidth on the first and {_eff('mmid')} on the second: a "
          "batched path's memory efficiency is its GEMV counterpart's (`kernels.GEMV_OF`), not fitted, because the "
          "prefill ubatches it runs in the fit are near or above the ridge, where a memory and a compute efficiency "
          "explain the same time (docs/COSTMODEL.md, identifiability). Its compute term pads each touched expert's "
          "few tokens to the batch's MMQ tile (`kernels.mmq_tile`, `kernels.moe_occupancy`), not to the 128-column "
          "tile of prefill. `ideal` reads the fewest distinct experts a batch can touch, top_k per layer "
          "(`costmodel.fewest_distinct_experts`): a bound whatever the routing; `typical` and the runtime models read "
          "those uniform routing leaves distinct (`costmodel.expected_distinct_experts`). Where the runtime model is "
          "below a measurement at many streams, the batch touched fewer experts than uniform routing: e.g. "
          "gpt-oss-120b at B=16 measured 220 tok/s, 73 ms a step, while the 51 of 128 experts per layer uniform "
          "routing touches hold 24 GB of MXFP4 weights, 89 ms at the GB10's full 273 GB/s "
          "(`Setup(expert_skew=...)` models skewed routing; not set here).", ""]
    if before:
        L += _before_after(rows, before, profiles, before_label)
    L += ["## Every point", "",
          "| source:line | test | PP or depth | B | measured | " + " | ".join(f"`{p}`" for p in profiles) + " |",
          "|---|---|---|---|---|" + "---|" * len(profiles)]
    for r in recs:
        if r["test"] == "pp":
            L.append(f"| {r['line']} | pp{r['n_prompt']} | 0 | {r.get('pl')} | {r['avg_ts']:.1f} tok/s | "
                     + " | ".join(f"{r['predicted'][p]['avg_ts']:.1f}" for p in profiles) + " |")
        elif r["test"] == "tg":
            L.append(f"| {r['line']} | tg{r['n_gen']} | {r['n_depth']} | {r['n_streams']} | {r['avg_ts']:.1f} tok/s | "
                     + " | ".join(f"{r['predicted'][p]['avg_ts']:.1f}" for p in profiles) + " |")
        else:
            for q, lab in (("ttft_s", "TTFT alone"), ("ttft_loaded_s", "TTFT loaded"), ("ttft_replay_s", "TTFT replayed"),
                           ("tpot_s", "TPOT")):
                L.append(f"| {r['line']} | {lab} | {r['n_prompt']} | {r['max_concurrency']} | "
                         f"{1000 * _measured(r, q):.1f} ms | "
                         + " | ".join(f"{1000 * r['predicted'][p][q]:.1f} ms" for p in profiles) + " |")
    L += ["", "Sources: " + "; ".join(f"{sid}: {m['url']} ({m['date']})" for sid, m in SOURCES.items()) + ".", ""]
    return "\n".join(L)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("src_dir", nargs="?", help="the folder of the published files (with their sidecars)")
    ap.add_argument("--records", help="re-predict the held-out records of an earlier run (its .json)")
    ap.add_argument("--out", default=os.path.join(HERE, "results"), help="folder of the result files")
    ap.add_argument("--before", help="an earlier run's .json: its MAPE per source beside this run's")
    ap.add_argument("--before-label", default="", help="how the report names the --before run")
    ap.add_argument("--note", default="", help="a paragraph the report adds under its header (e.g. which fit)")
    a = ap.parse_args(argv)
    if bool(a.src_dir) == bool(a.records):
        ap.error("give the published files' folder or --records FILE (one of them)")
    t0 = time.perf_counter()
    if a.records:
        with open(a.records) as f:
            recs = [{k: v for k, v in r.items() if k != "predicted"} for r in json.load(f)["records"]]
    else:
        recs = held_out(a.src_dir)
    runtimes = list(dict.fromkeys(m["runtime"] for m in SOURCES.values()))
    for r in recs:
        r["predicted"] = {"runtime model": predict(r, r["runtime"]), **{p: predict(r, p) for p in PHYSICS}}
        r["predicted"]["runtime model"]["profile"] = _profile(r["runtime"], r).name
    seconds = time.perf_counter() - t0
    profiles = ["runtime model", "typical", "ideal"]
    before = None
    if a.before:
        with open(a.before) as f:
            before = json.load(f)["records"]
    hashes = profile_hashes(list(dict.fromkeys(runtimes + list(PHYSICS))))
    md = render(recs, profiles, seconds, hashes, before, a.before_label or os.path.basename(a.before or ""), a.note)
    today = datetime.date.today().isoformat()
    base = os.path.join(a.out, f"public_batched_{today}")
    rec.atomic_write_text(base + ".json", json.dumps({"date": today, "runtimes": runtimes, "profiles": hashes,
                                                      "records": recs},
                                                      indent=1, default=str) + "\n")
    rec.atomic_write_text(base + ".md", md)
    print(f"{len(recs)} held-out records -> {base}.md, .json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
