"""What a second stream adds to a decode step, in published llama-batched-bench tables: the
measured step (B / S_TG) against the `llama.cpp` runtime model's (as shipped, options from the
table), at B = 1 and B = 2 on the shallowest prompt (PP 512), and the part the model does not price,
per decoder layer:

    extra(B) = measured step(B) - predicted step(B)
    per layer = (extra(2) - extra(1)) / n_layers

    python bench/bench_batched_step.py ../shared/public-results bench/checks/gb10-build7941 \
        bench/checks/gb10-glm-4.7-flash          # -> bench/results/batched_step_<date>.md

Every llama-batched-bench table found in the folders (their pasted files, read by
glmbench.results.importers) is used; nothing is fitted. It reads published tables only, so it
cannot tell what the unpriced part is. One lead: ggml's CUDA backend replays a decode step as a
CUDA graph, and the llama.cpp vendored by llama-cpp-python 0.3.16 (mid 2025) turned graphs off for
batches of more than one token (ggml-cuda.cu: "disable CUDA graphs for batch size > 1"). Without a
graph every kernel is launched from the host, which costs time per kernel and so per layer. The
check this needs is on a GPU: the same llama-batched-bench at B = 1 with GGML_CUDA_DISABLE_GRAPHS=1.
"""
from __future__ import annotations

import datetime
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from glmbench.measure import machine  # noqa: E402
from glmbench.predict import costmodel as cm  # noqa: E402
from glmbench.predict import hardware as hw  # noqa: E402
from glmbench.predict import runtime as rtm  # noqa: E402
from glmbench.results import importers  # noqa: E402
from glmbench.results import records as rec  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def tables(folders):
    """(file, [tg records of llama-batched-bench]) of every pasted file in the folders that has them."""
    out = []
    for d in folders:
        for f in sorted(os.listdir(d)):
            p = os.path.join(d, f)
            if not f.endswith((".md", ".log")) or f.lower().startswith("readme"):
                continue
            try:
                recs = importers.read(p)
            except importers.FormatError:
                continue
            tg = [r for r in recs if r.get("tool") == "llama-batched-bench" and r.get("test") == "tg"]
            if tg:
                out.append((p, tg))
    return out


def _build(path, r0):
    """The build a table ran: its record's, else the first "build <commit> (<number>)" of its sidecar."""
    if r0.get("build_number"):
        return r0["build_number"]
    side = os.path.splitext(path)[0] + ".txt"
    if os.path.isfile(side):
        with open(side, encoding="utf-8", errors="replace") as f:
            m = re.search(r"build:?\s+[0-9a-f]{7,}\s+\((\d+)\)", f.read())
        if m:
            return int(m.group(1))
    return None


def rows(found):
    prof = cm.load_runtime("llama.cpp")
    out = []
    for path, tg in found:
        r0 = tg[0]
        if not (r0.get("model") and r0.get("weights") and r0.get("hardware")):
            continue
        p = prof.with_options(**rtm.options_from_record(prof, r0))
        s = cm.Setup(r0["model"], hw.Rig(hw.get_gpu(r0["hardware"]), int(r0.get("n_cards") or 1)),
                     weights=r0["weights"], kv="f16", runtime=p)
        pp = min(int(r["n_depth"]) for r in tg)
        at = {int(r["n_streams"]): r for r in tg if int(r["n_depth"]) == pp}
        if 1 not in at or 2 not in at:
            continue
        ext = {}
        for b in sorted(at):
            r = at[b]
            meas = b / float(r["avg_ts"])
            pred = cm._mean_decode(s, pp, int(r["n_gen"]), b)[0]
            ext[b] = (meas, pred, meas - pred)
        n_layers = s.model.n_layers
        out.append(dict(file=os.path.relpath(path), model=s.model.name, weights=r0["weights"], card=r0["hardware"],
                        build=_build(path, r0), pp=pp, layers=n_layers, ext=ext,
                        per_layer_us=(ext[2][2] - ext[1][2]) / n_layers * 1e6,
                        moe=bool(s.model.n_routed_experts)))
    return out


def render(rs, seconds):
    today = datetime.date.today().isoformat()
    L = [f"# What a second stream adds to a decode step: published llama-batched-bench tables ({today})", "",
         f"bench/bench_batched_step.py; {len(rs)} tables, predicted in {seconds:.1f} s on {machine.cpu_name()}. "
         "Measured step = B / S_TG at the smallest PP of the table; predicted = the `llama.cpp` runtime model as shipped "
         "(options from the table); extra = measured - predicted; per layer = (extra at B = 2 - extra at B = 1) / "
         "decoder layers. Nothing is fitted. For a MoE model the step at B = 2 also reads more experts, which the "
         "model prices (uniform routing), so its extra mixes that estimate's error in.", "",
         "| file | model | weights | card | build | layers | step B=1 ms (pred) | step B=2 ms (pred) | extra B=1 ms | "
         "extra B=2 ms | per layer us | extra B=4 / 8 ms |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rs:
        e = r["ext"]
        more = " / ".join(f"{e[b][2] * 1e3:+.2f}" for b in (4, 8) if b in e) or "–"
        L.append(f"| {r['file']} | {r['model']}{' (MoE)' if r['moe'] else ''} | {r['weights']} | {r['card']} | "
                 f"{r['build'] or '–'} | {r['layers']} | {e[1][0] * 1e3:.2f} ({e[1][1] * 1e3:.2f}) | "
                 f"{e[2][0] * 1e3:.2f} ({e[2][1] * 1e3:.2f}) | {e[1][2] * 1e3:+.2f} | {e[2][2] * 1e3:+.2f} | "
                 f"{r['per_layer_us']:.0f} | {more} |")
    L.append("")
    return "\n".join(L)


def main(argv=None):
    import argparse
    import time
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folders", nargs="+")
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    a = ap.parse_args(argv)
    t0 = time.time()
    rs = rows(tables(a.folders))
    if not rs:
        raise SystemExit("no llama-batched-bench table with B = 1 and B = 2 found")
    text = render(rs, time.time() - t0)
    path = os.path.join(a.out, f"batched_step_{datetime.date.today().isoformat()}.md")
    rec.atomic_write_text(path, text)
    print(text)
    print(f"-> {path}")


if __name__ == "__main__":
    main()
