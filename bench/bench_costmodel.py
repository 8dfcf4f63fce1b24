"""How fast the cost model predicts: a sweep of 2 models x 4 setups x 64 depths (decode, prefill
and memory at each point). Target: under 1 second. Not a test; run it on a quiet machine:

    python bench/bench_costmodel.py            # timing
    python bench/bench_costmodel.py --study    # also print the predicted default study (docs/COSTMODEL.md)
"""
import time

from glmbench.predict import hardware
from glmbench.predict import sweep

MODELS = ["glm-4.7-flash", "qwen3-32b"]
SETUPS = [
    dict(rig="rtx-3090", weights="q4_K"),
    dict(rig=hardware.study_rig(), split="layer", weights="q4_K"),
    dict(rig=hardware.study_rig(), split="tensor", weights="q4_K"),
    dict(rig="h100-sxm", weights="bf16"),
]
DEPTHS = [2048 * i for i in range(64)]


def main():
    # validate before timing: every point yields a finite, positive speed or a memory figure
    recs = sweep.predict(MODELS, SETUPS, DEPTHS[:2])
    assert all(r["avg_ts"] > 0 for r in recs if r["test"] != "mem")
    for tests in (("tg",), ("tg", "pp", "mem")):
        best = float("inf")
        for _ in range(3):
            t = time.perf_counter()
            recs = sweep.predict(MODELS, SETUPS, DEPTHS, tests=tests)
            best = min(best, time.perf_counter() - t)
        n = len(MODELS) * len(SETUPS) * len(DEPTHS)
        print(f"costmodel sweep {len(MODELS)} models x {len(SETUPS)} setups x {len(DEPTHS)} depths, "
              f"tests {','.join(tests)}: {len(recs)} records in {best:.3f} s "
              f"({1e6 * best / len(recs):.0f} us/record, {n} points) {'OK' if best < 1 else 'SLOW (target < 1 s)'}")


def study():
    """The default study of docs/COSTMODEL.md: GLM-4.7-Flash vs Qwen3-32B, q4_K weights (4.5 bpw),
    f16 cache, 1 RTX 3090 and 2 over 1.4 GB/s (layer and tensor split), both runtime profiles."""
    from glmbench.predict import costmodel as cm
    K = 1024
    depths = [0, 1 * K, 4 * K, 8 * K, 16 * K, 32 * K, 64 * K, 128 * K]
    rig = hardware.study_rig()
    short = {"glm-4.7-flash": "GLM", "qwen3-32b": "Qwen"}
    for rt in ("typical", "ideal"):
        cols = {}
        for m in MODELS:
            cols[f"{short[m]} 1x"] = cm.Setup(m, "rtx-3090", weights="q4_K", runtime=rt)
            cols[f"{short[m]} 2x layer"] = cm.Setup(m, rig, split="layer", weights="q4_K", runtime=rt)
            cols[f"{short[m]} 2x tensor"] = cm.Setup(m, rig, split="tensor", weights="q4_K", runtime=rt)
        print(f"\n## runtime {rt}: tok/s, (parenthesised: does not fit in memory)")
        print("| test | " + " | ".join(cols) + " |")
        print("|---" * (len(cols) + 1) + "|")
        for test in ("tg", "pp512"):
            for d in depths:
                cells = []
                for s in cols.values():
                    v = cm.decode(s, d).tok_s if test == "tg" else cm.prefill(s, 512, d).tok_s
                    fits = cm.memory(s, d + (512 if test != "tg" else 1)).fits
                    cells.append(f"{v:.1f}" if fits else f"({v:.1f})")
                print(f"| {test} @ {d // K}K | " + " | ".join(cells) + " |")
        print("| max context | " + " | ".join(str(cm.max_context(s)) for s in cols.values()) + " |")
        for ctx in (4096, 32768):
            for c in (8, 32, 128):
                cells = []
                for s in cols.values():
                    r = cm.serve(s, c, ctx)
                    cells.append(f"{r['aggregate_tok_s']:.0f} ({r['streams']})")
                print(f"| serve {c} @ {ctx // K}K, tok/s (streams) | " + " | ".join(cells) + " |")
        xs = [K * i for i in range(1, 129)]
        for split in ("1x", "2x layer"):
            a = [cm.decode(cols[f"GLM {split}"], d).tok_s for d in xs]
            b = [cm.decode(cols[f"Qwen {split}"], d).tok_s for d in xs]
            pa = [cm.prefill(cols[f"GLM {split}"], 512, d).tok_s for d in xs]
            pb = [cm.prefill(cols[f"Qwen {split}"], 512, d).tok_s for d in xs]
            print(f"{split}: tg crossovers {cm.crossover(xs, a, b)}, GLM/Qwen tg at 128K {a[-1] / b[-1]:.2f}; "
                  f"pp crossovers {cm.crossover(xs, pa, pb)}, GLM/Qwen pp at 1K {pa[0] / pb[0]:.2f}, at 128K {pa[-1] / pb[-1]:.2f}")


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--study", action="store_true", help="also print the predicted default study (docs/COSTMODEL.md)")
    a = ap.parse_args()
    main()
    if a.study:
        study()
