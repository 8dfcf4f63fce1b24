"""Prices every built-in model with two versions of glmbench's cost model, an earlier commit's and this
checkout's, and says which prices differ: decode at depth 0 and 8K, prefill of 512 tokens at depth 0 and
8K, and the parameter count, on one card under each runtime profile asked for.

    python tools/prices_before_after.py main                          # rtx-3090; typical, llama.cpp, ik_llama.cpp
    python tools/prices_before_after.py HEAD~3 --gpu rtx-4090 --weights Q4_K_M --runtimes typical vllm

REF is any git revision of this repository. Its tree is taken out with `git archive` into a temporary
folder (the prediction side loads no compiled code: tests/test_layout.py). Models that exist in only one version are listed as new or gone. Exit status 0
where every model both versions hold prices the same (relative difference <= 1e-9).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
POINTS = (("decode", 0), ("decode", 8192), ("prefill", 0), ("prefill", 8192))


def dump(out: str, gpu: str, weights: str, runtimes: list[str]) -> None:
    """{model: {"<runtime> <kind>@<depth>": tok/s or "error ...", "params": n}} with the glmbench that
    `import glmbench` finds, as JSON into `out`."""
    from glmbench.models import configs
    from glmbench.predict import costmodel as cm
    print(f"pricing with {cm.__file__}", file=sys.stderr)
    res = {}
    for name in configs.builtin_names():
        row: dict = {}
        try:
            row["params"] = configs.load(name).total_params()
        except Exception as e:  # noqa: BLE001 -- what each version does is what is compared
            row["params"] = f"error {type(e).__name__}: {e}"
        for rt in runtimes:
            try:
                setup = cm.Setup(name, gpu, runtime=rt, **({"weights": weights} if weights != "default" else {}))
            except Exception as e:  # noqa: BLE001
                row[f"{rt} setup"] = f"error {type(e).__name__}: {e}"
                continue
            for kind, depth in POINTS:
                key = f"{rt} {kind}@{depth}"
                try:
                    step = cm.decode(setup, depth) if kind == "decode" else cm.prefill(setup, 512, depth)
                    row[key] = step.tok_s
                except Exception as e:  # noqa: BLE001
                    row[key] = f"error {type(e).__name__}: {e}"
        res[name] = row
    with open(out, "w") as f:
        json.dump(res, f, sort_keys=True)


def _differs(a, b) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return abs(a - b) > 1e-9 * max(abs(a), abs(b), 1e-30)
    return a != b


def main(argv=None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--dump"]:
        sys.path.insert(0, os.environ.get("PYTHONPATH", ROOT))
        dump(args[1], args[2], args[3], args[4:])
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("ref", help="the earlier git revision")
    ap.add_argument("--gpu", default="rtx-3090")
    ap.add_argument("--weights", default="default", help="a weight format or llama.cpp mix (Q4_K_M); default: Setup's")
    ap.add_argument("--runtimes", nargs="+", default=["typical", "llama.cpp", "ik_llama.cpp"])
    a = ap.parse_args(args)
    with tempfile.TemporaryDirectory() as tmp:
        old = os.path.join(tmp, "old")
        os.makedirs(old)
        tar = os.path.join(tmp, "ref.tar")
        subprocess.run(["git", "-C", ROOT, "archive", "-o", tar, a.ref], check=True)
        with tarfile.open(tar) as t:
            t.extractall(old, filter="data")
        outs = {}
        for label, pkg in (("before", old), ("after", ROOT)):
            outs[label] = os.path.join(tmp, f"{label}.json")
            subprocess.run([sys.executable, os.path.abspath(__file__), "--dump", outs[label], a.gpu, a.weights, *a.runtimes],
                           env=dict(os.environ, PYTHONPATH=pkg), check=True, cwd=tmp)
        before, after = (json.load(open(outs[k])) for k in ("before", "after"))
    diffs = 0
    for name in sorted(set(before) | set(after)):
        if name not in before:
            print(f"new   {name}")
            continue
        if name not in after:
            print(f"gone  {name}")
            continue
        for key in sorted(set(before[name]) | set(after[name])):
            b, n = before[name].get(key), after[name].get(key)
            if _differs(b, n):
                diffs += 1
                print(f"diff  {name} {key}: {b} -> {n}")
    both = len(set(before) & set(after))
    print(f"{both} models in both on {a.gpu}, weights {a.weights} ({', '.join(a.runtimes)}): {diffs} differences")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
