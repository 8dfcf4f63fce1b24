"""Writes glmbench/data/public/scoreboard.json (measured records) and scoreboard.md (what it holds,
its attribution, the rows left out) from a copy of llama.cpp's CUDA scoreboard as a CSV with the
columns gpu, gpu_device_name, n_gpus, model, quant, backend, fa, test, depth, t_s, stddev, build,
date, url, via, notes (one row per GPU x fa x test).

    python tools/public_scoreboard.py SCOREBOARD.csv

Each card is resolved to its catalog key with glmbench.predict.hardware.resolve_gpu_name; rows of
pre-Volta cards (not in the catalog) are listed in the .md, not written as records.
"""
from __future__ import annotations

import csv
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from glmbench.predict import hardware  # noqa: E402
from glmbench.results import records as rec  # noqa: E402
from glmbench.results.importers import quant_name  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "glmbench", "data", "public")
GIB = 1 << 30

ASSUME = ("Not in the copied row, taken as the scoreboard's standard run (llama-bench -m llama-2-7b.Q4_0.gguf "
          "-ngl 99 -fa 0,1): one card holding every layer, llama-bench's defaults (n_batch 2048, n_ubatch 512, "
          "f16 KV cache), depth 0; pp512 is the prompt rate of 512 tokens, tg128 the mean rate over 128 "
          "generated tokens from an empty cache.")


def _fa(v: str):
    s = v.strip().lower()
    if s in ("0", "1"):
        return s == "1", ""
    if s.startswith("n/a (pre-fa"):
        return False, "a build from before llama.cpp had flash attention (fa column: n/a): attention materialized"
    if s.startswith("0 (scraper label"):
        return None, "flash attention not known (the scraper labelled the single Vulkan table fa 0)"
    return None, f"flash attention not stated (fa column: {v!r})"


def main(argv) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    path = argv[0]
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    out, left = [], []
    for line, r in enumerate(rows, 2):
        names = [n for n in (r["gpu_device_name"], r["gpu"]) if n.strip()]
        key = next((k for k in map(hardware.resolve_gpu_name, names) if k), None)
        m = re.fullmatch(r"(pp|tg)\s*(\d+)", r["test"].strip())
        if not m:
            raise SystemExit(f"{path}:{line}: test {r['test']!r} is not pp<n> or tg<n>")
        if key is None:
            if not any(hardware.is_pre_volta(n) for n in names):
                raise SystemExit(f"{path}:{line}: {names[0]!r} is neither in the catalog nor pre-Volta")
            left.append(r)
            continue
        test, n = m.group(1), int(m.group(2))
        fa, fa_note = _fa(r["fa"])
        model_txt = r["model"]
        size = re.search(r"(\d+(?:\.\d+)?) GiB", model_txt)
        params = re.search(r"(\d+(?:\.\d+)?) B\b", model_txt)
        fname = re.search(r"\(([^,()]+\.gguf)", model_txt)
        notes = [x for x in (fa_note,) if x]
        if "codellama" in model_txt.lower():
            notes.append("the model is CodeLlama-7B, the Llama-2-7B architecture (vocab 32016, rope theta 1e6): "
                         "predicted as llama-2-7b")
        build = r["build"].strip()
        bm = re.fullmatch(r"([0-9a-f]{7,40})(?:\s*\((\d+)\))?", build)
        q = quant_name(r["quant"])
        backend = r["backend"].strip()
        d = {"evidence": "measured", "test": test, "model": "llama-2-7b", "model_type": f"llama 7B {r['quant']}",
             "device": names[0], "hardware": key, "n_cards": int(r["n_gpus"]), "split": "none",
             "weights": q, "type_k": "f16", "type_v": "f16", "mla_strategy": "",
             "runtime": "llama.cpp" if backend == "CUDA" else f"llama.cpp-{backend.lower()}",
             "n_prompt": n if test == "pp" else 0, "n_gen": n if test == "tg" else 0, "n_depth": int(r["depth"]),
             "n_streams": 1, "avg_ts": float(r["t_s"]),
             "stddev_ts": float(r["stddev"]) if r["stddev"].strip() else None,
             "flash_attn": fa, "backends": backend, "tool": "llama-bench", "n_gpu_layers": 99,
             "model_filename": fname.group(1).strip() if fname else None,
             "model_size": round(float(size.group(1)) * GIB) if size else None,
             "model_n_params": round(float(params.group(1)) * 1e9) if params else None,
             "build_commit": bm.group(1) if bm else None, "build_number": int(bm.group(2)) if bm and bm.group(2) else None,
             "date": r["date"].strip() or None, "scoreboard_gpu": r["gpu"], "source": r["url"].strip(),
             "via": r["via"].strip(), "notes": "; ".join([r["notes"].strip()] + notes).strip("; ") or None,
             "assumptions": ASSUME}
        out.append({k: v for k, v in d.items() if v is not None})
    os.makedirs(OUT, exist_ok=True)
    rec.write_records(os.path.join(OUT, "scoreboard.json"), out)
    lines = ["# llama.cpp CUDA scoreboard (Llama-2-7B Q4_0), as glmbench measured records", "",
             "`scoreboard.json`: the per-GPU results of llama.cpp's CUDA performance discussion "
             "(https://github.com/ggml-org/llama.cpp/discussions/15013; the Vulkan rows: "
             "https://github.com/ggml-org/llama.cpp/discussions/10879; the pre-flash-attention rows: "
             "https://github.com/ggml-org/llama.cpp/pull/4812 and /pull/4766), llama-bench pp512 and tg128 at "
             "depth 0 with flash attention off and on, one record per GPU x fa x test. The figures are the "
             "benchmark authors' measurements; glmbench changed none. Each record keeps its source URL (`source`), "
             "how the row was copied (`via`: a scrape of the discussion's tables or an independent copy, "
             "cross-checked where both exist) and the copy's `notes`, and names its card both as published "
             "(`device`, `scoreboard_gpu`) and as a catalog key (`hardware`, by "
             "glmbench.predict.hardware.resolve_gpu_name). What a row did not say is in `assumptions`.",
             "", f"{len(out)} records on {len({r['hardware'] for r in out})} catalog cards. Written by "
             "`tools/public_scoreboard.py`.", "",
             "## Left out: pre-Volta cards (not in the GPU catalog)", "",
             "| gpu | backend | fa | test | t/s | source |", "|---|---|---|---|---|---|"]
    for r in left:
        lines.append(f"| {r['gpu']} | {r['backend']} | {r['fa']} | {r['test']} | {r['t_s']} | {r['url']} |")
    with open(os.path.join(OUT, "scoreboard.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {len(out)} records ({len(left)} pre-Volta rows left out) to {os.path.normpath(OUT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
