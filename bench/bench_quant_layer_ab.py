"""A decode step of a quantized GGUF model with each layer as one C call (csrc/layer.c: the packed block
formats, Layer.forward) against the same layers op by op from Python (Layer.forward_py), in one
process on the same weights, alternating: what the interpreter between a layer's kernels costs.

    PYTHONPATH=$PWD python bench/bench_quant_layer_ab.py FILE.gguf [--threads 2] [--rounds 4] [--steps 30]

Per round and side: 5 untimed decode steps, then --steps timed ones from an empty cache (depth 0);
the table gives the median over rounds of the mean step and of each built layer's time
(Model.last_timing), and the ratio forward_py / C layer. The outputs of the two sides are checked
bit-identical on the first step (tests/test_layer.py checks it for every format)."""
import argparse
import datetime
import os
import platform
import time

import numpy as np

from glmbench.core.ops import set_num_threads
from glmbench.measure.machine import cpu_name
from glmbench.models import checkpoint


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("file")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--steps", type=int, default=30)
    a = ap.parse_args(argv)
    set_num_threads(a.threads)
    m = checkpoint.load_model(a.file, max_context=a.steps + 8)
    res, first = {"c": [], "py": []}, {}
    for _ in range(a.rounds):
        for side in ("c", "py"):
            for layer in m.layers:   # None: the plan is built (again) on first use; False: forward_py
                layer._plan = None if side == "c" else False
            m.reset()
            first.setdefault(side, m.decode(3).copy())
            for _ in range(4):
                m.decode(3)
            m.reset()
            lay, tot = np.zeros(len(m.layers)), 0.0
            for i in range(a.steps):
                t = time.perf_counter()
                m.decode(5 + i)
                tot += time.perf_counter() - t
                lay += m.last_timing["layer_s"]
            res[side].append((tot / a.steps * 1e3, *(lay / a.steps * 1e3)))
    assert np.array_equal(first["c"], first["py"]), "the C layer and forward_py disagree"
    c, p = (np.median(np.array(res[s]), axis=0) for s in ("c", "py"))
    print(f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, {cpu_name()}, {a.threads} threads, "
          f"{os.path.basename(a.file)}, 1-min load {os.getloadavg()[0]:.2f}, Python {platform.python_version()}")
    print("| side | step ms | " + " | ".join(f"layer {l.index} ({l.kind}) ms" for l in m.layers) + " |")
    print("|---|---|" + "---|" * len(m.layers))
    for name, v in (("C layer (Layer.forward)", c), ("op by op (Layer.forward_py)", p)):
        print(f"| {name} | {v[0]:.3f} | " + " | ".join(f"{x:.3f}" for x in v[1:]) + " |")
    print(f"| forward_py / C layer | {p[0] / c[0]:.3f}x | " + " | ".join(f"{y / x:.3f}x" for x, y in zip(c[1:], p[1:]))
          + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
