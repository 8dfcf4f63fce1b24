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
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from glmbench.predict import hardware  # noqa: E402
from glmbench.results import importers  # noqa: E402
from glmbench.results import records as rec  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "glmbench", "data", "public")


def main(argv) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    path = argv[0]
    # each row as glmbench's importer reads a scoreboard copy (importers._read_scoreboard_csv)
    recs = importers.read(path)
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    out, left = [], []
    for r, row in zip(recs, rows):
        if r.get("hardware") is None:
            names = [n for n in (row.get("gpu_device_name", ""), row["gpu"]) if n.strip()]
            if not any(hardware.is_pre_volta(n) for n in names):
                raise SystemExit(f"{r['line']}: {names[0]!r} is neither in the catalog nor pre-Volta")
            left.append(row)
            continue
        r = dict(r, line=f"{os.path.basename(path)}:{r['line'].rsplit(':', 1)[1]}")
        out.append(r)
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
